/*
 * blktrace binary records (struct blk_io_trace, and blk_io_trace2 of the 2025 kernels) -> the text lines
 * `blkparse -i` prints for them, in the order it prints them, so that parsers/_blkparse.c reads a binary
 * capture exactly as it reads that capture's blkparse text (see parsers/blktrace.py).
 *
 *   r = Renderer(nstreams, per_cpu)    per_cpu: the streams are the per-CPU files of one capture (blkparse -i
 *                                      NAME: merged by time); else one stream, a `blkparse -d` dump or any merged
 *                                      stream (blkparse -i -: sorted in batches)
 *   r.need() -> int                    the stream whose next bytes are needed, or -1
 *   r.feed(i, data)                    the next bytes of stream i; empty data: its end
 *   r.render(out, start) -> (end, lines, done)
 *                                      writes whole lines into the writable buffer `out` from `start`, until it
 *                                      is nearly full, a stream needs bytes (need() >= 0) or every record is
 *                                      written (done)
 *   r.stats() -> dict                  records, notify records, records left out, per stream: records, CPUs
 *   Error(stream, offset, message)     a record that cannot be read: which stream, its byte offset, why
 *
 * What is read, as blkparse 1.2 reads it (blkparse.c, blkparse_fmt.c; read to learn, not copied):
 *   - a record: a 48-byte header (64 for version 8) in either byte order, the first record's magic deciding
 *     the stream's; then pdu_len bytes. Remap, unplug and split payloads are big-endian whatever the order.
 *   - notify records: a process record names its pid (the first name of a pid stays); a timestamp record sets
 *     nothing printed; both are taken when read, not when their time comes, as blkparse does: a stream is read
 *     in batches of 512 records that are not notify records, so a name read in a batch serves every record
 *     printed after that batch was read. Messages (CFQ/BFQ `m` lines) are printed at their time.
 *   - per-CPU files: each file's next record is compared by time; the stream whose record is earliest goes on
 *     while no other is strictly earlier; a stream that yields is put back before the first stream with a time
 *     not smaller than its own (blkparse's ms_sort list). Times are printed from the first record's time.
 *   - one stream: read in batches of 512, each batch's records kept sorted by (time from the first batch's
 *     smallest, device, sequence; ties: earlier batch first, later read first), printed from the smallest while
 *     each CPU's sequence follows on from the last printed (a gap waits for the next batch; at the end all is
 *     printed). At most MAX_PENDING records wait: past that the smallest is printed anyway.
 *   - not printed, as blkparse: abort and driver-data records, unknown actions, records without a category.
 * Lines are blkparse's default format (process_default, handle_notify) with an unknown name as "(null)".
 * Differences from blkparse 1.2, on purpose: a record whose CPU differs from its file's is kept (blkparse drops
 * it); cgroup payloads (action bit 8) are read as blkparse 1.3 does, the payload after the cgroup id;
 * version 8 records are read (their action is 64 bits; the zone categories print as ZA ZR ZF ...).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x65617400u
#define HDR1 48
#define HDR2 64
#define BATCH 512
#define MARGIN (80 << 10)      /* the longest line: a message of 64 KiB plus its header */
#define MAX_PENDING (4u << 20) /* records waiting in a merged stream whose sequence has a gap */

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

static PyObject *BlktraceError;

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
    struct Stream *next;  /* blkparse's list of streams, ordered by their next record's time */
    uint64_t records, notify;
    int64_t cpu_min, cpu_max;
} Stream;

typedef struct { uint32_t pid; char comm[16]; int used; } Name;

typedef struct {
    PyObject_HEAD
    int n, per_cpu, started, setup, need, done;
    Stream *s;
    Stream *head, *pending;   /* per-CPU mode: the list, the stream whose batch is being read */
    uint64_t genesis;
    int have_genesis;
    Name *names; size_t nnames, names_cap;
    /* one-stream mode */
    Rec **heap; size_t heapn, heapcap;
    uint64_t batch_no; uint32_t batch_idx;
    uint64_t *seqkey; int64_t *seqlast; size_t seqn, seqcap;
    uint64_t shown, left_out, forced, v2;
} Renderer;

/* ---- byte order ---- */
static inline uint16_t rd16(const uint8_t *p, int swap) { uint16_t v; memcpy(&v, p, 2); return swap ? __builtin_bswap16(v) : v; }
static inline uint32_t rd32(const uint8_t *p, int swap) { uint32_t v; memcpy(&v, p, 4); return swap ? __builtin_bswap32(v) : v; }
static inline uint64_t rd64(const uint8_t *p, int swap) { uint64_t v; memcpy(&v, p, 8); return swap ? __builtin_bswap64(v) : v; }
static inline uint32_t be32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v); }
static inline uint64_t be64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return __builtin_bswap64(v); }

static int raise_at(int stream, int64_t offset, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    PyObject *args = Py_BuildValue("(iLs)", stream, (long long)offset, msg);
    if (args) { PyErr_SetObject(BlktraceError, args); Py_DECREF(args); }
    return -1;
}

/* ---- process names: pid -> the first name read for it ---- */
static Name *name_slot(Renderer *r, uint32_t pid) {
    size_t mask = r->names_cap - 1, i = (pid * 2654435761u) & mask;
    while (r->names[i].used && r->names[i].pid != pid) i = (i + 1) & mask;
    return &r->names[i];
}

static int add_name(Renderer *r, uint32_t pid, const uint8_t *name, size_t len) {
    if ((r->nnames + 1) * 2 > r->names_cap) {
        Name *old = r->names;
        size_t oldcap = r->names_cap;
        r->names_cap = oldcap ? oldcap * 2 : 1024;
        r->names = calloc(r->names_cap, sizeof(Name));
        if (!r->names) { r->names = old; r->names_cap = oldcap; PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].used) *name_slot(r, old[i].pid) = old[i];
        free(old);
    }
    Name *n = name_slot(r, pid);
    if (n->used) return 0;
    n->used = 1;
    n->pid = pid;
    size_t k = 0;
    while (k < len && k < 15 && name[k]) { n->comm[k] = (char)name[k]; k++; }
    n->comm[k] = 0;
    r->nnames++;
    return 0;
}

static const char *find_name(Renderer *r, uint32_t pid) {
    if (!r->names_cap) return "(null)";
    Name *n = name_slot(r, pid);
    return n->used ? n->comm : "(null)";
}

/* ---- reading records ---- */
enum { GOT, NEED, END, FAIL };

/* The next record of stream i into *rec (its payload copied), notify records other than messages taken on the way
 * (*notify set). */
static int read_record(Renderer *r, int i, Rec *rec, int *notify) {
    Stream *s = &r->s[i];
    size_t avail = s->len - s->pos;
    int64_t at = s->base + (int64_t)s->pos;
    *notify = 0;
    if (avail < 8) {
        if (!s->eof) return NEED;
        if (avail == 0) return END;
        return raise_at(i, at, "the file ends inside a record (%zu bytes left, a record header is %d): the file "
                        "was cut", avail, HDR1), FAIL;
    }
    const uint8_t *p = s->buf + s->pos;
    uint32_t m = rd32(p, 0);
    int swap;
    if ((m & 0xffffff00u) == MAGIC) swap = 0;
    else if ((__builtin_bswap32(m) & 0xffffff00u) == MAGIC) swap = 1;
    else
        return raise_at(i, at, "bad magic 0x%08x where a blktrace record starts (expected 0x%08x or 0x%08x, "
                        "version 7 or 8, in either byte order)", m, MAGIC | 7, MAGIC | 8), FAIL;
    if (s->swap < 0) s->swap = swap;
    else if (swap != s->swap)
        return raise_at(i, at, "a record in the other byte order than the file's first record"), FAIL;
    uint32_t version = rd32(p, swap) & 0xff;
    if (version != 7 && version != 8)
        return raise_at(i, at, "unsupported blktrace record version %u (7: blk_io_trace, 8: blk_io_trace2)",
                        version), FAIL;
    size_t hdr = version == 7 ? HDR1 : HDR2;
    if (avail < hdr) {
        if (!s->eof) return NEED;
        return raise_at(i, at, "the file ends inside a record header (%zu of %zu bytes): the file was cut", avail,
                        hdr), FAIL;
    }
    uint16_t pdu_len = rd16(p + (version == 7 ? 46 : 50), swap);
    if (avail < hdr + pdu_len) {
        if (!s->eof) return NEED;
        return raise_at(i, at, "the record's payload (%u bytes) runs past the end of the file (%zu bytes left "
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
        r->v2++;
    }
    rec->pdu_len = pdu_len;
    rec->swap = swap;
    rec->pdu = NULL;
    const uint8_t *pdu = p + hdr;
    s->pos += hdr + pdu_len;
    if ((rec->action & TC_ACT(TC_NOTIFY)) && (rec->action & ~TA_CGROUP) != TN_MESSAGE) {
        *notify = 1;
        s->notify++;
        if ((rec->action & ~TA_CGROUP) == TN_PROCESS && add_name(r, rec->pid, pdu, pdu_len) < 0) return FAIL;
        return GOT;
    }
    if (pdu_len) {
        rec->pdu = malloc(pdu_len);
        if (!rec->pdu) return PyErr_NoMemory(), FAIL;
        memcpy(rec->pdu, pdu, pdu_len);
    }
    s->records++;
    int64_t cpu = rec->cpu;
    if (s->records == 1 || cpu < s->cpu_min) s->cpu_min = cpu;
    if (s->records == 1 || cpu > s->cpu_max) s->cpu_max = cpu;
    return GOT;
}

/* ---- writing lines (blkparse's printf formats, by hand) ---- */
static char *put_digits(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

/* %<width>lld, %-<width>lld */
static char *put_int(char *p, int64_t v, int width, int left) {
    char tmp[24], *e = tmp;
    if (v < 0) { *e++ = '-'; e = put_digits(e, (uint64_t)0 - (uint64_t)v); }
    else e = put_digits(e, (uint64_t)v);
    int n = (int)(e - tmp);
    if (!left) for (; n < width; width--) *p++ = ' ';
    memcpy(p, tmp, (size_t)(e - tmp));
    p += e - tmp;
    if (left) for (; n < width; n++) *p++ = ' ';
    return p;
}

static char *put_uint(char *p, uint64_t v, int width) {
    char tmp[24];
    char *e = put_digits(tmp, v);
    for (int n = (int)(e - tmp); n < width; n++) *p++ = ' ';
    memcpy(p, tmp, (size_t)(e - tmp));
    return p + (e - tmp);
}

static char *put_str(char *p, const char *s, int width) {
    size_t n = strlen(s);
    for (int k = (int)n; k < width; k++) *p++ = ' ';
    memcpy(p, s, n);
    return p + n;
}

static void fill_rwbs(char *rwbs, const Rec *t) {
    uint32_t a = t->action;
    int i = 0;
    if (a & TC_ACT(TC_FLUSH)) rwbs[i++] = 'F';
    if (a & TC_ACT(TC_DISCARD)) rwbs[i++] = 'D';
    else if (a & TC_ACT(TC_WRITE)) rwbs[i++] = 'W';
    else if (t->bytes) rwbs[i++] = 'R';
    else if (t->cat2) {  /* version 8: zone append, reset, reset all, finish, open, close */
        static const char kinds[] = "?ARXFOC";
        int k = 1;
        while (k < 7 && !(t->cat2 & (1u << k))) k++;
        rwbs[i++] = 'Z';
        rwbs[i++] = k < 7 ? kinds[k] : '?';
    } else rwbs[i++] = 'N';
    if (a & TC_ACT(TC_FUA)) rwbs[i++] = 'F';
    if (a & TC_ACT(TC_AHEAD)) rwbs[i++] = 'A';
    if (a & TC_ACT(TC_SYNC)) rwbs[i++] = 'S';
    if (a & TC_ACT(TC_META)) rwbs[i++] = 'M';
    rwbs[i] = 0;
}

static char *put_time(char *p, uint64_t rel) {
    p = put_int(p, (int32_t)(uint32_t)(rel / 1000000000ull), 5, 0);
    *p++ = '.';
    uint64_t ns = rel % 1000000000ull;
    for (int k = 8; k >= 0; k--) { p[k] = (char)('0' + ns % 10); ns /= 10; }
    return p + 9;
}

static char *put_header(char *p, uint32_t device, uint32_t cpu, const char *seq, uint32_t seqv, uint64_t rel,
                        uint32_t pid, const char *cg, const char *act, const char *rwbs) {
    p = put_int(p, device >> 20, 3, 0);
    *p++ = ',';
    p = put_int(p, device & 0xfffff, 3, 1);
    *p++ = ' ';
    p = put_int(p, (int32_t)cpu, 2, 0);
    *p++ = ' ';
    p = seq ? put_str(p, seq, 8) : put_int(p, (int32_t)seqv, 8, 0);
    *p++ = ' ';
    p = put_time(p, rel);
    *p++ = ' ';
    p = put_uint(p, pid, 5);
    *p++ = ' ';
    if (cg) { size_t n = strlen(cg); memcpy(p, cg, n); p += n; }
    p = put_str(p, act, 2);
    *p++ = ' ';
    p = put_str(p, rwbs, 3);
    *p++ = ' ';
    return p;
}

static char *put_pdu_hex(char *p, const uint8_t *b, size_t n) {  /* blkparse's dump_pdu, capped at ~4 KiB */
    static const char hex[] = "0123456789abcdef";
    char *start = p;
    for (size_t i = 0; i < n && p - start < 4000; i++) {
        if (i) *p++ = ' ';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
        if (!b[i]) {
            size_t k = i;
            while (k < n && !b[k]) k++;
            if (k == n) { memcpy(p, " ..", 3); p += 3; break; }
        }
    }
    return p;
}

/* One record's line (or none: left out as blkparse leaves it out). Returns the end, or NULL for none. */
static char *render_record(Renderer *r, char *p, const Rec *t, uint64_t genesis) {
    uint64_t rel = t->time - genesis;
    const uint8_t *pdu = t->pdu;
    size_t pdu_len = t->pdu_len;
    int cgroup = (t->action & TA_CGROUP) != 0;
    char cg[24] = "";
    if (cgroup && pdu_len >= 8) {
        snprintf(cg, sizeof cg, "%x,%x ", rd32(pdu, t->swap), rd32(pdu + 4, t->swap));
        pdu += 8;
        pdu_len -= 8;
    } else if (cgroup) cgroup = 0;
    if ((t->action & ~TA_CGROUP) == TN_MESSAGE) {
        if (!pdu_len) return NULL;
        p = put_header(p, t->device, t->cpu, "0", 0, rel, 0, cgroup ? cg : NULL, "m", "N");
        size_t k = 0;
        while (k < pdu_len && pdu[k]) k++;
        memcpy(p, pdu, k);
        p += k;
        *p++ = '\n';
        return p;
    }
    if (!(t->action & 0xffff0000u) && !t->cat2) return NULL;  /* no category: blkparse's act_mask lets it by */
    uint32_t code = (t->action & 0xffff) & ~TA_CGROUP;
    int pc = (t->action & TC_ACT(TC_PC)) != 0;
    const char *act = NULL;
    if (pc) {
        switch (code) {
        case 1: act = "Q"; break; case 4: act = "G"; break; case 5: act = "S"; break; case 6: act = "R"; break;
        case 7: act = "D"; break; case 8: act = "C"; break; case 12: act = "I"; break;
        }
    } else {
        switch (code) {
        case 1: act = "Q"; break; case 2: act = "M"; break; case 3: act = "F"; break; case 4: act = "G"; break;
        case 5: act = "S"; break; case 6: act = "R"; break; case 7: act = "D"; break; case 8: act = "C"; break;
        case 9: act = "P"; break; case 10: act = "U"; break; case 11: act = "UT"; break; case 12: act = "I"; break;
        case 13: act = "X"; break; case 14: act = "B"; break; case 15: act = "A"; break;
        }
    }
    if (!act) return NULL;
    /* the payloads blkparse shows: only the records it passes them with (log_pc: PC D C I) */
    int with_pdu = pc && (code == 7 || code == 8 || code == 12);
    char rwbs[8];
    fill_rwbs(rwbs, t);
    uint32_t device = t->device;
    uint32_t from = 0;
    uint64_t from_sector = 0;
    if (act[0] == 'A') {
        if (pdu_len >= 16) { from = be32(pdu); device = be32(pdu + 4); from_sector = be64(pdu + 8); }
        else device = 0;
    }
    uint32_t nsect = t->bytes >> 9;
    p = put_header(p, device, t->cpu, NULL, t->seq, rel, t->pid, NULL, act, rwbs);
    const char *name = find_name(r, t->pid);
    switch (act[0]) {
    case 'R': case 'C':
        if (pc) {
            if (with_pdu && pdu_len) { *p++ = '('; p = put_pdu_hex(p, pdu, pdu_len); *p++ = ')'; *p++ = ' '; }
        } else {
            p = put_digits(p, t->sector);
            if (nsect) { memcpy(p, " + ", 3); p = put_digits(p + 3, nsect); }
            *p++ = ' ';
        }
        *p++ = '[';
        p = put_int(p, t->error, 0, 0);
        *p++ = ']';
        break;
    case 'D': case 'I': case 'Q': case 'B':
        if (pc) {
            p = put_digits(p, t->bytes);
            *p++ = ' ';
            if (with_pdu && pdu_len) { *p++ = '('; p = put_pdu_hex(p, pdu, pdu_len); *p++ = ')'; *p++ = ' '; }
        } else if (nsect) {
            p = put_digits(p, t->sector);
            memcpy(p, " + ", 3);
            p = put_digits(p + 3, nsect);
            *p++ = ' ';
        }
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'M': case 'F': case 'G': case 'S':
        if (nsect) {
            p = put_digits(p, t->sector);
            memcpy(p, " + ", 3);
            p = put_digits(p + 3, nsect);
            *p++ = ' ';
        }
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'P':
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'U':
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']'; *p++ = ' ';
        p = put_digits(p, pdu_len >= 8 ? (uint32_t)be64(pdu) : 0);
        break;
    case 'A':
        p = put_digits(p, t->sector);
        memcpy(p, " + ", 3);
        p = put_digits(p + 3, nsect);
        memcpy(p, " <- (", 5);
        p = put_int(p + 5, from >> 20, 0, 0);
        *p++ = ',';
        p = put_int(p, from & 0xfffff, 0, 0);
        *p++ = ')';
        *p++ = ' ';
        p = put_digits(p, from_sector);
        break;
    case 'X':
        p = put_digits(p, t->sector);
        memcpy(p, " / ", 3);
        p = put_digits(p + 3, pdu_len >= 8 ? (uint32_t)be64(pdu) : 0);
        *p++ = ' ';
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    }
    *p++ = '\n';
    return p;
}

/* ---- per-CPU files: blkparse's list of streams ---- */
static inline uint64_t peek_time(Stream *s) { return s->q[s->qhead].time; }

static void ms_insert(Renderer *r, Stream *s) {
    uint64_t t = peek_time(s);
    Stream *h = r->head;
    if (!h) { r->head = s; return; }
    if (t < peek_time(h)) { s->next = h; r->head = s; return; }
    while (h->next && peek_time(h->next) < t) h = h->next;
    s->next = h->next;
    h->next = s;
}

/* Reads stream i's next batch (resumable: NEED returns with the batch kept as far as it got). */
static int prime(Renderer *r, int i) {
    Stream *s = &r->s[i];
    if (!s->priming) { s->qn = s->qhead = 0; s->priming = 1; }
    while (s->qn < BATCH) {
        int notify, got = read_record(r, i, &s->q[s->qn], &notify);
        if (got == NEED || got == FAIL) return got;
        if (got == END) break;
        if (!notify) s->qn++;
    }
    s->priming = 0;
    return GOT;
}

static int render_per_cpu(Renderer *r, char *out, size_t cap, size_t *end, Py_ssize_t *lines) {
    char *p = out + *end, *limit = out + cap - MARGIN;
    while (r->setup < r->n) {  /* every file's first batch, in CPU order, as blkparse sets them up */
        int got = prime(r, r->setup);
        if (got != GOT) { if (got == NEED) r->need = r->setup; return got; }
        if (r->s[r->setup].qn) ms_insert(r, &r->s[r->setup]);
        r->setup++;
        if (r->setup == r->n && r->head) { r->genesis = peek_time(r->head); r->have_genesis = 1; }
    }
    for (;;) {
        Stream *s = r->pending;
        if (s) {  /* a stream whose batch ran out, being read again */
            int got = prime(r, (int)(s - r->s));
            if (got != GOT) { if (got == NEED) r->need = (int)(s - r->s); *end = (size_t)(p - out); return got; }
            r->pending = NULL;
            if (!s->qn) { r->head = s->next; s->next = NULL; continue; }
            if (s->next && peek_time(s) > peek_time(s->next)) { r->head = s->next; s->next = NULL; ms_insert(r, s); }
            continue;
        }
        if (!r->head) { r->done = 1; break; }
        if (p >= limit) break;
        s = r->head;
        Rec *t = &s->q[s->qhead];
        char *e = render_record(r, p, t, r->genesis);
        if (e) { p = e; (*lines)++; r->shown++; } else r->left_out++;
        free(t->pdu);
        t->pdu = NULL;
        s->qhead++;
        if (s->qhead == s->qn) { r->pending = s; continue; }
        if (s->next && peek_time(s) > peek_time(s->next)) { r->head = s->next; s->next = NULL; ms_insert(r, s); }
    }
    *end = (size_t)(p - out);
    return GOT;
}

/* ---- one stream: blkparse -i - ---- */
static inline int rec_less(const Rec *a, const Rec *b) {  /* times relative to the genesis when pushed */
    if (a->time != b->time) return a->time < b->time;
    if (a->device != b->device) return a->device < b->device;
    if (a->seq != b->seq) return a->seq < b->seq;
    return a->order < b->order;
}

static void heap_push(Renderer *r, Rec *x) {
    size_t i = r->heapn++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!rec_less(x, r->heap[up])) break;
        r->heap[i] = r->heap[up];
        i = up;
    }
    r->heap[i] = x;
}

static Rec *heap_pop(Renderer *r) {
    Rec *top = r->heap[0], *x = r->heap[--r->heapn];
    size_t i = 0, n = r->heapn;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && rec_less(r->heap[c + 1], r->heap[c])) c++;
        if (!rec_less(r->heap[c], x)) break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (n) r->heap[i] = x;
    return top;
}

static int64_t *seq_last(Renderer *r, uint32_t device, uint32_t cpu) {  /* -1: nothing printed yet */
    uint64_t key = (uint64_t)device << 32 | cpu;
    for (size_t i = 0; i < r->seqn; i++) if (r->seqkey[i] == key) return &r->seqlast[i];
    if (r->seqn == r->seqcap) {
        size_t cap = r->seqcap ? r->seqcap * 2 : 64;
        uint64_t *k = realloc(r->seqkey, cap * sizeof *k);
        if (!k) return NULL;
        r->seqkey = k;
        int64_t *l = realloc(r->seqlast, cap * sizeof *l);
        if (!l) return NULL;
        r->seqlast = l;
        r->seqcap = cap;
    }
    r->seqkey[r->seqn] = key;
    r->seqlast[r->seqn] = -1;
    return &r->seqlast[r->seqn++];
}

static int render_stream(Renderer *r, char *out, size_t cap, size_t *end, Py_ssize_t *lines) {
    char *p = out + *end, *limit = out + cap - MARGIN;
    Stream *s = &r->s[0];
    for (;;) {
        /* print what may be printed */
        int force = s->eof && s->pos == s->len && !s->priming;
        while (r->heapn && p < limit) {
            Rec *t = r->heap[0];
            int message = (t->action & ~TA_CGROUP) == TN_MESSAGE;
            int64_t *last = NULL;
            if (!message) {
                last = seq_last(r, t->device, t->cpu);
                if (!last) return PyErr_NoMemory(), FAIL;
                if (*last >= 0 && (uint64_t)t->seq != (uint64_t)*last + 1 && !force && r->heapn <= MAX_PENDING)
                    break;
                if (*last >= 0 && (uint64_t)t->seq != (uint64_t)*last + 1 && !force) r->forced++;
            }
            heap_pop(r);
            char *e = render_record(r, p, t, 0);  /* its time is relative already */
            if (e) { p = e; (*lines)++; r->shown++; } else r->left_out++;
            if (last) *last = t->seq;
            free(t->pdu);
            free(t);
        }
        if (p >= limit) break;
        if (force) { if (!r->heapn) r->done = 1; break; }
        /* read the next batch: up to BATCH records, the notify records among them taken on the way */
        if (!s->priming) { s->priming = 1; s->qn = 0; }
        while (s->qn < BATCH) {
            int notify, got = read_record(r, 0, &s->q[s->qn], &notify);
            if (got == NEED) { r->need = 0; *end = (size_t)(p - out); return NEED; }
            if (got == FAIL) return FAIL;
            if (got == END) break;
            if (!notify) s->qn++;
        }
        s->priming = 0;
        if (!r->have_genesis && s->qn) {  /* the first batch's smallest time (looked for again while it is 0) */
            uint64_t g = UINT64_MAX;
            for (int k = 0; k < s->qn; k++) if (s->q[k].time < g) g = s->q[k].time;
            r->genesis = g;
            r->have_genesis = g != 0;
        }
        if (r->heapn + (size_t)s->qn > r->heapcap) {
            size_t c = r->heapcap ? r->heapcap : 4096;
            while (c < r->heapn + (size_t)s->qn) c *= 2;
            Rec **h = realloc(r->heap, c * sizeof *h);
            if (!h) return PyErr_NoMemory(), FAIL;
            r->heap = h;
            r->heapcap = c;
        }
        for (int k = 0; k < s->qn; k++) {  /* blkparse sorts a batch from its last record read */
            Rec *t = malloc(sizeof(Rec));
            if (!t) return PyErr_NoMemory(), FAIL;
            *t = s->q[k];
            s->q[k].pdu = NULL;
            t->time -= r->genesis;
            t->order = r->batch_no << 32 | (uint32_t)(0xffffffffu - (uint32_t)k);
            heap_push(r, t);
        }
        s->qn = 0;
        r->batch_no++;
    }
    *end = (size_t)(p - out);
    return GOT;
}

/* ---- the Python type ---- */
static void renderer_dealloc(Renderer *r) {
    if (r->s) {
        for (int i = 0; i < r->n; i++) {
            Stream *s = &r->s[i];
            for (int k = s->qhead; k < s->qn; k++) free(s->q[k].pdu);
            free(s->q);
            free(s->buf);
        }
        free(r->s);
    }
    for (size_t i = 0; i < r->heapn; i++) { free(r->heap[i]->pdu); free(r->heap[i]); }
    free(r->heap);
    free(r->names);
    free(r->seqkey);
    free(r->seqlast);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static int renderer_init(Renderer *r, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"nstreams", "per_cpu", NULL};
    int n, per_cpu;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ip", kwlist, &n, &per_cpu)) return -1;
    if (n < 1 || (!per_cpu && n != 1)) { PyErr_SetString(PyExc_ValueError, "one stream, or per-CPU files"); return -1; }
    r->n = n;
    r->per_cpu = per_cpu;
    r->need = -1;
    r->s = calloc((size_t)n, sizeof(Stream));
    if (!r->s) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < n; i++) {
        r->s[i].swap = -1;
        r->s[i].q = calloc(BATCH, sizeof(Rec));
        if (!r->s[i].q) { PyErr_NoMemory(); return -1; }
    }
    return 0;
}

static PyObject *renderer_need(Renderer *r, PyObject *Py_UNUSED(ignored)) { return PyLong_FromLong(r->need); }

static PyObject *renderer_feed(Renderer *r, PyObject *args) {
    int i;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "iy*", &i, &data)) return NULL;
    if (i < 0 || i >= r->n) { PyBuffer_Release(&data); PyErr_SetString(PyExc_IndexError, "no such stream"); return NULL; }
    Stream *s = &r->s[i];
    if (!data.len) s->eof = 1;
    else {
        if (s->pos) {  /* what was read goes: records are copied when read */
            memmove(s->buf, s->buf + s->pos, s->len - s->pos);
            s->len -= s->pos;
            s->base += (int64_t)s->pos;
            s->pos = 0;
        }
        if (s->len + (size_t)data.len > s->cap) {
            size_t cap = s->cap ? s->cap : 1 << 16;
            while (cap < s->len + (size_t)data.len) cap *= 2;
            uint8_t *b = realloc(s->buf, cap);
            if (!b) { PyBuffer_Release(&data); return PyErr_NoMemory(); }
            s->buf = b;
            s->cap = cap;
        }
        memcpy(s->buf + s->len, data.buf, (size_t)data.len);
        s->len += (size_t)data.len;
    }
    PyBuffer_Release(&data);
    if (r->need == i) r->need = -1;
    Py_RETURN_NONE;
}

static PyObject *renderer_render(Renderer *r, PyObject *args) {
    Py_buffer out;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "w*n", &out, &start)) return NULL;
    if ((size_t)out.len < 2 * MARGIN || start < 0 || start > out.len) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "the output buffer is too small");
        return NULL;
    }
    size_t end = (size_t)start;
    Py_ssize_t lines = 0;
    int got = GOT;
    if (r->need < 0 && !r->done && end < (size_t)out.len - MARGIN) {
        /* no GIL released: errors are raised inside (the renderer is a few % of the ingest) */
        got = r->per_cpu ? render_per_cpu(r, out.buf, (size_t)out.len, &end, &lines)
                         : render_stream(r, out.buf, (size_t)out.len, &end, &lines);
    }
    PyBuffer_Release(&out);
    if (got == FAIL) return NULL;
    return Py_BuildValue("(nnO)", (Py_ssize_t)end, lines, r->done ? Py_True : Py_False);
}

static PyObject *renderer_stats(Renderer *r, PyObject *Py_UNUSED(ignored)) {
    PyObject *streams = PyList_New(r->n);
    if (!streams) return NULL;
    for (int i = 0; i < r->n; i++) {
        Stream *s = &r->s[i];
        PyObject *d = Py_BuildValue("{s:K,s:K,s:L,s:L,s:i}", "records", (unsigned long long)s->records, "notify",
                                    (unsigned long long)s->notify, "cpu_min", (long long)s->cpu_min, "cpu_max",
                                    (long long)s->cpu_max, "swapped", s->swap == 1);
        if (!d) { Py_DECREF(streams); return NULL; }
        PyList_SET_ITEM(streams, i, d);
    }
    return Py_BuildValue("{s:N,s:K,s:K,s:K,s:K,s:K}", "streams", streams, "shown", (unsigned long long)r->shown,
                         "left_out", (unsigned long long)r->left_out, "forced", (unsigned long long)r->forced,
                         "version8", (unsigned long long)r->v2, "genesis_ns", (unsigned long long)r->genesis);
}

static PyMethodDef renderer_methods[] = {
    {"need", (PyCFunction)renderer_need, METH_NOARGS, "need() -> the stream whose next bytes are needed, or -1"},
    {"feed", (PyCFunction)renderer_feed, METH_VARARGS, "feed(i, data): stream i's next bytes; empty: its end"},
    {"render", (PyCFunction)renderer_render, METH_VARARGS, "render(out, start) -> (end, lines, done)"},
    {"stats", (PyCFunction)renderer_stats, METH_NOARGS, "stats() -> dict"},
    {NULL}};

static PyTypeObject RendererType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "parsers._blktrace.Renderer",
    .tp_basicsize = sizeof(Renderer),
    .tp_dealloc = (destructor)renderer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "blktrace binary records -> blkparse's text lines",
    .tp_methods = renderer_methods,
    .tp_init = (initproc)renderer_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {.m_base = PyModuleDef_HEAD_INIT, .m_name = "_blktrace",
                                    .m_doc = "blktrace binary -> blkparse text lines", .m_size = -1};

PyMODINIT_FUNC PyInit__blktrace(void) {
    if (PyType_Ready(&RendererType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    BlktraceError = PyErr_NewException("parsers._blktrace.Error", PyExc_ValueError, NULL);
    Py_INCREF(&RendererType);
    if (PyModule_AddObject(m, "Renderer", (PyObject *)&RendererType) < 0 ||
        PyModule_AddObject(m, "Error", BlktraceError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
