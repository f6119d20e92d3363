/*
 * The lexing helpers of _funcgraph.c's lines: spans, literals, numbers (decimal or 0x), timestamps, durations
 * ("[mark] 123.456 us"), "comm-pid" and "comm:pid". They read no state. Included by _funcgraph.c once, after
 * _text.h (whose character helpers they use) and before _funcgraph_events.h and _funcgraph_line.h.
 */
#ifndef STALLSCOPE_FUNCGRAPH_LEX_H
#define STALLSCOPE_FUNCGRAPH_LEX_H

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

#endif /* STALLSCOPE_FUNCGRAPH_LEX_H */
