/* Small helpers shared by the C tokenizers (parsers/_*.c): text scanning, a growable array and a byte buffer. Input is
 * untrusted: every scanning function takes the end of its span and never reads past it. */
#ifndef STALLSCOPE_TEXT_H
#define STALLSCOPE_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* a growable array with room for its element n (capacity *cap, doubled from 65536): the array, moved or not; NULL
 * when out of memory (the old array is then still the caller's) */
static inline void *room_for(void *items, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return items;
    size_t c = *cap ? *cap * 2 : 65536;
    void *q = realloc(items, c * size);
    if (q) *cap = c;
    return q;
}

static inline __attribute__((always_inline)) int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static inline __attribute__((always_inline)) int is_digit(char c) { return c >= '0' && c <= '9'; }
/* Runs of spaces (indentation, padded columns) and of token bytes are passed 8 bytes at a time, the rest byte by
 * byte: the same result as a loop of is_ws over every byte. */
#define SPACES8 0x2020202020202020ULL
/* whether some byte of w is below 0x21: every whitespace byte is (and some that are not: then bytes are looked at) */
#define HAS_LOW8(w) ((((w) - 0x2121212121212121ULL) & ~(w) & 0x8080808080808080ULL) != 0)
static inline __attribute__((always_inline)) uint64_t load8(const char *p) { uint64_t w; memcpy(&w, p, 8); return w; }
/* past the spaces at p */
static inline __attribute__((always_inline)) const char *skip_spaces(const char *p, const char *e) {
    while (e - p >= 8 && load8(p) == SPACES8) p += 8;
    while (p < e && *p == ' ') p++;
    return p;
}
static inline __attribute__((always_inline)) const char *skip_ws(const char *p, const char *e) {
    p = skip_spaces(p, e);
    while (p < e && is_ws(*p)) p++;
    return p;
}
static inline __attribute__((always_inline)) const char *tok_end(const char *p, const char *e) {
    while (e - p >= 8 && !HAS_LOW8(load8(p))) p += 8;
    while (p < e && !is_ws(*p)) p++;
    return p;
}
/* the end of [p,e) without its trailing whitespace */
static inline const char *rtrim(const char *p, const char *e) { while (e > p && is_ws(e[-1])) e--; return e; }

/* whether [p,e) starts with the literal */
static inline int starts(const char *p, const char *e, const char *lit) {
    size_t n = strlen(lit);
    return (size_t)(e - p) >= n && memcmp(p, lit, n) == 0;
}

/* [p,e) entirely an unsigned decimal of at most 18 digits -> 0, else -1 */
static inline int parse_u64(const char *p, const char *e, int64_t *v) {
    if (p >= e || e - p > 18) return -1;
    int64_t x = 0;
    for (; p < e; p++) { if (!is_digit(*p)) return -1; x = x * 10 + (*p - '0'); }
    *v = x; return 0;
}
static inline int parse_i64(const char *p, const char *e, int64_t *v) {
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (parse_u64(p, e, v)) return -1;
    if (neg) *v = -*v;
    return 0;
}

/* a growable byte buffer (column values, text): put* append, -1 when out of memory */
typedef struct { char *p; size_t len, cap; } buf_t;

static __attribute__((noinline, unused)) int buf_grow(buf_t *b, size_t extra) {
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

static inline void buf_free(buf_t *b) { free(b->p); memset(b, 0, sizeof *b); }

#endif
