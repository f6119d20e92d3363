/*
 * tracedat-records FILE: a trace.dat's events as a record stream on stdout, for parsers/tracedat.py (run as a child
 * process under its limits, as `trace-cmd report` is). libtracecmd and libtraceevent decode the file (its event
 * formats, kallsyms, saved cmdlines, clock and time offsets, plugins) and walk its events in the order trace-cmd
 * report prints them; the events the ftrace tables take fields from are written as their fields, without rendering
 * text (sched_switch, sched_wakeup, sched_wakeup_new, sched_waking, funcgraph_entry/exit, kernel_stack: each render
 * checked against libtraceevent's on an event's first record, else that event is printed); every other event is
 * written as the lines trace-cmd report prints for it. With --sections, a line on stdin says where each CPU's data lies
 * (tracedat_records.py writes it once the file's layout is walked): the program then reads those pages itself
 * (tracedat_pages.h), libtracecmd only opening the file; "-" (or a line that does not match the file) leaves them to
 * libtracecmd.
 *
 * Records (native byte order; str: u8 n, n bytes): 'T' u32 n, n bytes of report lines, each ended by '\n';
 * 'N' u32 id, u16 n, n bytes: the "=> frame" line of a stack frame's address, once, before 'K' records use it;
 * 'M' u32 id, u16 n, n bytes: a name (a task's, a function's; ids from 0 up), once, before records use it. Every
 * other record stands for one report line (kernel_stack: one more per frame, an event's text: one more per '\n' in
 * it) and starts with the line's task and time: i64 t (ns, as the report shows it: rounded to the microsecond),
 * i32 cpu, i32 pid, u32 comm (an 'M' id); then
 *   'S' sched_switch:  str prev_comm, i64 prev_pid, i32 prev_prio, str prev_state, str next_comm, i64 next_pid,
 *                      i32 next_prio
 *   'W' wake-ups:      str event, str comm, i64 pid, i32 prio, i32 target_cpu, u8 success (2: not shown)
 *   'F' funcgraph:     u8 kind (1 entry, 2 leaf, 3 exit), i64 duration (ns, INT64_MIN: none), i32 depth,
 *                      u32 the function's name (an 'M' id; UINT32_MAX: none, an exit)
 *   'K' kernel_stack:  u32 n, n frame ids ('N')
 *   'E' other events:  str event, u32 n, n bytes of its text as libtraceevent prints it
 * (INT32_MIN: a value not shown). Exit status 0; 3 when the file's times are not in microseconds (trace-cmd's raw
 * counter output: the caller falls back to the report); 2 when libtracecmd cannot open it (stderr says why).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace-cmd.h>
#include <unistd.h>

/* libtracecmd's own (exported, used by trace-cmd report; not in its public header) */
int tracecmd_get_flags(struct tracecmd_input *handle);
int tracecmd_cpus(struct tracecmd_input *handle);
struct tep_record *tracecmd_peek_data(struct tracecmd_input *handle, int cpu);
struct tep_record *tracecmd_peek_next_data(struct tracecmd_input *handle, int *rec_cpu);
void tracecmd_parse_trace_clock(struct tracecmd_input *handle, char *file, int size);
#define TRACECMD_FL_IN_USECS (1 << 2)

/*
 * libtracecmd 3.1.6 (lib/trace-cmd/trace-input.c) parses the text of the file's trace_clock option in place:
 * handle_options() reads an option into malloc(size) bytes, not NUL-terminated, and hands them to
 * tracecmd_parse_trace_clock(), whose strtok_r() reads on past them. trace-cmd writes that option with no data in a
 * v6 file (it flags the trace_clock section stored after the CPU data): its text is then the heap's leftovers, the
 * mangled pointer glibc's malloc left in the 0-byte block, bytes that ASLR randomises on each run. When they start
 * with '[' (28 runs in 5,600 on elainecole-kernel-monitor-trace.dat) the clock is named by garbage and the file's
 * times are taken for a raw counter (exit 3 here; trace-cmd report prints nanoseconds); when that '[' is followed by
 * a NUL, a space or brackets only (by the same odds, about 1 run in 30,000) extract_trace_clock() gets no word from
 * strtok_r() and sscanf(NULL) ends the process with SIGSEGV. A file whose option holds "[]" or "[ " does it every
 * time.
 *
 * Its three calls go through the library's PLT, so this definition takes them: it parses a NUL-terminated copy of the
 * text (at most `size` bytes, up to its first NUL) with the library's own function, found by dlsym, and cuts the text
 * before a "[...]" word that names no clock (the library would crash on it; no clock is named, as with no text).
 */
void tracecmd_parse_trace_clock(struct tracecmd_input *handle, char *file, int size) {
    static void (*library)(struct tracecmd_input *, char *, int);
    if (!library) *(void **)&library = dlsym(RTLD_NEXT, "tracecmd_parse_trace_clock");
    size_t n = file && size > 0 ? strnlen(file, (size_t)size) : 0;
    char *text = malloc(n + 1);
    if (!library || !text) { free(text); return; }
    memcpy(text, file, n);
    text[n] = 0;
    /* the words strtok_r(text, " ") gives; the library takes the first that starts with '[' */
    for (char *w = text; *w; w += strcspn(w, " ")) {
        w += strspn(w, " ");
        if (*w != '[') continue;
        size_t len = strcspn(w, " ");
        if (strspn(w, "[]") >= len) *w = 0; /* "[", "[]", "[[]]": no name between the brackets */
        break;
    }
    library(handle, text, (int)n);
    free(text);
}

#include "tracedat_kallsyms.h"

enum { NATIVE_UNKNOWN = 0, NATIVE_YES, NATIVE_NO };
enum { K_NONE = 0, K_SWITCH, K_WAKEUP_PLUGIN, K_WAKING, K_FG_ENTRY, K_FG_EXIT, K_STACK };
#define MAX_IDS 65536

#include "tracedat_info_cache.h"

typedef struct {
    int kind, checked; /* checked: NATIVE_* */
    int info_from;     /* an event kept as text: 1 + where its own fields start (tracedat_info_cache.h), 0 not known */
    long info_lookups, info_hits;
    struct tep_format_field *f[8];
} evinfo_t;

static struct tep_handle *tep;
static struct tracecmd_input *handle;
static evinfo_t *info;   /* by event id */
static int fg_exit_id = -1;
static int long_size;
static struct trace_seq line, mine;

/* ---------------------------------------------------------------- output */
static char out[1 << 20];
static size_t out_len;
static int out_failed;
static void flush_out(void) {
    if (out_len && fwrite(out, 1, out_len, stdout) != out_len) out_failed = 1;
    out_len = 0;
}
static void put_slow(const void *p, size_t n) {
    flush_out();
    if (n > sizeof out) { if (fwrite(p, 1, n, stdout) != n) out_failed = 1; return; }
    memcpy(out + out_len, p, n);
    out_len += n;
}
/* inlined: a field's constant size becomes a single store */
static inline __attribute__((always_inline)) void put(const void *p, size_t n) {
    if (__builtin_expect(out_len + n > sizeof out, 0)) { put_slow(p, n); return; }
    memcpy(out + out_len, p, n);
    out_len += n;
}
static void put8(uint8_t v) { put(&v, 1); }
static void put32(int32_t v) { put(&v, 4); }
static void put64(int64_t v) { put(&v, 8); }
static void put_str(const char *s, size_t n) { if (n > 255) n = 255; put8((uint8_t)n); put(s, n); }
static void put_cstr(const char *s) { put_str(s, strlen(s)); }

#include "tracedat_names.h"

/* a field's value and a char[] field as "%.*s" prints it, read as libtraceevent reads them for the report: at the
 * field's offset whatever the record's size (a damaged record then shows what its page holds there, as the report
 * does; a read past the page ends this child, as it would trace-cmd) */
static int same_endian; /* the file's byte order is this machine's: numbers are read as they are */
/* tep_read_number's answer (0 for a size it does not read) */
static inline unsigned long long number_at(const void *p, int size) {
    if (!same_endian) return tep_read_number(tep, p, size);
    switch (size) {
    case 1: return *(const uint8_t *)p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    default: return 0;
    }
}
/* tep_read_number_field's (0 when it reads nothing) */
static inline unsigned long long num(struct tep_format_field *f, struct tep_record *r) {
    return f ? number_at((const char *)r->data + f->offset, f->size) : 0;
}

/* tep_data_type and tep_data_pid: the common field of the library's first event, read at its offset (-1 when that
 * event lacks it, as the library answers) */
static struct tep_format_field *common_type, *common_pid;
static int record_type(struct tep_record *r) {
    return common_type ? (int)number_at((const char *)r->data + common_type->offset, common_type->size)
                       : tep_data_type(tep, r);
}
static int record_pid(struct tep_record *r) {
    return common_pid ? (int)number_at((const char *)r->data + common_pid->offset, common_pid->size)
                      : tep_data_pid(tep, r);
}

/* tep_find_event_by_record's answers by event id (tep_find_event: the event list no longer changes) */
static struct tep_event **event_of_id;
static unsigned char *event_known;
static struct tep_event *record_event(struct tep_record *r) {
    if (r->size < 0) return tep_find_event_by_record(tep, r); /* its warning, and NULL */
    int id = record_type(r);
    if (id < 0 || id >= MAX_IDS) return tep_find_event(tep, id);
    if (!event_known[id]) { event_of_id[id] = tep_find_event(tep, id); event_known[id] = 1; }
    return event_of_id[id];
}
static size_t field_str(struct tep_format_field *f, struct tep_record *r, const char **s) {
    *s = (const char *)r->data + f->offset;
    return strnlen(*s, f->size > 0 ? (size_t)f->size : 0);
}

/* the line trace-cmd report prints for the record (trace_show_data without its options), its final '\n' dropped */
static void report_line(struct trace_seq *s, struct tep_record *r, struct tep_event *ev) {
    static const char spaces[] = "                    ";
    tep_print_event(tep, s, r, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID, TEP_PRINT_CPU);
    tep_print_event(tep, s, r, " %6.1000d:", TEP_PRINT_TIME);
    const char *name = ev ? ev->name : "(NULL)";
    trace_seq_printf(s, " %s: ", name);
    if (strlen(name) < 20) trace_seq_printf(s, "%.*s", (int)(20 - strlen(name)), spaces);
    tep_print_event(tep, s, r, "%s", TEP_PRINT_INFO);
    if (s->len && s->buffer[s->len - 1] == '\n') s->len--;
}

static void text_record(struct trace_seq *s) {
    put8('T'); put32((int32_t)(s->len + 1)); put(s->buffer, s->len); put8('\n');
}

/* the record's task name, looked up (as the report does) before its text is printed: printing a sched event registers
 * the names it shows (plugin_sched_switch), and which one a pid then has depends on that order */
static const char *line_comm;
static size_t line_comm_len;
static int32_t line_comm_id; /* its name id ('M') */
static int line_pid; /* the record's common_pid */

/* tep_data_comm_from_pid's answers, until a name is registered (the cache is then dropped: a new generation), with
 * whether the name reads as a task's in an event line (plain_comm) */
#define COMM_SLOTS 4096
static struct { int pid; unsigned gen; int plain; int32_t id; const char *comm; size_t len; } comm_cache[COMM_SLOTS];
static unsigned comm_gen = 1;
/* the library keeps its names in its sorted array (it sorts them on a lookup of a pid > 0) */
static int cmdlines_sorted;
static int plain_name_of_task(const char *c);
static const char *comm_of(int pid, size_t *len, int *plain, int32_t *id) {
    unsigned h = (unsigned)pid & (COMM_SLOTS - 1);
    if (comm_cache[h].gen != comm_gen || comm_cache[h].pid != pid) {
        comm_cache[h].pid = pid; comm_cache[h].gen = comm_gen; comm_cache[h].comm = tep_data_comm_from_pid(tep, pid);
        comm_cache[h].len = strlen(comm_cache[h].comm);
        comm_cache[h].plain = plain_name_of_task(comm_cache[h].comm);
        /* (written as put_str writes a name: at most 255 bytes) */
        comm_cache[h].id = name_id(comm_cache[h].comm, comm_cache[h].len > 255 ? 255 : comm_cache[h].len);
        if (comm_cache[h].id < 0) out_failed = 1;
        if (pid && comm_cache[h].comm[0] != '<') cmdlines_sorted = 1; /* not "<not enough memory...>", "<...>" */
    }
    *len = comm_cache[h].len;
    *plain = comm_cache[h].plain;
    *id = comm_cache[h].id;
    return comm_cache[h].comm;
}

/* the pids below REGISTERED_PIDS whose name is in the library's sorted array: tep_register_comm (which never replaces
 * a name there) changes nothing for them, nor for pid 0 */
#define REGISTERED_PIDS (1 << 22)
static uint8_t registered[REGISTERED_PIDS / 8];
static void register_comm(const char *comm, size_t n, int pid) {
    int known = pid >= 0 && pid < REGISTERED_PIDS;
    if (cmdlines_sorted && (!pid || (known && registered[pid >> 3] & (1 << (pid & 7))))) return;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)n, comm);
    errno = 0;
    int got = tep_register_comm(tep, buf, pid);
    if (got == 0) comm_gen++;
    if (cmdlines_sorted && known && (got == 0 || errno == EEXIST)) registered[pid >> 3] |= (uint8_t)(1 << (pid & 7));
}
/* a record printed by libtraceevent: its sched_switch plugin may have registered the names it showed */
static void printed(struct tep_event *ev) {
    if (!ev || !strncmp(ev->name, "sched_", 6)) comm_gen++;
}

/* the name id ('M') of the function at an address: tep_find_function's name, else the address in hex (as the
 * report prints it), by address */
#define FUNC_SLOTS 16384
static struct { unsigned long long addr; int32_t id; int known; } func_cache[FUNC_SLOTS];
static int32_t function_id(unsigned long long a) {
    unsigned h = (unsigned)((a * 0x9E3779B97F4A7C15ULL) >> 50) & (FUNC_SLOTS - 1);
    if (!func_cache[h].known || func_cache[h].addr != a) {
        char hex[32];
        const char *fn = tep_find_function(tep, a);
        if (!fn) { snprintf(hex, sizeof hex, "%llx", a); fn = hex; }
        func_cache[h].addr = a; func_cache[h].known = 1; func_cache[h].id = name_id(fn, strlen(fn));
    }
    return func_cache[h].id;
}

/* (the line's task's name id: its 'M' record written already, by comm_of) */
static void head(struct tep_record *r, char kind) {
    put8((uint8_t)kind);
    put64((int64_t)((r->ts + 500) / 1000 * 1000));
    put32(r->cpu);
    put32(line_pid);
    put32(line_comm_id);
}

/* ---------------------------------------------------------------- renders, checked against libtraceevent's */
static void state_text(struct trace_seq *s, unsigned long long v) {
    static const char states[] = "SDTtZXxW";
    int found = 0;
    for (int i = 0; i < 8; i++)
        if (v & (1u << i)) { if (found) trace_seq_putc(s, '|'); found = 1; trace_seq_putc(s, states[i]); }
    if (!found) trace_seq_putc(s, 'R');
}

/* what the info of a natively written record says; 0 when the event's fields are missing */
static int render(evinfo_t *e, struct tep_record *r, struct trace_seq *s) {
    const char *c;
    size_t n;
    switch (e->kind) {
    case K_SWITCH: /* plugin_sched_switch */
        n = field_str(e->f[0], r, &c);
        trace_seq_printf(s, "%.*s:%lld [%d] ", (int)n, c, (long long)num(e->f[1], r), (int)num(e->f[2], r));
        state_text(s, num(e->f[3], r));
        n = field_str(e->f[4], r, &c);
        trace_seq_printf(s, " ==> %.*s:%lld [%d]", (int)n, c, (long long)num(e->f[5], r), (int)num(e->f[6], r));
        return 1;
    case K_WAKEUP_PLUGIN:
        n = field_str(e->f[0], r, &c);
        trace_seq_printf(s, "%.*s:%lld [%lld]", (int)n, c, (long long)num(e->f[1], r), (long long)num(e->f[2], r));
        if (e->f[3]) trace_seq_printf(s, " success=%lld", (long long)num(e->f[3], r));
        if (e->f[4]) trace_seq_printf(s, " CPU:%03llu", num(e->f[4], r));
        return 1;
    case K_WAKING: /* the kernel's print fmt */
        n = field_str(e->f[0], r, &c);
        trace_seq_printf(s, "comm=%.*s pid=%d prio=%d target_cpu=%03d", (int)n, c, (int)num(e->f[1], r),
                         (int)num(e->f[2], r), (int)num(e->f[4], r));
        return 1;
    case K_STACK: { /* plugin_function's trace_stack_handler */
        trace_seq_puts(s, "<stack trace >\n");
        const char *p = (const char *)r->data + e->f[0]->offset, *end = (const char *)r->data + r->size;
        for (; p < end; p += long_size) { /* the last word may pass the record's end, as there */
            unsigned long long a = number_at(p, long_size);
            if ((long_size == 8 && a == (unsigned long long)-1) || (int)a == -1) break;
            const char *fn = tep_find_function(tep, a);
            if (fn) trace_seq_printf(s, "=> %s (%llx)\n", fn, a);
            else trace_seq_printf(s, "=> %llx\n", a);
        }
        return 1;
    }
    }
    return 0;
}

static void fields(evinfo_t *e, struct tep_event *ev, const char *const names[], int n, int optional_from) {
    for (int i = 0; i < n; i++) {
        e->f[i] = names[i] ? tep_find_any_field(ev, names[i]) : NULL;
        if (!e->f[i] && names[i] && i < optional_from) e->checked = NATIVE_NO;
    }
}

static evinfo_t *event_info(struct tep_event *ev) {
    evinfo_t *e = &info[ev->id];
    if (e->kind || e->checked) return e;
    const char *sys = ev->system ? ev->system : "";
    e->checked = NATIVE_UNKNOWN;
    if (!strcmp(ev->name, "sched_switch")) {
        static const char *const n[] = {"prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid",
                                        "next_prio"};
        e->kind = K_SWITCH; fields(e, ev, n, 7, 7);
    } else if (!strcmp(ev->name, "sched_wakeup") || !strcmp(ev->name, "sched_wakeup_new")) {
        static const char *const n[] = {"comm", "pid", "prio", "success", "target_cpu"};
        e->kind = K_WAKEUP_PLUGIN; fields(e, ev, n, 5, 3);
    } else if (!strcmp(ev->name, "sched_waking")) {
        static const char *const n[] = {"comm", "pid", "prio", NULL, "target_cpu"};
        e->kind = K_WAKING; fields(e, ev, n, 5, 5);
    } else if (!strcmp(sys, "ftrace") && !strcmp(ev->name, "funcgraph_entry")) {
        static const char *const n[] = {"func", "depth"};
        e->kind = K_FG_ENTRY; fields(e, ev, n, 2, 2);
        if (e->checked == NATIVE_UNKNOWN) e->checked = NATIVE_YES; /* trace-cmd's own handler, mirrored */
    } else if (!strcmp(sys, "ftrace") && !strcmp(ev->name, "funcgraph_exit")) {
        static const char *const n[] = {"func", "depth", "calltime", "rettime"};
        e->kind = K_FG_EXIT; fields(e, ev, n, 4, 4);
        if (e->checked == NATIVE_UNKNOWN) e->checked = NATIVE_YES;
    } else if (!strcmp(sys, "ftrace") && !strcmp(ev->name, "kernel_stack")) {
        static const char *const n[] = {"caller"};
        e->kind = K_STACK; fields(e, ev, n, 1, 1);
    } else {
        e->checked = NATIVE_NO;
    }
    if (e->checked == NATIVE_NO) e->kind = K_NONE;
    return e;
}

/* ---------------------------------------------------------------- records */
static int32_t frame_id(unsigned long long a);
static void write_native(evinfo_t *e, struct tep_record *r) {
    const char *c;
    size_t n;
    switch (e->kind) {
    case K_SWITCH: {
        head(r, 'S');
        int ppid = (int)num(e->f[1], r), npid = (int)num(e->f[5], r);
        n = field_str(e->f[0], r, &c); put_str(c, n);
        put64((int64_t)num(e->f[1], r)); put32((int32_t)num(e->f[2], r));
        trace_seq_reset(&mine); state_text(&mine, num(e->f[3], r)); put_str(mine.buffer, mine.len);
        const char *nc; size_t nn = field_str(e->f[4], r, &nc);
        put_str(nc, nn); put64((int64_t)num(e->f[5], r)); put32((int32_t)num(e->f[6], r));
        /* what the plugin does as it prints: the comms it shows become the pids' */
        register_comm(c, n, ppid);
        register_comm(nc, nn, npid);
        return;
    }
    case K_WAKEUP_PLUGIN: case K_WAKING: {
        struct tep_event *ev = record_event(r);
        head(r, 'W');
        put_cstr(ev->name);
        n = field_str(e->f[0], r, &c); put_str(c, n);
        unsigned long long pid = num(e->f[1], r), prio = num(e->f[2], r);
        if (e->kind == K_WAKING) { pid = (unsigned long long)(long long)(int)pid; prio = (unsigned long long)(long long)(int)prio; }
        put64((int64_t)pid);
        put32((long long)prio > INT32_MAX || (long long)prio <= INT32_MIN ? INT32_MIN : (int32_t)prio);
        put32(e->f[4] ? (int32_t)(e->kind == K_WAKING ? (int)num(e->f[4], r) : (int)num(e->f[4], r)) : INT32_MIN);
        put8(e->kind == K_WAKEUP_PLUGIN && e->f[3] ? num(e->f[3], r) != 0 : 2);
        if (e->kind == K_WAKEUP_PLUGIN) register_comm(c, n, (int)pid);
        return;
    }
    case K_STACK: { /* the frames' ids first (their 'N' records go before the 'K'), each address read once */
        static int32_t *ids;
        static size_t ids_cap;
        const char *p = (const char *)r->data + e->f[0]->offset, *end = (const char *)r->data + r->size;
        uint32_t n = 0;
        for (; p < end; p += long_size, n++) { /* as render() reads them */
            unsigned long long a = number_at(p, long_size);
            if ((long_size == 8 && a == (unsigned long long)-1) || (int)a == -1) break;
            if (n == ids_cap) {
                size_t cap = ids_cap ? ids_cap * 2 : 256;
                int32_t *grown = realloc(ids, cap * sizeof *ids);
                if (!grown) { out_failed = 1; return; }
                ids = grown; ids_cap = cap;
            }
            if ((ids[n] = frame_id(a)) < 0) { out_failed = 1; return; } /* out of memory */
        }
        head(r, 'K');
        put32((int32_t)n);
        put(ids, n * sizeof *ids);
        return;
    }
    }
}

/* the id of a stack frame's address; its "=> frame" line written ('N') the first time */
static uint64_t *frame_addr;
static int32_t *frame_slot;
static size_t frame_cap, frames;
static int32_t frame_id(unsigned long long a) {
    if (frames * 2 >= frame_cap) { /* grow the open-addressing table (slots hold id + 1) */
        size_t cap = frame_cap ? frame_cap * 2 : 1 << 16;
        uint64_t *addr = calloc(cap, sizeof *addr);
        int32_t *slot = calloc(cap, sizeof *slot);
        if (!addr || !slot) { free(addr); free(slot); return -1; }
        for (size_t i = 0; i < frame_cap; i++) {
            if (!frame_slot[i]) continue;
            size_t h = (size_t)((frame_addr[i] * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
            while (slot[h]) h = (h + 1) & (cap - 1);
            addr[h] = frame_addr[i]; slot[h] = frame_slot[i];
        }
        free(frame_addr); free(frame_slot);
        frame_addr = addr; frame_slot = slot; frame_cap = cap;
    }
    size_t h = (size_t)((a * 0x9E3779B97F4A7C15ULL) >> 20) & (frame_cap - 1);
    while (frame_slot[h] && frame_addr[h] != a) h = (h + 1) & (frame_cap - 1);
    if (frame_slot[h]) return frame_slot[h] - 1;
    int32_t id = (int32_t)frames++;
    frame_addr[h] = a; frame_slot[h] = id + 1;
    trace_seq_reset(&mine);
    const char *fn = tep_find_function(tep, a);
    if (fn) trace_seq_printf(&mine, "=> %s (%llx)", fn, a);
    else trace_seq_printf(&mine, "=> %llx", a);
    size_t n = mine.len > 65535 ? 65535 : mine.len;
    uint16_t n16 = (uint16_t)n;
    put8('N'); put32(id); put(&n16, 2); put(mine.buffer, n);
    return id;
}

static struct tep_record **next_of; /* each CPU's next record, peeked (walk) */
static int cpus;

/* tracecmd_peek_next_data's: the earliest of the CPUs' next records, the lowest CPU on a tie */
static struct tep_record *earliest_next(int *cpu) {
    int next = -1;
    unsigned long long ts = 0;
    for (int c = 0; c < cpus; c++)
        if (next_of[c] && (next < 0 || next_of[c]->ts < ts)) { next = c; ts = next_of[c]->ts; }
    *cpu = next;
    return next < 0 ? NULL : next_of[next];
}

#include "tracedat_pages.h"

/* trace-cmd's function_graph handlers (trace-ftrace.c): an entry whose next record (any CPU) is the exit of the same
 * function by the same task is a leaf, shown on one line, and that exit is consumed */
static void write_funcgraph(evinfo_t *e, struct tep_record *r) {
    int fk = 1;
    unsigned long long dur = 0, func = num(e->f[0], r), depth = num(e->f[1], r);
    if (e->kind == K_FG_ENTRY) {
        int cpu;
        struct tep_record *next = earliest_next(&cpu);
        if (next && fg_exit_id >= 0 && record_type(next) == fg_exit_id) {
            evinfo_t *x = &info[fg_exit_id];
            if (record_pid(next) == line_pid && num(x->f[0], next) == func) {
                struct tep_record *ret = tracecmd_read_data(handle, cpu);
                read_ahead_cpu = cpu;
                if (ret) {
                    dur = num(x->f[3], ret) - num(x->f[2], ret);
                    fk = 2;
                    tracecmd_free_record(ret);
                }
            }
        }
    } else {
        fk = 3;
        dur = num(e->f[3], r) - num(e->f[2], r);
    }
    int32_t name = fk == 3 ? -1 : function_id(func); /* (before the record: its 'M' goes first) */
    if (fk != 3 && name < 0) { out_failed = 1; return; }
    head(r, 'F');
    put8((uint8_t)fk);
    /* the report shows microseconds with three decimals, the decimals left out from 7 digits on */
    put64(fk == 1 ? INT64_MIN : (int64_t)(dur / 1000 >= 1000000 ? dur / 1000 * 1000 : dur));
    put32((int32_t)depth);
    put32(name);
}

/* whether the report's line of the record starts as an event line's does for the text reader (parse_line): its
 * task's name does not look like a header, a frame, a marker or a function_graph column */
static int line_comm_plain;
static int plain_comm(void) {
    return line_pid >= 0 && line_comm_plain; /* "comm--5" is read as comm "comm-", pid 5 */
}
static int plain_name_of_task(const char *c) {
    while (*c == ' ' || *c == '\t') c++;
    return *c && !strchr("#=-|+!@*$0123456789", *c) && strncmp(c, "cpus=", 5) && strncmp(c, "CPU", 3) &&
           !strpbrk(c, "\n\r\v\f[");
}

/* whether a name field reads back from the text as it is (no outer or control whitespace, none of the separators the
 * text reader splits the sched events' text at): else the event is written as its text, for the text reader to read */
static int plain_name(struct tep_format_field *f, struct tep_record *r) {
    const char *c;
    size_t n = field_str(f, r, &c);
    if (!n || c[0] == ' ' || c[n - 1] == ' ') return 0;
    int separator = 0; /* a '=' or ' ', which the separators start with */
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)c[i];
        if (b < 0x20 || b == 0x7f) return 0;
        separator |= b == '=' || b == ' ';
    }
    return !separator || (!memmem(c, n, "==>", 3) && !memmem(c, n, " [", 2) && !memmem(c, n, " pid=", 5));
}
static int plain_names(evinfo_t *e, struct tep_record *r) {
    if (e->kind == K_SWITCH) return plain_name(e->f[0], r) && plain_name(e->f[4], r);
    if (e->kind == K_WAKEUP_PLUGIN || e->kind == K_WAKING) return plain_name(e->f[0], r);
    return 1;
}

static int on_record(struct tracecmd_input *h, struct tep_record *r, int cpu, void *data) {
    (void)h; (void)data;
    if (line.len || line.readpos) trace_seq_reset(&line); /* a call per record else */
    if (r->missed_events > 0) trace_seq_printf(&line, "CPU:%d [%lld EVENTS DROPPED]", cpu, r->missed_events);
    else if (r->missed_events < 0) trace_seq_printf(&line, "CPU:%d [EVENTS DROPPED]", cpu);
    if (line.len) { text_record(&line); trace_seq_reset(&line); }
    line_pid = record_pid(r);
    line_comm = comm_of(line_pid, &line_comm_len, &line_comm_plain, &line_comm_id);
    struct tep_event *ev = record_event(r);
    evinfo_t *e = ev && ev->id >= 0 && ev->id < MAX_IDS ? event_info(ev) : NULL;
    if (e && e->kind && e->checked == NATIVE_UNKNOWN) { /* its first record: our render must equal libtraceevent's */
        trace_seq_reset(&line); trace_seq_reset(&mine);
        tep_print_event(tep, &line, r, "%s", TEP_PRINT_INFO);
        printed(ev);
        e->checked = render(e, r, &mine) && line.len == mine.len && !memcmp(line.buffer, mine.buffer, line.len)
                         ? NATIVE_YES : NATIVE_NO;
        trace_seq_reset(&line);
    }
    if (e && e->kind && e->checked == NATIVE_YES && plain_comm() && plain_names(e, r)) {
        if (e->kind == K_FG_ENTRY || e->kind == K_FG_EXIT) write_funcgraph(e, r);
        else write_native(e, r);
        return 0;
    }
    if (!ev || !strncmp(ev->name, "funcgraph_", 10) || !plain_comm()) { /* as the report prints it */
        report_line(&line, r, ev);
        printed(ev);
        text_record(&line);
        return 0;
    }
    head(r, 'E');
    put_cstr(ev->name);
    if (e && !e->info_from) e->info_from = info_payload_from(ev) + 1;
    int from = e ? e->info_from - 1 : -1;
    info_entry *x = NULL;
    const char *p = (const char *)r->data + (from > 0 ? from : 0);
    size_t n = from >= 0 && from <= r->size ? (size_t)(r->size - from) : 0;
    uint32_t hash = 0;
    if (from >= 0 && from <= r->size && (e->info_lookups < INFO_TRIAL || e->info_hits * 4 >= e->info_lookups)) {
        e->info_lookups++;
        hash = info_hash(ev->id, p, n);
        x = info_slot(ev->id, p, n, hash);
        if (x && x->key) { /* printed before for these bytes */
            e->info_hits++;
            put32((int32_t)x->text_len); put(x->key + x->key_len, x->text_len);
            return 0;
        }
    }
    tep_print_event(tep, &line, r, "%s", TEP_PRINT_INFO);
    printed(ev);
    if (line.len && line.buffer[line.len - 1] == '\n') line.len--;
    info_keep(x, ev->id, hash, p, n, line.buffer, line.len);
    put32((int32_t)line.len); put(line.buffer, line.len);
    return 0;
}

/*
 * The records in the report's order: tracecmd_iterate_events_multi's (the earliest of each CPU's next record, the
 * lowest CPU on a tie), without its stale copy of those next records. It keeps the record it peeked on each CPU
 * between calls; a function_graph entry whose leaf exit is the next record on another CPU reads that record
 * (write_funcgraph, as trace-cmd's handler does) and frees it, and the loop then compares the freed record's
 * timestamp (glibc's free-list pointer by then) with the others': the order after it is the heap's. Here the next
 * record of that CPU is peeked again, as is the one of the CPU just read (before the record is written: a leaf's exit
 * is looked for among these next records, as tracecmd_peek_next_data would peek them).
 */
static void walk(void) {
    cpus = tracecmd_cpus(handle);
    next_of = calloc(cpus > 0 ? (size_t)cpus : 1, sizeof *next_of);
    if (!next_of) { out_failed = 1; return; }
    for (int cpu = 0; cpu < cpus; cpu++) next_of[cpu] = tracecmd_peek_data(handle, cpu);
    for (;;) {
        int next;
        earliest_next(&next);
        struct tep_record *r = next < 0 ? NULL : tracecmd_read_data(handle, next);
        if (!r) break;
        next_of[next] = tracecmd_peek_data(handle, next); /* what a peek across the CPUs would read (write_funcgraph) */
        read_ahead_cpu = -1;
        on_record(handle, r, next, NULL);
        tracecmd_free_record(r);
        if (damaged) break;
        if (read_ahead_cpu >= 0 && read_ahead_cpu < cpus)
            next_of[read_ahead_cpu] = tracecmd_peek_data(handle, read_ahead_cpu);
    }
    free(next_of);
}

/* whether one of this process's open files is a temporary file of libtracecmd's (or that cannot be told) */
static int holds_temp_files(void) {
    static const char prefix[] = "/tmp/trace_cpu_data"; /* libtracecmd's COMPR_TEMP_FILE */
    DIR *fds = opendir("/proc/self/fd");
    if (!fds) return 1;
    int found = 0;
    for (struct dirent *d; !found && (d = readdir(fds));) {
        char target[256];
        if (d->d_name[0] == '.') continue;
        ssize_t n = readlinkat(dirfd(fds), d->d_name, target, sizeof target - 1);
        found = n >= (ssize_t)sizeof prefix - 1 && !memcmp(target, prefix, sizeof prefix - 1);
    }
    closedir(fds);
    return found;
}

int main(int argc, char **argv) {
    int sections = argc == 3 && !strcmp(argv[2], "--sections");
    if (argc != 2 && !sections) { fprintf(stderr, "usage: tracedat-records FILE [--sections]\n"); return 2; }
    handle = tracecmd_open(argv[1], 0);
    if (!handle) { fprintf(stderr, "libtracecmd could not open the file\n"); return 2; }
    if (!(tracecmd_get_flags(handle) & TRACECMD_FL_IN_USECS)) { tracecmd_close(handle); return 3; }
    tep = tracecmd_get_tep(handle);
    register_named_symbols(tep);
    long_size = tep_get_long_size(tep);
    info = calloc(MAX_IDS, sizeof *info);
    event_of_id = calloc(MAX_IDS, sizeof *event_of_id);
    event_known = calloc(MAX_IDS, 1);
    if (!info || !event_of_id || !event_known) return 2;
    same_endian = tep_is_file_bigendian(tep) == tep_is_local_bigendian(tep);
    struct tep_event *first = tep_get_event(tep, 0); /* where the library reads every record's type and pid */
    if (first) {
        common_type = tep_find_common_field(first, "common_type");
        common_pid = tep_find_common_field(first, "common_pid");
    }
    struct tep_event *x = tep_find_event_by_name(tep, "ftrace", "funcgraph_exit");
    if (x && x->id >= 0 && x->id < MAX_IDS && event_info(x)->checked == NATIVE_YES) fg_exit_id = x->id;
    trace_seq_init(&line); trace_seq_init(&mine);
    fcntl(STDOUT_FILENO, F_SETPIPE_SZ, (int)sizeof out); /* a pipe's reader woken per 1 MiB written, not per 64 KiB */
    put8('T');
    char cpus_line[32];
    int n = snprintf(cpus_line, sizeof cpus_line, "cpus=%d\n", tracecmd_cpus(handle));
    put32(n); put(cpus_line, (size_t)n);
    if (sections) { /* where each CPU's data lies, once the caller has walked the file's layout: read here */
        char *where = NULL;
        size_t cap = 0;
        if (getline(&where, &cap, stdin) > 0) start_reading_pages(handle, argv[1], where);
        free(where);
    }
    if (!damaged) walk(); /* (a damaged chunk: found before the walk, or ending it) */
    flush_out();
    fflush(stdout);
    /* the process ends: freeing the library's tables (its kallsyms, formats, names) is left to the exit, unless it
     * holds decompressed trace data in temporary files, which only tracecmd_close removes */
    if (holds_temp_files()) tracecmd_close(handle);
    return damaged ? DAMAGED : out_failed || ferror(stdout) ? 1 : 0;
}
