/*
 * blktrace binary records as they are read from a capture's streams: the record layouts (struct blk_io_trace,
 * version 7, and blk_io_trace2, version 8, either byte order), the bytes each stream was fed, the process names
 * taken from notify records, and the refusal of a record that cannot be read (its stream, its byte offset, why).
 * Included by parsers/_blktrace.c (blkparse text rendering) and parsers/_blkparse.c (records read natively), after
 * <Python.h>; the ordering of the records is _blktrace_order.h's.
 */
#ifndef STALLSCOPE_BLKTRACE_RECORDS_H
#define STALLSCOPE_BLKTRACE_RECORDS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BT_MAGIC 0x65617400u
#define BT_HDR1 48
#define BT_HDR2 64
#define BT_BATCH 512
#define BT_MAX_PENDING (4u << 20) /* records waiting in a merged stream whose sequence has a gap */

#define TC_ACT(x) ((uint32_t)(x) << 16)
#define TC_READ (1u << 0)
#define TC_WRITE (1u << 1)
#define TC_FLUSH (1u << 2)
#define TC_SYNC (1u << 3)
#define TC_PC (1u << 9)
#define TC_NOTIFY (1u << 10)
#define TC_AHEAD (1u << 11)
#define TC_META (1u << 12)
#define TC_DISCARD (1u << 13)
#define TC_FUA (1u << 15)
#define TA_CGROUP (1u << 8)
#define TN_PROCESS (0u | TC_ACT(TC_NOTIFY))
#define TN_MESSAGE (2u | TC_ACT(TC_NOTIFY))

typedef struct {
    uint64_t time, sector, order;
    uint32_t action, cat2, seq, bytes, pid, device, cpu;
    uint16_t error, pdu_len;
    uint8_t *pdu;    /* a copy (malloc), or NULL */
    int swap;        /* the stream's byte order differs from this machine's */
} Rec;

typedef struct Stream {
    uint8_t *buf;
    size_t len, cap, pos; /* pos: the next byte not read */
    int64_t base;         /* the file offset of buf[0] */
    int eof, swap;        /* swap: -1 until the first record */
    Rec *q;               /* the batch read (per-CPU mode) */
    int qn, qhead, priming;
    uint64_t head_time;   /* q[qhead].time, kept here: the merge compares the streams' next times at every record */
    struct Stream *next;  /* blkparse's list of streams, ordered by their next record's time */
    uint64_t records, notify;
    int64_t cpu_min, cpu_max;
} Stream;

/* a process name: the first read for its pid; clean: every byte printable ASCII but '[' and ']' (its text in a
 * `[comm]` field reads back as itself) */
typedef struct { uint32_t pid; char comm[16]; uint8_t len, used, clean; } Name;

/* why the reading stopped: a record that cannot be read (stream, offset, message), or memory */
enum { BT_OK, BT_REFUSED, BT_NOMEM };
typedef struct { int kind, stream; int64_t offset; char message[256]; } bt_error_t;

/* ---- byte order ---- */
static inline uint16_t rd16(const uint8_t *p, int swap) { uint16_t v; memcpy(&v, p, 2); return swap ? __builtin_bswap16(v) : v; }
static inline uint32_t rd32(const uint8_t *p, int swap) { uint32_t v; memcpy(&v, p, 4); return swap ? __builtin_bswap32(v) : v; }
static inline uint64_t rd64(const uint8_t *p, int swap) { uint64_t v; memcpy(&v, p, 8); return swap ? __builtin_bswap64(v) : v; }
static inline uint32_t be32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v); }
static inline uint64_t be64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return __builtin_bswap64(v); }

static int refuse(bt_error_t *err, int stream, int64_t offset, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->kind = BT_REFUSED;
    err->stream = stream;
    err->offset = offset;
    return -1;
}

/* raises what stopped the reading: exc(stream, offset, message), or MemoryError; returns NULL */
static PyObject *raise_error(const bt_error_t *err, PyObject *exc) {
    if (err->kind == BT_NOMEM) return PyErr_NoMemory();
    PyObject *args = Py_BuildValue("(iLs)", err->stream, (long long)err->offset, err->message);
    if (args) { PyErr_SetObject(exc, args); Py_DECREF(args); }
    return NULL;
}

/* ---- process names: pid -> the first name read for it (open addressing, at most half full) ---- */
#define NAMES_KEPT 16
/* found: the names found last, by pid % NAMES_KEPT (slots move when the table grows: then forgotten) */
typedef struct { Name *slots; size_t n, cap; const Name *found[NAMES_KEPT]; } names_t;

static Name *name_slot(names_t *t, uint32_t pid) {
    size_t mask = t->cap - 1, i = (pid * 2654435761u) & mask;
    while (t->slots[i].used && t->slots[i].pid != pid) i = (i + 1) & mask;
    return &t->slots[i];
}

static int add_name(names_t *t, uint32_t pid, const uint8_t *name, size_t len) {
    if ((t->n + 1) * 2 > t->cap) {
        Name *old = t->slots;
        size_t oldcap = t->cap;
        t->cap = oldcap ? oldcap * 2 : 1024;
        t->slots = calloc(t->cap, sizeof(Name));
        if (!t->slots) { t->slots = old; t->cap = oldcap; return -1; }
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].used) *name_slot(t, old[i].pid) = old[i];
        free(old);
        memset(t->found, 0, sizeof t->found);
    }
    Name *n = name_slot(t, pid);
    if (n->used) return 0;
    n->used = 1;
    n->pid = pid;
    size_t k = 0;
    int clean = 1;
    while (k < len && k < 15 && name[k]) {
        uint8_t c = name[k];
        if (c < 0x20 || c > 0x7e || c == '[' || c == ']') clean = 0;
        n->comm[k++] = (char)c;
    }
    n->comm[k] = 0;
    n->len = (uint8_t)k;
    n->clean = clean && k > 0;
    t->n++;
    return 0;
}

static const Name NO_NAME = {0, "(null)", 6, 1, 1}; /* blkparse prints an unknown name as "(null)" */

static const Name *find_name(names_t *t, uint32_t pid) {
    const Name **f = &t->found[pid % NAMES_KEPT];
    if (*f && (*f)->pid == pid) return *f;
    if (!t->cap) return &NO_NAME;
    Name *n = name_slot(t, pid);
    if (!n->used) return &NO_NAME;
    return *f = n;
}

/* ---- the bytes of a stream ---- */

/* appends the next bytes of stream s (empty: its end): 0, or -1 out of memory */
static int stream_feed(Stream *s, const void *data, size_t len) {
    if (!len) { s->eof = 1; return 0; }
    if (s->pos) {  /* what was read goes: records are copied when read */
        memmove(s->buf, s->buf + s->pos, s->len - s->pos);
        s->len -= s->pos;
        s->base += (int64_t)s->pos;
        s->pos = 0;
    }
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 1 << 16;
        while (cap < s->len + len) cap *= 2;
        uint8_t *b = realloc(s->buf, cap);
        if (!b) return -1;
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return 0;
}

/* ---- reading records ---- */
enum { GOT, NEED, END, FAIL };

/* The next record of stream s (number i) into *rec (its payload copied); notify records other than messages are
 * taken on the way (*notify set: a process record's name into names). *v2 counts version 8 records. */
static int read_record(Stream *s, int i, Rec *rec, int *notify, names_t *names, uint64_t *v2, bt_error_t *err) {
    size_t avail = s->len - s->pos;
    int64_t at = s->base + (int64_t)s->pos;
    *notify = 0;
    if (avail < 8) {
        if (!s->eof) return NEED;
        if (avail == 0) return END;
        return refuse(err, i, at, "the file ends inside a record (%zu bytes left, a record header is %d): the file "
                      "was cut", avail, BT_HDR1), FAIL;
    }
    const uint8_t *p = s->buf + s->pos;
    uint32_t m = rd32(p, 0);
    int swap;
    if ((m & 0xffffff00u) == BT_MAGIC) swap = 0;
    else if ((__builtin_bswap32(m) & 0xffffff00u) == BT_MAGIC) swap = 1;
    else
        return refuse(err, i, at, "bad magic 0x%08x where a blktrace record starts (expected 0x%08x or 0x%08x, "
                      "version 7 or 8, in either byte order)", m, BT_MAGIC | 7, BT_MAGIC | 8), FAIL;
    if (s->swap < 0) s->swap = swap;
    else if (swap != s->swap)
        return refuse(err, i, at, "a record in the other byte order than the file's first record"), FAIL;
    uint32_t version = rd32(p, swap) & 0xff;
    if (version != 7 && version != 8)
        return refuse(err, i, at, "unsupported blktrace record version %u (7: blk_io_trace, 8: blk_io_trace2)",
                      version), FAIL;
    size_t hdr = version == 7 ? BT_HDR1 : BT_HDR2;
    if (avail < hdr) {
        if (!s->eof) return NEED;
        return refuse(err, i, at, "the file ends inside a record header (%zu of %zu bytes): the file was cut", avail,
                      hdr), FAIL;
    }
    uint16_t pdu_len = rd16(p + (version == 7 ? 46 : 50), swap);
    if (avail < hdr + pdu_len) {
        if (!s->eof) return NEED;
        return refuse(err, i, at, "the record's payload (%u bytes) runs past the end of the file (%zu bytes left "
                      "after its header)", (unsigned)pdu_len, avail - hdr), FAIL;
    }
    rec->seq = rd32(p + 4, swap);
    rec->time = rd64(p + 8, swap);
    rec->sector = rd64(p + 16, swap);
    rec->bytes = rd32(p + 24, swap);
    if (version == 7) {
        rec->action = rd32(p + 28, swap);
        rec->cat2 = 0;
        rec->pid = rd32(p + 32, swap);
        rec->device = rd32(p + 36, swap);
        rec->cpu = rd32(p + 40, swap);
        rec->error = rd16(p + 44, swap);
    } else {
        rec->pid = rd32(p + 28, swap);
        uint64_t action = rd64(p + 32, swap);
        rec->action = (uint32_t)action;
        rec->cat2 = (uint32_t)(action >> 32);
        rec->device = rd32(p + 40, swap);
        rec->cpu = rd32(p + 44, swap);
        rec->error = rd16(p + 48, swap);
        (*v2)++;
    }
    rec->pdu_len = pdu_len;
    rec->swap = swap;
    rec->pdu = NULL;
    const uint8_t *pdu = p + hdr;
    s->pos += hdr + pdu_len;
    if ((rec->action & TC_ACT(TC_NOTIFY)) && (rec->action & ~TA_CGROUP) != TN_MESSAGE) {
        *notify = 1;
        s->notify++;
        if ((rec->action & ~TA_CGROUP) == TN_PROCESS && add_name(names, rec->pid, pdu, pdu_len) < 0)
            return err->kind = BT_NOMEM, FAIL;
        return GOT;
    }
    if (pdu_len) {
        rec->pdu = malloc(pdu_len);
        if (!rec->pdu) return err->kind = BT_NOMEM, FAIL;
        memcpy(rec->pdu, pdu, pdu_len);
    }
    s->records++;
    int64_t cpu = rec->cpu;
    if (s->records == 1 || cpu < s->cpu_min) s->cpu_min = cpu;
    if (s->records == 1 || cpu > s->cpu_max) s->cpu_max = cpu;
    return GOT;
}

#endif
