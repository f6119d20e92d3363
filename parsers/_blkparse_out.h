/*
 * The rows _blkparse.c hands to Python: growable output columns (numbers, and strings as Arrow-style offsets + data),
 * one set per kind of row (ev_ events, rq_ requests, bio_ merged bios, sk_ skipped lines), and their move into a
 * dict of column buffers with each column's validity (to_dict). Included by _blkparse.c once, after NUL64.
 *
 * A text chunk's event and request columns take their first blocks from their Rebuilder's pool and give them back
 * to it when Python frees them (out_pool, _colpool.h): freed to malloc, the blocks of a chunk's ~60 columns were
 * mostly not reused by a later chunk's, whose pages were faulted in fresh and zeroed (the 1 GiB bench file parsed
 * alone: 49-50 k page faults, 36.7 k with the pool, 2.47-2.53 -> 2.40-2.41 CPU s). Other outputs (bios, skipped
 * lines, finish(), blktrace records) are malloc'd and freed as before.
 */
#ifndef STALLSCOPE_BLKPARSE_OUT_H
#define STALLSCOPE_BLKPARSE_OUT_H

#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_colbuf.h"
#include "_colpool.h"
/* ---- growable output columns ------------------------------------------------------------------ */

/* first: the rows room is made for at once; block: the bytes at v when more than cap * size (a block taken from a
 * pool, larger than the room it gives: given back at its size) */
typedef struct { char *v; size_t n, cap, size, first, block; } col_t;
typedef struct { col_t off, data, valid; } strcol_t;

/* grows c to hold one more element (first `first`, then doubling): rare, so kept out of the pushes' line */
static __attribute__((noinline, cold)) int col_grow(col_t *c) {
    size_t cap = c->cap ? c->cap * 2 : c->first;
    char *v = realloc(c->v, cap * c->size);
    if (!v) return -1;
    c->v = v; c->cap = cap; c->block = 0;
    return 0;
}
static inline __attribute__((always_inline)) int col_push(col_t *c, const void *x) {
    if (__builtin_expect(c->n == c->cap, 0) && col_grow(c)) return -1;
    memcpy(c->v + c->n * c->size, x, c->size);
    c->n++;
    return 0;
}
static inline __attribute__((always_inline)) int i64(col_t *c, int64_t x) {
    if (__builtin_expect(c->n == c->cap, 0) && col_grow(c)) return -1;
    ((int64_t *)c->v)[c->n++] = x;
    return 0;
}
static inline __attribute__((always_inline)) int i32(col_t *c, int32_t x) {
    if (__builtin_expect(c->n == c->cap, 0) && col_grow(c)) return -1;
    ((int32_t *)c->v)[c->n++] = x;
    return 0;
}
/* room in s for one more string of n bytes: rare, so kept out of the pushes' line */
static __attribute__((noinline, cold)) int str_grow(strcol_t *s, size_t n) {
    if (s->data.n + n > s->data.cap) {
        size_t cap = s->data.cap ? s->data.cap : s->data.first;
        while (cap < s->data.n + n) cap *= 2;
        char *v = realloc(s->data.v, cap);
        if (!v) return -1;
        s->data.v = v; s->data.cap = cap;
    }
    while (s->off.n + 2 > s->off.cap) if (col_grow(&s->off)) return -1;
    if (s->valid.n == s->valid.cap && col_grow(&s->valid)) return -1;
    return 0;
}
/* the n bytes at p to d, in copies of constant size (no call, no byte read past p + n) */
static inline __attribute__((always_inline)) void small_copy(char *d, const char *p, size_t n) {
    for (; n >= 8; n -= 8, d += 8, p += 8) memcpy(d, p, 8);
    if (n >= 4) { memcpy(d, p, 4); memcpy(d + n - 4, p + n - 4, 4); }
    else if (n) { d[0] = p[0]; d[n / 2] = p[n / 2]; d[n - 1] = p[n - 1]; }
}
static inline __attribute__((always_inline)) int str_push(strcol_t *s, const char *p, size_t n, int valid) {
    if (!valid) n = 0;
    if (__builtin_expect(s->data.n + n > s->data.cap || s->off.n + 2 > s->off.cap || s->valid.n == s->valid.cap, 0) &&
        str_grow(s, n))
        return -1;
    int32_t *off = (int32_t *)s->off.v;
    if (s->off.n == 0) off[s->off.n++] = 0;
    small_copy(s->data.v + s->data.n, p, n);
    s->data.n += n;
    off[s->off.n++] = (int32_t)s->data.n;
    s->valid.v[s->valid.n++] = (char)(valid != 0);
    return 0;
}

#define EV_I64(X) X(line) X(t_ns) X(pid) X(sector) X(nsect) X(elapsed) X(err) X(from_sector) X(split_sector) X(depth) X(req_line)
#define EV_I32(X) X(major) X(minor) X(cpu) X(from_major) X(from_minor)
#define EV_STR(X) X(action) X(rwbs) X(comm) X(message)
#define RQ_I64(X) X(line) X(sector) X(nsect0) X(nsect) X(pid) X(a_ns) X(q_ns) X(g_ns) X(i_ns) X(d_ns) X(c_ns) \
    X(a_line) X(q_line) X(g_line) X(i_line) X(d_line) X(c_line) \
    X(d_pid) X(error) X(from_sector) X(merge_ns) X(merge_line) X(t_ns) X(req_line)
#define RQ_I32(X) X(major) X(minor) X(a_cpu) X(q_cpu) X(g_cpu) X(i_cpu) X(d_cpu) X(c_cpu) X(requeues) \
    X(from_major) X(from_minor) X(front) X(merged_bios)
#define RQ_STR(X) X(rwbs) X(comm)

typedef struct {
#define F(n) col_t n;
    EV_I64(F) EV_I32(F)
#undef F
#define F(n) strcol_t n;
    EV_STR(F)
#undef F
} evout_t;
typedef struct {
#define F(n) col_t n;
    RQ_I64(F) RQ_I32(F)
#undef F
#define F(n) strcol_t n;
    RQ_STR(F)
#undef F
} rqout_t;
typedef struct { col_t line, start, len, reason; } skout_t;

/* where to_dict's columns give their blocks back when Python frees them: pool (NULL: to malloc, free()), which
 * owner keeps alive (a column holds a reference to it) */
typedef struct { colpool *pool; PyObject *owner; } dest_t;
typedef struct { evout_t ev; rqout_t rq, bio; skout_t sk; int64_t ignored, parsed, lines; dest_t dest; } out_t;

static void col_init(col_t *c, size_t size, size_t first) { memset(c, 0, sizeof *c); c->size = size; c->first = first; }
static void str_init(strcol_t *s, size_t first) {
    col_init(&s->off, 4, first); col_init(&s->data, 1, first * 8); col_init(&s->valid, 1, first);
}
/* rows: the rows each output is given room for at first (a guess from the chunk's size: fewer regrowths) */
static void out_init(out_t *o, size_t rows) {
    memset(o, 0, sizeof *o);
    rows = rows < 1024 ? 1024 : rows;
#define A8(n) col_init(&o->ev.n, 8, rows);
#define A4(n) col_init(&o->ev.n, 4, rows);
#define AS(n) str_init(&o->ev.n, rows);
    EV_I64(A8) EV_I32(A4) EV_STR(AS)
#undef A8
#undef A4
#undef AS
#define A8(n) col_init(&o->rq.n, 8, rows); col_init(&o->bio.n, 8, rows);
#define A4(n) col_init(&o->rq.n, 4, rows); col_init(&o->bio.n, 4, rows);
#define AS(n) str_init(&o->rq.n, rows); str_init(&o->bio.n, rows);
    RQ_I64(A8) RQ_I32(A4) RQ_STR(AS)
#undef A8
#undef A4
#undef AS
    col_init(&o->sk.line, 8, 64); col_init(&o->sk.start, 8, 64); col_init(&o->sk.len, 8, 64); col_init(&o->sk.reason, 4, 64);
}
/* a fixed-size column's first block, room for `first` rows: from pl when it holds one that fits, else malloc'd
 * (every column of a row set has the same room: ev_room and rq_room check one; a larger block keeps its size in
 * `block`, given back at it); none (malloc failed): the first row's col_grow makes it. With the GIL held. */
static void col_from_pool(colpool *pl, col_t *c) {
    size_t cap;
    char *p = pool_take(pl, c->first * c->size, &cap);
    if (!p) p = malloc(cap = c->first * c->size);
    if (p) { c->v = p; c->cap = c->first; c->block = cap; }
}
/* a string column's blocks from pl, those it holds (each part grows on its own: str_push checks each) */
static void str_from_pool(colpool *pl, strcol_t *s) {
    col_t *part[3] = {&s->off, &s->data, &s->valid};
    for (int i = 0; i < 3; i++) {
        size_t cap;
        char *p = pool_take(pl, part[i]->first * part[i]->size, &cap);
        if (p) { part[i]->v = p; part[i]->cap = cap / part[i]->size; }
    }
}
/* after out_init: the event and request columns' first blocks from pool, and every column of to_dict given back to it
 * (owner: what keeps the pool alive). The bios' columns are not taken from it: a chunk has few bios (their blocks,
 * shrunk to their rows by poolcol_set, would be too small to come back). With the GIL held. */
static void out_pool(out_t *o, colpool *pool, PyObject *owner) {
    o->dest.pool = pool; o->dest.owner = owner;
    int short_ev = 0, short_rq = 0; /* a set with a column left without room: every column's room 0 (grown as one) */
#define P(n) col_from_pool(pool, &o->ev.n); short_ev |= !o->ev.n.v;
#define PS(n) str_from_pool(pool, &o->ev.n);
    EV_I64(P) EV_I32(P) EV_STR(PS)
#undef P
#undef PS
#define P(n) col_from_pool(pool, &o->rq.n); short_rq |= !o->rq.n.v;
#define PS(n) str_from_pool(pool, &o->rq.n);
    RQ_I64(P) RQ_I32(P) RQ_STR(PS)
#undef P
#undef PS
#define Z(n) o->ev.n.cap = 0;
    if (short_ev) { EV_I64(Z) EV_I32(Z) }
#undef Z
#define Z(n) o->rq.n.cap = 0;
    if (short_rq) { RQ_I64(Z) RQ_I32(Z) }
#undef Z
}
static void out_free(out_t *o) {
#define FR(n) free(o->ev.n.v);
#define FS(n) free(o->ev.n.off.v); free(o->ev.n.data.v); free(o->ev.n.valid.v);
    EV_I64(FR) EV_I32(FR) EV_STR(FS)
#undef FR
#undef FS
#define FR(n) free(o->rq.n.v); free(o->bio.n.v);
#define FS(n) free(o->rq.n.off.v); free(o->rq.n.data.v); free(o->rq.n.valid.v); \
              free(o->bio.n.off.v); free(o->bio.n.data.v); free(o->bio.n.valid.v);
    RQ_I64(FR) RQ_I32(FR) RQ_STR(FS)
#undef FR
#undef FS
    free(o->sk.line.v); free(o->sk.start.v); free(o->sk.len.v); free(o->sk.reason.v);
}

/* Every fixed-size column of a row set gets one value per row: they have the same length and room, grown together,
 * checked once per row. */
#define PUT64(c, x) (((int64_t *)(c).v)[(c).n++] = (x))
#define PUT32(c, x) (((int32_t *)(c).v)[(c).n++] = (x))
static __attribute__((noinline, cold)) int ev_grow(evout_t *e) {
    int bad = 0;
#define G(n) bad = bad || col_grow(&e->n);
    EV_I64(G) EV_I32(G)
#undef G
    return bad ? -1 : 0;
}
static __attribute__((noinline, cold)) int rq_grow(rqout_t *r) {
    int bad = 0;
#define G(n) bad = bad || col_grow(&r->n);
    RQ_I64(G) RQ_I32(G)
#undef G
    return bad ? -1 : 0;
}
static inline int ev_room(evout_t *e) { return __builtin_expect(e->line.n == e->line.cap, 0) ? ev_grow(e) : 0; }
static inline int rq_room(rqout_t *r) { return __builtin_expect(r->line.n == r->line.cap, 0) ? rq_grow(r) : 0; }

/* ---- Python glue ------------------------------------------------------------------------------- */

static int set_bytes(const dest_t *to, PyObject *d, const char *key, col_t *c) { /* moves the column into d */
    size_t bytes = c->block > c->cap * c->size ? c->block : c->cap * c->size;
    int rc = to->pool ? poolcol_set(d, key, &c->v, c->n * c->size, bytes, to->pool, to->owner)
                      : colbuf_set(d, key, &c->v, c->n * c->size, bytes);
    if (!c->v) c->n = c->cap = c->block = 0;
    return rc;
}
static int set_int(PyObject *d, const char *key, long long v) {
    PyObject *n = PyLong_FromLongLong(v);
    int rc = !n || PyDict_SetItemString(d, key, n);
    Py_XDECREF(n);
    return rc ? -1 : 0;
}
/* The validity of a column as Arrow wants it, made here in one pass rather than in numpy and Arrow (a comparison,
 * a test, a bitmap) per column and batch: d[key + "_nulls"] = how many of its n values are null (null[i]), and, when
 * some are, d[key + "_bitmap"] = its validity bitmap (bit i, least significant first: value i is not null). */
#define SET_VALIDITY(d, key, n, null)                                                           \
    do {                                                                                         \
        size_t nulls_ = 0, n_ = (n);                                                             \
        for (size_t i = 0; i < n_; i++) nulls_ += (null);                                        \
        char k_[80];                                                                             \
        snprintf(k_, sizeof k_, "%s_nulls", (key));                                              \
        if (set_int((d), k_, (long long)nulls_)) return -1;                                      \
        if (nulls_) {                                                                            \
            size_t len_ = (n_ + 7) / 8;                                                          \
            char *bm_ = malloc(len_);                                                            \
            if (!bm_) { PyErr_NoMemory(); return -1; }                                           \
            for (size_t j_ = 0; j_ < n_; j_ += 8) { /* a byte at a time */                      \
                unsigned byte_ = 0;                                                              \
                for (size_t i = j_; i < j_ + 8 && i < n_; i++) byte_ |= (unsigned)!(null) << (i - j_); \
                bm_[j_ >> 3] = (char)byte_;                                                      \
            }                                                                                    \
            snprintf(k_, sizeof k_, "%s_bitmap", (key));                                         \
            int rc_ = colbuf_set((d), k_, &bm_, len_, len_);                                     \
            free(bm_);                                                                           \
            if (rc_) return -1;                                                                  \
        }                                                                                        \
    } while (0)
/* a number column and its validity (null: NUL64; for 4-byte numbers, below 0) */
static int set_num(const dest_t *to, PyObject *d, const char *key, col_t *c) {
    if (c->size == 8) { const int64_t *x = (const int64_t *)c->v; SET_VALIDITY(d, key, c->n, x[i] == NUL64); }
    else { const int32_t *x = (const int32_t *)c->v; SET_VALIDITY(d, key, c->n, x[i] < 0); }
    return set_bytes(to, d, key, c);
}
static int set_str(const dest_t *to, PyObject *d, const char *prefix, const char *name, strcol_t *s) {
    char k[64];
    if (s->off.n == 0) { int32_t z = 0; if (col_push(&s->off, &z)) return -1; }
    snprintf(k, sizeof k, "%s%s", prefix, name);
    const uint8_t *valid = (const uint8_t *)s->valid.v;
    SET_VALIDITY(d, k, s->valid.n, !valid[i]);
    snprintf(k, sizeof k, "%s%s_off", prefix, name); if (set_bytes(to, d, k, &s->off)) return -1;
    snprintf(k, sizeof k, "%s%s_data", prefix, name); return set_bytes(to, d, k, &s->data);
}
/* d[prefix + name]: the string column "major,minor" of the devices in two columns (null where either is below 0);
 * a trace has a handful of devices: the texts of the last DEV_SLOTS are kept, looked up in turn */
#define DEV_SLOTS 16
static int set_dev(const dest_t *to, PyObject *d, const char *prefix, const char *name, const col_t *maj,
                   const col_t *mn) {
    const int32_t *a = (const int32_t *)maj->v, *b = (const int32_t *)mn->v;
    size_t n = maj->n;
    struct { int32_t a, b; int len; char text[24]; } seen[DEV_SLOTS];
    int nseen = 0, next = 0, k = 0;
    strcol_t s;
    str_init(&s, n + 1);
    if (to->pool) str_from_pool(to->pool, &s);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (a[i] < 0 || b[i] < 0) { rc = str_push(&s, "", 0, 0); continue; }
        if (!(k < nseen && seen[k].a == a[i] && seen[k].b == b[i])) { /* not the one before: look, else make */
            for (k = 0; k < nseen && !(seen[k].a == a[i] && seen[k].b == b[i]); k++) {}
            if (k == nseen) {
                if (nseen < DEV_SLOTS) k = nseen++;
                else { k = next; next = (next + 1) % DEV_SLOTS; }
                seen[k].a = a[i]; seen[k].b = b[i];
                seen[k].len = snprintf(seen[k].text, sizeof seen[k].text, "%d,%d", a[i], b[i]);
            }
        }
        rc = str_push(&s, seen[k].text, (size_t)seen[k].len, 1);
    }
    if (rc) PyErr_NoMemory();
    else rc = set_str(to, d, prefix, name, &s);
    free(s.off.v); free(s.data.v); free(s.valid.v);
    return rc;
}

static PyObject *to_dict(out_t *o) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    size_t nev = o->ev.line.n, nrq = o->rq.line.n, nbio = o->bio.line.n, nsk = o->sk.line.n; /* before the moves */
    int bad = 0;
    const dest_t *to = &o->dest, *none = &(dest_t){NULL, NULL}; /* the bios' columns: not the pool's (out_pool) */
    bad = set_dev(to, d, "ev_", "dev", &o->ev.major, &o->ev.minor) ||
          set_dev(to, d, "ev_", "from_dev", &o->ev.from_major, &o->ev.from_minor) ||
          set_dev(to, d, "rq_", "dev", &o->rq.major, &o->rq.minor) ||
          set_dev(to, d, "rq_", "from_dev", &o->rq.from_major, &o->rq.from_minor) ||
          set_dev(none, d, "bio_", "dev", &o->bio.major, &o->bio.minor) ||
          set_dev(none, d, "bio_", "from_dev", &o->bio.from_major, &o->bio.from_minor);
#define SB(n) bad = bad || set_num(to, d, "ev_" #n, &o->ev.n);
#define SS(n) bad = bad || set_str(to, d, "ev_", #n, &o->ev.n);
    EV_I64(SB) EV_I32(SB) EV_STR(SS)
#undef SB
#undef SS
#define SB(n) bad = bad || set_num(to, d, "rq_" #n, &o->rq.n) || set_num(none, d, "bio_" #n, &o->bio.n);
#define SS(n) bad = bad || set_str(to, d, "rq_", #n, &o->rq.n) || set_str(none, d, "bio_", #n, &o->bio.n);
    RQ_I64(SB) RQ_I32(SB) RQ_STR(SS)
#undef SB
#undef SS
    bad = bad || set_bytes(none, d, "sk_line", &o->sk.line) || set_bytes(none, d, "sk_start", &o->sk.start) ||
          set_bytes(none, d, "sk_len", &o->sk.len) || set_bytes(none, d, "sk_reason", &o->sk.reason);
    PyObject *n;
    if (!bad) { n = PyLong_FromSize_t(nev); bad = !n || PyDict_SetItemString(d, "ev_n", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromSize_t(nrq); bad = !n || PyDict_SetItemString(d, "rq_n", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromSize_t(nbio); bad = !n || PyDict_SetItemString(d, "bio_n", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromSize_t(nsk); bad = !n || PyDict_SetItemString(d, "sk_n", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromLongLong(o->ignored); bad = !n || PyDict_SetItemString(d, "ignored", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromLongLong(o->parsed); bad = !n || PyDict_SetItemString(d, "parsed", n); Py_XDECREF(n); }
    if (!bad) { n = PyLong_FromLongLong(o->lines); bad = !n || PyDict_SetItemString(d, "lines", n); Py_XDECREF(n); }
    if (bad) { Py_DECREF(d); return NULL; }
    return d;
}

#endif
