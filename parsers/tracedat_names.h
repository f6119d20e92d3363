/*
 * The names tracedat-records writes once each ('M' records: a task's, a function's), then by id: name_id (included by
 * tracedat_records.c after its output functions, put8 and friends).
 */
#ifndef STALLSCOPE_TRACEDAT_NAMES_H
#define STALLSCOPE_TRACEDAT_NAMES_H

static char *name_text;
static size_t name_text_len, name_text_cap;
static uint32_t *name_at, *name_len; /* by id */
static uint64_t *name_hash;
static size_t names, names_cap;
static int32_t *name_slot; /* open addressing: id + 1 */
static size_t name_slots;
static uint64_t text_hash(const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001B3ULL;
    return h ^ (h >> 29);
}
/* the id of the text [p, p+n): its 'M' record written the first time (before the record that names it begins); -1
 * when out of memory */
static int32_t name_id(const char *p, size_t n) {
    if (n > 65535) n = 65535;
    if (names * 2 >= name_slots) { /* grow: the ids' hashes placed again */
        size_t cap = name_slots ? name_slots * 2 : 1 << 12;
        int32_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t id = 0; id < names; id++) {
            size_t h = (size_t)name_hash[id] & (cap - 1);
            while (slot[h]) h = (h + 1) & (cap - 1);
            slot[h] = (int32_t)id + 1;
        }
        free(name_slot); name_slot = slot; name_slots = cap;
    }
    uint64_t hash = text_hash(p, n);
    size_t h = (size_t)hash & (name_slots - 1);
    for (; name_slot[h]; h = (h + 1) & (name_slots - 1)) {
        size_t id = (size_t)name_slot[h] - 1;
        if (name_hash[id] == hash && name_len[id] == n && !memcmp(name_text + name_at[id], p, n)) return (int32_t)id;
    }
    if (names == names_cap || name_text_len + n > name_text_cap) {
        size_t cap = names_cap ? names_cap * 2 : 1024, tcap = name_text_cap ? name_text_cap : 1 << 16;
        while (name_text_len + n > tcap) tcap *= 2;
        uint32_t *at = realloc(name_at, cap * sizeof *at);
        if (at) name_at = at;
        uint32_t *len = realloc(name_len, cap * sizeof *len);
        if (len) name_len = len;
        uint64_t *hs = realloc(name_hash, cap * sizeof *hs);
        if (hs) name_hash = hs;
        char *text = realloc(name_text, tcap);
        if (text) name_text = text;
        if (!at || !len || !hs || !text || name_text_len + n > UINT32_MAX) return -1;
        names_cap = cap; name_text_cap = tcap;
    }
    size_t id = names++;
    name_at[id] = (uint32_t)name_text_len; name_len[id] = (uint32_t)n; name_hash[id] = hash;
    memcpy(name_text + name_text_len, p, n);
    name_text_len += n;
    name_slot[h] = (int32_t)id + 1;
    uint16_t n16 = (uint16_t)n;
    put8('M'); put32((int32_t)id); put(&n16, 2); put(p, n);
    return (int32_t)id;
}

#endif /* STALLSCOPE_TRACEDAT_NAMES_H */
