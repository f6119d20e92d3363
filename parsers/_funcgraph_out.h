/*
 * The rows _funcgraph.c builds before Python takes them: growable buffers (buf_t), Arrow-style string columns
 * (strcol, str_put: bytes that are not UTF-8 become '?'), and the output tables of a chunk (out_t: fg_calls,
 * sched_switch, sched_wakeup, trace_events, skipped and header lines; out_bufs lists every buffer). Included by
 * _funcgraph.c once, before its state (whose size hints count N_OUT_BUFS); buf_t and load8 are _text.h's.
 */
#ifndef STALLSCOPE_FUNCGRAPH_OUT_H
#define STALLSCOPE_FUNCGRAPH_OUT_H

/* growable buffers (buf_t, put64...): _text.h */
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

/* the bytes of [q, qe) that are not UTF-8 made '?'. Text whose lines were made so one by one is UTF-8 as a whole: no
 * sequence spans a '\n' (not a continuation byte) */
static void utf8_fix(unsigned char *q, unsigned char *qe) {
    for (unsigned char *x = q; x < qe;) {
        if (qe - x >= 8 && !(load8((const char *)x) & 0x8080808080808080ULL)) { x += 8; continue; }
        if (*x < 0x80) { x++; continue; }
        size_t k = utf8_len(x, qe);
        if (k) x += k; else *x++ = '?';
    }
}

/* a row of the string column begun: its bytes appended to s->data from `start` on, then str_row_end */
static int str_row_begin(strcol *s) { return s->rows == 0 && s->off.len == 0 && put32(&s->off, 0) ? -1 : 0; }
/* the row whose bytes are s->data's from `start` ended; bytes that are not UTF-8 become '?' (Arrow strings are UTF-8)
 * unless the text is known to be UTF-8 (is_utf8) */
static int str_row_end(strcol *s, size_t start, int valid, int is_utf8) {
    if (s->data.len > (size_t)INT32_MAX) return -1;
    if (!is_utf8) utf8_fix((unsigned char *)s->data.p + start, (unsigned char *)s->data.p + s->data.len);
    if (put32(&s->off, (int32_t)s->data.len) || put8(&s->valid, (uint8_t)(valid != 0))) return -1;
    s->rows++;
    return 0;
}
/* appends [p, p+n) to the string column as a row (str_row_end's) */
static int str_put_text(strcol *s, const char *p, size_t n, int valid, int is_utf8) {
    if (str_row_begin(s)) return -1;
    if (!valid) n = 0;
    if (s->data.len + n > (size_t)INT32_MAX) return -1;
    size_t start = s->data.len;
    if (buf_put(&s->data, p, n)) return -1;
    return str_row_end(s, start, valid, is_utf8);
}
static int str_put(strcol *s, const char *p, size_t n, int valid) { return str_put_text(s, p, n, valid, 0); }
static void str_free(strcol *s) { free(s->off.p); free(s->data.p); free(s->valid.p); memset(s, 0, sizeof *s); }

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
    /* skipped lines, header lines (spans in the chunk; a skipped text not in it: in k_text, start -1 - its start) */
    buf_t k_line, k_start, k_len, k_reason, k_text; int64_t nk;
    buf_t h_start, h_len; int64_t nh;
    int oom;
} out_t;

/* every buffer of the output (the string columns' three each), for freeing and for sizing the next chunk's */
#define N_OUT_BUFS (38 + 3 * 9)
static void out_bufs(out_t *o, buf_t **v) {
    buf_t *bs[] = {&o->c_line, &o->c_pid, &o->c_cpu, &o->c_depth, &o->c_entry, &o->c_exit, &o->c_dur, &o->c_parent,
                   &o->c_exit_line, &o->c_partial, &o->c_comm, &o->c_func, &o->s_line, &o->s_t, &o->s_cpu, &o->s_ppid, &o->s_pprio, &o->s_npid,
                   &o->s_nprio, &o->w_line, &o->w_t, &o->w_cpu, &o->w_wpid, &o->w_pid, &o->w_prio, &o->w_tcpu,
                   &o->w_succ, &o->e_line, &o->e_t, &o->e_cpu, &o->e_pid, &o->k_line, &o->k_start, &o->k_len,
                   &o->k_reason, &o->k_text, &o->h_start, &o->h_len};
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

#endif /* STALLSCOPE_FUNCGRAPH_OUT_H */
