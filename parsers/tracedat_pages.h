/*
 * The CPUs' records read from their ring-buffer pages here (included by tracedat_records.c), in place of libtracecmd's
 * tracecmd_peek_data / tracecmd_read_data, which allocate a record, link it to its page and count references for every
 * event (about half of the program's time on a function_graph capture).
 *
 * Used when the caller (tracedat_records.py, with `--sections`) writes on stdin where each CPU's data lies in the file
 * ("N cpu offset size ..." in libtracecmd's CPU order: the file's top buffer, uncompressed, or "Z N ..." in zstd
 * chunks, decompressed here in turn with libzstd, found by dlopen as libtracecmd finds it; without a TSC multiplier or
 * a host/guest time shift: trace time = the page's time + a constant offset). Each CPU's first record is read by both
 * and must agree (its offset, size and bytes; the time offset the same on every CPU), else libtracecmd walks the file
 * as before. A CPU's pages are read as libtracecmd reads them: from its first record's page, one page_size apart, up to
 * the end of its section; a page whose header says more than a page ends that CPU, with libtracecmd's warning. Each
 * page's events are decoded here as libtraceevent's kbuffer decodes them (kbuffer-parse.c of libtraceevent 1.7: the
 * page's time and commit word, lost events, each event's 32-bit header of type_len and time delta, padding, time
 * extends and absolute time stamps, the quirks included: an event after a time extend has no lost events), without a
 * call per field: for a little-endian file (of 32- or 64-bit longs) on a little-endian machine, in the ring buffer's
 * current format; any other file's pages are left to libtracecmd.
 *
 * The file is read with pread in windows of pages, two per CPU in turn: a record of the previous window stays
 * readable while the next is peeked (at most two records of a CPU are in use: the one being written and its CPU's
 * next). Each window is followed by zeros (SLACK), so that a damaged record's fields read past its page read zeros,
 * not another allocation. Records are two slots per CPU, reused: never allocated, never freed.
 *
 * libtracecmd's function_graph handler (tep_print_event of a funcgraph_entry the report prints as text) reads ahead
 * through tracecmd_peek_next_data, tracecmd_read_data and tracecmd_free_record: this program defines them (the
 * library calls them through its PLT, as it does tracecmd_parse_trace_clock), serving its records when the pages are
 * read here and passing the call to the library's own otherwise.
 */
#include <sys/types.h>

int tracecmd_page_size(struct tracecmd_input *handle);
int tracecmd_long_size(struct tracecmd_input *handle);
void tracecmd_warning(const char *fmt, ...);

#define WINDOW_BUDGET (64u << 20) /* every CPU's two windows together, at most */
#define WINDOW_MAX (1u << 20)
#define SLACK (64u << 10)

/* a page being read: kbuffer's state (its names), offsets from `data` (past the page's header) */
typedef struct {
    const unsigned char *data;
    unsigned int header;        /* the page's header: u64 time, a long of commit (its top bits: lost events) */
    unsigned long long ts;      /* of the current event */
    long long lost_events;      /* before this page: n, -1 some, 0 none */
    unsigned int size, curr, next, index; /* commit size; the current event's header, its data's end, its data */
} ring_page;

#define COMMIT_MASK ((1u << 27) - 1)
#define MISSING_EVENTS (1ull << 31)
#define MISSING_STORED (1ull << 30)
#define TS_MSB (0xf8ull << 56)    /* what an absolute time stamp keeps of the page's time */
enum { TYPE_PADDING = 29, TYPE_TIME_EXTEND = 30, TYPE_TIME_STAMP = 31 };

static inline uint32_t le32_at(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t le64_at(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* kbuffer's update_pointers and translate_data: the event at `curr`; its type_len */
static inline unsigned int ring_update(ring_page *p) {
    const unsigned char *ptr = p->data + p->curr;
    uint32_t type_len_ts = le32_at(ptr);
    ptr += 4;
    unsigned int type_len = type_len_ts & 31;
    unsigned long long delta = type_len_ts >> 5;
    int length;
    switch (type_len) {
    case TYPE_PADDING: length = (int)le32_at(ptr); break;
    case TYPE_TIME_STAMP:
    case TYPE_TIME_EXTEND: {
        unsigned long long extend = ((unsigned long long)le32_at(ptr) << 27) + delta;
        delta = type_len == TYPE_TIME_STAMP ? extend | (p->ts & TS_MSB) : extend;
        ptr += 4;
        length = 0;
        break;
    }
    case 0:
        length = (int)le32_at(ptr) - 4;
        length = (length + 3) & ~3;
        ptr += 4;
        break;
    default: length = (int)type_len * 4; break;
    }
    p->ts = type_len == TYPE_TIME_STAMP ? delta : p->ts + delta;
    p->index = (unsigned int)(ptr - p->data);
    p->next = p->index + (unsigned int)length;
    return type_len;
}

/* kbuffer's __next_event: the next event that is not padding or time; 0 when the page has no more */
static inline int ring_next(ring_page *p) {
    unsigned int type;
    do {
        p->curr = p->next;
        if (p->next >= p->size) return 0;
        type = ring_update(p);
    } while (type >= TYPE_PADDING);
    return 1;
}

/* kbuffer_load_subbuffer, then libtracecmd's check of its size: 0 when the page says more than `page_bytes` (its lost
 * events' count, stored past the commit, is then not read) */
static int ring_load(ring_page *p, const unsigned char *page, unsigned long long page_bytes) {
    int long_8 = p->header == 16;
    p->ts = le64_at(page);
    p->data = page + p->header;
    unsigned long long flags = long_8 ? le64_at(page + 8) : le32_at(page + 8);
    p->size = (unsigned int)flags & COMMIT_MASK;
    if (p->size > page_bytes) return 0;
    if (flags & MISSING_EVENTS) {
        const unsigned char *lost = p->data + p->size;
        p->lost_events = flags & MISSING_STORED ? (long long)(long_8 ? le64_at(lost) : le32_at(lost)) : -1;
    } else {
        p->lost_events = 0;
    }
    p->index = p->next = p->curr = 0;
    ring_next(p);
    return 1;
}

typedef struct {
    int cpu_id;                 /* record->cpu */
    int fd;                     /* the file read (the trace.dat) */
    unsigned long long page;    /* the offset of the page loaded in kbuf (libtracecmd's, for a compressed section) */
    unsigned long long end;     /* the end of the CPU's section (compressed: its last chunk's) */
    char *window[2];            /* pages read from the file (or a chunk's, decompressed), then SLACK zeros */
    unsigned long long window_at[2];
    size_t window_len[2], window_cap[2];
    /* a zstd-compressed section (" Z"): <count4>, then count x <compressed size4><size4><zstd frame>, each chunk a
     * window in turn, its pages at libtracecmd's offsets from the first record's page on */
    int compressed;
    unsigned long long chunk_at, section_end, next_at; /* the next chunk's header, the section's end, its offset */
    unsigned chunks_left, chunks;
    int current;                /* the window the loaded page is in */
    ring_page ring;
    struct tep_record slot[2];
    int next_slot;
    struct tep_record *peeked;
    int done;
} page_cursor;

static int pages_read_here; /* the records are read here (start_reading_pages succeeded) */
static page_cursor *cursors;
static int cursor_count;
static unsigned long long page_bytes, window_bytes;
static unsigned long long time_offset; /* libtracecmd's ts_offset: the file's --ts-offset / --date */
static int read_ahead_cpu = -1; /* the CPU whose next record was read while a record was written, -1: none */

/* the library's own definitions of the functions this program defines */
static void *library_function(const char *name) { return dlsym(RTLD_NEXT, name); }

static size_t pread_all(int fd, void *to, size_t want, unsigned long long at) {
    size_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, (char *)to + got, want - got, (off_t)(at + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    return got;
}

/* window w: the section's pages from `offset` on, read from the file */
static int read_window(page_cursor *c, int w, unsigned long long offset) {
    /* whole pages, the last one too (libtracecmd maps it whole: past the section, the file's next bytes) */
    unsigned long long want = c->end - offset;
    want = (want + page_bytes - 1) / page_bytes * page_bytes;
    if (want > window_bytes) want = window_bytes;
    size_t got = pread_all(c->fd, c->window[w], want, offset);
    if (got < want) memset(c->window[w] + got, 0, want - got); /* the file's end: zeros, as a mapping reads */
    if (!got) return 0;
    c->window_at[w] = offset;
    c->window_len[w] = want;
    return 1;
}

/* libzstd's, found as libtracecmd finds it (dlopen): NULL when it is not there */
static size_t (*zstd_decompress)(void *, size_t, const void *, size_t);
static unsigned (*zstd_is_error)(size_t);
static const char *(*zstd_error_name)(size_t);

/* a chunk that does not decompress to its stated size: said on stderr as the layout's walk says it (tracedat_layout:
 * the offset of its compressed data), the walk then stopped and the program's status DAMAGED */
#define DAMAGED 4
static int damaged;
static void chunk_damaged(const page_cursor *c, size_t made, uint32_t usize) {
    char why[160];
    if (zstd_is_error(made)) snprintf(why, sizeof why, "%s", zstd_error_name ? zstd_error_name(made) : "an error");
    else snprintf(why, sizeof why, "gave %zu bytes, not the %u stated", made, usize);
    fprintf(stderr, "damaged at byte %llu: chunk %u of CPU %d's trace data does not decompress with zstd: %s\n",
            c->chunk_at + 8, c->chunks - c->chunks_left + 1, c->cpu_id, why);
    damaged = 1;
}
static unsigned char *zstd_in;
static size_t zstd_in_cap;
#define CHUNK_MAX (16u << 20) /* tracedat_layout.MAX_TRACE_CHUNK: a chunk said to hold more is damage */

/* window w: the chunk that holds `offset`, decompressed (the chunks before it too, in turn); 0 past the last one or
 * on a chunk that does not decompress to its whole pages (the walk refuses such a file) */
static int read_chunk(page_cursor *c, int w, unsigned long long offset) {
    do {
        unsigned char head[8];
        if (!c->chunks_left || c->chunk_at + 8 > c->section_end || pread_all(c->fd, head, 8, c->chunk_at) != 8) return 0;
        uint32_t csize = le32_at(head), usize = le32_at(head + 4);
        if (csize > c->section_end - c->chunk_at - 8 || !usize || usize % page_bytes || usize > CHUNK_MAX) return 0;
        if (csize > zstd_in_cap) {
            unsigned char *in = realloc(zstd_in, csize);
            if (!in) return 0;
            zstd_in = in; zstd_in_cap = csize;
        }
        if (usize > c->window_cap[w]) {
            char *grown = realloc(c->window[w], (size_t)usize + SLACK);
            if (!grown) return 0;
            c->window[w] = grown; c->window_cap[w] = usize;
        }
        if (pread_all(c->fd, zstd_in, csize, c->chunk_at + 8) != csize) return 0;
        size_t made = zstd_decompress(c->window[w], usize, zstd_in, csize);
        if (zstd_is_error(made) || made != usize) { chunk_damaged(c, made, usize); return 0; }
        memset(c->window[w] + usize, 0, SLACK);
        c->window_at[w] = c->next_at;
        c->window_len[w] = usize;
        c->next_at += usize;
        c->chunk_at += 8 + (unsigned long long)csize;
        c->chunks_left--;
    } while (offset >= c->next_at);
    return offset >= c->window_at[w];
}

/* loads the page at `offset` (a page of the CPU's section) into kbuf, reading (or decompressing) a window when it is
 * not in the current one; 0 when the page cannot be read or its header says more than a page (the CPU ends) */
static int load_page(page_cursor *c, unsigned long long offset) {
    int w = c->current;
    if (!c->window_len[w] || offset < c->window_at[w] || offset + page_bytes > c->window_at[w] + c->window_len[w]) {
        w ^= 1;
        if (!(c->compressed ? read_chunk(c, w, offset) : read_window(c, w, offset))) return 0;
        c->current = w;
    }
    c->page = offset;
    if (!ring_load(&c->ring, (const unsigned char *)c->window[w] + (offset - c->window_at[w]), page_bytes)) {
        tracecmd_warning("bad page read, with size of %d", (int)c->ring.size);
        return 0;
    }
    return 1;
}

/* the CPU's next record (tracecmd_peek_data's), NULL at its end */
static struct tep_record *cursor_peek(page_cursor *c) {
    if (c->peeked || c->done) return c->peeked;
    ring_page *p = &c->ring;
    while (p->curr >= p->size) { /* kbuffer_read_event: none left on the page */
        unsigned long long next = c->page + page_bytes;
        if (next >= c->end || !load_page(c, next)) { c->done = 1; return NULL; }
    }
    struct tep_record *r = &c->slot[c->next_slot];
    c->next_slot ^= 1;
    r->ts = p->ts + time_offset;
    r->size = (int)(p->next - p->index);
    r->cpu = c->cpu_id;
    r->data = (void *)(p->data + p->index);
    r->offset = c->page + p->header + p->curr;
    r->missed_events = p->curr ? 0 : (int)p->lost_events; /* kbuffer_missed_events: an int, the page's first only */
    r->record_size = (int)(p->next - p->curr);
    r->ref_count = 1;
    ring_next(p);
    return c->peeked = r;
}

/* tracecmd_read_data's: the CPU's next record, taken */
static struct tep_record *cursor_read(page_cursor *c) {
    struct tep_record *r = cursor_peek(c);
    c->peeked = NULL;
    return r;
}

/* the cursor at the first chunk of the compressed section at `at` (its count read); 0 when that cannot be read */
static int chunks_begin(page_cursor *c, unsigned long long at, unsigned long long size) {
    unsigned char count[4];
    c->section_end = at + 4 + size; /* (the size trace-cmd stores leaves out the count) */
    c->chunk_at = at + 4;
    int ok = pread_all(c->fd, count, 4, at) == 4;
    c->chunks = c->chunks_left = ok ? le32_at(count) : 0;
    return ok;
}

/* the chunks of a CPU's compressed section at `at` decompressed in turn, to find a damaged one (chunk_damaged) */
static void chunks_check(page_cursor *c, int id, unsigned long long at, unsigned long long size) {
    if (!chunks_begin(c, at, size) || !(c->window[0] = calloc(1, window_bytes + SLACK))) return;
    c->window_cap[0] = window_bytes;
    c->cpu_id = id;
    while (c->chunks_left && read_chunk(c, 0, c->next_at)) {}
    free(c->window[0]);
    c->window[0] = NULL;
}

/* whether the cursor's page at `page` holds `first` as its first record, as libtracecmd read it (its offset, size and
 * bytes) */
static int first_record_at(page_cursor *c, const struct tep_record *first, unsigned long long page) {
    c->done = 0;
    if (!load_page(c, page)) return 0;
    ring_page *p = &c->ring;
    return p->curr < p->size && c->page + p->header + p->curr == first->offset &&
           (int)(p->next - p->index) == first->size && !memcmp(p->data + p->index, first->data, (size_t)first->size);
}

/* the pages read here when `sections` (stdin's line) says where each CPU's data lies ("N cpu offset size ...";
 * "Z N ...": zstd-compressed) and libtracecmd's first record of every CPU is read the same way here; 0: libtracecmd
 * reads them (nothing of its state was changed) */
static int start_reading_pages(struct tracecmd_input *h, const char *path, const char *sections) {
    struct tep_record *(*peek)(struct tracecmd_input *, int) = library_function("tracecmd_peek_data");
    int n = -1, used = 0, compressed = sections[0] == 'Z';
    sections += compressed;
    if (!peek || sscanf(sections, "%d%n", &n, &used) != 1 || n != tracecmd_cpus(h) || n <= 0 || n > 8192) return 0;
    sections += used;
    page_bytes = (unsigned long long)tracecmd_page_size(h);
    if (!page_bytes || page_bytes & (page_bytes - 1) || page_bytes > WINDOW_MAX) return 0;
    window_bytes = WINDOW_BUDGET / 2 / (unsigned)n / page_bytes * page_bytes;
    if (window_bytes > WINDOW_MAX) window_bytes = WINDOW_MAX;
    if (window_bytes < page_bytes) window_bytes = page_bytes;
    /* the pages decoded here: as libtracecmd's kbuffer reads them (its long size), little-endian, in the current
     * format, on a little-endian machine */
    int long_bytes = tracecmd_long_size(h);
    if ((long_bytes != 8 && long_bytes != 4) || tep_is_file_bigendian(tep) || tep_is_local_bigendian(tep) ||
        tep_is_old_format(tep) || tep_get_header_timestamp_size(tep) != 8)
        return 0;
    if (compressed && !zstd_decompress) {
        void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *(void **)&zstd_decompress = dlsym(lib, "ZSTD_decompress");
            *(void **)&zstd_is_error = dlsym(lib, "ZSTD_isError");
            *(void **)&zstd_error_name = dlsym(lib, "ZSTD_getErrorName");
        }
        if (!zstd_decompress || !zstd_is_error) { zstd_decompress = NULL; return 0; }
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    page_cursor *cs = calloc((size_t)n, sizeof *cs);
    int ok = fd >= 0 && cs != NULL, offset_known = 0;
    unsigned long long offset = 0;
    for (int i = 0; ok && i < n; i++) {
        page_cursor *c = &cs[i];
        unsigned long long at, size;
        int id;
        ok = sscanf(sections, "%d %llu %llu%n", &id, &at, &size, &used) == 3;
        if (!ok) break;
        sections += used;
        c->fd = fd;
        c->end = at + size;
        c->done = 1;
        struct tep_record *first = peek(h, i);
        if (!first) { /* no record: nothing to read, unless libtracecmd could not decompress its first chunk */
            if (compressed && size) chunks_check(c, id, at, size);
            if (damaged) break;
            continue;
        }
        for (int w = 0; ok && w < 2; w++) {
            ok = (c->window[w] = calloc(1, window_bytes + SLACK)) != NULL;
            c->window_cap[w] = window_bytes;
        }
        if (!ok) break;
        c->cpu_id = first->cpu;
        c->ring.header = 8 + (unsigned int)long_bytes;
        unsigned long long page = first->offset & ~(page_bytes - 1);
        if (compressed) { /* its chunks from the first: libtracecmd's offsets from the first record's page on */
            c->compressed = 1;
            ok = first->cpu == id && chunks_begin(c, at, size);
            c->next_at = page;
            c->end = ~0ull;
        } else {
            ok = first->cpu == id && first->offset >= at && first->offset < c->end;
        }
        ok = ok && first_record_at(c, first, page) && (!offset_known || first->ts - c->ring.ts == offset);
        offset = first->ts - c->ring.ts;
        offset_known = 1;
    }
    if (!ok) {
        for (int i = 0; cs && i < n; i++) {
            free(cs[i].window[0]); free(cs[i].window[1]);
        }
        free(cs);
        if (fd >= 0) close(fd);
        return 0;
    }
    time_offset = offset;
    cursors = cs;
    cursor_count = n;
    pages_read_here = 1;
    return 1;
}

/* ---------------------------------------------------------------- the library's functions, defined here */
struct tep_record *tracecmd_peek_data(struct tracecmd_input *h, int cpu) {
    static struct tep_record *(*library)(struct tracecmd_input *, int);
    if (pages_read_here) return cpu >= 0 && cpu < cursor_count ? cursor_peek(&cursors[cpu]) : NULL;
    if (!library) *(void **)&library = library_function("tracecmd_peek_data");
    return library(h, cpu);
}

/* the record taken is one a record being written read ahead (walk() peeks its CPU again) */
struct tep_record *tracecmd_read_data(struct tracecmd_input *h, int cpu) {
    static struct tep_record *(*library)(struct tracecmd_input *, int);
    read_ahead_cpu = cpu;
    if (pages_read_here) return cpu >= 0 && cpu < cursor_count ? cursor_read(&cursors[cpu]) : NULL;
    if (!library) *(void **)&library = library_function("tracecmd_read_data");
    return library(h, cpu);
}

/* walk()'s earliest_next: the handler runs while walk() writes a record, its CPUs' next records peeked */
struct tep_record *tracecmd_peek_next_data(struct tracecmd_input *h, int *rec_cpu) {
    static struct tep_record *(*library)(struct tracecmd_input *, int *);
    if (pages_read_here) {
        int next;
        struct tep_record *r = earliest_next(&next);
        if (rec_cpu) *rec_cpu = next;
        return r;
    }
    if (!library) *(void **)&library = library_function("tracecmd_peek_next_data");
    return library(h, rec_cpu);
}

void tracecmd_free_record(struct tep_record *r) {
    static void (*library)(struct tep_record *);
    if (pages_read_here) return; /* a slot of its CPU's cursor */
    if (!library) *(void **)&library = library_function("tracecmd_free_record");
    if (library) library(r);
}
