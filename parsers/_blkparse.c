/*
 * blkparse default text output -> block requests, in one streaming pass (see parsers/blkparse.py for
 * the format and its sources: blktrace blkparse_fmt.c process_default(), shared/FORMATS.md section 1).
 *
 *   rb = Rebuilder(top=0)
 *   rb.feed(chunk, first_line[, lines])     chunk: bytes-like holding whole lines; lines: their line numbers
 *     -> dict                               (int64 buffer, one per line: a trace's lines picked out of it),
 *                                           else first_line, first_line + 1, ...
 *   rb.finish() -> dict                     emits the requests still open at the end of the trace
 *   rb.facts() -> dict                      over the requests emitted: their first and last phase time, how many
 *                                           have a phase earlier than the one before, the `top` slowest per metric
 *   rb.read(records, max_lines) -> dict     a blktrace capture's records, read without their text: Records and
 *                                           read are _blkparse_binary.h's
 *
 * Each call returns column buffers (native int64/int32 arrays; string columns as Arrow-style int32 offsets + data;
 * each column's null count X_nulls and, when it has nulls, its Arrow validity bitmap X_bitmap; the devices as
 * "maj,min" strings, dev and from_dev: _blkparse_out.h) for these row sets:
 *   rq_*  finished block requests, with the time, file line and CPU of each phase (A Q G I D C) (the
 *         phase durations are computed when read: blkparse.GENERATED); bio_* the same columns for bios that
 *         were merged into another request;
 *   ev_*  events that are not a request phase: P U UT X S B m, requeues (R) and repeated phases,
 *         zero-length (flush) and passthrough requests, remaps that only pass through a device;
 * plus the lines skipped (line number, reason code, byte span in the chunk).
 *
 * Requests are keyed by (device, start sector). On one key a request lives A? Q G I D (R I? D)* C in
 * file order; a new one starts at A, at a Q not preceded by its A, or when a phase does not move
 * forward (unless the previous event was a requeue). A request is emitted at its completion, or when
 * its key is reused, or at finish(): memory holds only requests in flight. A bio that was merged is
 * emitted at once (bio_*) and attached as the block layer does it: a back merge (M) to the open
 * request that ends where the bio starts, which then ends where the bio ends; a front merge (F) to
 * the one that starts where the bio ends, which then starts at the bio's sector.
 * A phase's time is that of its event as traced: nothing is invented.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_btt.h"
#include "_colbuf.h"
#include "_text.h"

#define NUL64 INT64_MIN
#define COMM_MAX 64

enum reason {
    R_NOT_EVENT = 1, R_CPU, R_SEQ, R_TIME, R_PID, R_ACTION, R_RWBS, R_SECTOR, R_NSECT,
    R_BRACKET, R_REMAP, R_TRAILING, R_SPLIT, R_DEVICE,
};

/* ---- output columns, and their handing over: _blkparse_out.h --------------------------------- */

#include "_blkparse_out.h"

/* ---- one parsed line: _blkparse_line.h --------------------------------------------------------- */

#include "_blkparse_line.h"

/* ---- open requests ----------------------------------------------------------------------------- */

enum { PH_A, PH_Q, PH_G, PH_M, PH_I, PH_D, PH_R, PH_C, PH_OTHER };

typedef struct {
    int64_t sector, line, nsect0, nsect, pid, dpid, err, fsec, merge_ns, merge_line, t_first;
    int64_t t[6], ln[6]; /* A Q G I D C */
    int32_t major, minor, fmaj, fmin, cpu[6], requeues;
    int8_t last_ph, pid_ph, rwbs_ph, front, merged, head, sized, in_end;
    int64_t end, req_line;  /* end sector while it can take back merges; a merged bio's request */
    int32_t merged_bios;
    char last_act;
    uint8_t rwbsn, commn;
    int8_t comm_ph;
    char rwbs[8], comm[COMM_MAX];
    /* the A event, for a remap that only passes through this device */
    int64_t apid;
} seg_t;
enum { S_A, S_Q, S_G, S_I, S_D, S_C };

/* ---- the open segments by (device, sector): _blkparse_map.h ------------------------------------ */

#include "_blkparse_map.h"

/* the slowest requests of one metric: a min-heap of (latency, line), its root the weakest kept (shortest; of equal
 * latencies the latest line): /requests orders by latency descending, then line */
typedef struct { int64_t v, line; } topent_t;
typedef struct { topent_t *h; size_t n, cap; } heap_t;

typedef struct pre_s pre_t;
typedef struct {
    PyObject_HEAD
    map_t start, end;
    heap_t top[3];                /* I2D, D2C, Q2C */
    int64_t lo, hi, backwards;    /* over the requests: first and last phase time; phases whose times go backwards */
    seg_t *segs; size_t nsegs, segcap;
    int32_t *freel; size_t nfree, freecap;
    int in_summary;
    pre_t *ahead; size_t ahead_cap; /* the lines tokenized ahead (below), kept from chunk to chunk */
    btt_t btt;                    /* btt's averages over the same events (_btt.h) */
    colpool pool;                 /* the blocks of a text chunk's columns Python has freed, for the next's (out_pool) */
} Rebuilder;

static int32_t new_seg(Rebuilder *rb) {
    if (rb->nfree) return rb->freel[--rb->nfree];
    if (rb->nsegs == rb->segcap) {
        size_t cap = rb->segcap ? rb->segcap * 2 : 1024;
        seg_t *s = realloc(rb->segs, cap * sizeof(seg_t));
        if (!s) return -1;
        rb->segs = s; rb->segcap = cap;
    }
    return (int32_t)rb->nsegs++;
}
static int free_seg(Rebuilder *rb, int32_t s) {
    if (rb->nfree == rb->freecap) {
        size_t cap = rb->freecap ? rb->freecap * 2 : 1024;
        int32_t *f = realloc(rb->freel, cap * sizeof(int32_t));
        if (!f) return -1;
        rb->freel = f; rb->freecap = cap;
    }
    rb->freel[rb->nfree++] = s;
    return 0;
}
static void end_unregister(Rebuilder *rb, int32_t s) {
    if (rb->segs[s].in_end) { map_remove(&rb->end, rb->segs, s); rb->segs[s].in_end = 0; }
}
static int end_register(Rebuilder *rb, int32_t s) {
    if (rb->end.used * 2 >= rb->end.cap && map_grow(&rb->end, rb->segs)) return -1;
    int32_t old = map_put(&rb->end, rb->segs, s);
    if (old >= 0) rb->segs[old].in_end = 0;
    rb->segs[s].in_end = 1;
    return 0;
}

static int emit_event(out_t *o, const ev_t *v, int64_t line, int64_t req_line) {
    evout_t *e = &o->ev;
    if (ev_room(e)) return -1;
    PUT64(e->line, line); PUT64(e->t_ns, v->t); PUT64(e->pid, v->pid); PUT64(e->sector, v->sector);
    PUT64(e->nsect, v->nsect); PUT64(e->elapsed, v->elapsed); PUT64(e->err, v->err); PUT64(e->from_sector, v->fsec);
    PUT64(e->split_sector, v->ssec); PUT64(e->depth, v->depth); PUT64(e->req_line, req_line);
    PUT32(e->major, v->major); PUT32(e->minor, v->minor); PUT32(e->cpu, v->cpu); PUT32(e->from_major, v->fmaj);
    PUT32(e->from_minor, v->fmin);
    return str_push(&e->action, v->act, v->actn, 1) || str_push(&e->rwbs, v->rwbs, v->rwbsn, 1) ||
           str_push(&e->comm, v->comm, v->commn, v->comm != NULL) || str_push(&e->message, v->msg, v->msgn, v->msg != NULL);
}

static inline int weaker(topent_t a, topent_t b) { return a.v < b.v || (a.v == b.v && a.line > b.line); }
static void heap_offer(heap_t *hp, int64_t v, int64_t line) {
    topent_t x = {v, line};
    size_t i;
    if (hp->n < hp->cap) { /* sift up */
        for (i = hp->n++; i > 0 && weaker(x, hp->h[(i - 1) / 2]); i = (i - 1) / 2) hp->h[i] = hp->h[(i - 1) / 2];
    } else if (hp->cap && weaker(hp->h[0], x)) { /* replaces the root, sifted down */
        for (i = 0;;) {
            size_t c = 2 * i + 1;
            if (c >= hp->n) break;
            if (c + 1 < hp->n && weaker(hp->h[c + 1], hp->h[c])) c++;
            if (!weaker(hp->h[c], x)) break;
            hp->h[i] = hp->h[c]; i = c;
        }
    } else return;
    hp->h[i] = x;
}
/* a request's share of the facts blk.derive needs (what a scan of blk_requests would give) */
static void request_facts(Rebuilder *rb, const seg_t *g) {
    const int64_t *t = g->t;
    for (int i = 0; i < 6; i++) if (t[i] != NUL64) {
        if (rb->lo == NUL64 || t[i] < rb->lo) rb->lo = t[i];
        if (rb->hi == NUL64 || t[i] > rb->hi) rb->hi = t[i];
    }
    static const int pairs[4][2] = {{S_Q, S_G}, {S_G, S_I}, {S_I, S_D}, {S_D, S_C}};
    for (int i = 0; i < 4; i++)
        if (t[pairs[i][0]] != NUL64 && t[pairs[i][1]] != NUL64 && t[pairs[i][1]] < t[pairs[i][0]]) { rb->backwards++; break; }
    static const int metrics[3][2] = {{S_I, S_D}, {S_D, S_C}, {S_Q, S_C}};
    for (int m = 0; m < 3; m++) {
        int64_t a = t[metrics[m][0]], b = t[metrics[m][1]];
        if (a != NUL64 && b != NUL64 && b >= a) heap_offer(&rb->top[m], b - a, g->line);
    }
}

static int emit_seg(Rebuilder *rb, out_t *o, const seg_t *g) {
    if (!g->head && !g->merged && g->t[S_Q] == NUL64) { /* a remap that only passed through: an event */
        if (g->t[S_A] == NUL64) return 0;
        ev_t v = {0};
        v.major = g->major; v.minor = g->minor; v.cpu = g->cpu[S_A]; v.fmaj = g->fmaj; v.fmin = g->fmin;
        v.t = g->t[S_A]; v.pid = g->apid; v.sector = g->sector; v.nsect = g->nsect0; v.fsec = g->fsec;
        v.elapsed = v.err = v.ssec = v.depth = NUL64;
        v.act = "A"; v.actn = 1; v.rwbs = g->rwbs; v.rwbsn = g->rwbsn;
        return emit_event(o, &v, g->ln[S_A], NUL64);
    }
    rqout_t *r = g->merged && !g->head ? &o->bio : &o->rq;
    const int64_t *t = g->t;
    if (r == &o->rq) request_facts(rb, g);
    if (rq_room(r)) return -1;
    PUT64(r->line, g->line); PUT64(r->sector, g->sector); PUT64(r->nsect0, g->nsect0); PUT64(r->nsect, g->nsect);
    PUT64(r->pid, g->pid); PUT64(r->a_ns, t[S_A]); PUT64(r->q_ns, t[S_Q]); PUT64(r->g_ns, t[S_G]);
    PUT64(r->i_ns, t[S_I]); PUT64(r->d_ns, t[S_D]); PUT64(r->c_ns, t[S_C]); PUT64(r->a_line, g->ln[S_A]);
    PUT64(r->q_line, g->ln[S_Q]); PUT64(r->g_line, g->ln[S_G]); PUT64(r->i_line, g->ln[S_I]);
    PUT64(r->d_line, g->ln[S_D]); PUT64(r->c_line, g->ln[S_C]); PUT64(r->d_pid, g->dpid); PUT64(r->error, g->err);
    PUT64(r->from_sector, g->fsec); PUT64(r->merge_ns, g->merge_ns); PUT64(r->merge_line, g->merge_line);
    PUT64(r->t_ns, g->t_first); PUT64(r->req_line, g->req_line);
    PUT32(r->major, g->major); PUT32(r->minor, g->minor); PUT32(r->a_cpu, g->cpu[S_A]); PUT32(r->q_cpu, g->cpu[S_Q]);
    PUT32(r->g_cpu, g->cpu[S_G]); PUT32(r->i_cpu, g->cpu[S_I]); PUT32(r->d_cpu, g->cpu[S_D]);
    PUT32(r->c_cpu, g->cpu[S_C]); PUT32(r->requeues, g->requeues); PUT32(r->from_major, g->fmaj);
    PUT32(r->from_minor, g->fmin); PUT32(r->front, g->front); PUT32(r->merged_bios, g->merged_bios);
    return str_push(&r->rwbs, g->rwbs, g->rwbsn, 1) || str_push(&r->comm, g->comm, g->commn, g->comm_ph < PH_OTHER);
}

static void seg_start(seg_t *g, const ev_t *v, int64_t line) {
    memset(g, 0, sizeof *g);
    g->sector = v->sector; g->major = v->major; g->minor = v->minor; g->line = line; g->t_first = v->t;
    g->nsect0 = v->nsect; g->nsect = v->nsect;
    g->pid = g->dpid = g->err = g->fsec = g->merge_ns = g->merge_line = g->req_line = NUL64;
    g->end = v->sector + v->nsect;
    for (int i = 0; i < 6; i++) { g->t[i] = NUL64; g->ln[i] = NUL64; g->cpu[i] = -1; }
    g->fmaj = g->fmin = -1;
    g->pid_ph = g->rwbs_ph = g->comm_ph = PH_OTHER;
}

static int phase_of(const ev_t *v) {
    if (v->actn != 1 || v->sector == NUL64 || v->nsect == NUL64 || v->nsect <= 0) return PH_OTHER;
    switch (v->act[0]) {
    case 'A': return PH_A; case 'Q': return PH_Q; case 'G': return PH_G; case 'M': case 'F': return PH_M;
    case 'I': return PH_I; case 'D': return PH_D; case 'R': return PH_R; case 'C': return PH_C;
    default: return PH_OTHER;
    }
}

/* closes segment s: emits it and forgets it */
static int close_seg(Rebuilder *rb, out_t *o, int32_t s) {
    end_unregister(rb, s);
    map_remove(&rb->start, rb->segs, s);
    return emit_seg(rb, o, &rb->segs[s]) || free_seg(rb, s);
}

/* A bio merged into a request that is still open: back (M) onto the one ending where it starts,
 * front (F) onto the one starting where it ends, which then starts at the bio's sector. */
static int attach_bio(Rebuilder *rb, out_t *o, int32_t bio) {
    seg_t *b = &rb->segs[bio];
    int32_t maj = b->major, mn = b->minor, t = -1;
    int64_t s2 = b->sector, n2 = b->nsect0 > 0 ? b->nsect0 : 0;
    if (b->front) {
        long f = map_find(&rb->start, rb->segs, maj, mn, s2 + n2);
        if (f >= 0 && rb->segs[rb->start.slots[f]].head && rb->segs[rb->start.slots[f]].t[S_D] == NUL64) t = rb->start.slots[f];
    } else if (rb->end.cap) {
        long f = map_find(&rb->end, rb->segs, maj, mn, s2);
        if (f >= 0) t = rb->end.slots[f];
    }
    if (t >= 0 && t != bio) b->req_line = rb->segs[t].line;
    if (close_seg(rb, o, bio)) return -1; /* frees the bio's start key for a front-merged request */
    if (t < 0 || t == bio) return 0;
    seg_t *g = &rb->segs[t];
    g->merged_bios++;
    if (!g->sized) g->nsect += n2;
    end_unregister(rb, t);
    if (b->front) {
        map_remove(&rb->start, rb->segs, t);
        g->sector = s2;
        int32_t other = map_put(&rb->start, rb->segs, t);
        if (other >= 0) { /* an older segment on that sector: it ends here */
            end_unregister(rb, other);
            if (emit_seg(rb, o, &rb->segs[other]) || free_seg(rb, other)) return -1;
        }
    } else g->end += n2;
    return end_register(rb, t);
}

/* A D (or C) whose range goes past its request's end: the other open requests that lie within its range, inserted
 * and not dispatched (dispatched and not completed), are dispatched (completed) by it too, as the block layer does
 * when it merges requests without a trace event (and as btt counts them). Their starts are looked up sector by
 * sector from the first request's end, at most COVER_PROBES sectors. Returns how many, or -1 on memory failure. */
#define COVER_PROBES 65536
static int cover(Rebuilder *rb, out_t *o, const ev_t *v, int64_t line, int32_t s, int64_t from) {
    int64_t end = v->sector + v->nsect;
    int is_d = v->act[0] == 'D', n = 0, slot = is_d ? S_D : S_C;
    for (int64_t sec = from, probes = 0; sec < end && probes < COVER_PROBES; probes++) {
        long f = map_find(&rb->start, rb->segs, v->major, v->minor, sec);
        int32_t h = f >= 0 ? rb->start.slots[f] : -1;
        seg_t *x = h >= 0 && h != s ? &rb->segs[h] : NULL;
        if (!x || !x->head || x->nsect <= 0 || x->sector + x->nsect > end || x->t[slot] != NUL64 ||
            (!is_d && x->t[S_D] == NUL64)) { sec++; continue; }
        x->t[slot] = v->t; x->ln[slot] = line; x->cpu[slot] = v->cpu; x->sized = 1;
        x->last_ph = (int8_t)(is_d ? PH_D : PH_C); x->last_act = v->act[0];
        sec = x->sector + x->nsect;
        n++;
        if (is_d) { x->dpid = v->pid; end_unregister(rb, h); }
        else { x->err = v->err; if (close_seg(rb, o, h)) return -1; }
    }
    return n;
}

/* A split (X `sector / split_sector`): the block layer cuts the queued bio at split_sector and the two halves go
 * their ways (G I D C each) from the one Q. The bio open at `sector` (the parent, queued, not yet past G) keeps the
 * first half; the second half is a request of its own at split_sector, queued when the parent was (its A and Q: time,
 * line, CPU), by the same task, its line the X's. The X event names the parent (req_line). A split of no open queued
 * bio, or onto a sector where a request is already open, is kept as an event only. */
static int split(Rebuilder *rb, out_t *o, const ev_t *v, int64_t line) {
    if (v->sector == NUL64 || v->ssec == NUL64 || !rb->start.cap) return emit_event(o, v, line, NUL64);
    long f = map_find(&rb->start, rb->segs, v->major, v->minor, v->sector);
    if (f < 0) return emit_event(o, v, line, NUL64);
    int32_t p = rb->start.slots[f];
    seg_t *g = &rb->segs[p];
    int64_t parent_line = g->line, end = g->sector + g->nsect;
    if (g->t[S_Q] == NUL64 || g->head || g->merged || v->ssec <= g->sector || v->ssec >= end)
        return emit_event(o, v, line, parent_line);
    if (rb->start.used * 2 >= rb->start.cap && map_grow(&rb->start, rb->segs)) return -1;
    if (map_find(&rb->start, rb->segs, v->major, v->minor, v->ssec) >= 0) return emit_event(o, v, line, parent_line);
    int32_t s = new_seg(rb);
    if (s < 0) return -1;
    g = &rb->segs[p]; /* (new_seg may move the segments) */
    seg_t *h = &rb->segs[s];
    ev_t half = *v;
    half.sector = v->ssec; half.nsect = end - v->ssec;
    seg_start(h, &half, line);
    h->t_first = g->t_first;
    for (int k = S_A; k <= S_Q; k++) { h->t[k] = g->t[k]; h->ln[k] = g->ln[k]; h->cpu[k] = g->cpu[k]; }
    h->fmaj = g->fmaj; h->fmin = g->fmin; h->fsec = g->fsec; h->apid = g->apid;
    h->pid = g->pid; h->pid_ph = g->pid_ph;
    memcpy(h->comm, g->comm, g->commn); h->commn = g->commn; h->comm_ph = g->comm_ph;
    memcpy(h->rwbs, g->rwbs, g->rwbsn); h->rwbsn = g->rwbsn; h->rwbs_ph = g->rwbs_ph;
    h->last_ph = g->last_ph; h->last_act = g->last_act;
    if (map_put(&rb->start, rb->segs, s) >= 0) return -1;
    g->nsect = v->ssec - g->sector; /* the parent keeps the first half */
    return emit_event(o, v, line, parent_line);
}

/* A remap from (fmaj,fmin) fsec: the remap before it in a stack (dm -> partition -> disk) was the A that put the
 * bio at fsec, printed on the source device (`8,2 A <- (253,0)` then `8,0 A <- (8,2)`) or on this one (`259,0 A
 * <- (253,3)` then `259,0 A <- (259,3)`). That A only passed through: no Q follows it on its key, so it is emitted
 * now (as finish() would, the same event) instead of being held until the trace ends — one per LVM or dm-crypt
 * bio, which grew the parser's memory with the file (~0.25 byte per byte of such a capture). Returns -1 on memory
 * failure. */
static int passed_through(Rebuilder *rb, out_t *o, const ev_t *v) {
    int32_t maj[2] = {v->fmaj, v->major}, mn[2] = {v->fmin, v->minor};
    for (int k = 0; k < 2; k++) {
        if (k == 1 && maj[1] == maj[0] && mn[1] == mn[0]) break;
        if (maj[k] == v->major && mn[k] == v->minor && v->fsec == v->sector) continue; /* its own key */
        long f = map_find(&rb->start, rb->segs, maj[k], mn[k], v->fsec);
        if (f < 0) continue;
        int32_t s = rb->start.slots[f];
        const seg_t *g = &rb->segs[s];
        if (g->last_act == 'A' && g->t[S_Q] == NUL64 && !g->head && !g->merged && close_seg(rb, o, s)) return -1;
    }
    return 0;
}

/* folds one event into the open requests; returns -1 on memory failure */
static int fold(Rebuilder *rb, out_t *o, const ev_t *v, int64_t line) {
    btt_event(&rb->btt, v->act, v->actn, v->major, v->minor, v->t, v->pid, v->sector, v->nsect, v->fmaj, v->fmin,
              v->fsec);
    if (rb->btt.failed) return -1;
    int ph = phase_of(v);
    if (ph == PH_OTHER && v->actn == 1 && v->act[0] == 'X') return split(rb, o, v, line);
    if (ph == PH_OTHER) return emit_event(o, v, line, NUL64);
    if (rb->start.used * 2 >= rb->start.cap && map_grow(&rb->start, rb->segs)) return -1;
    if (ph == PH_A && v->fmaj >= 0 && v->fsec != NUL64 && passed_through(rb, o, v)) return -1;
    long f = map_find(&rb->start, rb->segs, v->major, v->minor, v->sector);
    char act = v->act[0];
    int32_t s;
    if (f >= 0) {
        s = rb->start.slots[f];
        seg_t *g = &rb->segs[s];
        int fresh = act == 'A' || (act == 'Q' && g->last_act != 'A') ||
                    (ph <= g->last_ph && g->last_act != 'R' && g->last_act != 'A');
        if (fresh) {
            if (close_seg(rb, o, s)) return -1;
            f = -1;
        }
    }
    if (f < 0) {
        if (ph == PH_R) return emit_event(o, v, line, NUL64); /* a requeue of a request not in the trace */
        if ((s = new_seg(rb)) < 0) return -1;
        seg_start(&rb->segs[s], v, line);
        if (map_put(&rb->start, rb->segs, s) >= 0) return -1;
    }
    seg_t *g = &rb->segs[s];
    int slot = -1;
    switch (ph) {
    case PH_A: slot = S_A; g->fmaj = v->fmaj; g->fmin = v->fmin; g->fsec = v->fsec; g->apid = v->pid; break;
    case PH_Q: slot = S_Q; break;
    case PH_G: slot = S_G; break;
    case PH_I: slot = S_I; break;
    case PH_D: slot = S_D; break;
    case PH_C: slot = S_C; g->err = v->err; break;
    case PH_M: g->merge_ns = v->t; g->merge_line = line; g->merged = 1; g->front = act == 'F'; break;
    case PH_R: g->requeues++; break;
    }
    if (ph == PH_R || (slot >= 0 && slot != S_D && g->t[slot] != NUL64)) {
        if (emit_event(o, v, line, g->line)) return -1; /* requeue, or a phase seen again */
    } else if (slot >= 0) {
        if (slot == S_D && g->t[S_D] != NUL64) { /* dispatched again after a requeue: keep the last */
            ev_t old = *v; old.t = g->t[S_D]; old.cpu = g->cpu[S_D]; old.pid = g->dpid; old.comm = NULL; old.commn = 0;
            if (emit_event(o, &old, g->ln[S_D], g->line)) return -1;
        }
        g->t[slot] = v->t; g->ln[slot] = line; g->cpu[slot] = v->cpu;
        if (slot == S_D) g->dpid = v->pid;
    }
    if (ph >= PH_G && ph != PH_M && ph != PH_R) g->head = 1;
    int covered = 0; /* a D or C past the request's end: the requests it covers too (cover()) */
    if ((ph == PH_D || ph == PH_C) && g->ln[ph == PH_D ? S_D : S_C] == line && g->head && g->nsect > 0 &&
        v->sector + v->nsect > g->sector + g->nsect) {
        if ((covered = cover(rb, o, v, line, s, g->sector + g->nsect)) < 0) return -1;
        g = &rb->segs[s];
    }
    if (ph == PH_D || ph == PH_C) { /* the request's final size: from its dispatch/completion (unless it covers others) */
        if (!covered && (!g->sized || v->nsect > g->nsect)) g->nsect = v->nsect;
        g->sized = 1;
    } else if (!g->sized && v->nsect > g->nsect) g->nsect = v->nsect;
    if (ph >= PH_Q && ph <= PH_D && ph != PH_M && ph < g->pid_ph) { g->pid = v->pid; g->pid_ph = (int8_t)ph; }
    if (ph >= PH_Q && ph <= PH_D && ph != PH_M && v->comm && ph < g->comm_ph) {
        size_t n = v->commn < COMM_MAX ? v->commn : COMM_MAX;
        memcpy(g->comm, v->comm, n); g->commn = (uint8_t)n; g->comm_ph = (int8_t)ph;
    }
    if (ph < g->rwbs_ph && ph != PH_C) {
        size_t n = v->rwbsn < 8 ? v->rwbsn : 8;
        memcpy(g->rwbs, v->rwbs, n); g->rwbsn = (uint8_t)n; g->rwbs_ph = (int8_t)ph;
    }
    if (g->rwbs_ph == PH_OTHER && g->rwbsn == 0) { size_t n = v->rwbsn < 8 ? v->rwbsn : 8; memcpy(g->rwbs, v->rwbs, n); g->rwbsn = (uint8_t)n; }
    g->last_ph = (int8_t)ph; g->last_act = act;
    if ((ph == PH_G || ph == PH_I) && !g->in_end && g->t[S_D] == NUL64) { /* a request that can take merges */
        g->end = g->sector + g->nsect;
        if (end_register(rb, s)) return -1;
    }
    if (ph == PH_D) end_unregister(rb, s); /* issued: no more merges */
    if (ph == PH_M && !g->head) return attach_bio(rb, o, s);
    if (ph == PH_C) return close_seg(rb, o, s); /* complete: emit and forget */
    return 0;
}

/* ---- lines tokenized ahead, in a second thread: _blkparse_ahead.h ---------------------------- */

#include "_blkparse_ahead.h"

/* ---- blktrace binary records read straight into the columns: _blkparse_binary.h ------------------ */

#include "_blkparse_binary.h"

/* one line's outcome into the output: 0, or -1 on memory failure */
static int take(Rebuilder *rb, out_t *o, ev_t *v, int rc, const char *s, const char *p, const char *e, int64_t lineno) {
    o->lines++;
    if (rc == 0) { o->parsed++; return fold(rb, o, v, lineno); }
    if (rc < 0) { o->ignored++; return 0; }
    return i64(&o->sk.line, lineno) || i64(&o->sk.start, p - s) || i64(&o->sk.len, e - p) || i32(&o->sk.reason, rc);
}

/* the line number of the chunk's k-th line (from 0): lines[k] when the caller gave them, else first + k */
static inline int64_t line_at(const int64_t *lines, int64_t first, size_t k) { return lines ? lines[k] : first + (int64_t)k; }

static PyObject *rb_feed(Rebuilder *rb, PyObject *args) {
    Py_buffer buf, numbers = {0};
    long long first_line;
    if (!PyArg_ParseTuple(args, "y*L|y*", &buf, &first_line, &numbers)) return NULL;
    if (numbers.buf && numbers.len % (Py_ssize_t)sizeof(int64_t)) {
        PyBuffer_Release(&buf);
        PyBuffer_Release(&numbers);
        return PyErr_Format(PyExc_ValueError, "lines: int64 line numbers expected (%zd bytes)", numbers.len);
    }
    const int64_t *lines = numbers.buf;
    size_t nlines = numbers.buf ? (size_t)numbers.len / sizeof(int64_t) : 0;
    const char *s = buf.buf, *end = s + buf.len;
    out_t o;
    out_init(&o, (size_t)buf.len / 320); /* a request spans ~5 lines of ~70 bytes */
    out_pool(&o, &rb->pool, (PyObject *)rb);
    int failed = 0, too_few = 0;
    size_t k = 0; /* the chunk's lines so far */
    ev_t v;
    Py_BEGIN_ALLOW_THREADS
    /* the head: the first ~40 %, which this thread also folds (the fold costs about half of a tokenizing) */
    const char *cut = end;
    tail_t tail = {.lines = rb->ahead, .cap = rb->ahead_cap}; /* its buffer reused: no fresh pages per chunk */
    pthread_t worker;
    int split = 0;
    if (buf.len >= SPLIT_MIN) {
        const char *nl = memchr(s + buf.len * 2 / 5, '\n', end - (s + buf.len * 2 / 5));
        if (nl && nl + 1 < end) {
            cut = nl + 1;
            tail.from = cut; tail.to = end;
            split = pthread_create(&worker, NULL, tokenize_tail, &tail) == 0;
            if (!split) cut = end;
        }
    }
    for (const char *p = s; p < cut; k++) {
        const char *nl = memchr(p, '\n', cut - p), *e = nl ? nl : cut;
        if (lines && k >= nlines) { too_few = 1; break; }
        int64_t lineno = line_at(lines, first_line, k);
        int rc = parse_line(&v, p, e, &rb->in_summary);
        if (take(rb, &o, &v, rc, s, p, e, lineno)) { failed = 1; break; }
        if (!nl) break;
        p = nl + 1;
    }
    if (split) {
        pthread_join(worker, NULL);
        failed = failed || tail.failed;
        for (size_t i = 0; i < tail.n && !failed && !too_few; i++, k++) {
            pre_t *x = &tail.lines[i];
            if (lines && k >= nlines) { too_few = 1; break; }
            int64_t lineno = line_at(lines, first_line, k);
            int rc = x->rc;
            if (rc == REDO) rc = parse_line(&x->v, x->p, x->e, &rb->in_summary);
            else if (x->state >= 0) rb->in_summary = x->state;
            if (take(rb, &o, &x->v, rc, s, x->p, x->e, lineno)) failed = 1;
        }
    }
    rb->ahead = tail.lines; rb->ahead_cap = tail.cap;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (numbers.buf) PyBuffer_Release(&numbers);
    PyObject *d = failed    ? PyErr_NoMemory()
                  : too_few ? PyErr_Format(PyExc_ValueError, "the chunk has more lines than the %zu line numbers given",
                                           nlines)
                            : to_dict(&o);
    out_free(&o);
    return d;
}

static PyObject *rb_finish(Rebuilder *rb, PyObject *Py_UNUSED(ignored)) {
    out_t o;
    out_init(&o, rb->start.used);
    int failed = 0;
    for (size_t i = 0; i < rb->start.cap && !failed; i++)
        if (rb->start.slots[i] >= 0) { failed = emit_seg(rb, &o, &rb->segs[rb->start.slots[i]]); rb->start.slots[i] = -1; }
    for (size_t i = 0; i < rb->end.cap; i++) rb->end.slots[i] = -1;
    rb->start.used = rb->end.used = 0; rb->nsegs = 0; rb->nfree = 0;
    PyObject *d = failed ? PyErr_NoMemory() : to_dict(&o);
    out_free(&o);
    return d;
}

static PyObject *rb_open(Rebuilder *rb, PyObject *Py_UNUSED(ignored)) { return PyLong_FromSize_t(rb->start.used); }

static PyObject *opt64(int64_t v) { if (v == NUL64) Py_RETURN_NONE; return PyLong_FromLongLong(v); }
/* {"lo", "hi", "backwards", "i2d", "d2c", "q2c"}: the slowest requests' lines per metric, slowest first */
static PyObject *rb_facts(Rebuilder *rb, PyObject *Py_UNUSED(ignored)) {
    static const char *names[3] = {"i2d", "d2c", "q2c"};
    PyObject *d = Py_BuildValue("{s:N,s:N,s:L}", "lo", opt64(rb->lo), "hi", opt64(rb->hi), "backwards",
                                (long long)rb->backwards);
    for (int m = 0; m < 3 && d; m++) {
        heap_t *hp = &rb->top[m];
        topent_t *v = malloc((hp->n ? hp->n : 1) * sizeof *v);
        PyObject *l = v ? PyList_New((Py_ssize_t)hp->n) : PyErr_NoMemory();
        if (l) {
            memcpy(v, hp->h, hp->n * sizeof *v);
            for (size_t k = hp->n; k > 0; k--) { /* pops the weakest: the list fills from its end */
                topent_t x = v[0], last = v[k - 1];
                size_t i = 0;
                for (;;) { /* sift `last` down over the k - 1 left */
                    size_t c = 2 * i + 1;
                    if (c >= k - 1) break;
                    if (c + 1 < k - 1 && weaker(v[c + 1], v[c])) c++;
                    if (!weaker(v[c], last)) break;
                    v[i] = v[c]; i = c;
                }
                v[i] = last;
                PyObject *n = PyLong_FromLongLong(x.line);
                if (!n) { Py_CLEAR(l); break; }
                PyList_SET_ITEM(l, (Py_ssize_t)k - 1, n);
            }
        }
        free(v);
        if (!l || PyDict_SetItemString(d, names[m], l)) { Py_XDECREF(l); Py_CLEAR(d); break; }
        Py_DECREF(l);
    }
    return d;
}

static int rb_init(Rebuilder *rb, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"top", NULL};
    Py_ssize_t top = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|n", kwlist, &top)) return -1;
    if (top < 0) { PyErr_SetString(PyExc_ValueError, "top must be >= 0"); return -1; }
    rb->lo = rb->hi = NUL64; rb->backwards = 0;
    for (int m = 0; m < 3; m++) {
        free(rb->top[m].h);
        rb->top[m].n = 0; rb->top[m].cap = (size_t)top;
        if (!(rb->top[m].h = malloc((top ? top : 1) * sizeof(topent_t)))) { PyErr_NoMemory(); return -1; }
    }
    rb->in_summary = 0;
    rb->end.by_end = 1;
    if (map_grow(&rb->start, rb->segs) || map_grow(&rb->end, rb->segs)) { PyErr_NoMemory(); return -1; }
    return 0;
}
/* [(major, minor, pid or None, metric, n, min, max, total)]: btt's sums per device and pid of the Q (_btt.h) */
static PyObject *rb_btt(Rebuilder *rb, PyObject *Py_UNUSED(ignored)) {
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < rb->btt.acccap; i++) {
        const bt_acc_t *e = &rb->btt.acc[i];
        if (!e->used) continue;
        const bt_dev_t *d = &rb->btt.devs[e->dev];
        for (int m = 0; m < BT_METRICS; m++) {
            const bt_avg_t *a = &e->a[m];
            if (!a->n) continue;
            PyObject *pid = e->pid < 0 ? Py_NewRef(Py_None) : PyLong_FromLongLong(e->pid);
            PyObject *row = pid ? Py_BuildValue("(iiNsLLLL)", d->major, d->minor, pid, BT_NAMES[m], (long long)a->n,
                                                (long long)a->min, (long long)a->max, (long long)a->total) : NULL;
            if (!row || PyList_Append(l, row)) { Py_XDECREF(row); Py_CLEAR(l); break; }
            Py_DECREF(row);
        }
    }
    return l;
}

static void rb_dealloc(Rebuilder *rb) {
    btt_free(&rb->btt);
    free(rb->start.slots); free(rb->end.slots); free(rb->segs); free(rb->freel); free(rb->ahead);
    for (int m = 0; m < 3; m++) free(rb->top[m].h);
    pool_clear(&rb->pool);
    Py_TYPE(rb)->tp_free((PyObject *)rb);
}

static PyMethodDef rb_methods[] = {
    {"feed", (PyCFunction)rb_feed, METH_VARARGS,
     "feed(chunk, first_line[, lines]) -> dict of column buffers (lines: int64 line numbers, one per line)"},
    {"finish", (PyCFunction)rb_finish, METH_NOARGS, "finish() -> dict: the requests still open, emitted"},
    {"read", (PyCFunction)rb_read, METH_VARARGS,
     "read(records, max_lines) -> dict of column buffers (and sk_text), or None when a stream needs bytes"},
    {"open_requests", (PyCFunction)rb_open, METH_NOARGS, "how many requests are in flight"},
    {"btt", (PyCFunction)rb_btt, METH_NOARGS,
     "btt() -> [(major, minor, pid or None, metric, n, min, max, total)]: btt's sums so far, per device and pid of"
     " the Q (pid None: the device's Q2Q)"},
    {"facts", (PyCFunction)rb_facts, METH_NOARGS,
     "facts() -> dict over the requests emitted: lo, hi (first and last phase time), backwards (requests with a phase"
     " earlier than the one before), i2d/d2c/q2c (the lines of the `top` slowest, slowest first; ties: line)"},
    {NULL, NULL, 0, NULL},
};
static PyTypeObject RebuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "parsers._blkparse.Rebuilder",
    .tp_basicsize = sizeof(Rebuilder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)rb_init,
    .tp_dealloc = (destructor)rb_dealloc,
    .tp_methods = rb_methods,
    .tp_doc = "Streams blkparse text into block requests and other events.",
};
static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT, .m_name = "_blkparse", .m_doc = "blkparse text -> block requests", .m_size = -1};
PyMODINIT_FUNC PyInit__blkparse(void) {
    if (PyType_Ready(&RebuilderType) < 0 || PyType_Ready(&RecordsType) < 0 || PyType_Ready(&colbuf_type) < 0 ||
        PyType_Ready(&poolcol_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    BlktraceError = PyErr_NewException("parsers._blkparse.BlktraceError", PyExc_ValueError, NULL);
    if (!BlktraceError || PyModule_AddObjectRef(m, "Rebuilder", (PyObject *)&RebuilderType) < 0 ||
        PyModule_AddObjectRef(m, "Records", (PyObject *)&RecordsType) < 0 ||
        PyModule_AddObject(m, "BlktraceError", BlktraceError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
