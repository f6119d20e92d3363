/*
 * Tokenizer of `perf script` text (see parsers/perf.py for the lines it reads and the tables it fills): each line
 * read once, in file order, into the columns of sched_switch, sched_wakeup and trace_events (a call chain becomes the
 * kernel_stack / user_stack events ftrace's -T would have written after its event) and the blkparse lines its block
 * events stand for (parsers/_blkparse.c rebuilds the requests from them).
 *
 *   new_state() -> capsule                      what lives across chunks: the call chain being read, counters
 *   tokenize(state, chunk, first_line[, max_skips]) -> dict
 *                                               one chunk of whole lines -> column buffers (and the chunk's
 *                                               blkparse text, a line per perf line; its first max_skips skipped
 *                                               lines, 64 by default: the report keeps 20)
 *   finish(state) -> dict                       the stack events of the last call chain
 *
 * A line gives what parsers/perf_python.py (the Python reader it replaced, kept as the reference) gives, down to the
 * same bytes in every column and the same skip reason: its regular expressions' backtracking is followed step by step
 * (_perf_line.h, _perf_text.h). Every column is a read-only buffer object (_colbuf.h): int64 / int32 values, a
 * validity bitmap when some are null, a bool column's values as bits, strings as int32 offsets + UTF-8 data.
 * Input is untrusted: every scan is bounded by its line's end; a stack's text is capped (MAX_STACK_TEXT).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_colbuf.h"
#include "_text.h"
#include "_perf_text.h"
#include "_perf_line.h"

#define MAX_STACK_TEXT (256 << 10) /* bytes of one stack event's text; frames past it are dropped (counted) */

enum reason { R_LINE = 1, R_SWITCH, R_WAKE, R_BLOCK, R_ORPHAN };

/* ---------------------------------------------------------------- output columns */
typedef struct { buf_t v, ok; int64_t nulls; } ncol;        /* values; a validity byte per row when nullable */
typedef struct { buf_t off, data, ok; int64_t nulls; } scol; /* Arrow strings; a validity byte per row */

typedef struct {
    ncol s_line, s_t, s_cpu, s_ppid, s_pprio, s_npid, s_nprio; scol s_pcomm, s_pstate, s_ncomm; int64_t ns;
    ncol w_line, w_t, w_cpu, w_wpid, w_pid, w_prio, w_tcpu, w_succ; scol w_event, w_wcomm, w_comm; int64_t nw;
    ncol e_line, e_t, e_cpu, e_pid; scol e_comm, e_event, e_text; int64_t ne, counted;
    buf_t k_line, k_start, k_len, k_reason; int64_t nk, nk_more, nk_max; /* skipped lines: nk_max listed, the rest counted */
    buf_t blk; int64_t blk_nl; /* the chunk's blkparse text, and the newlines not yet written to it */
    int oom;
} out_t;

static inline void nput64(out_t *o, ncol *c, int64_t v) { if (put64(&c->v, v)) o->oom = 1; }
static inline void nput32(out_t *o, ncol *c, int32_t v) { if (put32(&c->v, v)) o->oom = 1; }
/* a nullable column's value (ignored when !valid) */
static inline void nput32_opt(out_t *o, ncol *c, int32_t v, int valid) {
    if (put32(&c->v, valid ? v : 0) || put8(&c->ok, (uint8_t)(valid != 0))) o->oom = 1;
    c->nulls += !valid;
}
static inline void nbool_opt(out_t *o, ncol *c, int v, int valid) {
    if (put8(&c->v, (uint8_t)(valid && v)) || put8(&c->ok, (uint8_t)(valid != 0))) o->oom = 1;
    c->nulls += !valid;
}
/* a string: [p, p+n) as it is (valid UTF-8), or decoded as Python's "replace" does (decode) */
static inline void sput(out_t *o, scol *c, const char *p, size_t n, int valid, int decode) {
    if (c->off.len == 0 && put32(&c->off, 0)) { o->oom = 1; return; }
    int bad = valid && (decode ? put_decoded(&c->data, p, n) : buf_put(&c->data, p, n));
    if (bad || c->data.len > (size_t)INT32_MAX || put32(&c->off, (int32_t)c->data.len) ||
        put8(&c->ok, (uint8_t)(valid != 0)))
        o->oom = 1;
    c->nulls += !valid;
}

static void ncol_free(ncol *c) { buf_free(&c->v); buf_free(&c->ok); }
static void scol_free(scol *c) { buf_free(&c->off); buf_free(&c->data); buf_free(&c->ok); }
static void out_free(out_t *o) {
    ncol *n[] = {&o->s_line, &o->s_t, &o->s_cpu, &o->s_ppid, &o->s_pprio, &o->s_npid, &o->s_nprio, &o->w_line,
                 &o->w_t, &o->w_cpu, &o->w_wpid, &o->w_pid, &o->w_prio, &o->w_tcpu, &o->w_succ, &o->e_line, &o->e_t,
                 &o->e_cpu, &o->e_pid};
    scol *s[] = {&o->s_pcomm, &o->s_pstate, &o->s_ncomm, &o->w_event, &o->w_wcomm, &o->w_comm,
                 &o->e_comm, &o->e_event, &o->e_text};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) ncol_free(n[i]);
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) scol_free(s[i]);
    buf_t *b[] = {&o->k_line, &o->k_start, &o->k_len, &o->k_reason, &o->blk};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) buf_free(b[i]);
}

/* ---------------------------------------------------------------- state */
typedef struct {
    /* the call chain being read: its event's line + 1, time, CPU, task; its kernel and user stacks' text so far */
    int chain, c_big; int64_t c_line, c_t, c_pid; int32_t c_cpu; int c_has_cpu, c_has_comm;
    buf_t c_comm, kern, user; int64_t kern_syms, user_syms, user_found, kern_lines;
    int orphan; /* in call-chain lines that follow no event (the first one reported) */
    int64_t n_events, n_frames, n_block, n_cut;
    buf_t text; /* an event's text decoded, when it is not ASCII */
} state_t;

static void state_free(state_t *st) {
    if (!st) return;
    buf_free(&st->c_comm); buf_free(&st->kern); buf_free(&st->user); buf_free(&st->text);
    free(st);
}

/* ---------------------------------------------------------------- rows */
static void skipped(out_t *o, int reason, int64_t line, int64_t start, int64_t len) {
    if (o->nk >= o->nk_max) { o->nk_more++; return; }
    if (put64(&o->k_line, line) || put64(&o->k_start, start) || put64(&o->k_len, len) || put32(&o->k_reason, reason))
        o->oom = 1;
    else o->nk++;
}

static inline int span_is(span_t s, const char *lit) { size_t n = strlen(lit); return s.n == n && memcmp(s.p, lit, n) == 0; }

/* a trace_events row (text: valid UTF-8, or decoded here when `decode`) */
static void event_row(out_t *o, int64_t line, int64_t t, int32_t cpu, int has_cpu, int64_t pid, const buf_t *comm,
                      int has_comm, const char *ev, size_t evn, const char *text, size_t textn, int decode) {
    nput64(o, &o->e_line, line); nput64(o, &o->e_t, t); nput32_opt(o, &o->e_cpu, cpu, has_cpu); nput64(o, &o->e_pid, pid);
    sput(o, &o->e_comm, comm->p, comm->len, has_comm, 0);
    sput(o, &o->e_event, ev, evn, 1, 0);
    sput(o, &o->e_text, text, textn, 1, decode);
    o->ne++;
    if (!((evn == 12 && memcmp(ev, "kernel_stack", 12) == 0) || (evn == 10 && memcmp(ev, "user_stack", 10) == 0)))
        o->counted++;
}

/* the stack events of the chain read so far (kernel, then user at the line of its first frame); the chain ends */
static void end_chain(state_t *st, out_t *o) {
    if (!st->chain) return;
    st->chain = 0;
    if (st->c_big) return; /* a number of its event's header does not fit its column: no rows */
    if (st->kern_syms)
        event_row(o, st->c_line, st->c_t, st->c_cpu, st->c_has_cpu, st->c_pid, &st->c_comm, st->c_has_comm,
                  "kernel_stack", 12, st->kern.p, st->kern.len, 1);
    if (st->user_syms)
        event_row(o, st->c_line + st->kern_lines, st->c_t, st->c_cpu, st->c_has_cpu, st->c_pid, &st->c_comm,
                  st->c_has_comm, "user_stack", 10, st->user.p, st->user.len, 1);
}

static void add_symbol(state_t *st, out_t *o, buf_t *b, int64_t *n, const char *title, span_t sym) {
    size_t sep = *n ? 4 : strlen(title);
    if (b->len + sep + sym.n > MAX_STACK_TEXT) { st->n_cut++; return; }
    if (buf_put(b, *n ? "\n=> " : title, sep) || buf_put(b, sym.p, sym.n)) o->oom = 1;
    (*n)++;
}

/* a call-chain line of the chain, content [c, e): a kernel frame while the batch's leading run of kernel frames lasts
 * (*in_run), else a user frame */
static inline void chain_line(state_t *st, out_t *o, const char *c, const char *e, int *in_run) {
    span_t sym;
    const char *x = hex_end(c, e);
    st->n_frames++;
    if (*in_run && kernel_frame(c, x, e)) {
        st->kern_lines++;
        if (read_frame(c, x, e, &sym) == 0) add_symbol(st, o, &st->kern, &st->kern_syms, "<stack trace>\n=> ", sym);
        return;
    }
    *in_run = 0;
    if (read_frame(c, x, e, &sym) == 0) {
        st->user_found++;
        add_symbol(st, o, &st->user, &st->user_syms, "<user stack trace>\n=> ", sym);
    }
}

static inline void blk_newlines(out_t *o) {
    if (!o->blk_nl) return;
    if (buf_reserve(&o->blk, (size_t)o->blk_nl)) { o->oom = 1; return; }
    memset(o->blk.p + o->blk.len, '\n', (size_t)o->blk_nl);
    o->blk.len += (size_t)o->blk_nl;
    o->blk_nl = 0;
}
static inline void blk_put(out_t *o, const void *p, size_t n) { if (buf_put(&o->blk, p, n)) o->oom = 1; }
static inline void blk_int(out_t *o, int64_t v, const char *fmt) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, fmt, (long long)v);
    blk_put(o, tmp, (size_t)n);
}
/* whether s is `-?\d+` whole */
static inline int is_int_text(span_t s) {
    size_t i = s.n && s.p[0] == '-';
    if (i == s.n) return 0;
    for (; i < s.n; i++) if (!is_digit(s.p[i])) return 0;
    return 1;
}

/* the blkparse line of a block request event: `maj,min cpu seq s.ns pid A rwbs sector + n [tail]` */
static void block_line(state_t *st, out_t *o, const head_t *h, char action, const block_t *f) {
    st->n_block++;
    blk_newlines(o);
    blk_put(o, f->maj.p, f->maj.n); blk_put(o, ",", 1); blk_put(o, f->min.p, f->min.n);
    blk_int(o, h->has_cpu ? h->cpu : 0, " %lld");
    blk_int(o, st->n_block, " %lld");
    blk_put(o, " ", 1); blk_put(o, h->sec.p, h->sec.n);
    blk_int(o, h->frac_ns, ".%09lld");
    blk_int(o, h->pid, " %lld");
    char act[3] = {' ', action, ' '};
    blk_put(o, act, 3); blk_put(o, f->rwbs.p, f->rwbs.n);
    blk_put(o, " ", 1); blk_put(o, f->sector.p, f->sector.n); blk_put(o, " + ", 3); blk_put(o, f->n.p, f->n.n);
    blk_put(o, " [", 2);
    if (action == 'C') { /* the tail is the error */
        if (f->has_tail && is_int_text(f->tail)) blk_put(o, f->tail.p, f->tail.n);
        else blk_put(o, "0", 1);
    } else if (f->has_tail && f->tail.n) blk_put(o, f->tail.p, f->tail.n);
    else if (st->c_has_comm) blk_put(o, st->c_comm.p, st->c_comm.len);
    blk_put(o, "]", 1);
}

/* an event header's line [lp, le): its row (or the reason its fields were not read; a header number too large for
 * a row that holds it: the line is skipped), its blkparse line, a new chain */
static void on_event(state_t *st, out_t *o, const head_t *h, int64_t line, const char *chunk, const char *lp,
                     const char *le) {
    st->n_events++;
    st->c_comm.len = 0;
    if (h->has_comm && put_decoded(&st->c_comm, h->comm.p, h->comm.n)) o->oom = 1;
    st->c_has_comm = h->has_comm;
    const char *tp = h->text, *te = h->text_end;
    int ascii = all_ascii(tp, (size_t)(te - tp));
    if (!ascii) { /* the fields are read in the decoded text, as the Python reader read its str */
        st->text.len = 0;
        if (put_decoded(&st->text, tp, (size_t)(te - tp))) o->oom = 1;
        tp = st->text.p; te = tp + st->text.len;
    }
    span_t ev = h->event;
    int32_t cpu = h->has_cpu ? h->cpu : 0;
    if (span_is(ev, "sched_switch")) {
        switch_t f = {0};
        if (read_switch(tp, te, &f) != 0) skipped(o, R_SWITCH, line, h->text - chunk, h->text_end - h->text);
        else if (h->big & (BIG_TIME | BIG_CPU)) skipped(o, R_LINE, line, lp - chunk, le - lp);
        else {
            nput64(o, &o->s_line, line); nput64(o, &o->s_t, h->t); nput32_opt(o, &o->s_cpu, cpu, h->has_cpu);
            sput(o, &o->s_pcomm, f.pc.p, f.pc.n, 1, 0); nput64(o, &o->s_ppid, f.pp); nput32(o, &o->s_pprio, (int32_t)f.ppr);
            sput(o, &o->s_pstate, f.ps.p, f.ps.n, 1, 0);
            sput(o, &o->s_ncomm, f.nc.p, f.nc.n, 1, 0); nput64(o, &o->s_npid, f.np); nput32(o, &o->s_nprio, (int32_t)f.npr);
            o->ns++;
        }
    } else if (span_is(ev, "sched_wakeup") || span_is(ev, "sched_waking") || span_is(ev, "sched_wakeup_new")) {
        wake_t f = {0};
        if (read_wake(tp, te, &f) != 0) skipped(o, R_WAKE, line, h->text - chunk, h->text_end - h->text);
        else if (h->big) skipped(o, R_LINE, line, lp - chunk, le - lp);
        else {
            nput64(o, &o->w_line, line); nput64(o, &o->w_t, h->t); nput32_opt(o, &o->w_cpu, cpu, h->has_cpu);
            sput(o, &o->w_event, ev.p, ev.n, 1, 0);
            nput64(o, &o->w_wpid, h->pid); sput(o, &o->w_wcomm, st->c_comm.p, st->c_comm.len, h->has_comm, 0);
            nput64(o, &o->w_pid, f.p); sput(o, &o->w_comm, f.c.p, f.c.n, 1, 0);
            nput32(o, &o->w_prio, (int32_t)f.pr); nput32_opt(o, &o->w_tcpu, (int32_t)f.t, f.has_t);
            nbool_opt(o, &o->w_succ, !(f.has_s && f.s.n == 1 && f.s.p[0] == '0'), f.has_s);
            o->nw++;
        }
    } else if (h->big) {
        skipped(o, R_LINE, line, lp - chunk, le - lp);
    } else {
        event_row(o, line, h->t, cpu, h->has_cpu, h->pid, &st->c_comm, h->has_comm, ev.p, ev.n, tp, (size_t)(te - tp), 0);
        char action = span_is(ev, "block_rq_insert") ? 'I' : span_is(ev, "block_rq_issue") ? 'D'
                    : span_is(ev, "block_rq_complete") ? 'C' : 0;
        if (action) {
            block_t f = {0};
            if (read_block(tp, te, &f) != 0) skipped(o, R_BLOCK, line, h->text - chunk, h->text_end - h->text);
            else block_line(st, o, h, action, &f);
        }
    }
    st->chain = 1; st->c_big = h->big; st->c_line = line + 1; st->c_t = h->t; st->c_cpu = cpu; st->c_has_cpu = h->has_cpu; st->c_pid = h->pid;
    st->kern.len = st->user.len = 0;
    st->kern_syms = st->user_syms = st->user_found = st->kern_lines = 0;
}

/* one chunk of whole lines (the last one may lack its newline); returns the lines read */
static int64_t scan(state_t *st, out_t *o, const char *s, const char *end, int64_t first_line) {
    int64_t line = first_line;
    int batch = 0, in_run = 0; /* in a run of call-chain lines (the Python reader's one findall), in its kernel run */
    head_t h;
    for (const char *p = s; p < end && !o->oom; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end, *next = nl ? nl + 1 : end;
        if (*p == '\t') { /* a call-chain line */
            if (st->chain) {
                if (!batch) { batch = 1; in_run = st->user_found == 0; }
                const char *c = p + 1;
                while (c < e && (*c == ' ' || *c == '\t')) c++;
                chain_line(st, o, c, e, &in_run);
            } else if (!st->orphan) {
                st->orphan = 1;
                skipped(o, R_ORPHAN, line, p - s, e - p);
            }
            o->blk_nl++;
            p = next;
            continue;
        }
        int head = -2; /* not read yet */
        if (st->chain && *p == ' ' && spaced_frame(p, e) && (head = read_head(p, e, &h)) != 0) {
            batch = 1; in_run = st->user_found == 0; /* a frame indented by spaces: it starts a run of its own */
            chain_line(st, o, skip_ws(p, e), e, &in_run);
            o->blk_nl++;
            p = next;
            continue;
        }
        batch = 0;
        end_chain(st, o);
        st->orphan = 0;
        const char *l = skip_ws(p, e);
        if (l < e && *l != '#') {
            if (head == -2) head = read_head(p, e, &h);
            if (head != 0) skipped(o, R_LINE, line, p - s, e - p);
            else on_event(st, o, &h, line, s, p, e);
        }
        o->blk_nl++;
        p = next;
    }
    blk_newlines(o);
    return line - first_line;
}

/* ---------------------------------------------------------------- Python glue */
static void capsule_free(PyObject *cap) { state_free(PyCapsule_GetPointer(cap, "perf.state")); }
static state_t *get_state(PyObject *cap) { return PyCapsule_GetPointer(cap, "perf.state"); }

static PyObject *new_state(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored)) {
    state_t *st = calloc(1, sizeof(state_t));
    if (!st) return PyErr_NoMemory();
    PyObject *cap = PyCapsule_New(st, "perf.state", capsule_free);
    if (!cap) state_free(st);
    return cap;
}

static int set_int(PyObject *d, const char *key, int64_t v) {
    PyObject *x = PyLong_FromLongLong(v);
    if (!x) return -1;
    int rc = PyDict_SetItemString(d, key, x);
    Py_DECREF(x);
    return rc;
}
static int set_buf(PyObject *d, const char *key, buf_t *b) {
    int rc = colbuf_set(d, key, &b->p, b->len, b->cap);
    if (!b->p) b->len = b->cap = 0;
    return rc;
}
/* Arrow's bitmap (LSB first) of n bytes that are 0 or not */
static int pack_bits(buf_t *out, const buf_t *bytes, size_t n) {
    size_t nb = (n + 7) / 8;
    if (buf_reserve(out, nb ? nb : 1)) return -1;
    memset(out->p, 0, nb ? nb : 1);
    for (size_t i = 0; i < n; i++) if (bytes->p[i]) out->p[i >> 3] |= (char)(1 << (i & 7));
    out->len = nb;
    return 0;
}
/* d[key] = the values (a bool column's as bits), d[key_nulls], and d[key_valid] (a bitmap) when some are null */
static int set_ncol(PyObject *d, const char *key, ncol *c, size_t rows, int is_bool) {
    char k[64];
    buf_t bits = {0};
    int bad = 0;
    if (c->nulls) {
        snprintf(k, sizeof k, "%s_valid", key);
        bad = pack_bits(&bits, &c->ok, rows) || set_buf(d, k, &bits);
    }
    buf_free(&bits);
    if (!bad && is_bool) {
        bad = pack_bits(&bits, &c->v, rows) || set_buf(d, key, &bits);
        buf_free(&bits);
    } else if (!bad) bad = set_buf(d, key, &c->v);
    snprintf(k, sizeof k, "%s_nulls", key);
    return bad || set_int(d, k, c->nulls);
}
static int set_scol(PyObject *d, const char *key, scol *c, size_t rows) {
    char k[64];
    if (c->off.len == 0 && put32(&c->off, 0)) return -1;
    snprintf(k, sizeof k, "%s_off", key);
    if (set_buf(d, k, &c->off)) return -1;
    snprintf(k, sizeof k, "%s_data", key);
    if (set_buf(d, k, &c->data)) return -1;
    int bad = 0;
    if (c->nulls) {
        buf_t bits = {0};
        snprintf(k, sizeof k, "%s_valid", key);
        bad = pack_bits(&bits, &c->ok, rows) || set_buf(d, k, &bits);
        buf_free(&bits);
    }
    snprintf(k, sizeof k, "%s_nulls", key);
    return bad || set_int(d, k, c->nulls);
}

static PyObject *result(state_t *st, out_t *o, int64_t lines) {
    if (o->oom) { out_free(o); return PyErr_NoMemory(); }
    PyObject *d = PyDict_New();
    if (!d) { out_free(o); return NULL; }
    size_t ns = (size_t)o->ns, nw = (size_t)o->nw, ne = (size_t)o->ne;
    int bad =
        set_int(d, "lines", lines) || set_int(d, "ns", o->ns) || set_int(d, "nw", o->nw) || set_int(d, "ne", o->ne) ||
        set_int(d, "counted", o->ns + o->nw + o->counted) ||
        set_ncol(d, "s_line", &o->s_line, ns, 0) || set_ncol(d, "s_t", &o->s_t, ns, 0) || set_ncol(d, "s_cpu", &o->s_cpu, ns, 0) ||
        set_scol(d, "s_pcomm", &o->s_pcomm, ns) || set_ncol(d, "s_ppid", &o->s_ppid, ns, 0) ||
        set_ncol(d, "s_pprio", &o->s_pprio, ns, 0) || set_scol(d, "s_pstate", &o->s_pstate, ns) ||
        set_scol(d, "s_ncomm", &o->s_ncomm, ns) || set_ncol(d, "s_npid", &o->s_npid, ns, 0) ||
        set_ncol(d, "s_nprio", &o->s_nprio, ns, 0) ||
        set_ncol(d, "w_line", &o->w_line, nw, 0) || set_ncol(d, "w_t", &o->w_t, nw, 0) || set_ncol(d, "w_cpu", &o->w_cpu, nw, 0) ||
        set_scol(d, "w_event", &o->w_event, nw) || set_ncol(d, "w_wpid", &o->w_wpid, nw, 0) ||
        set_scol(d, "w_wcomm", &o->w_wcomm, nw) || set_ncol(d, "w_pid", &o->w_pid, nw, 0) ||
        set_scol(d, "w_comm", &o->w_comm, nw) || set_ncol(d, "w_prio", &o->w_prio, nw, 0) ||
        set_ncol(d, "w_tcpu", &o->w_tcpu, nw, 0) || set_ncol(d, "w_succ", &o->w_succ, nw, 1) ||
        set_ncol(d, "e_line", &o->e_line, ne, 0) || set_ncol(d, "e_t", &o->e_t, ne, 0) || set_ncol(d, "e_cpu", &o->e_cpu, ne, 0) ||
        set_ncol(d, "e_pid", &o->e_pid, ne, 0) || set_scol(d, "e_comm", &o->e_comm, ne) ||
        set_scol(d, "e_event", &o->e_event, ne) || set_scol(d, "e_text", &o->e_text, ne) ||
        set_buf(d, "k_line", &o->k_line) || set_buf(d, "k_start", &o->k_start) || set_buf(d, "k_len", &o->k_len) ||
        set_buf(d, "k_reason", &o->k_reason) || set_int(d, "k_more", o->nk_more) ||
        set_int(d, "n_events", st->n_events) || set_int(d, "n_frames", st->n_frames) ||
        set_int(d, "n_block", st->n_block) || set_int(d, "n_cut", st->n_cut);
    if (!bad) {
        if (st->n_block) bad = set_buf(d, "blk", &o->blk);
        else bad = PyDict_SetItemString(d, "blk", Py_None);
    }
    out_free(o);
    if (bad) { Py_DECREF(d); return NULL; }
    return d;
}

static PyObject *tokenize(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cap; Py_buffer buf; long long first_line; Py_ssize_t max_skips = 64;
    if (!PyArg_ParseTuple(args, "Oy*L|n", &cap, &buf, &first_line, &max_skips)) return NULL;
    state_t *st = get_state(cap);
    if (!st) { PyBuffer_Release(&buf); return NULL; }
    out_t o; memset(&o, 0, sizeof o);
    o.nk_max = max_skips;
    int64_t lines;
    Py_BEGIN_ALLOW_THREADS
    lines = scan(st, &o, buf.buf, (const char *)buf.buf + buf.len, first_line);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return result(st, &o, lines);
}

static PyObject *finish(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    state_t *st = get_state(cap);
    if (!st) return NULL;
    out_t o; memset(&o, 0, sizeof o);
    end_chain(st, &o);
    return result(st, &o, 0);
}

static PyMethodDef methods[] = {
    {"new_state", new_state, METH_NOARGS, "new_state() -> capsule holding the cross-chunk state"},
    {"tokenize", tokenize, METH_VARARGS,
     "tokenize(state, chunk, first_line[, max_skips]) -> dict of column buffers (max_skips skipped lines listed)"},
    {"finish", finish, METH_VARARGS, "finish(state) -> dict of column buffers (the last call chain's stacks)"},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_perf",
                                    .m_doc = "perf script text tokenizer", .m_size = -1, .m_methods = methods};
PyMODINIT_FUNC PyInit__perf(void) {
    if (PyType_Ready(&colbuf_type) < 0) return NULL;
    return PyModule_Create(&module);
}
