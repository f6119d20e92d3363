/*
 * Bulk tokenizer and call-tree rebuilder for ftrace text (see parsers/funcgraph.py for the formats and
 * their sources: kernel trace_functions_graph.c / trace_output.c, trace-cmd trace-read.c, shared/FORMATS.md
 * section 3).
 *
 *   new_state() -> capsule                      the state that lives across chunks: per-task open-call
 *                                               stacks, the current task of each CPU (context-switch
 *                                               markers), interned names, a pending stack-trace event
 *   tokenize(state, chunk, first_line) -> dict  one chunk of whole lines -> column buffers of 4 tables
 *   finish(state) -> dict                       flushes the open calls (and a pending stack event)
 *
 * Every returned column is a read-only buffer object (_colpool.h: its block goes back to the state's pool for a later
 * chunk when Python frees it): native int64 / int32 / uint8 arrays (null = INT64_MIN, INT32_MIN, or 2 for the
 * nullable bools) or Arrow-style strings (int32 offsets + data + uint8 validity).
 * Input is untrusted: every scan is bounded by the line's end, stacks and folded texts are capped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_colpool.h"
#include "_text.h"

#define NUL64 INT64_MIN
#define NUL32 INT32_MIN
#define MAX_CPU 8192
#define MAX_STACK 4096
#define MAX_FOLD (256 << 10)
#define MAX_HEAD 64

enum reason {
    R_UNKNOWN = 1, R_FG_BODY, R_FG_COLUMNS, R_TIME, R_CPU, R_FRAME_ORPHAN, R_DEEP, R_CTX, R_EVENT_FG,
};

/* ---- growable buffers and output tables: _funcgraph_out.h ------------------------------------ */

#include "_funcgraph_out.h"

/* ---------------------------------------------------------------- state */
/* texts by id, from 0 up (a record stream's stack frames 'N' and names 'M': _funcgraph_records.h): each id's offset
 * into `text` */
typedef struct { buf_t off, text; uint32_t n; } texts_t;
static int texts_add(texts_t *t, const char *p, size_t n) {
    if (put32(&t->off, (int32_t)t->text.len) || buf_put(&t->text, p, n)) return -1;
    t->n++;
    return 0;
}
/* the text of id (< t->n) */
static inline void texts_at(const texts_t *t, uint32_t id, const char **p, size_t *n) {
    int32_t from, to = (int32_t)t->text.len;
    memcpy(&from, t->off.p + 4 * (size_t)id, 4);
    if (id + 1 < t->n) memcpy(&to, t->off.p + 4 * (size_t)(id + 1), 4);
    *p = t->text.p + from; *n = (size_t)(to - from);
}
static void texts_free(texts_t *t) { buf_free(&t->off); buf_free(&t->text); }

typedef struct { int64_t line, entry_ns; int32_t func, comm, cpu, depth, indent; } frame_t;
/* comm_id: the name this task's lines last gave (-1: none yet), so that a line naming it again is not hashed */
typedef struct { int64_t key, pid; int32_t base, n, cap, comm_id; frame_t *fr; } task_t;

typedef struct { uint32_t off, len, hash; } istr_t;
/* a function name met lately: its length and the words that hold its first and last bytes (name_words), its id */
typedef struct { uint64_t w0, w1; uint32_t n; int32_t id; } seen_t;
#define SEEN_SLOTS 1024
typedef struct pre_s pre_t;

typedef struct {
    /* tasks: array + open-addressing index (int32 index+1, 0 = empty) */
    task_t *tasks; int64_t ntasks, cap_tasks;
    int32_t *tmap; int64_t tmap_cap;
    /* interned strings */
    buf_t arena; istr_t *istr; int64_t nistr, cap_istr;
    int32_t *imap; int64_t imap_cap;
    /* current task per CPU from context-switch markers (tracefs without funcgraph-proc) */
    int64_t cur_pid[MAX_CPU]; int32_t cur_comm[MAX_CPU]; uint8_t cur_known[MAX_CPU];
    /* a stack-trace event waiting for its "=> frame" lines */
    int pend; int64_t pend_line, pend_t, pend_pid; int32_t pend_cpu; int pend_has_comm;
    buf_t pend_comm, pend_event, pend_text; int64_t pend_frames;
    int pend_utf8; /* pend_text is UTF-8 as it is: a record stream's stack, its head and frames made so (records.h) */
    /* a record stream's stack: its frames' ids (records.h), their text after pend_text's, copied once */
    buf_t pend_ids;
    /* counters for the report */
    int64_t n_fgtext, n_evline, n_evline_noflags, n_lost, n_tail_mismatch, n_lost_exit, n_folded_cut;
    /* each output buffer's size in the last chunk: the next chunk's starts at that, not grown by doubling */
    size_t hint[N_OUT_BUFS];
    /* the lines of a chunk's tail tokenized ahead (reused: no fresh pages per chunk) */
    struct pre_s *ahead; size_t ahead_cap;
    /* function names met lately, by name_words (intern_name) */
    seen_t seen[SEEN_SLOTS];
    /* the blocks of the columns Python has freed, for the next chunk's (_colpool.h) */
    colpool pool;
    /* a record stream's stack frames' "=> frame" lines ('N') and names ('M': tasks', functions'), by id; a name's
     * interned id + 1 once a call interned it (int32 by name id, 0: not yet): rec_func */
    texts_t frames, names;
    buf_t name_funcs;
    size_t folding_name; /* the function_graph record being folded: its name's id + 1; 0: none (a line of text) */
} state_t;

/* 8 bytes at a time (names are short: a few words), multiply-xorshift mixed; the last 1-8 bytes in one load that may
 * overlap the previous one (the length is mixed in, so two strings of one length differ in some loaded byte) */
static inline uint32_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
    if (n > 8) {
        const char *last = p + n - 8;
        for (; p < last; p += 8) { memcpy(&w, p, 8); h = (h ^ w) * 0xFF51AFD7ED558CCDULL; h ^= h >> 32; }
        memcpy(&w, last, 8);
    } else if (n == 8) {
        memcpy(&w, p, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4); memcpy(&b, p + n - 4, 4);
        w = a | (uint64_t)b << 32;
    } else if (n) {
        w = (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[n >> 1] << 8 | (uint64_t)(unsigned char)p[n - 1] << 16;
    } else {
        w = 0;
    }
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL; h ^= h >> 29;
    uint32_t r = (uint32_t)(h ^ (h >> 32));
    return r ? r : 1;
}

static int imap_grow(state_t *st) {
    int64_t cap = st->imap_cap ? st->imap_cap * 2 : 4096;
    int32_t *m = calloc((size_t)cap, sizeof(int32_t));
    if (!m) return -1;
    for (int64_t i = 0; i < st->nistr; i++) {
        uint64_t j = st->istr[i].hash & (cap - 1);
        while (m[j]) j = (j + 1) & (cap - 1);
        m[j] = (int32_t)(i + 1);
    }
    free(st->imap); st->imap = m; st->imap_cap = cap;
    return 0;
}

/* id of the string [p, p+n), added if new; -1 on out-of-memory */
static int32_t intern(state_t *st, const char *p, size_t n) {
    if (n > 4096) n = 4096;
    if ((st->nistr + 1) * 2 > st->imap_cap && imap_grow(st)) return -1;
    uint32_t h = hash_bytes(p, n);
    uint64_t j = h & (st->imap_cap - 1);
    while (st->imap[j]) {
        istr_t *s = &st->istr[st->imap[j] - 1];
        if (s->hash == h && s->len == n && memcmp(st->arena.p + s->off, p, n) == 0) return st->imap[j] - 1;
        j = (j + 1) & (st->imap_cap - 1);
    }
    if (st->nistr >= INT32_MAX - 1 || st->arena.len + n > UINT32_MAX) return -1;
    if (st->nistr == st->cap_istr) {
        int64_t cap = st->cap_istr ? st->cap_istr * 2 : 1024;
        istr_t *q = realloc(st->istr, sizeof(istr_t) * cap);
        if (!q) return -1;
        st->istr = q; st->cap_istr = cap;
    }
    istr_t *s = &st->istr[st->nistr];
    s->off = (uint32_t)st->arena.len; s->len = (uint32_t)n; s->hash = h;
    if (buf_put(&st->arena, p, n)) return -1;
    st->imap[j] = (int32_t)(st->nistr + 1);
    return (int32_t)st->nistr++;
}
static inline const char *istr(state_t *st, int32_t id, size_t *n) {
    *n = st->istr[id].len;
    return st->arena.p + st->istr[id].off;
}
/* two words that hold every byte of [p, p+n) when n <= 16 (the first and the last 8, overlapping; shorter: 4 and 4,
 * or 3 single bytes), and some of them otherwise */
static inline void name_words(const char *p, size_t n, uint64_t *w0, uint64_t *w1) {
    if (n >= 8) { memcpy(w0, p, 8); memcpy(w1, p + n - 8, 8); return; }
    *w1 = 0;
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4); memcpy(&b, p + n - 4, 4);
        *w0 = a | (uint64_t)b << 32;
    } else {
        *w0 = n ? (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[n >> 1] << 8 |
                      (uint64_t)(unsigned char)p[n - 1] << 16
                : 0;
    }
}
/* whether [a, a+n) and [b, b+n) hold the same bytes: words compared inline (names are short: no call to memcmp) */
static inline int same_bytes(const char *a, const char *b, size_t n) {
    if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8) if (load8(a + i) != load8(b + i)) return 0;
        return load8(a + n - 8) == load8(b + n - 8);
    }
    uint64_t x0, x1, y0, y1;
    name_words(a, n, &x0, &x1);
    name_words(b, n, &y0, &y1);
    return x0 == y0;
}

/* intern() of a function's name, looked up first among the names met lately (SEEN_SLOTS, by its words and length:
 * equal words and length are the same name up to 16 bytes, longer ones are compared), which spares most calls the
 * hash of the whole name; a miss interns it as before (the same ids in the same order) */
static inline int32_t intern_name(state_t *st, const char *p, size_t n) {
    if (n > 4096) n = 4096;
    uint64_t w0, w1;
    name_words(p, n, &w0, &w1);
    uint64_t k = (w0 * 0x9E3779B97F4A7C15ULL) ^ (w1 * 0xC2B2AE3D27D4EB4FULL) ^ n;
    seen_t *e = &st->seen[(k ^ (k >> 29)) & (SEEN_SLOTS - 1)];
    if (e->n == n && e->w0 == w0 && e->w1 == w1 && e->id >= 0 &&
        (n <= 16 || same_bytes(st->arena.p + st->istr[e->id].off, p, n)))
        return e->id;
    int32_t id = intern(st, p, n);
    if (id >= 0) { e->w0 = w0; e->w1 = w1; e->n = (uint32_t)n; e->id = id; }
    return id;
}

/* intern() of a task's name [p, p+n): the task's last one when the text is the same (compared, not hashed: a task's
 * lines name it again and again), else interned and kept as the task's; -1 on out-of-memory */
static inline int32_t task_comm(state_t *st, int32_t *last, const char *p, size_t n) {
    if (n > 4096) n = 4096;
    if (*last >= 0 && st->istr[*last].len == n && same_bytes(st->arena.p + st->istr[*last].off, p, n)) return *last;
    int32_t id = intern(st, p, n);
    if (id >= 0) *last = id;
    return id;
}

static int tmap_grow(state_t *st) {
    int64_t cap = st->tmap_cap ? st->tmap_cap * 2 : 1024;
    int32_t *m = calloc((size_t)cap, sizeof(int32_t));
    if (!m) return -1;
    for (int64_t i = 0; i < st->ntasks; i++) {
        uint64_t j = ((uint64_t)st->tasks[i].key * 0x9E3779B97F4A7C15ull) >> 20 & (cap - 1);
        while (m[j]) j = (j + 1) & (cap - 1);
        m[j] = (int32_t)(i + 1);
    }
    free(st->tmap); st->tmap = m; st->tmap_cap = cap;
    return 0;
}

/* the task for key; *created = 1 if new. NULL on out-of-memory */
static task_t *get_task(state_t *st, int64_t key, int64_t pid, int *created) {
    *created = 0;
    if ((st->ntasks + 1) * 2 > st->tmap_cap && tmap_grow(st)) return NULL;
    uint64_t j = ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20 & (st->tmap_cap - 1);
    while (st->tmap[j]) {
        task_t *t = &st->tasks[st->tmap[j] - 1];
        if (t->key == key) return t;
        j = (j + 1) & (st->tmap_cap - 1);
    }
    if (st->ntasks >= INT32_MAX - 1) return NULL;
    if (st->ntasks == st->cap_tasks) {
        int64_t cap = st->cap_tasks ? st->cap_tasks * 2 : 256;
        task_t *q = realloc(st->tasks, sizeof(task_t) * cap);
        if (!q) return NULL;
        st->tasks = q; st->cap_tasks = cap;
    }
    task_t *t = &st->tasks[st->ntasks];
    memset(t, 0, sizeof *t);
    t->key = key; t->pid = pid; t->comm_id = -1;
    st->tmap[j] = (int32_t)(st->ntasks + 1);
    st->ntasks++;
    *created = 1;
    return t;
}

static int push_frame(task_t *t, frame_t f) {
    if (t->n == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 16;
        frame_t *q = realloc(t->fr, sizeof(frame_t) * cap);
        if (!q) return -1;
        t->fr = q; t->cap = cap;
    }
    t->fr[t->n++] = f;
    return 0;
}

/* ---- lexing helpers: _funcgraph_lex.h ---------------------------------------------------------- */

#include "_funcgraph_lex.h"

/* ---- row writers, sched events: _funcgraph_events.h --------------------------------------------- */

#include "_funcgraph_events.h"

/* ---- function_graph bodies and call stacks: _funcgraph_calls.h ---------------------------------- */

#include "_funcgraph_calls.h"

/* ---- line classes: _funcgraph_line.h ------------------------------------------------------------ */

#include "_funcgraph_line.h"

/* ---- the tail of a chunk, tokenized ahead: _funcgraph_ahead.h ---------------------------------- */

#include "_funcgraph_ahead.h"

/* ---------------------------------------------------------------- Python glue */
static void state_free(state_t *st) {
    if (!st) return;
    for (int64_t i = 0; i < st->ntasks; i++) free(st->tasks[i].fr);
    free(st->tasks); free(st->tmap); free(st->istr); free(st->imap); free(st->ahead);
    buf_free(&st->arena); buf_free(&st->pend_comm); buf_free(&st->pend_event); buf_free(&st->pend_text);
    buf_free(&st->pend_ids);
    texts_free(&st->frames); texts_free(&st->names); buf_free(&st->name_funcs);
    pool_clear(&st->pool);
    free(st);
}
static void capsule_free(PyObject *cap) { state_free(PyCapsule_GetPointer(cap, "funcgraph.state")); }

static PyObject *new_state(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored)) {
    state_t *st = calloc(1, sizeof(state_t));
    if (!st) return PyErr_NoMemory();
    for (int i = 0; i < SEEN_SLOTS; i++) st->seen[i].id = -1;
    PyObject *cap = PyCapsule_New(st, "funcgraph.state", capsule_free);
    if (!cap) state_free(st);
    return cap;
}

/* where result's columns go: the state whose pool takes their blocks back, and its capsule (which the columns keep) */
typedef struct { state_t *st; PyObject *owner; } dest_t;

/* d[key] = the buffer's bytes; the buffer is emptied (its memory now belongs to the column object) */
static int set_buf(dest_t *x, PyObject *d, const char *key, buf_t *b) {
    int rc = poolcol_set(d, key, &b->p, b->len, b->cap, &x->st->pool, x->owner);
    if (!b->p) b->len = b->cap = 0;
    return rc;
}
static int set_str(dest_t *x, PyObject *d, const char *key, strcol *s) {
    char k[64];
    if (s->rows == 0 && s->off.len == 0 && put32(&s->off, 0)) return -1;
    snprintf(k, sizeof k, "%s_off", key); if (set_buf(x, d, k, &s->off)) return -1;
    snprintf(k, sizeof k, "%s_data", key); if (set_buf(x, d, k, &s->data)) return -1;
    snprintf(k, sizeof k, "%s_valid", key); return set_buf(x, d, k, &s->valid);
}
static int set_int(PyObject *d, const char *key, int64_t v) {
    PyObject *x = PyLong_FromLongLong(v);
    if (!x) return -1;
    int rc = PyDict_SetItemString(d, key, x);
    Py_DECREF(x);
    return rc;
}

/* the kinds of numeric column and what is null in each: INT64_MIN, INT32_MIN, a negative id, a bool's 2 */
enum { COL_I64, COL_I32, COL_ID, COL_BOOL };
static inline int col_null(const char *p, size_t i, int kind) {
    int64_t v64; int32_t v32;
    switch (kind) {
    case COL_I64: memcpy(&v64, p + 8 * i, 8); return v64 == NUL64;
    case COL_I32: memcpy(&v32, p + 4 * i, 4); return v32 == NUL32;
    case COL_ID: memcpy(&v32, p + 4 * i, 4); return v32 < 0;
    default: return (unsigned char)p[i] == 2;
    }
}
/* Arrow's bitmap (LSB first) of rows [0, n) of the column, bit i = want(row i): 0, or -1 out of memory */
static int col_bitmap(buf_t *out, const char *p, size_t n, int kind, int valid_bits) {
    size_t nb = (n + 7) / 8;
    if (buf_reserve(out, nb ? nb : 1)) return -1;
    memset(out->p, 0, nb);
    for (size_t i = 0; i < n; i++) {
        int bit = valid_bits ? !col_null(p, i, kind) : (unsigned char)p[i] == 1;
        if (bit) out->p[i >> 3] |= (char)(1 << (i & 7));
    }
    out->len = nb;
    return 0;
}
/* d[key] = a numeric column's values (a bool column's: bytes 0/1/2), d[key_nulls] = how many are null, and what Arrow
 * reads without a copy: d[key_bitmap] its validity bitmap when some are null, d[key_bits] a bool column's values as
 * bits (funcgraph.py _column) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LOW_HALF_AT 4
#else
#define LOW_HALF_AT 0
#endif
/* how many of a column's n values are null: vectorized (at -O2 GCC leaves a loop with a remainder scalar, and these
 * counts were 5 % of the fold of function_graph records) */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#endif
static int64_t col_nulls(const char *p, size_t n, int kind) {
    int64_t nulls = 0;
    if (kind == COL_I64) /* (as its two 32-bit halves: SSE2 compares no 64-bit words) */
        for (size_t i = 0; i < n; i++) {
            uint32_t lo, hi;
            memcpy(&lo, p + 8 * i + LOW_HALF_AT, 4); memcpy(&hi, p + 8 * i + 4 - LOW_HALF_AT, 4);
            nulls += (lo == 0) & (hi == 0x80000000u);
        }
    else if (kind == COL_I32) for (size_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); nulls += v == NUL32; }
    else if (kind == COL_ID) for (size_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); nulls += v < 0; }
    else for (size_t i = 0; i < n; i++) nulls += (unsigned char)p[i] == 2;
    return nulls;
}
static int set_col(dest_t *x, PyObject *d, const char *key, buf_t *b, int kind) {
    size_t w = kind == COL_I64 ? 8 : kind == COL_BOOL ? 1 : 4, n = b->len / w;
    const char *p = b->p;
    int64_t nulls = col_nulls(p, n, kind);
    char k[64];
    buf_t bm = {0};
    int bad = 0;
    if (nulls) {
        snprintf(k, sizeof k, "%s_bitmap", key);
        bad = col_bitmap(&bm, p, n, kind, 1) || set_buf(x, d, k, &bm);
    }
    if (!bad && kind == COL_BOOL) {
        snprintf(k, sizeof k, "%s_bits", key);
        bad = col_bitmap(&bm, p, n, kind, 0) || set_buf(x, d, k, &bm);
    }
    buf_free(&bm);
    snprintf(k, sizeof k, "%s_nulls", key);
    return bad || set_int(d, k, nulls) || set_buf(x, d, key, b);
}

/* the interned strings, id order, as an Arrow string array's buffers (dict_off, dict_data; bytes that are not UTF-8
 * become '?', in the copy: the arena keeps them for matching): finish's result only, the names table is written once */
static int set_dict(dest_t *x, PyObject *d, state_t *st) {
    strcol s; memset(&s, 0, sizeof s);
    int bad = 0;
    for (int64_t i = 0; i < st->nistr && !bad; i++) bad = str_put(&s, st->arena.p + st->istr[i].off, st->istr[i].len, 1);
    if (!bad && s.off.len == 0) bad = put32(&s.off, 0);
    bad = bad || set_buf(x, d, "dict_off", &s.off) || set_buf(x, d, "dict_data", &s.data);
    str_free(&s);
    return bad;
}

static PyObject *result(state_t *st, PyObject *owner, out_t *o, int64_t lines, int names) {
    if (o->oom) { out_free(o); return PyErr_NoMemory(); }
    buf_t *v[N_OUT_BUFS];
    out_bufs(o, v);
    for (size_t i = 0; i < N_OUT_BUFS; i++) st->hint[i] = v[i]->len + v[i]->len / 8;
    PyObject *d = PyDict_New();
    if (!d) { out_free(o); return NULL; }
    dest_t dx = {st, owner}, *x = &dx;
    int bad =
        set_int(d, "lines", lines) || set_int(d, "nc", o->nc) || set_col(x, d, "c_line", &o->c_line, COL_I64) || set_col(x, d, "c_pid", &o->c_pid, COL_I64) ||
        set_col(x, d, "c_cpu", &o->c_cpu, COL_I32) || set_col(x, d, "c_depth", &o->c_depth, COL_I32) || set_col(x, d, "c_entry", &o->c_entry, COL_I64) ||
        set_col(x, d, "c_exit", &o->c_exit, COL_I64) || set_col(x, d, "c_dur", &o->c_dur, COL_I64) || set_col(x, d, "c_parent", &o->c_parent, COL_I64) ||
        set_col(x, d, "c_exit_line", &o->c_exit_line, COL_I64) || set_col(x, d, "c_partial", &o->c_partial, COL_BOOL) ||
        set_col(x, d, "c_comm", &o->c_comm, COL_ID) || set_col(x, d, "c_func", &o->c_func, COL_ID) || (names && set_dict(x, d, st)) ||
        set_int(d, "ns", o->ns) || set_col(x, d, "s_line", &o->s_line, COL_I64) || set_col(x, d, "s_t", &o->s_t, COL_I64) ||
        set_col(x, d, "s_cpu", &o->s_cpu, COL_I32) || set_col(x, d, "s_ppid", &o->s_ppid, COL_I64) || set_col(x, d, "s_pprio", &o->s_pprio, COL_I32) ||
        set_col(x, d, "s_npid", &o->s_npid, COL_I64) || set_col(x, d, "s_nprio", &o->s_nprio, COL_I32) ||
        set_str(x, d, "s_pcomm", &o->s_pcomm) || set_str(x, d, "s_pstate", &o->s_pstate) || set_str(x, d, "s_ncomm", &o->s_ncomm) ||
        set_int(d, "nw", o->nw) || set_col(x, d, "w_line", &o->w_line, COL_I64) || set_col(x, d, "w_t", &o->w_t, COL_I64) ||
        set_col(x, d, "w_cpu", &o->w_cpu, COL_I32) || set_col(x, d, "w_wpid", &o->w_wpid, COL_I64) || set_col(x, d, "w_pid", &o->w_pid, COL_I64) ||
        set_col(x, d, "w_prio", &o->w_prio, COL_I32) || set_col(x, d, "w_tcpu", &o->w_tcpu, COL_I32) || set_col(x, d, "w_succ", &o->w_succ, COL_BOOL) ||
        set_str(x, d, "w_event", &o->w_event) || set_str(x, d, "w_wcomm", &o->w_wcomm) || set_str(x, d, "w_comm", &o->w_comm) ||
        set_int(d, "ne", o->ne) || set_col(x, d, "e_line", &o->e_line, COL_I64) || set_col(x, d, "e_t", &o->e_t, COL_I64) ||
        set_col(x, d, "e_cpu", &o->e_cpu, COL_I32) || set_col(x, d, "e_pid", &o->e_pid, COL_I64) || set_str(x, d, "e_comm", &o->e_comm) ||
        set_str(x, d, "e_event", &o->e_event) || set_str(x, d, "e_text", &o->e_text) ||
        set_buf(x, d, "k_line", &o->k_line) || set_buf(x, d, "k_start", &o->k_start) || set_buf(x, d, "k_len", &o->k_len) ||
        set_buf(x, d, "k_reason", &o->k_reason) || set_buf(x, d, "k_text", &o->k_text) || set_buf(x, d, "h_start", &o->h_start) || set_buf(x, d, "h_len", &o->h_len) ||
        set_int(d, "n_fgtext", st->n_fgtext) || set_int(d, "n_evline", st->n_evline) ||
        set_int(d, "n_evline_noflags", st->n_evline_noflags) || set_int(d, "n_lost", st->n_lost) ||
        set_int(d, "n_tail_mismatch", st->n_tail_mismatch) || set_int(d, "n_folded_cut", st->n_folded_cut) ||
        set_int(d, "open_tasks", st->ntasks);
    out_free(o);
    if (bad) { Py_DECREF(d); return NULL; }
    return d;
}

/* a line's outcome rc (parse_line's): a skip reason (> 0) lists it */
static void skipped(out_t *o, int rc, int64_t line, int64_t start, int64_t len) {
    if (rc <= 0) return;
    if (put64(&o->k_line, line) || put64(&o->k_start, start) || put64(&o->k_len, len) || put32(&o->k_reason, rc))
        o->oom = 1;
    else o->nk++;
}
/* the same, of a text that is not in the chunk: kept in k_text, its start there given as -1 - start */
static void skipped_text(out_t *o, int rc, int64_t line, const char *p, size_t n) {
    if (rc <= 0) return;
    int64_t start = -1 - (int64_t)o->k_text.len;
    if (n && buf_put(&o->k_text, p, n)) { o->oom = 1; return; }
    skipped(o, rc, line, start, (int64_t)n);
}

/* ---- tracedat_records.c's record stream folded as its report's lines would be: _funcgraph_records.h ------------- */
#include "_funcgraph_records.h"

static state_t *get_state(PyObject *cap) { return PyCapsule_GetPointer(cap, "funcgraph.state"); }

static PyObject *tokenize(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cap; Py_buffer buf; long long first_line;
    if (!PyArg_ParseTuple(args, "Oy*L", &cap, &buf, &first_line)) return NULL;
    state_t *st = get_state(cap);
    if (!st) { PyBuffer_Release(&buf); return NULL; }
    const char *s = buf.buf, *end = s + buf.len;
    out_t o; memset(&o, 0, sizeof o);
    int64_t lineno = first_line;
    buf_t *v[N_OUT_BUFS];
    out_bufs(&o, v);
    for (size_t i = 0; i < N_OUT_BUFS; i++) /* blocks of freed columns, taken while the GIL is held (_colpool.h) */
        if (st->hint[i]) v[i]->p = pool_take(&st->pool, st->hint[i], &v[i]->cap);
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < N_OUT_BUFS && !o.oom; i++) /* the others: the hint's size exactly, not a power of 2 */
        if (st->hint[i] && !v[i]->p && !(v[i]->p = malloc(v[i]->cap = st->hint[i]))) { v[i]->cap = 0; o.oom = 1; }
    /* the head, the first ~35 %, parsed and folded here while a thread tokenizes the tail (the fold of a line costs
     * about a third of its tokenizing) */
    const char *cut = end;
    tail_t tail = {.lines = st->ahead, .cap = st->ahead_cap};
    pthread_t worker;
    int split = 0;
    if (buf.len >= SPLIT_MIN) {
        const char *nl = memchr(s + buf.len * 7 / 20, '\n', (size_t)(end - (s + buf.len * 7 / 20)));
        if (nl && nl + 1 < end) {
            cut = nl + 1;
            tail.from = cut; tail.to = end;
            split = pthread_create(&worker, NULL, tokenize_tail, &tail) == 0;
            if (!split) cut = end;
        }
    }
    for (const char *p = s; p < cut && !o.oom; lineno++) {
        const char *nl = memchr(p, '\n', (size_t)(cut - p));
        const char *e = nl ? nl : cut;
        skipped(&o, parse_line(st, &o, p, e, lineno, (int64_t)(p - s)), lineno, p - s, e - p);
        if (!nl) { lineno++; break; }
        p = nl + 1;
    }
    if (split) {
        pthread_join(worker, NULL);
        if (tail.failed) o.oom = 1;
        for (size_t i = 0; i < tail.n && !o.oom; i++, lineno++) {
            pre_t *x = &tail.lines[i];
            /* the line's end: from its length, or (a line too long for it) the next newline */
            const char *xe = x->len != NO_OFF ? x->p + x->len : memchr(x->p, '\n', (size_t)(end - x->p));
            if (!xe) xe = end;
            skipped(&o, fold_pre(st, &o, x, xe, lineno, (int64_t)(x->p - s)), lineno, x->p - s, xe - x->p);
        }
    }
    st->ahead = tail.lines; st->ahead_cap = tail.cap;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    return result(st, cap, &o, lineno - first_line, 0);
}

/* records(state, chunk, first_line, offset) -> tokenize's dict for the whole records at the chunk's start, with
 * "consumed" (their bytes; the rest begins a record the next chunk completes) and "lines" (the report lines they stand
 * for); ValueError names the byte of a malformed record in the stream (the chunk starts at its byte `offset`) */
static PyObject *records(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cap; Py_buffer buf; long long first_line, offset;
    if (!PyArg_ParseTuple(args, "Oy*LL", &cap, &buf, &first_line, &offset)) return NULL;
    state_t *st = get_state(cap);
    if (!st) { PyBuffer_Release(&buf); return NULL; }
    out_t o; memset(&o, 0, sizeof o);
    int64_t lineno = first_line, bad = 0, used = 0;
    buf_t *v[N_OUT_BUFS];
    out_bufs(&o, v);
    for (size_t i = 0; i < N_OUT_BUFS; i++) /* blocks of freed columns, taken while the GIL is held, as tokenize does */
        if (st->hint[i]) v[i]->p = pool_take(&st->pool, st->hint[i], &v[i]->cap);
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < N_OUT_BUFS && !o.oom; i++) /* the others: the hint's size exactly, not a power of 2 */
        if (st->hint[i] && !v[i]->p && !(v[i]->p = malloc(v[i]->cap = st->hint[i]))) { v[i]->cap = 0; o.oom = 1; }
    if (!o.oom) used = fold_records(st, &o, buf.buf, (const char *)buf.buf + buf.len, &lineno, &bad);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (used < 0) {
        out_free(&o);
        return PyErr_Format(PyExc_ValueError, "a malformed record at byte %lld of the records", offset + (long long)bad);
    }
    PyObject *d = result(st, cap, &o, lineno - first_line, 0);
    if (d && set_int(d, "consumed", used)) Py_CLEAR(d);
    return d;
}

static PyObject *finish(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cap;
    if (!PyArg_ParseTuple(args, "O", &cap)) return NULL;
    state_t *st = get_state(cap);
    if (!st) return NULL;
    out_t o; memset(&o, 0, sizeof o);
    flush_pending(st, &o);
    for (int64_t i = 0; i < st->ntasks && !o.oom; i++) flush_frames(st, &o, &st->tasks[i], 0);
    return result(st, cap, &o, 0, 1);
}

static PyMethodDef methods[] = {
    {"new_state", new_state, METH_NOARGS, "new_state() -> capsule holding the cross-chunk parse state"},
    {"tokenize", tokenize, METH_VARARGS, "tokenize(state, chunk, first_line) -> dict of column buffers"},
    {"records", records, METH_VARARGS, "records(state, chunk, first_line, offset) -> dict of column buffers, consumed bytes"},
    {"finish", finish, METH_VARARGS, "finish(state) -> dict of column buffers (open calls, pending event)"},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_funcgraph",
                                    .m_doc = "ftrace text tokenizer and call-tree rebuilder", .m_size = -1,
                                    .m_methods = methods};
PyMODINIT_FUNC PyInit__funcgraph(void) {
    if (PyType_Ready(&poolcol_type) < 0) return NULL;
    return PyModule_Create(&module);
}
