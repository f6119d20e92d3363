/*
 * The two kinds of perf script line, read as parsers/perf_python.py's regular expressions read them (their
 * backtracking followed step by step, on bytes, \s being ASCII whitespace):
 *
 *   an event header   `[comm ]pid[/tid] [[cpu]] secs.frac: [period ]subsystem:event:[ ]text`   (read_head)
 *   a call-chain line `<TAB> addr symbol[+0xoff][ (dso)]`                                      (read_frame)
 *
 * Included by _perf.c once, after _text.h and _perf_text.h.
 */
#ifndef STALLSCOPE_PERF_LINE_H
#define STALLSCOPE_PERF_LINE_H

/* hexadecimal digits, by byte */
static const uint8_t HEX[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1,
    ['E'] = 1, ['F'] = 1,
};
static inline const char *hex_end(const char *p, const char *e) {
    while (p < e && HEX[(uint8_t)*p]) p++;
    return p;
}
/* the end of [p, e) without the spaces, tabs and CRs that end it */
static inline const char *rtrim_frame(const char *p, const char *e) {
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    return e;
}

static inline int is_word(char c) { return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_' || c == '.' || c == '-'; }

enum { BIG_PID = 1, BIG_CPU = 2, BIG_TIME = 4 };
typedef struct {
    span_t comm; int has_comm;
    int64_t pid; int32_t cpu; int has_cpu;
    span_t sec; int64_t frac_ns, t;
    span_t event; /* its last name: `sched_switch` of `sched:sched_switch` */
    const char *text, *text_end;
    /* matched, but a number does not fit its column (a row holding it made perf_python.py fail): the bits of
     * BIG_PID, BIG_CPU, BIG_TIME */
    int big;
} head_t;

/* the header from its pid on: `-?\d+(/-?\d+)?\s+(\[\d+\]\s+)?\d+\.\d{1,9}:\s+(\d+\s+)?EVENT:\s?(.*?)\s*$`; 0 or -1 */
static int head_rest(const char *q, const char *e, head_t *h) {
    const char *x = q;
    int64_t v = 0;
    int r = signed_digits(&x, e, &v), big = 0, big_t = 0;
    if (r < 0) return -1;
    h->pid = v;
    if (x < e && *x == '/') { /* the tid: then it is the task (the pid is not read) */
        x++;
        if ((r = signed_digits(&x, e, &v)) < 0) return -1;
        h->pid = v;
    }
    big |= r ? BIG_PID : 0;
    if (x >= e || !is_ws(*x)) return -1;
    x = skip_ws(x, e);
    h->has_cpu = 0;
    if (x < e && *x == '[') {
        x++;
        if ((r = unsigned_digits(&x, e, &v)) < 0 || x >= e || *x != ']') return -1;
        big |= (r || v > INT32_MAX) ? BIG_CPU : 0;
        h->cpu = (int32_t)v; h->has_cpu = 1;
        x++;
        if (x >= e || !is_ws(*x)) return -1;
        x = skip_ws(x, e);
    }
    const char *s0 = x;
    while (x < e && is_digit(*x)) x++;
    if (x == s0 || x >= e || *x != '.') return -1;
    h->sec = (span_t){s0, (size_t)(x - s0)};
    const char *f0 = ++x;
    while (x < e && is_digit(*x)) x++;
    size_t nf = (size_t)(x - f0);
    if (nf < 1 || nf > 9 || x >= e || *x != ':') return -1;
    x++;
    if (x >= e || !is_ws(*x)) return -1;
    x = skip_ws(x, e);
    if (x < e && is_digit(*x)) { /* a period: digits and whitespace, else no match (the event is a name) */
        while (x < e && is_digit(*x)) x++;
        if (x >= e || !is_ws(*x)) return -1;
        x = skip_ws(x, e);
    }
    /* [A-Za-z_][\w.-]*(:[\w.-]+)+ then ':' (the most groups that a ':' follows, one fewer if none does) */
    const char *ev = x;
    if (x >= e || !(((*x | 32) >= 'a' && (*x | 32) <= 'z') || *x == '_')) return -1;
    x++;
    while (x < e && is_word(*x)) x++;
    const char *last_colon = NULL;
    int groups = 0;
    while (e - x >= 2 && *x == ':' && is_word(x[1])) {
        last_colon = x++;
        while (x < e && is_word(*x)) x++;
        groups++;
    }
    const char *ev_end;
    if (groups >= 1 && x < e && *x == ':') ev_end = x;
    else if (groups >= 2) ev_end = last_colon; /* the last group is the text's start */
    else return -1;
    x = ev_end + 1;
    const char *name = ev_end;
    while (name > ev && name[-1] != ':') name--;
    h->event = (span_t){name, (size_t)(ev_end - name)};
    if (x < e && is_ws(*x)) x++;
    h->text = x;
    h->text_end = rtrim(x, e);
    /* the numbers: seconds (int64 ns), the fraction scaled to ns */
    int64_t sec = 0, frac = 0;
    for (const char *d = s0; d < s0 + h->sec.n && !big_t; d++) {
        if (sec > (INT64_MAX - 9) / 10) big_t = 1;
        else sec = sec * 10 + (*d - '0');
    }
    parse_u64(f0, f0 + nf, &frac);
    for (size_t i = nf; i < 9; i++) frac *= 10;
    if (!big_t && sec > (INT64_MAX - frac) / 1000000000LL) big_t = 1;
    h->frac_ns = frac;
    h->t = big_t ? 0 : sec * 1000000000LL + frac;
    h->big = big | (big_t ? BIG_TIME : 0);
    return 0;
}

/* an event header (the line without its newline): 0, or -1 when it is not one. The comm is the shortest start of the
 * line after which whitespace and a header's rest follow; none when only the line itself is such a rest. */
static int read_head(const char *s, const char *e, head_t *h) {
    const char *l = skip_ws(s, e);
    if (l >= e) return -1;
    for (const char *j = l;;) {
        j = tok_end(j, e);
        if (j >= e) break;
        const char *r = skip_ws(j, e);
        if (r >= e) break;
        if ((is_digit(*r) || *r == '-') && head_rest(r, e, h) == 0) {
            h->comm = (span_t){l, (size_t)(j - l)}; h->has_comm = 1;
            return 0;
        }
        j = r;
    }
    if (head_rest(l, e, h) == 0) { h->has_comm = 0; return 0; }
    return -1;
}

/* `^\s+[0-9a-fA-F]+ \S`: a call-chain line indented by spaces (older perf) */
static int spaced_frame(const char *s, const char *e) {
    const char *x = s;
    while (x < e && is_ws(*x)) x++;
    if (x == s) return 0;
    const char *h = x;
    x = hex_end(x, e);
    return x > h && e - x >= 2 && x[0] == ' ' && !is_ws(x[1]);
}

/* a call-chain line's content [c, e) (after its TAB and the spaces and tabs that follow), whose address (hex digits)
 * ends at x: whether it is a kernel frame: a 16-digit address from ffff8... up and a space, or a dso `([kernel...)` or
 * `([... .ko])` at its end */
static int kernel_frame(const char *c, const char *x, const char *e) {
    if (x - c == 16 && x < e && *x == ' ' && (c[0] | 32) == 'f' && (c[1] | 32) == 'f' && (c[2] | 32) == 'f' &&
        (c[3] | 32) == 'f' && (is_digit(c[4]) ? c[4] >= '8' : 1))
        return 1;
    const char *e1 = rtrim_frame(c, e);
    if (e1 == c || e1[-1] != ')') return 0;
    if (FIND(c, e1 - 1, "([kernel")) return 1;
    return e1 - c >= 7 && memcmp(e1 - 5, ".ko])", 5) == 0 && FIND(c, e1 - 5, "([") != NULL;
}

/* the start of `\+0x[0-9a-fA-F]+` ending at end, not before from (NULL: none) */
static inline const char *offset_before(const char *from, const char *end) {
    const char *h = end;
    while (h > from && HEX[(uint8_t)h[-1]]) h--;
    if (h == end || h - from < 3 || memcmp(h - 3, "+0x", 3) != 0) return NULL;
    return h - 3;
}

/* a call-chain line's symbol: its address (hex digits, [c, x)) and a space, then the shortest symbol that
 * `(\+0x...)?( \(dso\))?[ \t\r]*` follows to the line's end. 0 (*sym set), or -1 when the line is not a frame */
static int read_frame(const char *c, const char *x, const char *e, span_t *sym) {
    if (x == c || x >= e || *x != ' ') return -1;
    const char *s0 = x + 1, *e1 = rtrim_frame(s0, e), *end = NULL;
    if (e1 > s0 && e1[-1] == ')') { /* ` (dso)`: the last '(' before it, no ')' between, a space before it */
        const char *lp = memrchr(s0, '(', (size_t)(e1 - 1 - s0));
        if (lp && lp > s0 && lp[-1] == ' ' && !memchr(lp + 1, ')', (size_t)(e1 - 1 - (lp + 1)))) {
            end = lp - 1;
            const char *off = offset_before(s0, end);
            if (off) end = off;
        }
    }
    if (!end) {
        end = offset_before(s0, e1);
        if (!end) end = e1;
    }
    *sym = (span_t){s0, (size_t)(end - s0)};
    return 0;
}

#endif /* STALLSCOPE_PERF_LINE_H */
