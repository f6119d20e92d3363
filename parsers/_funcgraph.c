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

/* ---------------------------------------------------------------- growable buffers */
typedef struct { char *p; size_t len, cap; } buf_t;

static __attribute__((noinline)) int buf_grow(buf_t *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) return -1;
    b->p = q; b->cap = cap;
    return 0;
}
static inline __attribute__((always_inline)) int buf_reserve(buf_t *b, size_t extra) {
    return __builtin_expect(b->len + extra <= b->cap, 1) ? 0 : buf_grow(b, extra);
}
static inline __attribute__((always_inline)) int buf_put(buf_t *b, const void *p, size_t n) {
    if (buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}
static inline __attribute__((always_inline)) int put64(buf_t *b, int64_t v) { return buf_put(b, &v, 8); }
static inline __attribute__((always_inline)) int put32(buf_t *b, int32_t v) { return buf_put(b, &v, 4); }
static inline int put8(buf_t *b, uint8_t v) { return buf_put(b, &v, 1); }

typedef struct { buf_t off, data, valid; int64_t rows; } strcol;

/* length of the valid UTF-8 sequence at p (1-4), or 0 if invalid */
static size_t utf8_len(const unsigned char *p, const unsigned char *e) {
    unsigned c = p[0];
    size_t n; unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if ((size_t)(e - p) < n) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++) if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return n;
}

/* appends [p, p+n) to the string column; bytes that are not UTF-8 become '?' (Arrow strings are UTF-8) */
static int str_put(strcol *s, const char *p, size_t n, int valid) {
    if (s->rows == 0 && s->off.len == 0 && put32(&s->off, 0)) return -1;
    if (!valid) n = 0;
    if (s->data.len + n > (size_t)INT32_MAX) return -1;
    size_t start = s->data.len;
    if (buf_put(&s->data, p, n)) return -1;
    unsigned char *q = (unsigned char *)s->data.p + start, *qe = q + n;
    for (unsigned char *x = q; x < qe;) {
        if (qe - x >= 8 && !(load8((const char *)x) & 0x8080808080808080ULL)) { x += 8; continue; }
        if (*x < 0x80) { x++; continue; }
        size_t k = utf8_len(x, qe);
        if (k) x += k; else *x++ = '?';
    }
    if (put32(&s->off, (int32_t)s->data.len) || put8(&s->valid, (uint8_t)(valid != 0))) return -1;
    s->rows++;
    return 0;
}
static void str_free(strcol *s) { free(s->off.p); free(s->data.p); free(s->valid.p); memset(s, 0, sizeof *s); }
static void buf_free(buf_t *b) { free(b->p); memset(b, 0, sizeof *b); }

/* ---------------------------------------------------------------- output tables */
typedef struct {
    /* fg_calls */
    buf_t c_line, c_pid, c_cpu, c_depth, c_entry, c_exit, c_dur, c_parent, c_exit_line, c_partial;
    buf_t c_comm, c_func; int64_t nc; /* ids of interned strings (the state's dictionary), -1: null */
    /* sched_switch */
    buf_t s_line, s_t, s_cpu, s_ppid, s_pprio, s_npid, s_nprio;
    strcol s_pcomm, s_pstate, s_ncomm; int64_t ns;
    /* sched_wakeup */
    buf_t w_line, w_t, w_cpu, w_wpid, w_pid, w_prio, w_tcpu, w_succ;
    strcol w_event, w_wcomm, w_comm; int64_t nw;
    /* trace_events */
    buf_t e_line, e_t, e_cpu, e_pid;
    strcol e_comm, e_event, e_text; int64_t ne;
    /* skipped lines, header lines (spans in the chunk) */
    buf_t k_line, k_start, k_len, k_reason; int64_t nk;
    buf_t h_start, h_len; int64_t nh;
    int oom;
} out_t;

/* every buffer of the output (the string columns' three each), for freeing and for sizing the next chunk's */
#define N_OUT_BUFS (37 + 3 * 9)
static void out_bufs(out_t *o, buf_t **v) {
    buf_t *bs[] = {&o->c_line, &o->c_pid, &o->c_cpu, &o->c_depth, &o->c_entry, &o->c_exit, &o->c_dur, &o->c_parent,
                   &o->c_exit_line, &o->c_partial, &o->c_comm, &o->c_func, &o->s_line, &o->s_t, &o->s_cpu, &o->s_ppid, &o->s_pprio, &o->s_npid,
                   &o->s_nprio, &o->w_line, &o->w_t, &o->w_cpu, &o->w_wpid, &o->w_pid, &o->w_prio, &o->w_tcpu,
                   &o->w_succ, &o->e_line, &o->e_t, &o->e_cpu, &o->e_pid, &o->k_line, &o->k_start, &o->k_len,
                   &o->k_reason, &o->h_start, &o->h_len};
    strcol *ss[] = {&o->s_pcomm, &o->s_pstate, &o->s_ncomm, &o->w_event, &o->w_wcomm,
                    &o->w_comm, &o->e_comm, &o->e_event, &o->e_text};
    size_t n = 0;
    for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++) v[n++] = bs[i];
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) { v[n++] = &ss[i]->off; v[n++] = &ss[i]->data; v[n++] = &ss[i]->valid; }
}

static void out_free(out_t *o) {
    buf_t *v[N_OUT_BUFS];
    out_bufs(o, v);
    for (size_t i = 0; i < N_OUT_BUFS; i++) buf_free(v[i]);
}

/* ---------------------------------------------------------------- state */
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

/* ---------------------------------------------------------------- lexing helpers */
static inline int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int span_eq(const char *p, const char *e, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(e - p) == n && memcmp(p, lit, n) == 0;
}
static const char *find(const char *p, const char *e, const char *lit) {
    size_t n = strlen(lit);
    while ((size_t)(e - p) >= n) {
        const char *q = memchr(p, lit[0], (size_t)(e - p) - n + 1);
        if (!q) return NULL;
        if (memcmp(q, lit, n) == 0) return q;
        p = q + 1;
    }
    return NULL;
}
static int parse_num_auto(const char *p, const char *e, int64_t *v) { /* decimal or 0x hex */
    if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        if (p >= e || e - p > 15) return -1;
        int64_t x = 0;
        for (; p < e; p++) {
            if (!is_hex(*p)) return -1;
            x = x * 16 + (is_digit(*p) ? *p - '0' : ((*p | 32) - 'a' + 10));
        }
        *v = x; return 0;
    }
    return parse_u64(p, e, v);
}
/* seconds.fraction -> ns (fraction up to 9 digits); a plain integer is a raw clock count, kept as is */
static int parse_time(const char *p, const char *e, int64_t *ns) {
    const char *dot = p;
    while (dot < e && is_digit(*dot)) dot++;
    if (dot == e) return parse_u64(p, e, ns);
    if (*dot != '.') return -1; /* a byte that is neither: no parse_u64 below would take it */
    int64_t s, f = 0;
    if (parse_u64(p, dot, &s) || s > 9000000000LL) return -1;
    int nd = (int)(e - dot - 1);
    if (nd < 1 || nd > 9 || parse_u64(dot + 1, e, &f)) return -1;
    for (int i = nd; i < 9; i++) f *= 10;
    *ns = s * 1000000000LL + f;
    return 0;
}
static inline int is_mark(char c) { return c == '+' || c == '!' || c == '#' || c == '*' || c == '@' || c == '$'; }

/* a duration column "[mark] 123.456 us" in [p,e) (already trimmed) -> ns. 0 ok, -1 not a duration */
static int parse_duration(const char *p, const char *e, int64_t *ns) {
    if (p < e && is_mark(*p)) p = skip_ws(p + 1, e);
    if (e - p < 3 || e[-1] != 's' || e[-2] != 'u') return -1;
    const char *n_end = rtrim(p, e - 2);
    if (n_end == p) return -1;
    const char *dot = p;
    while (dot < n_end && is_digit(*dot)) dot++;
    if (dot == n_end) dot = NULL;
    else if (*dot != '.') return -1; /* neither a digit nor the first '.': parse_u64 below would refuse it */
    int64_t us, f = 0;
    if (parse_u64(p, dot ? dot : n_end, &us) || us > 9000000000000LL) return -1;
    if (dot) {
        int nd = (int)(n_end - dot - 1);
        if (nd < 1 || nd > 9) return -1;
        if (parse_u64(dot + 1, n_end, &f)) return -1;
        /* keep 3 decimals (ns) */
        while (nd > 3) { f /= 10; nd--; }
        while (nd < 3) { f *= 10; nd++; }
    }
    *ns = us * 1000 + f;
    return 0;
}

/* "comm-pid" in [p,e) trimmed: comm may hold anything; pid = digits after the last '-' */
static int split_comm_pid(const char *p, const char *e, const char **comm, size_t *commn, int64_t *pid) {
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *d = e;
    while (d > p && is_digit(d[-1])) d--;
    if (d == e || d == p || d[-1] != '-') return -1;
    if (parse_u64(d, e, pid)) return -1;
    *comm = p; *commn = (size_t)(d - 1 - p);
    return 0;
}
/* "comm:pid" (sched plugin / old kernel forms) */
static int split_comm_colon_pid(const char *p, const char *e, const char **comm, size_t *commn, int64_t *pid) {
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *d = e;
    while (d > p && is_digit(d[-1])) d--;
    if (d == e || d == p || d[-1] != ':') return -1;
    if (parse_u64(d, e, pid)) return -1;
    *comm = p; *commn = (size_t)(d - 1 - p);
    return 0;
}

/* ---------------------------------------------------------------- row writers */
typedef struct {
    int64_t line, t, pid;   /* t, pid: NUL64 when unknown */
    int32_t cpu;            /* NUL32 when unknown */
    const char *comm; size_t commn; int has_comm;
    int64_t key;            /* call-stack key */
} ctx_t;

static void emit_call(state_t *st, out_t *o, int64_t line, int64_t pid, int32_t comm_id, const char *comm, size_t commn,
                      int has_comm, int32_t cpu, int32_t depth, int32_t func_id, const char *func, size_t funcn,
                      int has_func, int64_t entry, int64_t exit, int64_t dur, int64_t parent, int64_t exit_line,
                      int partial) {
    if (comm_id < 0 && has_comm && (comm_id = intern(st, comm, commn)) < 0) { o->oom = 1; return; }
    if (func_id < 0 && has_func && (func_id = intern_name(st, func, funcn)) < 0) { o->oom = 1; return; }
    int bad = put64(&o->c_line, line) || put64(&o->c_pid, pid) || put32(&o->c_cpu, cpu) || put32(&o->c_depth, depth) ||
              put64(&o->c_entry, entry) || put64(&o->c_exit, exit) || put64(&o->c_dur, dur) ||
              put64(&o->c_parent, parent) || put64(&o->c_exit_line, exit_line) || put8(&o->c_partial, (uint8_t)partial) ||
              put32(&o->c_comm, comm_id) || put32(&o->c_func, func_id);
    if (bad) o->oom = 1; else o->nc++;
}

static void emit_event(out_t *o, const ctx_t *c, const char *ev, size_t evn, const char *text, size_t textn, int has_text) {
    int bad = put64(&o->e_line, c->line) || put64(&o->e_t, c->t) || put32(&o->e_cpu, c->cpu) || put64(&o->e_pid, c->pid) ||
              str_put(&o->e_comm, c->comm, c->commn, c->has_comm) || str_put(&o->e_event, ev, evn, 1) ||
              str_put(&o->e_text, text, textn, has_text);
    if (bad) o->oom = 1; else o->ne++;
}

static void flush_pending(state_t *st, out_t *o) {
    if (!st->pend) return;
    int bad = put64(&o->e_line, st->pend_line) || put64(&o->e_t, st->pend_t) || put32(&o->e_cpu, st->pend_cpu) ||
              put64(&o->e_pid, st->pend_pid) ||
              str_put(&o->e_comm, st->pend_comm.p, st->pend_comm.len, st->pend_has_comm) ||
              str_put(&o->e_event, st->pend_event.p, st->pend_event.len, 1) ||
              str_put(&o->e_text, st->pend_text.p, st->pend_text.len, 1);
    if (bad) o->oom = 1; else o->ne++;
    st->pend = 0;
}

static void start_pending(state_t *st, out_t *o, const ctx_t *c, const char *ev, const char *text, size_t textn) {
    flush_pending(st, o);
    st->pend = 1; st->pend_line = c->line; st->pend_t = c->t; st->pend_pid = c->pid; st->pend_cpu = c->cpu;
    st->pend_has_comm = c->has_comm; st->pend_frames = 0;
    st->pend_comm.len = st->pend_event.len = st->pend_text.len = 0;
    if (buf_put(&st->pend_comm, c->comm, c->has_comm ? c->commn : 0) || buf_put(&st->pend_event, ev, strlen(ev)) ||
        buf_put(&st->pend_text, text, textn))
        o->oom = 1;
}

/* ---------------------------------------------------------------- sched events */
/* sched_switch text -> row; 0 ok, -1 unrecognised */
static int do_switch(out_t *o, const ctx_t *c, const char *p, const char *e) {
    const char *pc, *nc, *ps, *pse; size_t pcn, ncn;
    int64_t ppid, npid, pprio = NUL32, nprio = NUL32;
    p = skip_ws(p, e); e = rtrim(p, e);
    if (starts(p, e, "prev_comm=")) {
        const char *q = find(p, e, " prev_pid="); if (!q) return -1;
        pc = p + 10; pcn = (size_t)(q - pc);
        const char *r = q + 10, *t = tok_end(r, e);
        if (parse_u64(r, t, &ppid)) return -1;
        const char *x = find(t, e, " prev_prio="); if (!x) return -1;
        r = x + 11; t = tok_end(r, e);
        if (parse_i64(r, t, &pprio)) return -1;
        x = find(t, e, " prev_state="); if (!x) return -1;
        ps = x + 12;
        const char *arrow = find(ps, e, " ==> "); if (!arrow) return -1;
        pse = rtrim(ps, arrow);
        x = find(arrow, e, "next_comm="); if (!x) return -1;
        nc = x + 10;
        q = find(nc, e, " next_pid="); if (!q) return -1;
        ncn = (size_t)(q - nc);
        r = q + 10; t = tok_end(r, e);
        if (parse_u64(r, t, &npid)) return -1;
        x = find(t, e, " next_prio="); if (!x) return -1;
        r = x + 11; t = tok_end(r, e);
        if (parse_i64(r, t, &nprio)) return -1;
    } else {
        if (starts(p, e, "task ")) p = skip_ws(p + 5, e);
        const char *arrow = find(p, e, " ==> "); if (!arrow) return -1;
        /* left: comm:pid [prio] STATE   (STATE may be "(S)") */
        const char *le = rtrim(p, arrow);
        const char *st0 = le; while (st0 > p && !is_ws(st0[-1])) st0--;
        ps = st0; pse = le;
        if (pse - ps >= 2 && *ps == '(' && pse[-1] == ')') { ps++; pse--; }
        const char *lb = rtrim(p, st0);
        if (lb <= p || lb[-1] != ']') return -1;
        const char *ob = lb - 1; while (ob > p && *ob != '[') ob--;
        if (*ob != '[') return -1;
        if (parse_i64(skip_ws(ob + 1, lb - 1), rtrim(ob + 1, lb - 1), &pprio)) return -1;
        if (split_comm_colon_pid(p, ob, &pc, &pcn, &ppid)) return -1;
        /* right: comm:pid [prio] */
        const char *r = skip_ws(arrow + 5, e);
        const char *re = e;
        if (re <= r || re[-1] != ']') return -1;
        ob = re - 1; while (ob > r && *ob != '[') ob--;
        if (*ob != '[') return -1;
        if (parse_i64(skip_ws(ob + 1, re - 1), rtrim(ob + 1, re - 1), &nprio)) return -1;
        if (split_comm_colon_pid(r, ob, &nc, &ncn, &npid)) return -1;
    }
    if (pprio < INT32_MIN + 1 || pprio > INT32_MAX) pprio = NUL32;
    if (nprio < INT32_MIN + 1 || nprio > INT32_MAX) nprio = NUL32;
    int bad = put64(&o->s_line, c->line) || put64(&o->s_t, c->t) || put32(&o->s_cpu, c->cpu) || put64(&o->s_ppid, ppid) ||
              put32(&o->s_pprio, (int32_t)pprio) || put64(&o->s_npid, npid) || put32(&o->s_nprio, (int32_t)nprio) ||
              str_put(&o->s_pcomm, pc, pcn, 1) || str_put(&o->s_pstate, ps, (size_t)(pse - ps), 1) ||
              str_put(&o->s_ncomm, nc, ncn, 1);
    if (bad) o->oom = 1; else o->ns++;
    return 0;
}

/* sched_wakeup / sched_waking / sched_wakeup_new text -> row; 0 ok, -1 unrecognised */
static int do_wakeup(out_t *o, const ctx_t *c, const char *ev, size_t evn, const char *p, const char *e) {
    const char *cm; size_t cmn; int64_t pid, prio = NUL32, tcpu = NUL32, succ = 2;
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *rest;
    if (starts(p, e, "comm=")) {
        const char *q = find(p, e, " pid="); if (!q) return -1;
        cm = p + 5; cmn = (size_t)(q - cm);
        const char *r = q + 5, *t = tok_end(r, e);
        if (parse_u64(r, t, &pid)) return -1;
        rest = t;
    } else {
        if (starts(p, e, "task ")) p = skip_ws(p + 5, e);
        /* comm:pid [prio] ...: the first " [" whose left side ends with ":digits" and holds a number */
        const char *q = p; rest = NULL;
        int tries = 0;
        while ((q = find(q, e, " [")) != NULL && tries++ < 8) {
            const char *cb = memchr(q + 2, ']', (size_t)(e - q - 2));
            int64_t pr;
            if (cb && parse_i64(skip_ws(q + 2, cb), rtrim(q + 2, cb), &pr) == 0 &&
                split_comm_colon_pid(p, q, &cm, &cmn, &pid) == 0) { prio = pr; rest = cb + 1; break; }
            q += 2;
        }
        if (!rest) return -1;
    }
    /* remaining tokens: prio=N success=N target_cpu=N | success=N [007] | CPU:007 */
    for (const char *r = skip_ws(rest, e); r < e; r = skip_ws(r, e)) {
        const char *t = tok_end(r, e);
        int64_t v;
        if (starts(r, t, "prio=")) { if (parse_i64(r + 5, t, &v) == 0) prio = v; }
        else if (starts(r, t, "success=")) { if (parse_u64(r + 8, t, &v) == 0) succ = v != 0; }
        else if (starts(r, t, "target_cpu=")) { if (parse_u64(r + 11, t, &v) == 0 && v < INT32_MAX) tcpu = v; }
        else if (starts(r, t, "CPU:")) { if (parse_u64(r + 4, t, &v) == 0 && v < INT32_MAX) tcpu = v; }
        else if (t - r >= 3 && *r == '[' && t[-1] == ']') { if (parse_u64(r + 1, t - 1, &v) == 0 && v < INT32_MAX) tcpu = v; }
        r = t;
    }
    if (prio < INT32_MIN + 1 || prio > INT32_MAX) prio = NUL32;
    int bad = put64(&o->w_line, c->line) || put64(&o->w_t, c->t) || put32(&o->w_cpu, c->cpu) || put64(&o->w_wpid, c->pid) ||
              put64(&o->w_pid, pid) || put32(&o->w_prio, (int32_t)prio) || put32(&o->w_tcpu, (int32_t)tcpu) ||
              put8(&o->w_succ, (uint8_t)succ) || str_put(&o->w_event, ev, evn, 1) ||
              str_put(&o->w_wcomm, c->comm, c->commn, c->has_comm) || str_put(&o->w_comm, cm, cmn, 1);
    if (bad) o->oom = 1; else o->nw++;
    return 0;
}

static int is_wakeup_name(const char *p, const char *e) {
    return span_eq(p, e, "sched_wakeup") || span_eq(p, e, "sched_waking") || span_eq(p, e, "sched_wakeup_new");
}

/* an event by name + text: routes to sched tables, print, stack, or trace_events */
static void do_event(state_t *st, out_t *o, const ctx_t *c, const char *ev, const char *eve, const char *p, const char *e) {
    size_t evn = (size_t)(eve - ev);
    p = skip_ws(p, e); e = rtrim(p, e);
    if (span_eq(ev, eve, "sched_switch")) { if (do_switch(o, c, p, e) == 0) return; }
    else if (is_wakeup_name(ev, eve)) { if (do_wakeup(o, c, ev, evn, p, e) == 0) return; }
    else if (span_eq(ev, eve, "print") || span_eq(ev, eve, "tracing_mark_write")) {
        if (evn == 5) { /* "print: 00000000 text" (old, %08lx ip) or "print: tracing_mark_write: text" */
            const char *t = tok_end(p, e);
            int hex = t - p >= 8;
            for (const char *q = p; q < t && hex; q++) hex = is_hex(*q);
            if (hex) p = skip_ws(t, e);
            else if (t > p && t[-1] == ':') p = skip_ws(t, e);
        }
        emit_event(o, c, "print", 5, p, (size_t)(e - p), 1);
        return;
    } else if (span_eq(ev, eve, "kernel_stack") || span_eq(ev, eve, "user_stack")) {
        char name[16]; memcpy(name, ev, evn); name[evn] = 0;
        start_pending(st, o, c, name, p, (size_t)(e - p));
        return;
    }
    emit_event(o, c, ev, evn, p, (size_t)(e - p), 1);
}

/* ---------------------------------------------------------------- function_graph bodies */
enum { FG_ENTRY = 1, FG_LEAF, FG_EXIT, FG_COMMENT };
typedef struct {
    int kind;
    const char *name, *namee;  /* function (entry/leaf), tail name (exit) or comment text */
    int64_t dur;               /* ns or NUL64 */
    int32_t depth;             /* explicit depth (raw forms) or -1 */
    int32_t indent;            /* printed indentation / 2 */
} fgrec_t;

/* every field of *r zero (field by field: a memset of the struct was a `rep stos`, slow to start, per line) */
static inline void rec_clear(fgrec_t *r) {
    r->kind = 0; r->name = r->namee = NULL; r->dur = 0; r->depth = 0; r->indent = 0;
}

/* tail comment "/ * func [ret=..| = ..] * /" content -> function name span */
static void tail_name(const char *p, const char *e, const char **np, const char **ne) {
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *r = find(p, e, " ret=");
    if (!r) r = find(p, e, " = ");
    if (r) e = rtrim(p, r);
    *np = p; *ne = e;
}

/* body of a function_graph line (after the "|"), or the text of a trace-cmd funcgraph event */
static int parse_body(const char *p, const char *e, fgrec_t *r) {
    const char *b = p;
    p = skip_spaces(p, e);
    int sp = (int)(p - b);
    r->indent = sp > 2 ? (sp - 2) / 2 : 0;
    r->depth = -1; r->name = r->namee = NULL;
    e = rtrim(p, e);
    if (p >= e) return -1;
    if (*p == '}') {
        r->kind = FG_EXIT;
        const char *q = skip_ws(p + 1, e);
        if (e - q >= 2 && q[0] == '/' && q[1] == '*') {
            const char *ce = find(q + 2, e, "*/");
            tail_name(q + 2, ce ? ce : e, &r->name, &r->namee);
            if (r->name == r->namee) r->name = r->namee = NULL;
        }
        return 0;
    }
    if (e - p >= 2 && p[0] == '/' && p[1] == '*') {
        r->kind = FG_COMMENT;
        const char *q = p + 2, *ce = e;
        if (e - q >= 2 && e[-1] == '/' && e[-2] == '*') ce = e - 2;
        r->name = skip_ws(q, ce); r->namee = rtrim(r->name, ce);
        return 0;
    }
    /* func(args) { | func(args); with optional trailing comments */
    const char *op = memchr(p, '(', (size_t)(e - p));
    if (!op || op == p) return -1;
    const char *ne = rtrim(p, op);
    int lvl = 0; const char *q = op;
    for (; q < e; q++) {
        if (*q == '(') lvl++;
        else if (*q == ')' && --lvl == 0) break;
    }
    if (q >= e) return -1;
    q = skip_ws(q + 1, e);
    if (q >= e) return -1;
    if (*q == '{') r->kind = FG_ENTRY;
    else if (*q == ';') r->kind = FG_LEAF;
    else return -1;
    r->name = p; r->namee = ne;
    return 0;
}

/* raw kernel forms shown by trace-cmd without the plugin: "func=0x.. depth=N",
 * "func=0x.. calltime=0x.. rettime=0x.. overrun=0x.. depth=N", "--> func (N)", "<-- func (N) (start: x  end: y)" */
static int parse_raw(const char *p, const char *e, int is_exit, fgrec_t *r) {
    p = skip_ws(p, e); e = rtrim(p, e);
    r->depth = -1; r->indent = 0; r->dur = NUL64;
    if (starts(p, e, "func=")) {
        const char *t = tok_end(p, e);
        r->name = p + 5; r->namee = t;
        int64_t ct = NUL64, rt = NUL64, v;
        for (const char *q = skip_ws(t, e); q < e; q = skip_ws(q, e)) {
            const char *u = tok_end(q, e);
            if (starts(q, u, "depth=") && parse_num_auto(q + 6, u, &v) == 0 && v < MAX_STACK * 4) r->depth = (int32_t)v;
            else if (starts(q, u, "calltime=") && parse_num_auto(q + 9, u, &v) == 0) ct = v;
            else if (starts(q, u, "rettime=") && parse_num_auto(q + 8, u, &v) == 0) rt = v;
            q = u;
        }
        if (ct != NUL64 && rt != NUL64 && rt >= ct) r->dur = rt - ct;
        r->kind = is_exit ? FG_EXIT : FG_ENTRY;
        return 0;
    }
    if (starts(p, e, "--> ") || starts(p, e, "<-- ")) {
        int ex = p[0] == '<';
        const char *q = skip_ws(p + 4, e), *t = tok_end(q, e);
        r->name = q; r->namee = t;
        q = skip_ws(t, e);
        int64_t v;
        if (q < e && *q == '(') {
            const char *cb = memchr(q, ')', (size_t)(e - q));
            if (cb && parse_u64(q + 1, cb, &v) == 0 && v < MAX_STACK * 4) r->depth = (int32_t)v;
        }
        const char *s = find(q, e, "start: "), *f = find(q, e, "end: ");
        int64_t a, b;
        if (s && f) {
            const char *se = tok_end(s + 7, e), *fe = tok_end(f + 5, e);
            if (parse_num_auto(s + 7, se, &a) == 0 && parse_num_auto(f + 5, fe, &b) == 0 && b >= a) r->dur = b - a;
        }
        r->kind = ex ? FG_EXIT : FG_ENTRY;
        return 0;
    }
    return -1;
}

static inline int64_t task_key(int64_t pid, int32_t cpu) {
    int64_t c = cpu == NUL32 ? 0 : (int64_t)cpu + 1;
    if (pid == NUL64) return -1001 - 2 * c; /* unknown task: one stack per CPU */
    if (pid == 0) return -1000 - 2 * c;     /* the idle task: one per CPU */
    return pid;
}

/* frames [from, t->n) closed without a seen exit (lost exits / open at the end) */
static void flush_frames(state_t *st, out_t *o, task_t *t, int32_t from) {
    for (int32_t i = t->n - 1; i >= from; i--) {
        frame_t *f = &t->fr[i];
        emit_call(st, o, f->line, t->pid, f->comm, NULL, 0, 0, f->cpu, f->depth, f->func, NULL, 0, 0, f->entry_ns, NUL64,
                  NUL64, i > 0 ? t->fr[i - 1].line : NUL64, NUL64, 1);
    }
    if (from < t->n) t->n = from;
}

/* function_graph record of one line -> call stack operations; returns 0 or a skip reason */
static int do_fg(state_t *st, out_t *o, const ctx_t *c, fgrec_t *r) {
    if (r->kind == FG_COMMENT) {
        const char *p = r->name, *e = r->namee;
        /* "event_name: fields" for trace events shown inside the graph; anything else is a plain comment */
        const char *q = p;
        while (q < e && (is_digit(*q) || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_')) q++;
        if (q > p && q < e && *q == ':' && q + 1 < e && q[1] == ' ') do_event(st, o, c, p, q, q + 1, e);
        else emit_event(o, c, "comment", 7, p, (size_t)(e - p), 1);
        return 0;
    }
    int created;
    task_t *t = get_task(st, c->key, c->pid, &created);
    if (!t) { o->oom = 1; return 0; }
    if (created) {
        int32_t d = r->depth >= 0 ? r->depth : r->indent;
        t->base = r->kind == FG_EXIT ? d + 1 : d;
    } else if (t->n == 0 && r->depth >= 0) {
        t->base = r->kind == FG_EXIT ? r->depth + 1 : r->depth;
    }
    if (t->pid == NUL64 && c->pid != NUL64) t->pid = c->pid;
    int32_t depth = t->base + t->n;
    if (r->kind == FG_ENTRY) {
        if (t->n >= MAX_STACK) return R_DEEP;
        frame_t f;
        f.line = c->line; f.entry_ns = c->t; f.cpu = c->cpu; f.depth = depth; f.indent = r->indent;
        f.func = intern_name(st, r->name, (size_t)(r->namee - r->name));
        f.comm = c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1;
        if (f.func < 0 || (c->has_comm && f.comm < 0) || push_frame(t, f)) { o->oom = 1; return 0; }
        return 0;
    }
    if (r->kind == FG_LEAF) {
        int64_t ex = (c->t != NUL64 && r->dur != NUL64) ? c->t + r->dur : NUL64;
        emit_call(st, o, c->line, t->pid, c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1, c->comm,
                  c->commn, c->has_comm, c->cpu, depth, -1, r->name,
                  (size_t)(r->namee - r->name), 1, c->t, ex, r->dur, t->n ? t->fr[t->n - 1].line : NUL64, c->line, 0);
        return 0;
    }
    /* exit: which open call does it close? the top one, unless a tail name says a deeper one */
    int32_t k = t->n - 1;
    if (k >= 0 && r->name) {
        size_t nn = (size_t)(r->namee - r->name), fn;
        int32_t j = k;
        for (; j >= 0; j--) {
            const char *f = istr(st, t->fr[j].func, &fn);
            if (fn == nn && memcmp(f, r->name, nn) == 0) break;
        }
        if (j != k) {
            st->n_tail_mismatch++;
            frame_t *top = &t->fr[k];
            int child = 0;
            if (j < 0) {
                /* not open at all: either the exit of a child whose entry was lost (it began after the
                 * innermost open call), or of an ancestor entered before the trace (then every open call
                 * lost its exit). Timestamps decide; without them, the printed indentation. */
                if (c->t != NUL64 && r->dur != NUL64 && top->entry_ns != NUL64)
                    child = c->t - r->dur >= top->entry_ns - 1000;
                else
                    child = r->depth >= 0 ? r->depth > top->depth : r->indent > top->indent;
            }
            if (child) {
                int64_t en = (c->t != NUL64 && r->dur != NUL64) ? c->t - r->dur : NUL64;
                emit_call(st, o, c->line, t->pid, c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1,
                          c->comm, c->commn, c->has_comm, c->cpu, top->depth + 1, -1,
                          r->name, (size_t)(r->namee - r->name), 1, en, c->t, r->dur, top->line, c->line, 1);
                return 0;
            }
            st->n_lost_exit += k - j;
            /* the calls above j lost their exits; with no match, every open call did */
            flush_frames(st, o, t, j < 0 ? 0 : j + 1);
            k = j;
        }
    }
    if (k >= 0) {
        frame_t f = t->fr[k];
        t->n = k;
        int64_t dur = r->dur;
        if (dur == NUL64 && f.entry_ns != NUL64 && c->t != NUL64) dur = c->t - f.entry_ns;
        emit_call(st, o, f.line, t->pid, f.comm, NULL, 0, 0, f.cpu, f.depth, f.func, NULL, 0, 0, f.entry_ns, c->t, dur,
                  k > 0 ? t->fr[k - 1].line : NUL64, c->line, 0);
        return 0;
    }
    /* exit of a call entered before the trace (or the task's first line) began */
    if (t->base > -1000000000) t->base -= 1;
    int64_t en = (c->t != NUL64 && r->dur != NUL64) ? c->t - r->dur : NUL64;
    emit_call(st, o, c->line, t->pid, c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1, c->comm,
              c->commn, c->has_comm, c->cpu, t->base, -1, r->name,
              r->name ? (size_t)(r->namee - r->name) : 0, r->name != NULL, en, c->t, r->dur, NUL64, c->line, 1);
    return 0;
}

/* ---------------------------------------------------------------- line classes */
/* "comm-pid [(tgid)] [cpu] [flags] ts: event: text" -> 0 with *c (its time, CPU, task; not its line or key), *rest
 * (what follows the timestamp) and *noflags (no latency flags column); -1 not such a line (*reason R_CPU: a CPU out of
 * range). Reads no state: the tail of a chunk is tokenized ahead, in a second thread (pre_line) */
static int ev_fields(const char *p, const char *e, ctx_t *c, const char **rest, int *noflags, int *reason) {
    const char *q = p;
    int tries = 0;
    while ((q = memchr(q, '[', (size_t)(e - q))) != NULL && tries++ < 16) {
        const char *d = q + 1;
        while (d < e && is_digit(*d)) d++;
        if (d == q + 1 || d >= e || *d != ']' || d + 1 >= e || !is_ws(d[1])) { q++; continue; }
        /* left side: comm-pid, optionally followed by "(tgid)" */
        const char *l = rtrim(p, q);
        if (l > p && l[-1] == ')') {
            const char *op = l - 1, *lim = l - 40 > p ? l - 40 : p;
            while (op > lim && *op != '(') op--;
            if (*op != '(') { q++; continue; }
            int okt = 1;
            for (const char *x = op + 1; x < l - 1; x++) if (!(is_digit(*x) || *x == '-' || *x == ' ')) okt = 0;
            if (!okt) { q++; continue; }
            l = rtrim(p, op);
        }
        const char *comm; size_t commn; int64_t pid, cpu;
        if (split_comm_pid(p, l, &comm, &commn, &pid)) { q++; continue; }
        if (parse_u64(q + 1, d, &cpu)) { q++; continue; }
        /* flags? timestamp ending with ':' */
        const char *r = skip_ws(d + 1, e), *t = tok_end(r, e);
        int64_t ts;
        *noflags = 1;
        if (!(t > r && t[-1] == ':' && parse_time(r, t - 1, &ts) == 0)) {
            *noflags = 0;
            r = skip_ws(t, e); t = tok_end(r, e);
            if (!(t > r && t[-1] == ':' && parse_time(r, t - 1, &ts) == 0)) {
                /* "--ts-diff": "ts (+delta):" */
                if (!(parse_time(r, t, &ts) == 0)) { q++; continue; }
                r = skip_ws(t, e); t = tok_end(r, e);
                if (!(t > r && *r == '(' && t[-1] == ':')) { q++; continue; }
            }
        }
        if (cpu >= INT32_MAX) { *reason = R_CPU; return -1; }
        c->t = ts; c->pid = pid; c->cpu = (int32_t)cpu; c->comm = comm; c->commn = commn; c->has_comm = 1;
        *rest = skip_ws(t, e);
        return 0;
    }
    return -1;
}

/* the event [r,e) after an event line's timestamp: 1 a funcgraph_entry / funcgraph_exit, with *rec (*why > 0: a
 * skip), 0 any other. Reads no state */
static int fgev_fields(const char *r, const char *e, fgrec_t *rec, int *why) {
    const char *ne = tok_end(r, e);
    if (!(ne > r && ne[-1] == ':')) return 0;
    const char *ev = r, *eve = ne - 1;
    if (!(span_eq(ev, eve, "funcgraph_entry") || span_eq(ev, eve, "funcgraph_exit"))) return 0;
    int is_exit = eve - ev == 14;
    rec_clear(rec);
    const char *body = skip_ws(ne, e);
    if (parse_raw(body, e, is_exit, rec) == 0) return 1;
    const char *bar = memchr(body, '|', (size_t)(e - body));
    if (!bar) { *why = R_EVENT_FG; return 1; }
    const char *de = rtrim(body, bar);
    rec->dur = NUL64;
    if (de > body && parse_duration(body, de, &rec->dur)) { *why = R_EVENT_FG; return 1; }
    if (parse_body(bar + 1, e, rec) || rec->kind == FG_COMMENT ||
        (is_exit && rec->kind != FG_EXIT) || (!is_exit && rec->kind == FG_EXIT)) { *why = R_EVENT_FG; return 1; }
    return 1;
}

/* The commonest line of a trace-cmd report of a function_graph capture, read in one pass where the general reading
 * (ev_fields, then fgev_fields) scans some spans twice: "comm-pid [cpu] secs.frac: funcgraph_entry|funcgraph_exit:
 * [[mark] dur us] | body", without latency flags or "(tgid)", the first '[' of the line the CPU's. 1: it is one, and
 * *c, *rec and *noflags are what ev_fields and fgev_fields give for it; 0: anything else (then nothing is written and
 * the general reading decides). [s,e) is the line without its outer whitespace, and its first byte is neither a
 * digit, '|' nor a duration mark (so that fg_start is false: a line that may be a tracefs function_graph line is
 * read as before). Reads no state. */
static int fgev_fast(const char *s, const char *e, ctx_t *c, fgrec_t *rec, int *noflags) {
    const char *q = memchr(s, '[', (size_t)(e - s));
    if (!q) return 0;
    const char *d = q + 1;
    uint64_t cpu = 0;
    while (d < e && is_digit(*d)) cpu = cpu * 10 + (uint64_t)(*d++ - '0');
    if (d == q + 1 || d - q - 1 > 18 || d + 1 >= e || *d != ']' || !is_ws(d[1]) || cpu >= INT32_MAX) return 0;
    /* comm-pid: the digits after the last '-' before the '[' (split_comm_pid) */
    const char *l = rtrim(s, q), *pd = l;
    uint64_t pid = 0, mul = 1;
    while (pd > s && is_digit(pd[-1])) { pd--; pid += (uint64_t)(*pd - '0') * mul; mul *= 10; }
    if (pd == l || pd == s || pd[-1] != '-' || l - pd > 18) return 0;
    /* the timestamp, "secs.frac:" or a raw count "N:" (parse_time) */
    const char *r = skip_ws(d + 1, e), *t = r;
    uint64_t secs = 0, frac = 0;
    while (t < e && is_digit(*t)) secs = secs * 10 + (uint64_t)(*t++ - '0');
    size_t ni = (size_t)(t - r);
    if (ni == 0 || ni > 18 || t >= e) return 0;
    int64_t ts;
    if (*t == ':') {
        ts = (int64_t)secs;
    } else {
        if (*t != '.' || secs > 9000000000ULL) return 0;
        const char *f0 = ++t;
        while (t < e && is_digit(*t)) frac = frac * 10 + (uint64_t)(*t++ - '0');
        int nd = (int)(t - f0);
        if (nd < 1 || nd > 9 || t >= e || *t != ':') return 0;
        for (int i = nd; i < 9; i++) frac *= 10;
        ts = (int64_t)(secs * 1000000000ULL + frac);
    }
    t++; /* past the ':', which must end the token */
    if (t < e && !is_ws(*t)) return 0;
    /* the event's name */
    const char *ev = skip_ws(t, e), *ne = tok_end(ev, e);
    size_t evn = (size_t)(ne - ev);
    int is_exit;
    if (evn == 16 && memcmp(ev, "funcgraph_entry:", 16) == 0) is_exit = 0;
    else if (evn == 15 && memcmp(ev, "funcgraph_exit:", 15) == 0) is_exit = 1;
    else return 0;
    const char *body = skip_ws(ne, e);
    if (body < e && (*body == 'f' || *body == '-' || *body == '<')) return 0; /* maybe a raw form (parse_raw) */
    const char *bar = body;
    while (bar < e && *bar != '|') bar++;
    if (bar == e) return 0;
    rec_clear(rec);
    rec->dur = NUL64;
    const char *de = rtrim(body, bar);
    if (de > body && parse_duration(body, de, &rec->dur)) return 0;
    if (parse_body(bar + 1, e, rec) || rec->kind == FG_COMMENT || (is_exit && rec->kind != FG_EXIT) ||
        (!is_exit && rec->kind == FG_EXIT))
        return 0;
    c->t = ts; c->pid = (int64_t)pid; c->cpu = (int32_t)cpu; c->comm = s; c->commn = (size_t)(pd - 1 - s);
    c->has_comm = 1;
    *noflags = 1;
    return 1;
}

/* whether the trimmed line [s,e) may be read by fgev_fast: its first byte makes fg_start false */
static inline int fgev_fast_may(const char *s) { return !is_digit(*s) && *s != '|' && !is_mark(*s); }

/* what follows an event line's timestamp [r,e) when it is not a funcgraph_entry / funcgraph_exit -> its rows */
static void event_rest(state_t *st, out_t *o, const ctx_t *c, const char *r, const char *e) {
    /* event name: a token ending with ':' */
    const char *ne = tok_end(r, e);
    if (ne > r && ne[-1] == ':') {
        do_event(st, o, c, r, ne - 1, ne, e);
        return;
    }
    if (starts(r, e, "<stack trace>") || starts(r, e, "<user stack trace>")) {
        start_pending(st, o, c, r[1] == 'u' ? "user_stack" : "kernel_stack", r, (size_t)(rtrim(r, e) - r));
        return;
    }
    /* the function tracer: "func <-parent" */
    emit_event(o, c, find(r, e, " <-") ? "function" : "unknown", find(r, e, " <-") ? 8 : 7, r,
               (size_t)(rtrim(r, e) - r), 1);
}

/* an event line -> its rows: 0, or -1 (not one) */
static int parse_event_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int *reason) {
    ctx_t c; const char *r; int noflags;
    if (ev_fields(p, e, &c, &r, &noflags, reason)) return -1;
    st->n_evline++;
    if (noflags) st->n_evline_noflags++;
    c.line = line;
    c.key = task_key(c.pid, c.cpu);
    fgrec_t rec; int why = 0;
    if (fgev_fields(r, e, &rec, &why)) {
        *reason = why ? why : do_fg(st, o, &c, &rec);
        return 0;
    }
    event_rest(st, o, &c, r, e);
    return 0;
}

/* " N)  a-1  =>  b-2" context-switch marker of the tracefs function_graph output */
static int parse_ctx_marker(state_t *st, out_t *o, const char *p, const char *e, int64_t line) {
    const char *arrow = find(p, e, " => ");
    if (!arrow) return -1;
    const char *q = skip_ws(p, e);
    int64_t cpu = NUL32;
    const char *t = tok_end(q, e);
    if (t > q && t[-1] == ')' && t < arrow) {
        if (parse_u64(q, t - 1, &cpu)) return -1;
        q = t;
    }
    const char *ac, *bc; size_t acn, bcn; int64_t apid, bpid;
    if (split_comm_pid(q, arrow, &ac, &acn, &apid) || split_comm_pid(arrow + 4, e, &bc, &bcn, &bpid)) return -1;
    if (cpu == NUL32) return 0; /* nothing to track without a CPU */
    if (cpu >= MAX_CPU) return R_CPU;
    int32_t ci = (int32_t)cpu;
    if (!st->cur_known[ci]) {
        /* the lines of this CPU so far were a's: give them the open calls rebuilt without a task */
        int created;
        task_t *anon = get_task(st, task_key(NUL64, ci), NUL64, &created);
        if (!anon) { o->oom = 1; return 0; }
        if (anon->n) {
            task_t *a = get_task(st, task_key(apid, ci), apid, &created);
            if (!a) { o->oom = 1; return 0; }
            anon = get_task(st, task_key(NUL64, ci), NUL64, &created); /* the array may have moved */
            if (created || a->n == 0) {
                frame_t *tmp = a->fr; int32_t cap = a->cap;
                a->fr = anon->fr; a->cap = anon->cap; a->n = anon->n; a->base = anon->base;
                int32_t cid = intern(st, ac, acn);
                for (int32_t i = 0; i < a->n; i++) if (a->fr[i].comm < 0) a->fr[i].comm = cid;
                anon->fr = tmp; anon->cap = cap; anon->n = 0;
            }
        }
    }
    st->cur_known[ci] = 1;
    st->cur_pid[ci] = bpid;
    st->cur_comm[ci] = intern(st, bc, bcn);
    if (st->cur_comm[ci] < 0) o->oom = 1;
    (void)line;
    return 0;
}

/* a line of the tracefs function_graph output: [abstime |] [cpu)] [comm-pid |] [flags |] [duration] | body
 * -> 0 with *c (its time, CPU and task when shown; not its line or key) and *rec (*reason > 0: a skip); 1 an irq
 * marker (ignored); -1 not such a line. Reads no state (see ev_fields) */
static int fg_fields(const char *p, const char *e, ctx_t *c, fgrec_t *rec, int *reason) {
    const char *q = skip_ws(p, e);
    int64_t ts = NUL64, cpu = NUL32, pid = NUL64;
    const char *comm = NULL; size_t commn = 0;
    const char *t = tok_end(q, e);
    /* abstime */
    if (t > q && is_digit(*q)) {
        const char *n = skip_ws(t, e);
        int64_t v;
        if (n < e && *n == '|' && parse_time(q, t, &v) == 0 && memchr(q, '.', (size_t)(t - q))) {
            ts = v; q = skip_ws(n + 1, e); t = tok_end(q, e);
        }
    }
    /* cpu */
    if (t - q >= 2 && t[-1] == ')' && is_digit(*q)) {
        if (parse_u64(q, t - 1, &cpu)) return -1;
        if (cpu >= MAX_CPU) { *reason = R_CPU; return 0; }
        q = t;
    }
    /* columns up to the body */
    int64_t dur = NUL64;
    const char *body = NULL;
    int have_dur = 0;
    for (int col = 0; col < 4 && !body; col++) {
        const char *bar = memchr(q, '|', (size_t)(e - q));
        if (!bar) return -1;
        const char *s = skip_ws(q, bar), *se = rtrim(s, bar);
        if (se == s) { body = bar + 1; break; }
        if (find(s, se, "==========>") || find(s, se, "<==========")) return 1; /* irq entry/exit marker: ignored */
        if (!have_dur && parse_duration(s, se, &dur) == 0) { body = bar + 1; break; }
        if (se - s == 1 && is_mark(*s)) { body = bar + 1; break; } /* a mark without a number */
        if (pid == NUL64 && !comm) {
            const char *cm; size_t cmn; int64_t pd;
            if (split_comm_pid(s, se, &cm, &cmn, &pd) == 0) { comm = cm; commn = cmn; pid = pd; q = bar + 1; continue; }
        }
        /* latency flags: 4-5 chars of [.a-zA-Z0-9] */
        if (se - s >= 3 && se - s <= 6) {
            int ok = 1;
            for (const char *x = s; x < se; x++) if (!(*x == '.' || is_digit(*x) || (*x >= 'a' && *x <= 'z') || (*x >= 'A' && *x <= 'Z'))) ok = 0;
            if (ok) { q = bar + 1; continue; }
        }
        return -1;
    }
    if (!body) return -1;
    rec_clear(rec);
    if (parse_body(body, e, rec)) {
        if (cpu != NUL32 || ts != NUL64) { *reason = R_FG_BODY; return 0; }
        return -1;
    }
    rec->dur = dur;
    c->t = ts; c->cpu = (int32_t)cpu; c->comm = comm; c->commn = commn; c->has_comm = comm != NULL; c->pid = pid;
    return 0;
}

/* a function_graph line's fields (fg_fields) -> its call stack operations: 0 or a skip reason. A line without its
 * task takes its CPU's current one (the context-switch markers) */
static int fg_fold(state_t *st, out_t *o, ctx_t *c, fgrec_t *rec, int64_t line) {
    st->n_fgtext++;
    c->line = line;
    char cbuf[4096]; /* a copy: the interned text may move when the arena grows */
    if (c->pid == NUL64 && c->cpu != NUL32 && st->cur_known[c->cpu]) {
        c->pid = st->cur_pid[c->cpu];
        int32_t id = st->cur_comm[c->cpu];
        if (id >= 0) {
            const char *a = istr(st, id, &c->commn);
            if (c->commn > sizeof cbuf) c->commn = sizeof cbuf;
            memcpy(cbuf, a, c->commn);
            c->comm = cbuf; c->has_comm = 1;
        }
    }
    c->key = task_key(c->pid, c->cpu);
    return do_fg(st, o, c, rec);
}

static int parse_fg_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int *reason) {
    ctx_t c; fgrec_t rec; int why = 0;
    int rc = fg_fields(p, e, &c, &rec, &why);
    if (rc == 0) *reason = why ? why : fg_fold(st, o, &c, &rec, line);
    return rc;
}

static int is_dashes(const char *p, const char *e) {
    if (e - p < 10) return 0;
    for (; p < e; p++) if (*p != '-') return 0;
    return 1;
}

/* whether the trimmed line [s,e) starts as a tracefs function_graph line does: with the abstime, the CPU "N)", a
 * duration or "|" (parse_line and pre_line try it as one first) */
static int fg_start(const char *s, const char *e) {
    const char *t0 = tok_end(s, e), *n0 = skip_ws(t0, e);
    return *s == '|' || is_mark(*s) || (is_digit(*s) && (t0[-1] == ')' || (n0 < e && *n0 == '|') || starts(n0, e, "us")));
}

/* whether such a line is a " N)  a-1  =>  b-2" context-switch marker (parse_ctx_marker) */
static int ctx_marker(const char *s, const char *e) {
    return find(s, e, " => ") && !memchr(s, '|', (size_t)(e - s));
}

/* one line [p,e) -> 0 handled, -1 ignored, >0 skip reason */
static int parse_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int64_t off) {
    const char *s = skip_ws(p, e);
    e = rtrim(s, e);
    if (s == e) return -1;
    if (*s == '#') {
        if (o->nh < MAX_HEAD && (put64(&o->h_start, off + (s - p)) || put64(&o->h_len, e - s))) o->oom = 1;
        else if (o->nh < MAX_HEAD) o->nh++;
        return -1;
    }
    if (e - s >= 2 && s[0] == '=' && s[1] == '>') {
        if (!st->pend) return R_FRAME_ORPHAN;
        if (st->pend_text.len + (size_t)(e - s) + 1 > MAX_FOLD) { st->n_folded_cut++; return -1; }
        if (put8(&st->pend_text, '\n') || buf_put(&st->pend_text, s, (size_t)(e - s))) o->oom = 1;
        st->pend_frames++;
        return -1;
    }
    flush_pending(st, o);
    if (is_dashes(s, e)) return -1;
    if (starts(s, e, "cpus=")) {
        if (o->nh < MAX_HEAD && (put64(&o->h_start, off + (s - p)) || put64(&o->h_len, e - s))) o->oom = 1;
        else if (o->nh < MAX_HEAD) o->nh++;
        return -1;
    }
    if (starts(s, e, "CPU:") || starts(s, e, "CPU ")) {
        const char *b = memchr(s, '[', (size_t)(e - s));
        if (b && (find(b, e, "LOST") || find(b, e, "DROPPED"))) {
            int64_t cpu = NUL32;
            const char *d = s + 4; while (d < e && is_digit(*d)) d++;
            if (parse_u64(s + 4, d, &cpu) || cpu > INT32_MAX - 1) cpu = NUL32;
            const char *be = memchr(b, ']', (size_t)(e - b));
            ctx_t c; memset(&c, 0, sizeof c);
            c.line = line; c.t = NUL64; c.pid = NUL64; c.cpu = (int32_t)cpu;
            emit_event(o, &c, "lost_events", 11, b + 1, (size_t)((be ? be : e) - b - 1), 1);
            st->n_lost++;
            return 0;
        }
    }
    if (starts(s, e, "#####")) return -1;
    if (fgev_fast_may(s)) {
        ctx_t c; fgrec_t rec; int noflags;
        if (fgev_fast(s, e, &c, &rec, &noflags)) { /* what parse_event_line does with such a line */
            st->n_evline++;
            if (noflags) st->n_evline_noflags++;
            c.line = line;
            c.key = task_key(c.pid, c.cpu);
            return do_fg(st, o, &c, &rec);
        }
    }
    int reason = 0;
    int fg_first = fg_start(s, e);
    if (fg_first) {
        if (ctx_marker(s, e)) {
            int rc = parse_ctx_marker(st, o, s, e, line);
            if (rc >= 0) return rc;
            return R_CTX;
        }
        int rc = parse_fg_line(st, o, s, e, line, &reason);
        if (rc == 0) return reason;
        if (rc == 1) return -1;
    }
    if (parse_event_line(st, o, s, e, line, &reason) == 0) return reason;
    if (!fg_first) {
        int rc = parse_fg_line(st, o, s, e, line, &reason);
        if (rc == 0) return reason;
        if (rc == 1) return -1;
    }
    return R_UNKNOWN;
}

/* ---------------------------------------------------------------- the tail of a chunk, tokenized ahead */
/* A chunk's tail is tokenized by a thread of its own while this one parses and folds its head, then folds the tail's
 * lines in order: the fold (call stacks, names, the current task of each CPU, a pending stack event) stays in one
 * thread; the tokenizing of the function_graph lines, most of the work, is split. Only those lines are tokenized
 * ahead (their fields need no state); any other line is parsed in the fold, as in one thread. */
#define SPLIT_MIN (1 << 20) /* chunks smaller than this are parsed in one thread */
enum { PRE_RAW = 0, PRE_FGTEXT, PRE_FGEV, PRE_FGEV_NOFLAGS, PRE_EVENT, PRE_EVENT_NOFLAGS };
/* a line tokenized ahead, packed in 64 bytes (its fields as offsets into the line: the fold reads ~10 MB of these per
 * chunk after they were written, so their size is memory traffic): kind, and for a function_graph line its ctx_t and
 * fgrec_t but for the line and key (set by the fold) */
struct pre_s {
    const char *p;
    int64_t t, pid, dur;
    uint32_t len, comm_off, commn, name_off, namen; /* comm_off, name_off UINT32_MAX: none (NULL) */
    int32_t cpu, indent;
    int16_t depth;
    uint8_t kind, rkind;
};
#define NO_OFF UINT32_MAX
typedef struct { const char *from, *to; pre_t *lines; size_t n, cap; int failed; } tail_t;

/* line [p,e): a function_graph line (tracefs text or a trace-cmd funcgraph event) whose fields are in *c and *x, any
 * other event line (PRE_EVENT: its task, CPU and time in *c, what follows the time in x->name..x->namee), or PRE_RAW:
 * parse_line decides, as it would for any line; the same order of tests as parse_line's */
static int pre_fields(const char *p, const char *e, ctx_t *c, fgrec_t *x) {
    const char *s = skip_ws(p, e);
    e = rtrim(s, e);
    if (s == e || *s == '#' || *s == '=' || is_dashes(s, e) || starts(s, e, "cpus=") || starts(s, e, "CPU"))
        return PRE_RAW;
    int nf;
    if (fgev_fast_may(s) && fgev_fast(s, e, c, x, &nf)) return nf ? PRE_FGEV_NOFLAGS : PRE_FGEV;
    int why = 0;
    int fg_first = fg_start(s, e);
    if (fg_first) {
        if (ctx_marker(s, e)) return PRE_RAW;
        int rc = fg_fields(s, e, c, x, &why);
        if (rc >= 0) return rc == 0 && !why ? PRE_FGTEXT : PRE_RAW;
    }
    const char *r; int noflags;
    if (ev_fields(s, e, c, &r, &noflags, &why) == 0) {
        why = 0;
        if (fgev_fields(r, e, x, &why)) return !why ? (noflags ? PRE_FGEV_NOFLAGS : PRE_FGEV) : PRE_RAW;
        rec_clear(x); /* not a funcgraph event: parse_event_line's event_rest, in the fold */
        x->name = r; x->namee = e;
        return noflags ? PRE_EVENT_NOFLAGS : PRE_EVENT;
    }
    why = 0;
    if (!fg_first && fg_fields(s, e, c, x, &why) == 0 && !why) return PRE_FGTEXT;
    return PRE_RAW;
}

/* pre_fields, packed into *x (a line too long for 32-bit offsets is left to parse_line) */
static int pre_line(const char *p, const char *e, pre_t *x) {
    ctx_t c; fgrec_t r;
    if ((uint64_t)(e - p) >= NO_OFF) return PRE_RAW;
    int kind = pre_fields(p, e, &c, &r);
    if (kind == PRE_RAW) return kind;
    x->t = c.t; x->pid = c.pid; x->cpu = c.cpu;
    x->comm_off = c.has_comm ? (uint32_t)(c.comm - p) : NO_OFF; x->commn = (uint32_t)c.commn;
    x->rkind = (uint8_t)r.kind; x->dur = r.dur; x->depth = (int16_t)r.depth; x->indent = r.indent;
    x->name_off = r.name ? (uint32_t)(r.name - p) : NO_OFF; x->namen = r.name ? (uint32_t)(r.namee - r.name) : 0;
    return kind;
}

/* the fields pre_line packed */
static void unpack(const pre_t *x, ctx_t *c, fgrec_t *r) {
    c->t = x->t; c->pid = x->pid; c->cpu = x->cpu;
    c->has_comm = x->comm_off != NO_OFF; c->comm = c->has_comm ? x->p + x->comm_off : NULL; c->commn = x->commn;
    r->kind = x->rkind; r->dur = x->dur; r->depth = x->depth; r->indent = x->indent;
    r->name = x->name_off != NO_OFF ? x->p + x->name_off : NULL; r->namee = r->name ? r->name + x->namen : NULL;
}

static void *tokenize_tail(void *arg) {
    tail_t *t = arg;
    for (const char *p = t->from; p < t->to;) {
        const char *nl = memchr(p, '\n', (size_t)(t->to - p)), *e = nl ? nl : t->to;
        pre_t *q = room_for(t->lines, t->n, &t->cap, sizeof *q);
        if (!q) { t->failed = 1; return NULL; }
        t->lines = q;
        pre_t *x = &t->lines[t->n++];
        x->p = p; /* a line too long for 32 bits (PRE_RAW) is measured again by the fold */
        x->len = (uint64_t)(e - p) >= NO_OFF ? NO_OFF : (uint32_t)(e - p);
        x->kind = (uint8_t)pre_line(p, e, x);
        if (!nl) break;
        p = nl + 1;
    }
    return NULL;
}

/* a line tokenized ahead -> the fold, as parse_line would have done it: 0 handled, -1 ignored, >0 skip reason */
static int fold_pre(state_t *st, out_t *o, pre_t *x, const char *e, int64_t line, int64_t off) {
    if (x->kind == PRE_RAW) return parse_line(st, o, x->p, e, line, off);
    flush_pending(st, o);
    ctx_t c; fgrec_t r;
    unpack(x, &c, &r);
    if (x->kind == PRE_FGTEXT) return fg_fold(st, o, &c, &r, line);
    st->n_evline++;
    if (x->kind == PRE_FGEV_NOFLAGS || x->kind == PRE_EVENT_NOFLAGS) st->n_evline_noflags++;
    c.line = line;
    c.key = task_key(c.pid, c.cpu);
    if (x->kind >= PRE_EVENT) { event_rest(st, o, &c, r.name, r.namee); return 0; }
    return do_fg(st, o, &c, &r);
}

/* ---------------------------------------------------------------- Python glue */
static void state_free(state_t *st) {
    if (!st) return;
    for (int64_t i = 0; i < st->ntasks; i++) free(st->tasks[i].fr);
    free(st->tasks); free(st->tmap); free(st->istr); free(st->imap); free(st->ahead);
    buf_free(&st->arena); buf_free(&st->pend_comm); buf_free(&st->pend_event); buf_free(&st->pend_text);
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
static int set_col(dest_t *x, PyObject *d, const char *key, buf_t *b, int kind) {
    size_t w = kind == COL_I64 ? 8 : kind == COL_BOOL ? 1 : 4, n = b->len / w;
    const char *p = b->p;
    int64_t nulls = 0;
    if (kind == COL_I64) for (size_t i = 0; i < n; i++) { int64_t v; memcpy(&v, p + 8 * i, 8); nulls += v == NUL64; }
    else if (kind == COL_I32) for (size_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); nulls += v == NUL32; }
    else if (kind == COL_ID) for (size_t i = 0; i < n; i++) { int32_t v; memcpy(&v, p + 4 * i, 4); nulls += v < 0; }
    else for (size_t i = 0; i < n; i++) nulls += (unsigned char)p[i] == 2;
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
        set_buf(x, d, "k_reason", &o->k_reason) || set_buf(x, d, "h_start", &o->h_start) || set_buf(x, d, "h_len", &o->h_len) ||
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
