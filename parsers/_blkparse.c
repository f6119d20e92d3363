/*
 * Bulk tokenizer for blkparse's default text output (see parsers/blkparse.py for the format and its
 * sources: blktrace blkparse_fmt.c process_default(), shared/FORMATS.md section 1).
 *
 *   tokenize(chunk: bytes-like, first_line: int, in_summary: bool) -> dict
 *
 * The chunk holds whole lines. Each event line becomes one row of the returned columns (bytes
 * objects holding native int64/int32 arrays, and Arrow-style string columns: int32 offsets + data +
 * uint8 validity). Lines that are not events are either ignored (blank, '#' comments, the summary
 * block, "Input file ... added") or reported as skipped with a reason code and their byte span.
 * Fields are found by whitespace runs, never by column position; a comm may hold spaces.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NUL64 INT64_MIN

enum reason {
    R_NOT_EVENT = 1, R_CPU, R_SEQ, R_TIME, R_PID, R_ACTION, R_RWBS, R_SECTOR, R_NSECT,
    R_BRACKET, R_REMAP, R_TRAILING, R_SPLIT, R_DEVICE,
};

typedef struct { int32_t *off; char *data; uint8_t *valid; size_t len, cap; } strcol;

typedef struct {
    int64_t *line, *t_ns, *seq, *pid, *sector, *nsect, *elapsed, *err, *from_sector, *split_sector, *depth;
    int32_t *major, *minor, *cpu, *from_major, *from_minor;
    strcol action, rwbs, comm, msg;
    int64_t n;
    /* skipped lines */
    int64_t *sk_line, *sk_start, *sk_len; int32_t *sk_reason; int64_t nsk;
    int64_t ignored;
} out_t;

static int str_init(strcol *s, int64_t rows, size_t cap) {
    s->off = malloc(sizeof(int32_t) * (rows + 1));
    s->valid = malloc(rows ? rows : 1);
    s->cap = cap ? cap : 16; s->len = 0;
    s->data = malloc(s->cap);
    if (!s->off || !s->valid || !s->data) return -1;
    s->off[0] = 0;
    return 0;
}
static void str_free(strcol *s) { free(s->off); free(s->data); free(s->valid); }
static int str_push(strcol *s, int64_t row, const char *p, size_t n, int valid) {
    if (s->len + n > s->cap) {
        size_t cap = s->cap * 2; while (cap < s->len + n) cap *= 2;
        char *d = realloc(s->data, cap); if (!d) return -1;
        s->data = d; s->cap = cap;
    }
    if (n) memcpy(s->data + s->len, p, n);
    s->len += n;
    s->off[row + 1] = (int32_t)s->len;
    s->valid[row] = (uint8_t)valid;
    return 0;
}

static inline int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline const char *skip_ws(const char *p, const char *e) { while (p < e && is_ws(*p)) p++; return p; }
static inline const char *tok_end(const char *p, const char *e) { while (p < e && !is_ws(*p)) p++; return p; }

/* parse [p,e) fully as unsigned decimal; returns 0 on success */
static int parse_u64(const char *p, const char *e, int64_t *v) {
    if (p >= e || e - p > 18) return -1;
    int64_t x = 0;
    for (; p < e; p++) { if (!is_digit(*p)) return -1; x = x * 10 + (*p - '0'); }
    *v = x; return 0;
}
static int parse_i64(const char *p, const char *e, int64_t *v) {
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (parse_u64(p, e, v)) return -1;
    if (neg) *v = -*v;
    return 0;
}

static int starts(const char *p, const char *e, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

/* Lines of the summary block and other known non-event lines of a blkparse stream. */
static int summary_header(const char *p, const char *e) {
    if (starts(p, e, "Total (")) return 1;
    if (starts(p, e, "CPU") && p + 3 < e && is_digit(p[3])) {
        const char *q = p + 3; while (q < e && is_digit(*q)) q++;
        return q < e && *q == ' ' && q + 1 < e && q[1] == '(';
    }
    return 0;
}
static int known_other(const char *p, const char *e) {
    static const char *lits[] = {"Input file ", "Throughput (", "Events (", "Skips:", "Trace started at",
                                 "Reads ", "Writes ", "Read ", "Write ", "IO unplugs", "Timer unplugs", "PC ",
                                 "Allocation wait", "Dispatch wait", "Completion wait", "Per-process",
                                 "Per process", "Per device", NULL};
    for (int i = 0; lits[i]; i++) if (starts(p, e, lits[i])) return 1;
    return 0;
}

/* parse "maj,min" in [p,e) */
static int parse_dev(const char *p, const char *e, int32_t *maj, int32_t *mn) {
    const char *c = memchr(p, ',', e - p);
    int64_t a, b;
    if (!c || parse_u64(p, c, &a) || parse_u64(c + 1, e, &b) || a > 0xfff || b > 0xfffff) return -1;
    *maj = (int32_t)a; *mn = (int32_t)b; return 0;
}

/* seconds.fraction -> ns; the fraction is scaled to 9 digits */
static int parse_time(const char *p, const char *e, int64_t *ns) {
    const char *dot = memchr(p, '.', e - p);
    int64_t s, f = 0;
    if (!dot) { if (parse_u64(p, e, &s)) return -1; *ns = s * 1000000000LL; return 0; }
    if (parse_u64(p, dot, &s) || s > 9000000000LL) return -1;
    int nd = (int)(e - dot - 1);
    if (nd < 1 || nd > 9 || parse_u64(dot + 1, e, &f)) return -1;
    for (int i = nd; i < 9; i++) f *= 10;
    *ns = s * 1000000000LL + f;
    return 0;
}

/* Parses one line [p,e). Returns 0 = event stored at row o->n, -1 = ignored, >0 = skip reason. */
static int parse_line(out_t *o, const char *p, const char *e, int *in_summary) {
    int64_t r = o->n;
    p = skip_ws(p, e);
    while (e > p && is_ws(e[-1])) e--;
    if (p == e || *p == '#') return -1;

    const char *t = tok_end(p, e);
    int32_t maj, mn;
    if (!memchr(p, ',', t - p) || !is_digit(*p)) {
        if (summary_header(p, e)) { *in_summary = 1; return -1; }
        if (*in_summary || known_other(p, e)) return -1;
        return R_NOT_EVENT;
    }
    if (parse_dev(p, t, &maj, &mn)) return *in_summary ? -1 : R_DEVICE;
    *in_summary = 0;

    int64_t v;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (parse_u64(p, t, &v) || v > INT32_MAX) return R_CPU;
    int32_t cpu = (int32_t)v;
    p = skip_ws(t, e); t = tok_end(p, e);
    int64_t seq; if (parse_u64(p, t, &seq)) return R_SEQ;
    p = skip_ws(t, e); t = tok_end(p, e);
    int64_t tns; if (parse_time(p, t, &tns)) return R_TIME;
    p = skip_ws(t, e); t = tok_end(p, e);
    int64_t pid; if (parse_u64(p, t, &pid)) return R_PID;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (p == t) return R_ACTION;
    if (memchr(p, ',', t - p)) { /* cgroup "ino,gen " before the action of a message */
        p = skip_ws(t, e); t = tok_end(p, e);
        if (p == t) return R_ACTION;
    }
    const char *act = p; size_t actn = (size_t)(t - p);
    if (actn > 2) return R_ACTION;
    for (size_t i = 0; i < actn; i++) if (!((act[i] >= 'A' && act[i] <= 'Z') || (act[i] >= 'a' && act[i] <= 'z'))) return R_ACTION;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (p == t) return R_RWBS;
    const char *rwbs = p; size_t rwbsn = (size_t)(t - p);
    if (rwbsn > 6) return R_RWBS;
    for (size_t i = 0; i < rwbsn; i++) if (!(rwbs[i] >= 'A' && rwbs[i] <= 'Z')) return R_RWBS;
    p = skip_ws(t, e);

    int64_t sector = NUL64, nsect = NUL64, elapsed = NUL64, err = NUL64, fsec = NUL64, ssec = NUL64, depth = NUL64;
    int32_t fmaj = -1, fmin = -1;
    const char *comm = NULL; size_t commn = 0;
    const char *msg = NULL; size_t msgn = 0;
    int is_msg = (actn == 1 && act[0] == 'm');
    int is_cr = (actn == 1 && (act[0] == 'C' || act[0] == 'R'));

    if (is_msg) { msg = p; msgn = (size_t)(e - p); }
    else {
        if (p < e && is_digit(*p)) {
            t = tok_end(p, e);
            if (parse_u64(p, t, &sector)) return R_SECTOR;
            p = skip_ws(t, e);
            if (p < e && *p == '+') {
                p = skip_ws(p + 1, e); t = tok_end(p, e);
                if (parse_u64(p, t, &nsect)) return R_NSECT;
                p = skip_ws(t, e);
            }
            if (p < e && *p == '/') {
                p = skip_ws(p + 1, e); t = tok_end(p, e);
                if (parse_u64(p, t, &ssec)) return R_SPLIT;
                p = skip_ws(t, e);
            }
            if (e - p >= 2 && p[0] == '<' && p[1] == '-') {
                p = skip_ws(p + 2, e);
                if (p >= e || *p != '(') return R_REMAP;
                const char *c = memchr(p, ')', e - p);
                if (!c || parse_dev(p + 1, c, &fmaj, &fmin)) return R_REMAP;
                p = skip_ws(c + 1, e); t = tok_end(p, e);
                if (parse_u64(p, t, &fsec)) return R_REMAP;
                p = skip_ws(t, e);
            }
        }
        if (p < e && *p == '(') { /* "( elapsed)" in ns with -t; passthrough requests print "(cdb hex)" */
            const char *c = memchr(p, ')', e - p);
            if (!c) return R_BRACKET;
            const char *a = skip_ws(p + 1, c), *b = c;
            while (b > a && is_ws(b[-1])) b--;
            int64_t x;
            if (parse_u64(a, b, &x) == 0) elapsed = x;
            else if (sector != NUL64 && nsect == NUL64) sector = NUL64; /* "bytes (cdb)": not a sector */
            p = skip_ws(c + 1, e);
        }
        if (p < e && *p == '[') {
            const char *c = e; /* the comm may contain ']' or spaces: take the last ']' */
            while (c > p && c[-1] != ']') c--;
            if (c <= p + 1) return R_BRACKET;
            const char *a = p + 1, *b = c - 1;
            if (is_cr) { if (parse_i64(a, b, &err)) { comm = a; commn = (size_t)(b - a); } }
            else { comm = a; commn = (size_t)(b - a); }
            p = skip_ws(c, e);
            if (p < e) { t = tok_end(p, e); if (parse_u64(p, t, &depth)) return R_TRAILING; p = skip_ws(t, e); }
        }
        if (p < e) return R_TRAILING;
    }

    o->line[r] = 0; /* set by caller */
    o->major[r] = maj; o->minor[r] = mn; o->cpu[r] = cpu; o->seq[r] = (int64_t)seq; o->t_ns[r] = tns;
    o->pid[r] = pid; o->sector[r] = sector; o->nsect[r] = nsect; o->elapsed[r] = elapsed; o->err[r] = err;
    o->from_major[r] = fmaj; o->from_minor[r] = fmin; o->from_sector[r] = fsec; o->split_sector[r] = ssec;
    o->depth[r] = depth;
    if (str_push(&o->action, r, act, actn, 1) || str_push(&o->rwbs, r, rwbs, rwbsn, 1) ||
        str_push(&o->comm, r, comm ? comm : "", commn, comm != NULL) ||
        str_push(&o->msg, r, msg ? msg : "", msgn, msg != NULL))
        return -2;
    return 0;
}

static void out_free(out_t *o) {
    free(o->line); free(o->t_ns); free(o->seq); free(o->pid); free(o->sector); free(o->nsect); free(o->elapsed);
    free(o->err); free(o->from_sector); free(o->split_sector); free(o->depth); free(o->major); free(o->minor);
    free(o->cpu); free(o->from_major); free(o->from_minor);
    str_free(&o->action); str_free(&o->rwbs); str_free(&o->comm); str_free(&o->msg);
    free(o->sk_line); free(o->sk_start); free(o->sk_len); free(o->sk_reason);
}

static int set_bytes(PyObject *d, const char *key, const void *p, Py_ssize_t n) {
    PyObject *b = PyBytes_FromStringAndSize(p ? (const char *)p : "", n);
    if (!b) return -1;
    int rc = PyDict_SetItemString(d, key, b);
    Py_DECREF(b);
    return rc;
}

#define COL64(name) set_bytes(d, #name, o.name, (Py_ssize_t)(o.n * 8))
#define COL32(name) set_bytes(d, #name, o.name, (Py_ssize_t)(o.n * 4))
#define STRCOL(name) (set_bytes(d, #name "_off", o.name.off, (Py_ssize_t)((o.n + 1) * 4)) || \
                      set_bytes(d, #name "_data", o.name.data, (Py_ssize_t)o.name.len) || \
                      set_bytes(d, #name "_valid", o.name.valid, (Py_ssize_t)o.n))

static PyObject *tokenize(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long first_line;
    int in_summary;
    if (!PyArg_ParseTuple(args, "y*Lp", &buf, &first_line, &in_summary)) return NULL;
    const char *s = buf.buf, *end = s + buf.len;
    if (buf.len > INT32_MAX / 2) { PyBuffer_Release(&buf); PyErr_SetString(PyExc_ValueError, "chunk too large"); return NULL; }

    int64_t rows = 1;
    for (const char *q = s; (q = memchr(q, '\n', end - q)); q++) rows++;

    out_t o; memset(&o, 0, sizeof o);
    int ok = 1;
#define A(f, T) ok &= (o.f = malloc(sizeof(T) * rows)) != NULL
    A(line, int64_t); A(t_ns, int64_t); A(seq, int64_t); A(pid, int64_t); A(sector, int64_t); A(nsect, int64_t);
    A(elapsed, int64_t); A(err, int64_t); A(from_sector, int64_t); A(split_sector, int64_t); A(depth, int64_t);
    A(major, int32_t); A(minor, int32_t); A(cpu, int32_t); A(from_major, int32_t); A(from_minor, int32_t);
    A(sk_line, int64_t); A(sk_start, int64_t); A(sk_len, int64_t); A(sk_reason, int32_t);
#undef A
    ok &= str_init(&o.action, rows, (size_t)rows * 2) == 0;
    ok &= str_init(&o.rwbs, rows, (size_t)rows * 3) == 0;
    ok &= str_init(&o.comm, rows, (size_t)rows * 12) == 0;
    ok &= str_init(&o.msg, rows, 4096) == 0;
    if (!ok) { out_free(&o); PyBuffer_Release(&buf); return PyErr_NoMemory(); }

    int64_t lineno = first_line;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (const char *p = s; p < end; lineno++) {
        const char *nl = memchr(p, '\n', end - p);
        const char *e = nl ? nl : end;
        int rc = parse_line(&o, p, e, &in_summary);
        if (rc == 0) { o.line[o.n] = lineno; o.n++; }
        else if (rc == -1) o.ignored++;
        else if (rc == -2) { failed = 1; break; }
        else {
            o.sk_line[o.nsk] = lineno; o.sk_start[o.nsk] = p - s; o.sk_len[o.nsk] = e - p;
            o.sk_reason[o.nsk] = rc; o.nsk++;
        }
        if (!nl) break;
        p = nl + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (failed) { out_free(&o); return PyErr_NoMemory(); }

    PyObject *d = PyDict_New();
    if (!d) { out_free(&o); return NULL; }
    int bad = COL64(line) || COL64(t_ns) || COL64(seq) || COL64(pid) || COL64(sector) || COL64(nsect) ||
              COL64(elapsed) || COL64(err) || COL64(from_sector) || COL64(split_sector) || COL64(depth) ||
              COL32(major) || COL32(minor) || COL32(cpu) || COL32(from_major) || COL32(from_minor) ||
              STRCOL(action) || STRCOL(rwbs) || STRCOL(comm) || STRCOL(msg) ||
              set_bytes(d, "sk_line", o.sk_line, (Py_ssize_t)(o.nsk * 8)) ||
              set_bytes(d, "sk_start", o.sk_start, (Py_ssize_t)(o.nsk * 8)) ||
              set_bytes(d, "sk_len", o.sk_len, (Py_ssize_t)(o.nsk * 8)) ||
              set_bytes(d, "sk_reason", o.sk_reason, (Py_ssize_t)(o.nsk * 4));
    if (!bad) {
        PyObject *v;
        bad = (v = PyLong_FromLongLong(o.n)) == NULL || PyDict_SetItemString(d, "n", v); Py_XDECREF(v);
        if (!bad) { bad = (v = PyLong_FromLongLong(o.ignored)) == NULL || PyDict_SetItemString(d, "ignored", v); Py_XDECREF(v); }
        if (!bad) { bad = PyDict_SetItemString(d, "in_summary", in_summary ? Py_True : Py_False); }
    }
    out_free(&o);
    if (bad) { Py_DECREF(d); return NULL; }
    return d;
}

static PyMethodDef methods[] = {
    {"tokenize", tokenize, METH_VARARGS, "tokenize(chunk, first_line, in_summary) -> dict of column buffers"},
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blkparse", "blkparse text tokenizer", -1, methods};
PyMODINIT_FUNC PyInit__blkparse(void) { return PyModule_Create(&module); }
