/*
 * The tail of a chunk tokenized ahead by a second thread (tokenize_tail: each line's fields packed in a pre_t) and
 * folded afterwards in order (fold_pre), as parse_line would have done it. Included by _funcgraph.c once, after
 * _funcgraph_line.h; its chunk loop (tokenize) starts the thread.
 */
#ifndef STALLSCOPE_FUNCGRAPH_AHEAD_H
#define STALLSCOPE_FUNCGRAPH_AHEAD_H

/* ---------------------------------------------------------------- the tail of a chunk, tokenized ahead */
/* A chunk's tail is tokenized by a thread of its own while this one parses and folds its head, then folds the tail's
 * lines in order: the fold (call stacks, names, the current task of each CPU, a pending stack event) stays in one
 * thread; the tokenizing of the function_graph lines, most of the work, is split. Only those lines are tokenized
 * ahead (their fields need no state); any other line is parsed in the fold, as in one thread. */
#define SPLIT_MIN (1 << 20) /* chunks smaller than this are parsed in one thread */
enum { PRE_RAW = 0, PRE_FGTEXT, PRE_FGEV, PRE_FGEV_NOFLAGS, PRE_EVENT, PRE_EVENT_NOFLAGS };
/* a line tokenized ahead, packed in 64 bytes (its fields as offsets into the line: the fold reads ~10 MB of these per
 * chunk after they were written, so their size is memory traffic): kind, and for a function_graph line its ctx_t and
 * fgrec_t but for the line and key (set by the fold) */
struct pre_s {
    const char *p;
    int64_t t, pid, dur;
    uint32_t len, comm_off, commn, name_off, namen; /* comm_off, name_off UINT32_MAX: none (NULL) */
    int32_t cpu, indent;
    int16_t depth;
    uint8_t kind, rkind;
};
#define NO_OFF UINT32_MAX
typedef struct { const char *from, *to; pre_t *lines; size_t n, cap; int failed; } tail_t;

/* line [p,e): a function_graph line (tracefs text or a trace-cmd funcgraph event) whose fields are in *c and *x, any
 * other event line (PRE_EVENT: its task, CPU and time in *c, what follows the time in x->name..x->namee), or PRE_RAW:
 * parse_line decides, as it would for any line; the same order of tests as parse_line's */
static int pre_fields(const char *p, const char *e, ctx_t *c, fgrec_t *x) {
    const char *s = skip_ws(p, e);
    e = rtrim(s, e);
    if (s == e || *s == '#' || *s == '=' || is_dashes(s, e) || starts(s, e, "cpus=") || starts(s, e, "CPU"))
        return PRE_RAW;
    int nf;
    if (fgev_fast_may(s) && fgev_fast(s, e, c, x, &nf)) return nf ? PRE_FGEV_NOFLAGS : PRE_FGEV;
    int why = 0;
    int fg_first = fg_start(s, e);
    if (fg_first) {
        if (ctx_marker(s, e)) return PRE_RAW;
        int rc = fg_fields(s, e, c, x, &why);
        if (rc >= 0) return rc == 0 && !why ? PRE_FGTEXT : PRE_RAW;
    }
    const char *r; int noflags;
    if (ev_fields(s, e, c, &r, &noflags, &why) == 0) {
        why = 0;
        if (fgev_fields(r, e, x, &why)) return !why ? (noflags ? PRE_FGEV_NOFLAGS : PRE_FGEV) : PRE_RAW;
        rec_clear(x); /* not a funcgraph event: parse_event_line's event_rest, in the fold */
        x->name = r; x->namee = e;
        return noflags ? PRE_EVENT_NOFLAGS : PRE_EVENT;
    }
    why = 0;
    if (!fg_first && fg_fields(s, e, c, x, &why) == 0 && !why) return PRE_FGTEXT;
    return PRE_RAW;
}

/* pre_fields, packed into *x (a line too long for 32-bit offsets is left to parse_line) */
static int pre_line(const char *p, const char *e, pre_t *x) {
    ctx_t c; fgrec_t r;
    if ((uint64_t)(e - p) >= NO_OFF) return PRE_RAW;
    int kind = pre_fields(p, e, &c, &r);
    if (kind == PRE_RAW) return kind;
    x->t = c.t; x->pid = c.pid; x->cpu = c.cpu;
    x->comm_off = c.has_comm ? (uint32_t)(c.comm - p) : NO_OFF; x->commn = (uint32_t)c.commn;
    x->rkind = (uint8_t)r.kind; x->dur = r.dur; x->depth = (int16_t)r.depth; x->indent = r.indent;
    x->name_off = r.name ? (uint32_t)(r.name - p) : NO_OFF; x->namen = r.name ? (uint32_t)(r.namee - r.name) : 0;
    return kind;
}

/* the fields pre_line packed */
static void unpack(const pre_t *x, ctx_t *c, fgrec_t *r) {
    c->t = x->t; c->pid = x->pid; c->cpu = x->cpu;
    c->has_comm = x->comm_off != NO_OFF; c->comm = c->has_comm ? x->p + x->comm_off : NULL; c->commn = x->commn;
    r->kind = x->rkind; r->dur = x->dur; r->depth = x->depth; r->indent = x->indent;
    r->name = x->name_off != NO_OFF ? x->p + x->name_off : NULL; r->namee = r->name ? r->name + x->namen : NULL;
}

static void *tokenize_tail(void *arg) {
    tail_t *t = arg;
    for (const char *p = t->from; p < t->to;) {
        const char *nl = memchr(p, '\n', (size_t)(t->to - p)), *e = nl ? nl : t->to;
        pre_t *q = room_for(t->lines, t->n, &t->cap, sizeof *q);
        if (!q) { t->failed = 1; return NULL; }
        t->lines = q;
        pre_t *x = &t->lines[t->n++];
        x->p = p; /* a line too long for 32 bits (PRE_RAW) is measured again by the fold */
        x->len = (uint64_t)(e - p) >= NO_OFF ? NO_OFF : (uint32_t)(e - p);
        x->kind = (uint8_t)pre_line(p, e, x);
        if (!nl) break;
        p = nl + 1;
    }
    return NULL;
}

/* a line tokenized ahead -> the fold, as parse_line would have done it: 0 handled, -1 ignored, >0 skip reason */
static int fold_pre(state_t *st, out_t *o, pre_t *x, const char *e, int64_t line, int64_t off) {
    if (x->kind == PRE_RAW) return parse_line(st, o, x->p, e, line, off);
    flush_pending(st, o);
    ctx_t c; fgrec_t r;
    unpack(x, &c, &r);
    if (x->kind == PRE_FGTEXT) return fg_fold(st, o, &c, &r, line);
    st->n_evline++;
    if (x->kind == PRE_FGEV_NOFLAGS || x->kind == PRE_EVENT_NOFLAGS) st->n_evline_noflags++;
    c.line = line;
    c.key = task_key(c.pid, c.cpu);
    if (x->kind >= PRE_EVENT) { event_rest(st, o, &c, r.name, r.namee); return 0; }
    return do_fg(st, o, &c, &r);
}

#endif /* STALLSCOPE_FUNCGRAPH_AHEAD_H */
