/*
 * One line of blkparse's default text output -> ev_t: the fast one-pass tokenizer (parse_line), which reads the
 * line's head at blkparse's fixed widths (head_fixed) or from a bitmask of its whitespace (head_fast) when it can,
 * and the full reader it falls back to (parse_line_full); every path gives the same outcome. Included by _blkparse.c
 * once, after the reasons (enum reason), NUL64 and COMM_MAX it uses; the character helpers are _text.h's.
 */
#ifndef STALLSCOPE_BLKPARSE_LINE_H
#define STALLSCOPE_BLKPARSE_LINE_H

typedef struct {
    int32_t major, minor, cpu, fmaj, fmin;
    int64_t seq, t, pid, sector, nsect, elapsed, err, fsec, ssec, depth;
    const char *act, *rwbs, *comm, *msg;
    size_t actn, rwbsn, commn, msgn;
} ev_t;


static int summary_header(const char *p, const char *e) {
    if (starts(p, e, "Total (")) return 1;
    if (starts(p, e, "CPU") && p + 3 < e && is_digit(p[3])) {
        const char *q = p + 3; while (q < e && is_digit(*q)) q++;
        return q + 1 < e && *q == ' ' && q[1] == '(';
    }
    return 0;
}
static int known_other(const char *p, const char *e) {
    static const char *lits[] = {"Input file ", "Throughput (", "Events (", "Skips:", "Trace started at",
                                 "Reads ", "Writes ", "Read ", "Write ", "IO unplugs", "Timer unplugs", "PC ",
                                 "Allocation wait", "Dispatch wait", "Completion wait", NULL};
    for (int i = 0; lits[i]; i++) if (starts(p, e, lits[i])) return 1;
    return 0;
}
static int parse_dev(const char *p, const char *e, int32_t *maj, int32_t *mn) {
    const char *c = memchr(p, ',', e - p);
    int64_t a, b;
    if (!c || parse_u64(p, c, &a) || parse_u64(c + 1, e, &b) || a > 0xfff || b > 0xfffff) return -1;
    *maj = (int32_t)a; *mn = (int32_t)b; return 0;
}
static int parse_time(const char *p, const char *e, int64_t *ns) {
    const char *dot = memchr(p, '.', e - p);
    int64_t s, f = 0;
    if (!dot) { if (parse_u64(p, e, &s) || s > 9000000000LL) return -1; *ns = s * 1000000000LL; return 0; }
    if (parse_u64(p, dot, &s) || s > 9000000000LL) return -1;
    int nd = (int)(e - dot - 1);
    if (nd < 1 || nd > 9 || parse_u64(dot + 1, e, &f)) return -1;
    for (int i = nd; i < 9; i++) f *= 10;
    *ns = s * 1000000000LL + f;
    return 0;
}

/* 0 = event, -1 = ignored line, >0 = skip reason */
static int parse_line_full(ev_t *v, const char *p, const char *e, int *in_summary) {
    p = skip_ws(p, e);
    e = rtrim(p, e);
    if (p == e || *p == '#') return -1;
    const char *t = tok_end(p, e);
    if (!memchr(p, ',', t - p) || !is_digit(*p)) {
        if (summary_header(p, e)) { *in_summary = 1; return -1; }
        if (*in_summary || known_other(p, e)) return -1;
        return R_NOT_EVENT;
    }
    if (parse_dev(p, t, &v->major, &v->minor)) return *in_summary ? -1 : R_DEVICE;
    *in_summary = 0;
    int64_t x;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (parse_u64(p, t, &x) || x > INT32_MAX) return R_CPU;
    v->cpu = (int32_t)x;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (parse_u64(p, t, &v->seq)) return R_SEQ;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (parse_time(p, t, &v->t)) return R_TIME;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (parse_u64(p, t, &v->pid)) return R_PID;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (p == t) return R_ACTION;
    if (memchr(p, ',', t - p)) { /* cgroup "ino,gen " before the action */
        p = skip_ws(t, e); t = tok_end(p, e);
        if (p == t) return R_ACTION;
    }
    v->act = p; v->actn = (size_t)(t - p);
    if (v->actn > 2) return R_ACTION;
    for (size_t i = 0; i < v->actn; i++)
        if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z'))) return R_ACTION;
    p = skip_ws(t, e); t = tok_end(p, e);
    if (p == t) return R_RWBS;
    v->rwbs = p; v->rwbsn = (size_t)(t - p);
    if (v->rwbsn > 6) return R_RWBS;
    for (size_t i = 0; i < v->rwbsn; i++) if (!(p[i] >= 'A' && p[i] <= 'Z')) return R_RWBS;
    p = skip_ws(t, e);

    v->sector = v->nsect = v->elapsed = v->err = v->fsec = v->ssec = v->depth = NUL64;
    v->fmaj = v->fmin = -1;
    v->comm = v->msg = NULL; v->commn = v->msgn = 0;
    int is_cr = v->actn == 1 && (v->act[0] == 'C' || v->act[0] == 'R');
    if (v->actn == 1 && v->act[0] == 'm') { v->msg = p; v->msgn = (size_t)(e - p); return 0; }
    if (p < e && is_digit(*p)) {
        t = tok_end(p, e);
        if (parse_u64(p, t, &v->sector)) return R_SECTOR;
        p = skip_ws(t, e);
        if (p < e && *p == '+') {
            p = skip_ws(p + 1, e); t = tok_end(p, e);
            if (parse_u64(p, t, &v->nsect)) return R_NSECT;
            p = skip_ws(t, e);
        }
        if (p < e && *p == '/') {
            p = skip_ws(p + 1, e); t = tok_end(p, e);
            if (parse_u64(p, t, &v->ssec)) return R_SPLIT;
            p = skip_ws(t, e);
        }
        if (e - p >= 2 && p[0] == '<' && p[1] == '-') {
            p = skip_ws(p + 2, e);
            if (p >= e || *p != '(') return R_REMAP;
            const char *c = memchr(p, ')', e - p);
            if (!c || parse_dev(p + 1, c, &v->fmaj, &v->fmin)) return R_REMAP;
            p = skip_ws(c + 1, e); t = tok_end(p, e);
            if (parse_u64(p, t, &v->fsec)) return R_REMAP;
            p = skip_ws(t, e);
        }
    }
    if (p < e && *p == '(') { /* "( elapsed)" in ns with -t; passthrough prints "(cdb hex)" */
        const char *c = memchr(p, ')', e - p);
        if (!c) return R_BRACKET;
        const char *a = skip_ws(p + 1, c), *b = c;
        while (b > a && is_ws(b[-1])) b--;
        if (parse_u64(a, b, &x) == 0) v->elapsed = x;
        else if (v->sector != NUL64 && v->nsect == NUL64) v->sector = NUL64; /* "bytes (cdb)" */
        p = skip_ws(c + 1, e);
    }
    if (p < e && *p == '[') {
        const char *c = e; /* a comm may contain ']' or spaces: take the last ']' */
        while (c > p && c[-1] != ']') c--;
        if (c <= p + 1) return R_BRACKET;
        const char *a = p + 1, *b = c - 1;
        if (!is_cr || parse_i64(a, b, &v->err)) { v->comm = a; v->commn = (size_t)(b - a); }
        p = skip_ws(c, e);
        if (p < e) { t = tok_end(p, e); if (parse_u64(p, t, &v->depth)) return R_TRAILING; p = skip_ws(t, e); }
    }
    if (p < e) return R_TRAILING;
    return 0;
}

/* Eight bytes of digits at once (SWAR): t is the 8 bytes at p less '0' in every byte. A byte that is a digit becomes
 * 0-9 without a borrow; the first one that is not becomes 10 or more (or borrows, to 0xd0 and up): the bytes before
 * the first non-digit are exact, what follows it is never looked at. */
#define ZEROS8 0x3030303030303030ULL
/* the high bit of every byte of t past 9, exact up to the first such byte */
static inline __attribute__((always_inline)) uint64_t nondigits8(uint64_t t) {
    return ((t + 0x7676767676767676ULL) | t) & 0x8080808080808080ULL;
}
/* the number written by the 8 digits of t (each byte 0-9, the first digit in the lowest byte) */
static inline __attribute__((always_inline)) uint64_t value8(uint64_t t) {
    t = t * 10 + (t >> 8);
    return (((t & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
            (((t >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >> 32;
}
/* The digits at p (1-18 of them) as a number: the end of the digits, else NULL. Eight at a time while 8 bytes are
 * left before e; the same result as a loop over each byte. */
static inline __attribute__((always_inline)) const char *digits(const char *p, const char *e, int64_t *v) {
    const char *s = p;
    uint64_t x = 0;
    while (e - p >= 8) {
        uint64_t t = load8(p) - ZEROS8, m = nondigits8(t);
        if (m) { /* n < 8 digits, then something else */
            int n = __builtin_ctzll(m) >> 3;
            if (n) {
                static const uint64_t pow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
                x = x * pow10[n] + value8(t << (64 - 8 * n));
                p += n;
            }
            goto done;
        }
        x = x * 100000000ULL + value8(t);
        p += 8;
        if (p - s > 18) return NULL;
    }
    while (p < e && is_digit(*p)) x = x * 10 + (uint64_t)(*p++ - '0');
done:
    if (p == s || p - s > 18) return NULL;
    *v = (int64_t)x;
    return p;
}
/* ... if whitespace or the end follows them (what tok_end then parse_u64 accept, in one pass) */
static inline __attribute__((always_inline)) const char *digits_ws(const char *p, const char *e, int64_t *v) {
    const char *q = digits(p, e, v);
    return q && (q == e || is_ws(*q)) ? q : NULL;
}

/* ---- the head of a line from a bitmask of its whitespace ------------------------------------------------------
 * The fields of a line (tokens: runs of bytes that are not whitespace) are found from a bitmask of its whitespace,
 * 16 bytes at a time, and read each on its own (8 digits at once): no field waits for the one before it to be
 * scanned. For lines of 16-127 bytes in the usual form; anything else is read by parse_line's byte-by-byte code. */
#ifdef __SSE2__
#include <emmintrin.h>
/* bit i: whether byte i of the 16 at q is whitespace (is_ws) */
static inline __attribute__((always_inline)) uint64_t ws16(const char *q) {
    __m128i c = _mm_loadu_si128((const __m128i *)q);
    __m128i ctl = _mm_and_si128(_mm_cmpgt_epi8(c, _mm_set1_epi8(8)), _mm_cmplt_epi8(c, _mm_set1_epi8(14)));
    ctl = _mm_andnot_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8('\n')), ctl);
    return (uint64_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8(' ')), ctl));
}
#else
static inline uint64_t ws8(uint64_t w) { /* the high bit of each whitespace byte: ' ', or 9-13 but 10 */
    const uint64_t lo7 = 0x7F7F7F7F7F7F7F7FULL, hi = 0x8080808080808080ULL;
    uint64_t sp = w ^ 0x2020202020202020ULL, nl = w ^ 0x0A0A0A0A0A0A0A0AULL, a = w & lo7;
    uint64_t is_sp = ~(((sp & lo7) + lo7) | sp) & hi, is_nl = ~(((nl & lo7) + lo7) | nl) & hi;
    uint64_t ctl = (a + 0x7777777777777777ULL) & ~(a + 0x7272727272727272ULL) & ~w & hi;
    return is_sp | (ctl & ~is_nl);
}
static inline uint64_t ws16(const char *q) {
    return ((ws8(load8(q)) >> 7) * 0x0102040810204080ULL) >> 56 |
           (((ws8(load8(q + 8)) >> 7) * 0x0102040810204080ULL) >> 56) << 8;
}
#endif
/* the lowest bit set in the 128-bit mask w[0] w[1] (not empty), cleared: its index */
static inline __attribute__((always_inline)) int pop128(uint64_t *w) {
    int i;
    if (w[0]) { i = __builtin_ctzll(w[0]); w[0] &= w[0] - 1; }
    else { i = 64 + __builtin_ctzll(w[1]); w[1] &= w[1] - 1; }
    return i;
}
/* k (1-8) digits at q, the number they write: 0, else -1 (not all digits). Reads the 8 bytes at q if they lie before
 * hi, else the 8 that end the k at q (hi - lo >= 16: after lo) */
static inline __attribute__((always_inline)) int num8(const char *q, int k, const char *hi, uint64_t *x) {
    uint64_t w = hi - q >= 8 ? load8(q) : load8(q + k - 8) >> (64 - 8 * k);
    uint64_t t = w - ZEROS8, keep = k == 8 ? ~0ULL : (1ULL << (8 * k)) - 1;
    if (nondigits8(t) & keep) return -1;
    *x = value8(t << (64 - 8 * k));
    return 0;
}
/* [ts, te) all digits, 1-18 of them: 0 with the number, else -1 */
static inline __attribute__((always_inline)) int tok_num(const char *ts, const char *te, const char *hi, int64_t *v) {
    static const uint64_t pow8 = 100000000ULL;
    long n = te - ts;
    if (n < 1 || n > 18) return -1;
    int k = (int)(n & 7 ? n & 7 : 8);
    uint64_t x, y;
    if (num8(ts, k, hi, &x)) return -1;
    for (const char *q = ts + k; q < te; q += 8) {
        if (num8(q, 8, hi, &y)) return -1;
        x = x * pow8 + y;
    }
    *v = (int64_t)x;
    return 0;
}
static inline int all_in(const char *p, const char *e, char a, char z) {
    for (; p < e; p++) if (*p < a || *p > z) return 0;
    return 1;
}
/* The head of the line [lo, hi) (maj,min cpu seq s.ns pid act rwbs) and, after it, `sector + n` when that follows,
 * as parse_line reads them: 1 with them in v (the rest unset: NUL64, -1, NULL) and *rest past them, *sector_read
 * whether `sector + n` was; 0 when the line is not in this form (parse_line then reads it byte by byte). */
static inline int head_fast(ev_t *v, const char *lo, const char *hi, const char **rest, int *sector_read) {
    long n = hi - lo;
    if (n < 16 || n > 127) return 0;
    uint64_t ws[2] = {0, 0}; /* bit i: byte i is whitespace */
    for (long i = 0; i < n; i += 16) {
        uint64_t m = i + 16 <= n ? ws16(lo + i) : ws16(hi - 16) >> (i + 16 - n);
        ws[i >> 6] |= m << (i & 63);
    }
    uint64_t tk0 = ~ws[0], tk1 = ~ws[1] & (n >= 64 ? (1ULL << (n - 64)) - 1 : 0); /* token bytes */
    if (n < 64) tk0 &= (1ULL << n) - 1;
    /* a token's first byte: the one before it is not a token's; its last: the one after it is not */
    uint64_t first[2] = {tk0 & ~(tk0 << 1), tk1 & ~(tk1 << 1 | tk0 >> 63)};
    uint64_t last[2] = {tk0 & ~(tk0 >> 1 | tk1 << 63), tk1 & ~(tk1 >> 1)};
    const char *t[10], *u[10];
    int nt = 0;
    for (; nt < 10 && (first[0] | first[1]); nt++) { t[nt] = lo + pop128(first); u[nt] = lo + pop128(last) + 1; }
    if (nt < 7) return 0;
    int64_t x, y;
    /* maj,min: the ',' within the first 8 bytes */
    const char *c = t[0];
    while (c < u[0] && *c != ',') c++;
    if (c >= u[0] || tok_num(t[0], c, hi, &x) || x > 0xfff || tok_num(c + 1, u[0], hi, &y) || y > 0xfffff) return 0;
    v->major = (int32_t)x; v->minor = (int32_t)y;
    if (tok_num(t[1], u[1], hi, &y) || y > INT32_MAX) return 0;
    v->cpu = (int32_t)y;
    if (tok_num(t[2], u[2], hi, &v->seq)) return 0;
    /* seconds.nanoseconds, the nanoseconds' 9 digits */
    if (u[3] - t[3] < 11 || u[3][-10] != '.' || tok_num(t[3], u[3] - 10, hi, &x) || x > 9000000000LL ||
        tok_num(u[3] - 9, u[3], hi, &y)) return 0;
    v->t = x * 1000000000LL + y;
    if (tok_num(t[4], u[4], hi, &v->pid)) return 0;
    v->act = t[5]; v->actn = (size_t)(u[5] - t[5]);
    if (v->actn > 2) return 0;
    for (const char *q = t[5]; q < u[5]; q++) if (!((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'))) return 0;
    v->rwbs = t[6]; v->rwbsn = (size_t)(u[6] - t[6]);
    if (v->rwbsn > 6 || !all_in(t[6], u[6], 'A', 'Z')) return 0;
    v->sector = v->nsect = v->elapsed = v->err = v->fsec = v->ssec = v->depth = NUL64;
    v->fmaj = v->fmin = -1;
    v->comm = v->msg = NULL; v->commn = v->msgn = 0;
    *rest = u[6]; *sector_read = 0;
    if (nt >= 10 && !(v->actn == 1 && v->act[0] == 'm') && u[8] - t[8] == 1 && *t[8] == '+' &&
        tok_num(t[7], u[7], hi, &x) == 0 && tok_num(t[9], u[9], hi, &y) == 0) {
        v->sector = x; v->nsect = y;
        *rest = u[9]; *sector_read = 1;
    }
    return 1;
}

/* ---- the head of a line as blkparse lays it out ----------------------------------------------------------------
 * blkparse prints the head with fixed widths ("%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s ", process_default()): while
 * every value fits its width, each field sits at a known place, and is read there, all at once (8 bytes at a time).
 * A line that does not have exactly that shape is read by head_fast() instead. */
/* the high bit of every byte of x that is a space */
static inline __attribute__((always_inline)) uint64_t spaces8(uint64_t x) {
    const uint64_t lo7 = 0x7F7F7F7F7F7F7F7FULL;
    uint64_t y = x ^ SPACES8;
    return ~(((y & lo7) + lo7) | y) & 0x8080808080808080ULL;
}
/* one bit per byte (bit i: byte i) of a mask with the high bit of some bytes set */
static inline __attribute__((always_inline)) unsigned bytebits(uint64_t m) {
    return (unsigned)(((m >> 7) * 0x0102040810204080ULL) >> 56);
}
/* The w (1-8) bytes that end at lo + b (b >= w), in the low bytes, the others 0 */
static inline __attribute__((always_inline)) uint64_t field8(const char *lo, int b, int w) {
    uint64_t x = b >= 8 ? load8(lo + b - 8) : load8(lo) << (64 - 8 * b);
    return w == 8 ? x : x >> (64 - 8 * w);
}
/* the field of width w ending at lo + b, right-aligned: spaces, then 1-w digits: 0 with their number, else -1 */
static inline __attribute__((always_inline)) int fixed_num(const char *lo, int b, int w, int64_t *v) {
    uint64_t x = field8(lo, b, w), keep = w == 8 ? ~0ULL : (1ULL << (8 * w)) - 1;
    uint64_t sp = spaces8(x) & keep;
    unsigned bits = bytebits(sp);
    if (bits & (bits + 1) || bits == (1u << w) - 1) return -1; /* spaces, not only, and only before the digits */
    uint64_t full = (sp >> 7) * 0xFF;
    uint64_t t = ((x & ~full) | (ZEROS8 & full)) - ZEROS8; /* the spaces as zeros */
    if (nondigits8(t) & keep & 0x8080808080808080ULL) return -1;
    *v = (int64_t)value8(t << (64 - 8 * w));
    return 0;
}
/* the field of width w ending at lo + b, right-aligned: spaces, then 1-w bytes within [a, z]: 0 with where they
 * start, else -1 */
static inline __attribute__((always_inline)) int fixed_word(const char *lo, int b, int w, char a, char z, const char **p) {
    int i = b - w;
    while (i < b && lo[i] == ' ') i++;
    if (i == b) return -1;
    *p = lo + i;
    for (; i < b; i++) if (lo[i] < a || lo[i] > z) return -1;
    return 0;
}
static inline int head_fixed(ev_t *v, const char *lo, const char *hi, const char **rest) {
    long n = hi - lo;
    if (n < 48 || lo[3] != ',' || lo[7] != ' ' || lo[10] != ' ' || lo[19] != ' ' || lo[25] != '.' || lo[35] != ' ' ||
        lo[41] != ' ' || lo[44] != ' ' || (n > 48 && lo[48] != ' '))
        return 0;
    int64_t maj, mn, cpu, sec, ns;
    /* min, left-aligned: 1-3 digits, then spaces */
    uint64_t x = field8(lo, 7, 3), sp = spaces8(x) & 0x808080ULL;
    unsigned bits = bytebits(sp);
    int nd = bits ? __builtin_ctz(bits) : 3;
    if (nd == 0 || (bits >> nd) != (7u >> nd)) return 0;
    uint64_t t = x - ZEROS8, keep = (1ULL << (8 * nd)) - 1;
    if (nondigits8(t) & keep & 0x8080808080808080ULL) return 0;
    mn = (int64_t)value8(t << (64 - 8 * nd));
    if (fixed_num(lo, 3, 3, &maj) || fixed_num(lo, 10, 2, &cpu) || fixed_num(lo, 19, 8, &v->seq) ||
        fixed_num(lo, 25, 5, &sec) || fixed_num(lo, 41, 5, &v->pid))
        return 0;
    /* the nanoseconds' 9 digits (no spaces): the last 8, and the one before them */
    x = load8(lo + 27);
    t = x - ZEROS8;
    if (!is_digit(lo[26]) || nondigits8(t)) return 0;
    ns = (int64_t)value8(t) + (int64_t)(lo[26] - '0') * 100000000;
    const char *act, *rwbs;
    if (fixed_word(lo, 44, 2, 'A', 'z', &act) || fixed_word(lo, 48, 3, 'A', 'Z', &rwbs)) return 0;
    for (const char *q = act; q < lo + 44; q++) if (*q > 'Z' && *q < 'a') return 0;
    v->major = (int32_t)maj; v->minor = (int32_t)mn; v->cpu = (int32_t)cpu;
    v->t = sec * 1000000000LL + ns;
    v->act = act; v->actn = (size_t)(lo + 44 - act);
    v->rwbs = rwbs; v->rwbsn = (size_t)(lo + 48 - rwbs);
    v->sector = v->nsect = v->elapsed = v->err = v->fsec = v->ssec = v->depth = NUL64;
    v->fmaj = v->fmin = -1;
    v->comm = v->msg = NULL; v->commn = v->msgn = 0;
    *rest = lo + 48;
    return 1;
}

/* The line in one pass, for the forms a real capture is made of: a request's event `maj,min cpu seq s.ns pid act rwbs
 * [sector [+ n] [/ split] [<- (maj,min) from]] [[comm] [depth]]` (remaps, splits, plugs and unplugs) and a scheduler
 * message `... m rwbs text`; any other form (a cgroup before the action, `(elapsed)`, passthrough), or anything
 * unexpected, is left to parse_line_full (which reads it again from the start): the outcome is the same either way. */
static int parse_line(ev_t *v, const char *p, const char *e, int *in_summary) {
    const char *b = p, *be = e, *q;
    int64_t x, y;
    int sector_read = 0;
    if (head_fixed(v, b, be, &p) || head_fast(v, b, be, &p, &sector_read)) {
        e = rtrim(p, be);
        p = skip_ws(p, e);
        goto tail;
    }
    sector_read = 0;
    p = skip_ws(p, e);
    e = rtrim(p, e);
    /* maj,min */
    if (!(q = digits(p, e, &x)) || x > 0xfff || q >= e || *q != ',') goto full;
    v->major = (int32_t)x;
    if (!(q = digits_ws(q + 1, e, &y)) || y > 0xfffff) goto full;
    v->minor = (int32_t)y;
    if (!(q = digits_ws(skip_ws(q, e), e, &y)) || y > INT32_MAX) goto full;
    v->cpu = (int32_t)y;
    if (!(q = digits_ws(skip_ws(q, e), e, &v->seq))) goto full;
    /* seconds.nanoseconds */
    if (!(p = digits(skip_ws(q, e), e, &x)) || x > 9000000000LL || p >= e || *p != '.') goto full;
    if (!(q = digits_ws(++p, e, &y)) || q - p > 9) goto full;
    for (long i = q - p; i < 9; i++) y *= 10;
    v->t = x * 1000000000LL + y;
    if (!(q = digits_ws(skip_ws(q, e), e, &v->pid))) goto full;
    /* the action: 1-2 letters */
    p = skip_ws(q, e);
    v->act = p;
    while (p < e && p - v->act < 3 && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'))) p++;
    v->actn = (size_t)(p - v->act);
    if (v->actn == 0 || v->actn > 2 || p >= e || !is_ws(*p)) goto full;
    /* RWBS: 1-6 capitals */
    p = skip_ws(p, e);
    v->rwbs = p;
    while (p < e && p - v->rwbs < 7 && *p >= 'A' && *p <= 'Z') p++;
    v->rwbsn = (size_t)(p - v->rwbs);
    if (v->rwbsn == 0 || v->rwbsn > 6 || (p < e && !is_ws(*p))) goto full;
    p = skip_ws(p, e);
    v->sector = v->nsect = v->elapsed = v->err = v->fsec = v->ssec = v->depth = NUL64;
    v->fmaj = v->fmin = -1;
    v->comm = v->msg = NULL; v->commn = v->msgn = 0;
tail:
    if (v->actn == 1 && v->act[0] == 'm') { /* a scheduler's message: the rest of the line */
        v->msg = p; v->msgn = (size_t)(e - p);
        *in_summary = 0;
        return 0;
    }
    if (sector_read || (p < e && is_digit(*p))) {
        if (!sector_read) {
            if (!(q = digits_ws(p, e, &v->sector))) goto full;
            p = skip_ws(q, e);
            if (p < e && *p == '+') {
                if (!(q = digits_ws(skip_ws(p + 1, e), e, &v->nsect))) goto full;
                p = skip_ws(q, e);
            }
        }
        if (p < e && *p == '/') { /* a split: `/ split_sector` */
            if (!(q = digits_ws(skip_ws(p + 1, e), e, &v->ssec))) goto full;
            p = skip_ws(q, e);
        }
        if (e - p >= 2 && p[0] == '<' && p[1] == '-') { /* a remap: `<- (maj,min) from_sector` */
            p = skip_ws(p + 2, e);
            if (p >= e || *p != '(' || !(q = digits(p + 1, e, &x)) || x > 0xfff || q >= e || *q != ',') goto full;
            if (!(p = digits(q + 1, e, &y)) || y > 0xfffff || p >= e || *p != ')') goto full;
            v->fmaj = (int32_t)x; v->fmin = (int32_t)y;
            if (!(q = digits_ws(skip_ws(p + 1, e), e, &v->fsec))) goto full;
            p = skip_ws(q, e);
        }
    }
    if (p < e && *p == '[') { /* a comm may contain ']' or spaces: the last ']', which ends the line or is followed
                               * by an unplug's depth */
        const char *z = e - 1; /* the last ']' */
        if (*z != ']') { /* `[comm] depth` */
            const char *d = e;
            while (d > p && is_digit(d[-1])) d--;
            if (d == e || e - d > 18) goto full;
            z = d;
            while (z > p && is_ws(z[-1])) z--;
            if (z[-1] != ']') goto full;
            z--; /* > p: *p is '[' */
            v->depth = 0;
            for (const char *k = d; k < e; k++) v->depth = v->depth * 10 + (*k - '0');
        }
        const char *a = p + 1; /* z >= a: *p is '[', *z is ']' */
        int is_cr = v->actn == 1 && (v->act[0] == 'C' || v->act[0] == 'R');
        if (!is_cr || parse_i64(a, z, &v->err)) { v->comm = a; v->commn = (size_t)(z - a); }
        p = e;
    }
    if (p < e) goto full;
    *in_summary = 0;
    return 0;
full:
    return parse_line_full(v, b, be, in_summary);
}

#endif
