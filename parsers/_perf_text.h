/*
 * The text of a perf script event as parsers/perf_python.py read it (a str: the bytes decoded with "replace", then
 * its regular expressions): put_decoded() writes the UTF-8 Python's decoder gives (each maximal invalid subpart one
 * U+FFFD), and the sched / block field readers follow those regular expressions on that text, their backtracking
 * included (a lazy comm is the first candidate for which the rest matches; \S is any character but Python's str
 * whitespace). Digits are ASCII ones (Python's \d would take other scripts' digits too: perf prints none). Included by
 * _perf.c once, after _text.h.
 */
#ifndef STALLSCOPE_PERF_TEXT_H
#define STALLSCOPE_PERF_TEXT_H

#define REPL "\xEF\xBF\xBD" /* U+FFFD */

/* the length of the well-formed UTF-8 prefix of the sequence at p (its lead byte included; 0: an invalid lead byte),
 * and in *want the length a whole sequence of that lead byte has */
static inline size_t utf8_prefix(const unsigned char *p, const unsigned char *e, size_t *want) {
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F; }
    else { *want = 1; return 0; }
    *want = n;
    size_t k = 1;
    if (p + 1 < e && p[1] >= lo && p[1] <= hi) {
        k = 2;
        while (k < n && p + k < e && p[k] >= 0x80 && p[k] <= 0xBF) k++;
    }
    return k;
}

/* whether [p, p+n) is all ASCII */
static inline int all_ascii(const char *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) if (load8(p + i) & 0x8080808080808080ULL) return 0;
    for (; i < n; i++) if ((unsigned char)p[i] >= 0x80) return 0;
    return 1;
}

/* appends bytes.decode("utf-8", "replace") of [p, p+n), as UTF-8 */
static int put_decoded(buf_t *b, const char *p, size_t n) {
    if (buf_reserve(b, 3 * n)) return -1;
    const unsigned char *s = (const unsigned char *)p, *e = s + n;
    char *o = b->p + b->len;
    while (s < e) {
        if (e - s >= 8 && !(load8((const char *)s) & 0x8080808080808080ULL)) { memcpy(o, s, 8); o += 8; s += 8; continue; }
        if (*s < 0x80) { *o++ = (char)*s++; continue; }
        size_t want, k = utf8_prefix(s, e, &want);
        if (k == want) { memcpy(o, s, k); o += k; s += k; continue; }
        memcpy(o, REPL, 3); o += 3;
        s += k ? k : 1;
    }
    b->len = (size_t)(o - b->p);
    return 0;
}

/* the length of the character at p (valid UTF-8) */
static inline size_t char_len(const char *p) {
    unsigned c = (unsigned char)*p;
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
/* whether the character at p (valid UTF-8) is whitespace to Python's str (str.isspace, re's \s) */
static inline int is_uspace(const char *p, const char *e) {
    const unsigned char *s = (const unsigned char *)p;
    unsigned c = s[0];
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    if (c == 0xC2) return e - p >= 2 && (s[1] == 0x85 || s[1] == 0xA0);
    if (e - p < 3) return 0;
    if (c == 0xE1) return s[1] == 0x9A && s[2] == 0x80;
    if (c == 0xE2) return (s[1] == 0x80 && ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF)) ||
                          (s[1] == 0x81 && s[2] == 0x9F);
    if (c == 0xE3) return s[1] == 0x80 && s[2] == 0x80;
    return 0;
}
/* past \S+ at p (the position itself when the first character is whitespace or p == e) */
static inline const char *nonspace_run(const char *p, const char *e) {
    while (p < e) {
        if ((unsigned char)*p < 0x80) {
            if (*p == ' ' || ((unsigned char)*p >= 0x09 && (unsigned char)*p <= 0x0D) ||
                ((unsigned char)*p >= 0x1C && (unsigned char)*p <= 0x1F))
                break;
            p++;
        } else {
            if (is_uspace(p, e)) break;
            size_t n = char_len(p);
            p = (size_t)(e - p) < n ? e : p + n;
        }
    }
    return p;
}

/* a span of text, and a number read from it */
typedef struct { const char *p; size_t n; } span_t;

/* `-?\d+` at *p: its end in *p and the value (0: read; -1: not there; 1: there but beyond int64) */
static inline int signed_digits(const char **p, const char *e, int64_t *v) {
    const char *q = *p;
    int neg = 0;
    if (q < e && *q == '-') { neg = 1; q++; }
    const char *d = q;
    uint64_t x = 0;
    int over = 0;
    for (; q < e && is_digit(*q); q++) {
        if (x > (UINT64_MAX - 9) / 10) over = 1;
        else x = x * 10 + (uint64_t)(*q - '0');
    }
    if (q == d) return -1;
    *p = q;
    if (over || x > (uint64_t)INT64_MAX + (uint64_t)neg) return 1;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 0;
}
/* `\d+` at *p, its end in *p (-1: none) */
static inline int unsigned_digits(const char **p, const char *e, int64_t *v) {
    if (*p >= e || **p == '-') return -1;
    return signed_digits(p, e, v);
}
/* the literal at *p: *p past it, 0; else -1 */
static inline int lit(const char **p, const char *e, const char *s, size_t n) {
    if ((size_t)(e - *p) < n || memcmp(*p, s, n) != 0) return -1;
    *p += n;
    return 0;
}
#define LIT(p, e, s) lit(p, e, s, sizeof(s) - 1)
/* the first occurrence of the n bytes at s in [p, e), or NULL */
static inline const char *find_lit(const char *p, const char *e, const char *s, size_t n) {
    while ((size_t)(e - p) >= n) {
        const char *q = memchr(p, s[0], (size_t)(e - p) - n + 1);
        if (!q) return NULL;
        if (memcmp(q, s, n) == 0) return q;
        p = q + 1;
    }
    return NULL;
}
#define FIND(p, e, s) find_lit(p, e, s, sizeof(s) - 1)

/* a number read for a column: 0 read, 1 beyond the column's type (perf_python.py fails there: see perf.py) */
static inline int fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* ---- sched_switch: `prev_comm=C prev_pid=N prev_prio=N prev_state=S ==> next_comm=C next_pid=N next_prio=N` or the
 * plugin's `C:N [N] S ==> C:N [N]` */
typedef struct { span_t pc, ps, nc; int64_t pp, ppr, np, npr; } switch_t;

/* the rest after a next comm: `-?\d+ next_prio=-?\d+$` (new) or `-?\d+ \[-?\d+\]$` (old). 0, -1 no, 1 too large */
static int switch_next(const char *q, const char *e, int old, switch_t *f) {
    int r, big = 0;
    if ((r = signed_digits(&q, e, &f->np)) < 0) return -1;
    big |= r;
    if (old ? LIT(&q, e, " [") : LIT(&q, e, " next_prio=")) return -1;
    if ((r = signed_digits(&q, e, &f->npr)) < 0) return -1;
    big |= r;
    if (old && LIT(&q, e, "]")) return -1;
    if (q != e) return -1;
    return big;
}

/* the rest after a prev comm: `-?\d+ prev_prio=-?\d+ prev_state=\S+ ==> next_comm=(.*?) next_pid=` + switch_next, or
 * the old `-?\d+ \[-?\d+\] \S+ ==> (.*?):` + switch_next. 0 matched, -1 no, 1 matched with a number too large */
static int switch_rest(const char *q, const char *e, int old, switch_t *f) {
    int r, big = 0;
    if ((r = signed_digits(&q, e, &f->pp)) < 0) return -1;
    big |= r;
    if (old ? LIT(&q, e, " [") : LIT(&q, e, " prev_prio=")) return -1;
    if ((r = signed_digits(&q, e, &f->ppr)) < 0) return -1;
    big |= r;
    if (old ? LIT(&q, e, "] ") : LIT(&q, e, " prev_state=")) return -1;
    const char *ps = q;
    q = nonspace_run(q, e);
    if (q == ps) return -1;
    f->ps = (span_t){ps, (size_t)(q - ps)};
    if (old ? LIT(&q, e, " ==> ") : LIT(&q, e, " ==> next_comm=")) return -1;
    const char *nc = q;
    for (const char *o = q; o < e;) { /* the next comm: the first end for which the rest matches */
        o = old ? memchr(o, ':', (size_t)(e - o)) : FIND(o, e, " next_pid=");
        if (!o) return -1;
        r = switch_next(o + (old ? 1 : 10), e, old, f);
        if (r >= 0) { f->nc = (span_t){nc, (size_t)(o - nc)}; return big | r; }
        o++;
    }
    return -1;
}

/* 0 matched, -1 no match (either form), 1 matched with a number beyond its column */
static int read_switch(const char *p, const char *e, switch_t *f) {
    if (e - p >= 10 && memcmp(p, "prev_comm=", 10) == 0) {
        for (const char *o = p + 10; o < e;) {
            if (!(o = FIND(o, e, " prev_pid="))) break;
            int r = switch_rest(o + 10, e, 0, f);
            if (r >= 0) {
                f->pc = (span_t){p + 10, (size_t)(o - p - 10)};
                return r || !fits32(f->ppr) || !fits32(f->npr);
            }
            o++;
        }
    }
    for (const char *o = p; o < e;) {
        if (!(o = memchr(o, ':', (size_t)(e - o)))) break;
        int r = switch_rest(o + 1, e, 1, f);
        if (r >= 0) {
            f->pc = (span_t){p, (size_t)(o - p)};
            return r || !fits32(f->ppr) || !fits32(f->npr);
        }
        o++;
    }
    return -1;
}

/* ---- sched_wakeup / waking / wakeup_new: `comm=C pid=N prio=N[ success=N][ target_cpu=N]` or the plugin's
 * `C:N [N][ success=N][ CPU:N]` */
typedef struct { span_t c, s; int64_t p, pr, t; int has_s, has_t; } wake_t;

/* the rest after the comm: `-?\d+ prio=-?\d+( success=\d+)?( target_cpu=\d+)?$` or `-?\d+ \[-?\d+\]( success=\d+)?(
 * CPU:\d+)?$` */
static int wake_rest(const char *q, const char *e, int old, wake_t *f) {
    int r, big = 0;
    if ((r = signed_digits(&q, e, &f->p)) < 0) return -1;
    big |= r;
    if (old ? LIT(&q, e, " [") : LIT(&q, e, " prio=")) return -1;
    if ((r = signed_digits(&q, e, &f->pr)) < 0) return -1;
    big |= r;
    if (old && LIT(&q, e, "]")) return -1;
    f->has_s = f->has_t = 0;
    const char *x = q;
    int64_t v;
    if (LIT(&x, e, " success=") == 0 && (r = unsigned_digits(&x, e, &v)) >= 0) {
        f->has_s = 1; f->s = (span_t){q + 9, (size_t)(x - q - 9)};
        q = x;
    }
    x = q;
    if ((old ? LIT(&x, e, " CPU:") : LIT(&x, e, " target_cpu=")) == 0 && (r = unsigned_digits(&x, e, &f->t)) >= 0) {
        f->has_t = 1; big |= r;
        q = x;
    }
    if (q != e) return -1;
    return big;
}

static int read_wake(const char *p, const char *e, wake_t *f) {
    if (e - p >= 5 && memcmp(p, "comm=", 5) == 0) {
        for (const char *o = p + 5; o < e;) {
            if (!(o = FIND(o, e, " pid="))) break;
            int r = wake_rest(o + 5, e, 0, f);
            if (r >= 0) {
                f->c = (span_t){p + 5, (size_t)(o - p - 5)};
                return r || !fits32(f->pr) || (f->has_t && !fits32(f->t));
            }
            o++;
        }
    }
    for (const char *o = p; o < e;) {
        if (!(o = memchr(o, ':', (size_t)(e - o)))) break;
        int r = wake_rest(o + 1, e, 1, f);
        if (r >= 0) {
            f->c = (span_t){p, (size_t)(o - p)};
            return r || !fits32(f->pr) || (f->has_t && !fits32(f->t));
        }
        o++;
    }
    return -1;
}

/* ---- block_rq_insert / issue / complete: `maj,min rwbs [bytes ](cmd) sector + n[ \S+][ [tail]]` */
typedef struct { span_t maj, min, rwbs, sector, n, tail; int has_tail; } block_t;

/* whether [p, e) is ` [` + no ']' + `]` */
static inline int bracket_tail(const char *p, const char *e, span_t *t) {
    if (e - p < 3 || p[0] != ' ' || p[1] != '[' || e[-1] != ']') return 0;
    if (memchr(p + 2, ']', (size_t)(e - 1 - (p + 2)))) return 0;
    *t = (span_t){p + 2, (size_t)(e - 1 - (p + 2))};
    return 1;
}

static inline int digit_span(const char **p, const char *e, span_t *s) {
    const char *q = *p;
    while (q < e && is_digit(*q)) q++;
    if (q == *p) return -1;
    *s = (span_t){*p, (size_t)(q - *p)};
    *p = q;
    return 0;
}

static int read_block(const char *p, const char *e, block_t *f) {
    const char *q = p;
    if (digit_span(&q, e, &f->maj) || LIT(&q, e, ",") || digit_span(&q, e, &f->min) || LIT(&q, e, " ")) return -1;
    const char *r = q;
    q = nonspace_run(q, e);
    if (q == r) return -1;
    f->rwbs = (span_t){r, (size_t)(q - r)};
    if (LIT(&q, e, " ")) return -1;
    if (q < e && is_digit(*q)) { /* the bytes: digits and a space, else no match ('(' expected) */
        span_t bytes;
        digit_span(&q, e, &bytes);
        if (LIT(&q, e, " ")) return -1;
    }
    if (LIT(&q, e, "(")) return -1;
    const char *close = memchr(q, ')', (size_t)(e - q));
    if (!close) return -1;
    q = close + 1;
    if (LIT(&q, e, " ") || digit_span(&q, e, &f->sector) || LIT(&q, e, " + ") || digit_span(&q, e, &f->n)) return -1;
    f->has_tail = 0;
    /* ( \S+)? ( \[tail\])? $ : with the \S+ first */
    if (e - q >= 2 && q[0] == ' ' && !is_uspace(q + 1, e)) {
        const char *x = nonspace_run(q + 1, e);
        if (x == e) return 0;
        if (bracket_tail(x, e, &f->tail)) { f->has_tail = 1; return 0; }
    }
    if (q == e) return 0;
    if (bracket_tail(q, e, &f->tail)) { f->has_tail = 1; return 0; }
    return -1;
}

#endif /* STALLSCOPE_PERF_TEXT_H */
