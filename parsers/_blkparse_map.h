/*
 * The open segments' two hash maps (by start sector, and by end sector for requests that can still take back
 * merges), keyed by (device, sector). Included by _blkparse.c once, after seg_t (the open requests).
 */
#ifndef STALLSCOPE_BLKPARSE_MAP_H
#define STALLSCOPE_BLKPARSE_MAP_H

/* Open addressing with linear probing, values = index into segs. Two maps over the open segments:
 * by start sector (every open segment) and by end sector (requests that can still take back merges). */
typedef struct { int32_t *slots; size_t cap, used; int by_end; } map_t;

static inline uint64_t hkey(int32_t maj, int32_t mn, int64_t sector) {
    uint64_t h = (uint64_t)sector * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)maj << 20 | (uint64_t)mn) * 0xC2B2AE3D27D4EB4FULL;
    return h ^ (h >> 29);
}
static inline int64_t mkey(const map_t *m, const seg_t *g) { return m->by_end ? g->end : g->sector; }
/* slot holding the key (>= 0), or -(free slot) - 1 */
static long map_find(const map_t *m, const seg_t *segs, int32_t maj, int32_t mn, int64_t key) {
    size_t mask = m->cap - 1, i = hkey(maj, mn, key) & mask;
    for (;; i = (i + 1) & mask) {
        int32_t s = m->slots[i];
        if (s < 0) return -(long)i - 1;
        const seg_t *g = &segs[s];
        if (mkey(m, g) == key && g->major == maj && g->minor == mn) return (long)i;
    }
}
static int map_grow(map_t *m, const seg_t *segs) {
    size_t cap = m->cap ? m->cap * 2 : 1024, ocap = m->cap;
    int32_t *old = m->slots;
    m->slots = malloc(cap * sizeof(int32_t));
    if (!m->slots) { m->slots = old; return -1; }
    for (size_t i = 0; i < cap; i++) m->slots[i] = -1;
    m->cap = cap;
    for (size_t i = 0; i < ocap; i++) if (old[i] >= 0) {
        const seg_t *g = &segs[old[i]];
        m->slots[-map_find(m, segs, g->major, g->minor, mkey(m, g)) - 1] = old[i];
    }
    free(old);
    return 0;
}
static void map_del(map_t *m, const seg_t *segs, size_t i) { /* backward-shift deletion */
    size_t mask = m->cap - 1, j = i;
    m->slots[i] = -1;
    for (;;) {
        j = (j + 1) & mask;
        int32_t s = m->slots[j];
        if (s < 0) break;
        const seg_t *g = &segs[s];
        size_t k = hkey(g->major, g->minor, mkey(m, g)) & mask;
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) { m->slots[i] = s; m->slots[j] = -1; i = j; }
    }
    m->used--;
}
/* puts segment s under its key; a segment already there under the same key is displaced (returned) */
static int32_t map_put(map_t *m, seg_t *segs, int32_t s) {
    seg_t *g = &segs[s];
    long f = map_find(m, segs, g->major, g->minor, mkey(m, g));
    if (f >= 0) { int32_t old = m->slots[f]; m->slots[f] = s; return old; }
    m->slots[-f - 1] = s; m->used++;
    return -1;
}
static void map_remove(map_t *m, seg_t *segs, int32_t s) {
    seg_t *g = &segs[s];
    long f = map_find(m, segs, g->major, g->minor, mkey(m, g));
    if (f >= 0 && m->slots[f] == s) map_del(m, segs, (size_t)f);
}

#endif
