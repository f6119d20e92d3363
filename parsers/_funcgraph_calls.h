/*
 * function_graph bodies ("func() {", "func();", "}", "/ * comment * /", and the raw kernel forms) read into
 * fgrec_t, and their fold into each task's open-call stack (do_fg: entries pushed, exits matched by tail name or
 * timestamps, lost exits flushed as partial calls). Included by _funcgraph.c once, after _funcgraph_events.h
 * (emit_call, do_event) and before _funcgraph_line.h.
 */
#ifndef STALLSCOPE_FUNCGRAPH_CALLS_H
#define STALLSCOPE_FUNCGRAPH_CALLS_H

/* a - b and a + b as the machine wraps them: times and durations come from the file (UBSan: signed overflow) */
static inline int64_t wsub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* ---------------------------------------------------------------- function_graph bodies */
enum { FG_ENTRY = 1, FG_LEAF, FG_EXIT, FG_COMMENT };
typedef struct {
    int kind;
    const char *name, *namee;  /* function (entry/leaf), tail name (exit) or comment text */
    int64_t dur;               /* ns or NUL64 */
    int32_t depth;             /* explicit depth (raw forms) or -1 */
    int32_t indent;            /* printed indentation / 2 */
} fgrec_t;

/* every field of *r zero (field by field: a memset of the struct was a `rep stos`, slow to start, per line) */
static inline void rec_clear(fgrec_t *r) {
    r->kind = 0; r->name = r->namee = NULL; r->dur = 0; r->depth = 0; r->indent = 0;
}

/* intern_name of the call's function, when the text path interns it: the name of a record being folded
 * (st->folding_name) is interned once, then found by its id (no hash of its text per call); -1 on out-of-memory */
static inline int32_t rec_func(state_t *st, const fgrec_t *r) {
    if (!st->folding_name || st->folding_name > st->name_funcs.len / 4)
        return intern_name(st, r->name, (size_t)(r->namee - r->name));
    int32_t *known = (int32_t *)st->name_funcs.p + (st->folding_name - 1);
    if (!*known) {
        int32_t id = intern_name(st, r->name, (size_t)(r->namee - r->name));
        if (id < 0) return id;
        *known = id + 1;
    }
    return *known - 1;
}

/* tail comment "/ * func [ret=..| = ..] * /" content -> function name span */
static void tail_name(const char *p, const char *e, const char **np, const char **ne) {
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *r = find(p, e, " ret=");
    if (!r) r = find(p, e, " = ");
    if (r) e = rtrim(p, r);
    *np = p; *ne = e;
}

/* body of a function_graph line (after the "|"), or the text of a trace-cmd funcgraph event */
static int parse_body(const char *p, const char *e, fgrec_t *r) {
    const char *b = p;
    p = skip_spaces(p, e);
    int sp = (int)(p - b);
    r->indent = sp > 2 ? (sp - 2) / 2 : 0;
    r->depth = -1; r->name = r->namee = NULL;
    e = rtrim(p, e);
    if (p >= e) return -1;
    if (*p == '}') {
        r->kind = FG_EXIT;
        const char *q = skip_ws(p + 1, e);
        if (e - q >= 2 && q[0] == '/' && q[1] == '*') {
            const char *ce = find(q + 2, e, "*/");
            tail_name(q + 2, ce ? ce : e, &r->name, &r->namee);
            if (r->name == r->namee) r->name = r->namee = NULL;
        }
        return 0;
    }
    if (e - p >= 2 && p[0] == '/' && p[1] == '*') {
        r->kind = FG_COMMENT;
        const char *q = p + 2, *ce = e;
        if (e - q >= 2 && e[-1] == '/' && e[-2] == '*') ce = e - 2;
        r->name = skip_ws(q, ce); r->namee = rtrim(r->name, ce);
        return 0;
    }
    /* func(args) { | func(args); with optional trailing comments */
    const char *op = memchr(p, '(', (size_t)(e - p));
    if (!op || op == p) return -1;
    const char *ne = rtrim(p, op);
    int lvl = 0; const char *q = op;
    for (; q < e; q++) {
        if (*q == '(') lvl++;
        else if (*q == ')' && --lvl == 0) break;
    }
    if (q >= e) return -1;
    q = skip_ws(q + 1, e);
    if (q >= e) return -1;
    if (*q == '{') r->kind = FG_ENTRY;
    else if (*q == ';') r->kind = FG_LEAF;
    else return -1;
    r->name = p; r->namee = ne;
    return 0;
}

/* raw kernel forms shown by trace-cmd without the plugin: "func=0x.. depth=N",
 * "func=0x.. calltime=0x.. rettime=0x.. overrun=0x.. depth=N", "--> func (N)", "<-- func (N) (start: x  end: y)" */
static int parse_raw(const char *p, const char *e, int is_exit, fgrec_t *r) {
    p = skip_ws(p, e); e = rtrim(p, e);
    r->depth = -1; r->indent = 0; r->dur = NUL64;
    if (starts(p, e, "func=")) {
        const char *t = tok_end(p, e);
        r->name = p + 5; r->namee = t;
        int64_t ct = NUL64, rt = NUL64, v;
        for (const char *q = skip_ws(t, e); q < e; q = skip_ws(q, e)) {
            const char *u = tok_end(q, e);
            if (starts(q, u, "depth=") && parse_num_auto(q + 6, u, &v) == 0 && v < MAX_STACK * 4) r->depth = (int32_t)v;
            else if (starts(q, u, "calltime=") && parse_num_auto(q + 9, u, &v) == 0) ct = v;
            else if (starts(q, u, "rettime=") && parse_num_auto(q + 8, u, &v) == 0) rt = v;
            q = u;
        }
        if (ct != NUL64 && rt != NUL64 && rt >= ct) r->dur = wsub(rt, ct);
        r->kind = is_exit ? FG_EXIT : FG_ENTRY;
        return 0;
    }
    if (starts(p, e, "--> ") || starts(p, e, "<-- ")) {
        int ex = p[0] == '<';
        const char *q = skip_ws(p + 4, e), *t = tok_end(q, e);
        r->name = q; r->namee = t;
        q = skip_ws(t, e);
        int64_t v;
        if (q < e && *q == '(') {
            const char *cb = memchr(q, ')', (size_t)(e - q));
            if (cb && parse_u64(q + 1, cb, &v) == 0 && v < MAX_STACK * 4) r->depth = (int32_t)v;
        }
        const char *s = find(q, e, "start: "), *f = find(q, e, "end: ");
        int64_t a, b;
        if (s && f) {
            const char *se = tok_end(s + 7, e), *fe = tok_end(f + 5, e);
            if (parse_num_auto(s + 7, se, &a) == 0 && parse_num_auto(f + 5, fe, &b) == 0 && b >= a) r->dur = b - a;
        }
        r->kind = ex ? FG_EXIT : FG_ENTRY;
        return 0;
    }
    return -1;
}

static inline int64_t task_key(int64_t pid, int32_t cpu) {
    int64_t c = cpu == NUL32 ? 0 : (int64_t)cpu + 1;
    if (pid == NUL64) return -1001 - 2 * c; /* unknown task: one stack per CPU */
    if (pid == 0) return -1000 - 2 * c;     /* the idle task: one per CPU */
    return pid;
}

/* frames [from, t->n) closed without a seen exit (lost exits / open at the end) */
static void flush_frames(state_t *st, out_t *o, task_t *t, int32_t from) {
    for (int32_t i = t->n - 1; i >= from; i--) {
        frame_t *f = &t->fr[i];
        emit_call(st, o, f->line, t->pid, f->comm, NULL, 0, 0, f->cpu, f->depth, f->func, NULL, 0, 0, f->entry_ns, NUL64,
                  NUL64, i > 0 ? t->fr[i - 1].line : NUL64, NUL64, 1);
    }
    if (from < t->n) t->n = from;
}

/* function_graph record of one line -> call stack operations; returns 0 or a skip reason */
static int do_fg(state_t *st, out_t *o, const ctx_t *c, fgrec_t *r) {
    if (r->kind == FG_COMMENT) {
        const char *p = r->name, *e = r->namee;
        /* "event_name: fields" for trace events shown inside the graph; anything else is a plain comment */
        const char *q = p;
        while (q < e && (is_digit(*q) || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_')) q++;
        if (q > p && q < e && *q == ':' && q + 1 < e && q[1] == ' ') do_event(st, o, c, p, q, q + 1, e);
        else emit_event(o, c, "comment", 7, p, (size_t)(e - p), 1);
        return 0;
    }
    int created;
    task_t *t = get_task(st, c->key, c->pid, &created);
    if (!t) { o->oom = 1; return 0; }
    if (created) {
        int32_t d = r->depth >= 0 ? r->depth : r->indent;
        t->base = r->kind == FG_EXIT ? d + 1 : d;
    } else if (t->n == 0 && r->depth >= 0) {
        t->base = r->kind == FG_EXIT ? r->depth + 1 : r->depth;
    }
    if (t->pid == NUL64 && c->pid != NUL64) t->pid = c->pid;
    int32_t depth = t->base + t->n;
    if (r->kind == FG_ENTRY) {
        if (t->n >= MAX_STACK) return R_DEEP;
        frame_t f;
        f.line = c->line; f.entry_ns = c->t; f.cpu = c->cpu; f.depth = depth; f.indent = r->indent;
        f.func = rec_func(st, r);
        f.comm = c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1;
        if (f.func < 0 || (c->has_comm && f.comm < 0) || push_frame(t, f)) { o->oom = 1; return 0; }
        return 0;
    }
    if (r->kind == FG_LEAF) {
        int64_t ex = (c->t != NUL64 && r->dur != NUL64) ? wadd(c->t, r->dur) : NUL64;
        int32_t comm = c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1;
        int32_t func = rec_func(st, r); /* after the task's name: interned in emit_call's order */
        emit_call(st, o, c->line, t->pid, comm, c->comm, c->commn, c->has_comm, c->cpu, depth, func, r->name,
                  (size_t)(r->namee - r->name), 1, c->t, ex, r->dur, t->n ? t->fr[t->n - 1].line : NUL64, c->line, 0);
        return 0;
    }
    /* exit: which open call does it close? the top one, unless a tail name says a deeper one */
    int32_t k = t->n - 1;
    if (k >= 0 && r->name) {
        size_t nn = (size_t)(r->namee - r->name), fn;
        int32_t j = k;
        for (; j >= 0; j--) {
            const char *f = istr(st, t->fr[j].func, &fn);
            if (fn == nn && memcmp(f, r->name, nn) == 0) break;
        }
        if (j != k) {
            st->n_tail_mismatch++;
            frame_t *top = &t->fr[k];
            int child = 0;
            if (j < 0) {
                /* not open at all: either the exit of a child whose entry was lost (it began after the
                 * innermost open call), or of an ancestor entered before the trace (then every open call
                 * lost its exit). Timestamps decide; without them, the printed indentation. */
                if (c->t != NUL64 && r->dur != NUL64 && top->entry_ns != NUL64)
                    child = wsub(c->t, r->dur) >= wsub(top->entry_ns, 1000);
                else
                    child = r->depth >= 0 ? r->depth > top->depth : r->indent > top->indent;
            }
            if (child) {
                int64_t en = (c->t != NUL64 && r->dur != NUL64) ? wsub(c->t, r->dur) : NUL64;
                emit_call(st, o, c->line, t->pid, c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1,
                          c->comm, c->commn, c->has_comm, c->cpu, top->depth + 1, -1,
                          r->name, (size_t)(r->namee - r->name), 1, en, c->t, r->dur, top->line, c->line, 1);
                return 0;
            }
            st->n_lost_exit += k - j;
            /* the calls above j lost their exits; with no match, every open call did */
            flush_frames(st, o, t, j < 0 ? 0 : j + 1);
            k = j;
        }
    }
    if (k >= 0) {
        frame_t f = t->fr[k];
        t->n = k;
        int64_t dur = r->dur;
        if (dur == NUL64 && f.entry_ns != NUL64 && c->t != NUL64) dur = wsub(c->t, f.entry_ns);
        emit_call(st, o, f.line, t->pid, f.comm, NULL, 0, 0, f.cpu, f.depth, f.func, NULL, 0, 0, f.entry_ns, c->t, dur,
                  k > 0 ? t->fr[k - 1].line : NUL64, c->line, 0);
        return 0;
    }
    /* exit of a call entered before the trace (or the task's first line) began */
    if (t->base > -1000000000) t->base -= 1;
    int64_t en = (c->t != NUL64 && r->dur != NUL64) ? wsub(c->t, r->dur) : NUL64;
    emit_call(st, o, c->line, t->pid, c->has_comm ? task_comm(st, &t->comm_id, c->comm, c->commn) : -1, c->comm,
              c->commn, c->has_comm, c->cpu, t->base, -1, r->name,
              r->name ? (size_t)(r->namee - r->name) : 0, r->name != NULL, en, c->t, r->dur, NUL64, c->line, 1);
    return 0;
}

#endif /* STALLSCOPE_FUNCGRAPH_CALLS_H */
