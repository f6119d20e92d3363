/*
 * The printed text of events kept as text, reused: an event printed by its print format alone (no plugin handler,
 * not an ftrace/print event, no common_* field or print function among its arguments) prints the same text for the
 * same bytes after its common fields, so that text is kept by (event id, those bytes) and written again without
 * libtraceevent printing it. softirq_entry/exit/raise (one field, the vector) print ~10 texts in 168,000 records of
 * the 10x benchmark capture. An event whose records hit less than a quarter of the time after its first 1024 stops
 * being looked up; the cache holds at most INFO_CACHE_BYTES. Included by tracedat_records.c once.
 */
#ifndef STALLSCOPE_TRACEDAT_INFO_CACHE_H
#define STALLSCOPE_TRACEDAT_INFO_CACHE_H

#define INFO_CACHE_BYTES (64 << 20)
#define INFO_SLOTS (1 << 16)
#define INFO_TRIAL 1024

typedef struct { int id; uint32_t hash, key_len, text_len; char *key; } info_entry;  /* key: payload, then text */
static info_entry info_slots[INFO_SLOTS];
static size_t info_bytes, info_entries;

/* whether an argument tree of a print format reads only the record's own (non-common) fields, with no print function */
static int pure_args(const struct tep_print_arg *a, int depth) {
    for (; a; a = a->next) {
        if (depth > 32) return 0;
        switch (a->type) {
        case TEP_PRINT_NULL: case TEP_PRINT_ATOM: case TEP_PRINT_STRING: case TEP_PRINT_BSTRING: case TEP_PRINT_BITMASK:
            break;
        case TEP_PRINT_FIELD:
            if (!a->field.name || !strncmp(a->field.name, "common_", 7)) return 0;
            break;
        case TEP_PRINT_FLAGS: if (!pure_args(a->flags.field, depth + 1)) return 0; break;
        case TEP_PRINT_SYMBOL: if (!pure_args(a->symbol.field, depth + 1)) return 0; break;
        case TEP_PRINT_HEX:
            if (!pure_args(a->hex.field, depth + 1) || !pure_args(a->hex.size, depth + 1)) return 0;
            break;
        case TEP_PRINT_INT_ARRAY:
            if (!pure_args(a->int_array.field, depth + 1) || !pure_args(a->int_array.count, depth + 1) ||
                !pure_args(a->int_array.el_size, depth + 1)) return 0;
            break;
        case TEP_PRINT_TYPE: if (!pure_args(a->typecast.item, depth + 1)) return 0; break;
        case TEP_PRINT_DYNAMIC_ARRAY: if (!pure_args(a->dynarray.index, depth + 1)) return 0; break;
        case TEP_PRINT_OP:
            if (!pure_args(a->op.left, depth + 1) || !pure_args(a->op.right, depth + 1)) return 0;
            break;
        default: return 0; /* print functions (plugins'), and kinds newer than these */
        }
    }
    return 1;
}

/* where an event's own fields start (after its common ones), or -1 when its text cannot be reused */
static int info_payload_from(struct tep_event *ev) {
    if (ev->handler || (ev->flags & ~TEP_EVENT_FL_NOHANDLE) || !ev->print_fmt.format || !pure_args(ev->print_fmt.args, 0))
        return -1;
    int from = 0;
    for (struct tep_format_field *f = ev->format.common_fields; f; f = f->next)
        if (f->offset + f->size > from) from = f->offset + f->size;
    return from;
}

static uint32_t info_hash(int id, const char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(unsigned)id;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001B3ULL;
    return (uint32_t)(h ^ (h >> 32));
}

/* the slot of (id, payload): its entry, or the empty slot it would take (NULL: the table is full) */
static info_entry *info_slot(int id, const char *p, size_t n, uint32_t h) {
    for (size_t i = 0, at = h & (INFO_SLOTS - 1); i < INFO_SLOTS; i++, at = (at + 1) & (INFO_SLOTS - 1)) {
        info_entry *x = &info_slots[at];
        if (!x->key) return x;
        if (x->id == id && x->hash == h && x->key_len == n && !memcmp(x->key, p, n)) return x;
    }
    return NULL;
}

static void info_keep(info_entry *x, int id, uint32_t h, const char *p, size_t n, const char *text, size_t tn) {
    if (!x || x->key || info_entries * 2 >= INFO_SLOTS || info_bytes + n + tn > INFO_CACHE_BYTES) return;
    char *k = malloc(n + tn ? n + tn : 1);
    if (!k) return;
    memcpy(k, p, n); memcpy(k + n, text, tn);
    x->id = id; x->hash = h; x->key_len = (uint32_t)n; x->text_len = (uint32_t)tn; x->key = k;
    info_bytes += n + tn; info_entries++;
}

#endif /* STALLSCOPE_TRACEDAT_INFO_CACHE_H */
