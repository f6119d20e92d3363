/*
 * A line's context (ctx_t: line, time, CPU, task), the row writers (emit_call into fg_calls, emit_event into
 * trace_events, the pending stack-trace event waiting for its "=> frame" lines), and the sched events' text read
 * into sched_switch / sched_wakeup rows (do_event routes every event by its name). Included by _funcgraph.c once,
 * after its state (intern, intern_name), _funcgraph_out.h and _funcgraph_lex.h.
 */
#ifndef STALLSCOPE_FUNCGRAPH_EVENTS_H
#define STALLSCOPE_FUNCGRAPH_EVENTS_H

/* ---------------------------------------------------------------- row writers */
typedef struct {
    int64_t line, t, pid;   /* t, pid: NUL64 when unknown */
    int32_t cpu;            /* NUL32 when unknown */
    const char *comm; size_t commn; int has_comm;
    int64_t key;            /* call-stack key */
} ctx_t;

static void emit_call(state_t *st, out_t *o, int64_t line, int64_t pid, int32_t comm_id, const char *comm, size_t commn,
                      int has_comm, int32_t cpu, int32_t depth, int32_t func_id, const char *func, size_t funcn,
                      int has_func, int64_t entry, int64_t exit, int64_t dur, int64_t parent, int64_t exit_line,
                      int partial) {
    if (comm_id < 0 && has_comm && (comm_id = intern(st, comm, commn)) < 0) { o->oom = 1; return; }
    if (func_id < 0 && has_func && (func_id = intern_name(st, func, funcn)) < 0) { o->oom = 1; return; }
    int bad = put64(&o->c_line, line) || put64(&o->c_pid, pid) || put32(&o->c_cpu, cpu) || put32(&o->c_depth, depth) ||
              put64(&o->c_entry, entry) || put64(&o->c_exit, exit) || put64(&o->c_dur, dur) ||
              put64(&o->c_parent, parent) || put64(&o->c_exit_line, exit_line) || put8(&o->c_partial, (uint8_t)partial) ||
              put32(&o->c_comm, comm_id) || put32(&o->c_func, func_id);
    if (bad) o->oom = 1; else o->nc++;
}

static void emit_event(out_t *o, const ctx_t *c, const char *ev, size_t evn, const char *text, size_t textn, int has_text) {
    int bad = put64(&o->e_line, c->line) || put64(&o->e_t, c->t) || put32(&o->e_cpu, c->cpu) || put64(&o->e_pid, c->pid) ||
              str_put(&o->e_comm, c->comm, c->commn, c->has_comm) || str_put(&o->e_event, ev, evn, 1) ||
              str_put(&o->e_text, text, textn, has_text);
    if (bad) o->oom = 1; else o->ne++;
}

/* the "\n=> frame" lines of the pending stack's frame ids appended to `to` (a record stream's: _funcgraph_records.h) */
static int pend_frames_text(const state_t *st, buf_t *to) {
    const int32_t *ids = (const int32_t *)st->pend_ids.p;
    for (size_t i = 0; i < st->pend_ids.len / 4; i++) {
        const char *p;
        size_t n;
        texts_at(&st->frames, (uint32_t)ids[i], &p, &n);
        if (put8(to, '\n') || buf_put(to, p, n)) return -1;
    }
    return 0;
}
/* the pending stack's text made whole in pend_text (before a line is added to it) */
static void pend_materialize(state_t *st, out_t *o) {
    if (!st->pend_ids.len) return;
    if (pend_frames_text(st, &st->pend_text)) o->oom = 1;
    st->pend_ids.len = 0;
}
/* the pending stack's text, its frames' included, as one more row of e_text (str_put_text's) */
static int pend_text_put(state_t *st, strcol *s) {
    if (!st->pend_ids.len) return str_put_text(s, st->pend_text.p, st->pend_text.len, 1, st->pend_utf8);
    if (str_row_begin(s)) return -1;
    size_t start = s->data.len;
    if (buf_put(&s->data, st->pend_text.p, st->pend_text.len) || pend_frames_text(st, &s->data)) return -1;
    return str_row_end(s, start, 1, st->pend_utf8);
}

static void flush_pending(state_t *st, out_t *o) {
    if (!st->pend) return;
    int bad = put64(&o->e_line, st->pend_line) || put64(&o->e_t, st->pend_t) || put32(&o->e_cpu, st->pend_cpu) ||
              put64(&o->e_pid, st->pend_pid) ||
              str_put(&o->e_comm, st->pend_comm.p, st->pend_comm.len, st->pend_has_comm) ||
              str_put(&o->e_event, st->pend_event.p, st->pend_event.len, 1) || pend_text_put(st, &o->e_text);
    if (bad) o->oom = 1; else o->ne++;
    st->pend = 0;
    st->pend_ids.len = 0;
}

static void start_pending(state_t *st, out_t *o, const ctx_t *c, const char *ev, const char *text, size_t textn) {
    flush_pending(st, o);
    st->pend = 1; st->pend_line = c->line; st->pend_t = c->t; st->pend_pid = c->pid; st->pend_cpu = c->cpu;
    st->pend_has_comm = c->has_comm; st->pend_frames = 0; st->pend_utf8 = 0; st->pend_ids.len = 0;
    st->pend_comm.len = st->pend_event.len = st->pend_text.len = 0;
    if (buf_put(&st->pend_comm, c->comm, c->has_comm ? c->commn : 0) || buf_put(&st->pend_event, ev, strlen(ev)) ||
        buf_put(&st->pend_text, text, textn))
        o->oom = 1;
}

/* ---------------------------------------------------------------- sched events */
/* a sched_switch row; a priority out of int32's range is null */
static void emit_switch(out_t *o, const ctx_t *c, const char *pc, size_t pcn, int64_t ppid, int64_t pprio, const char *ps,
                        size_t psn, const char *nc, size_t ncn, int64_t npid, int64_t nprio) {
    if (pprio < INT32_MIN + 1 || pprio > INT32_MAX) pprio = NUL32;
    if (nprio < INT32_MIN + 1 || nprio > INT32_MAX) nprio = NUL32;
    int bad = put64(&o->s_line, c->line) || put64(&o->s_t, c->t) || put32(&o->s_cpu, c->cpu) || put64(&o->s_ppid, ppid) ||
              put32(&o->s_pprio, (int32_t)pprio) || put64(&o->s_npid, npid) || put32(&o->s_nprio, (int32_t)nprio) ||
              str_put(&o->s_pcomm, pc, pcn, 1) || str_put(&o->s_pstate, ps, psn, 1) || str_put(&o->s_ncomm, nc, ncn, 1);
    if (bad) o->oom = 1; else o->ns++;
}

/* a sched_wakeup row (the waker is the line's task); success 2: not shown */
static void emit_wakeup(out_t *o, const ctx_t *c, const char *ev, size_t evn, const char *cm, size_t cmn, int64_t pid,
                        int64_t prio, int64_t tcpu, int succ) {
    if (prio < INT32_MIN + 1 || prio > INT32_MAX) prio = NUL32;
    int bad = put64(&o->w_line, c->line) || put64(&o->w_t, c->t) || put32(&o->w_cpu, c->cpu) || put64(&o->w_wpid, c->pid) ||
              put64(&o->w_pid, pid) || put32(&o->w_prio, (int32_t)prio) || put32(&o->w_tcpu, (int32_t)tcpu) ||
              put8(&o->w_succ, (uint8_t)succ) || str_put(&o->w_event, ev, evn, 1) ||
              str_put(&o->w_wcomm, c->comm, c->commn, c->has_comm) || str_put(&o->w_comm, cm, cmn, 1);
    if (bad) o->oom = 1; else o->nw++;
}

/* sched_switch text -> row; 0 ok, -1 unrecognised */
static int do_switch(out_t *o, const ctx_t *c, const char *p, const char *e) {
    const char *pc, *nc, *ps, *pse; size_t pcn, ncn;
    int64_t ppid, npid, pprio = NUL32, nprio = NUL32;
    p = skip_ws(p, e); e = rtrim(p, e);
    if (starts(p, e, "prev_comm=")) {
        const char *q = find(p, e, " prev_pid="); if (!q) return -1;
        pc = p + 10; pcn = (size_t)(q - pc);
        const char *r = q + 10, *t = tok_end(r, e);
        if (parse_u64(r, t, &ppid)) return -1;
        const char *x = find(t, e, " prev_prio="); if (!x) return -1;
        r = x + 11; t = tok_end(r, e);
        if (parse_i64(r, t, &pprio)) return -1;
        x = find(t, e, " prev_state="); if (!x) return -1;
        ps = x + 12;
        const char *arrow = find(ps, e, " ==> "); if (!arrow) return -1;
        pse = rtrim(ps, arrow);
        x = find(arrow, e, "next_comm="); if (!x) return -1;
        nc = x + 10;
        q = find(nc, e, " next_pid="); if (!q) return -1;
        ncn = (size_t)(q - nc);
        r = q + 10; t = tok_end(r, e);
        if (parse_u64(r, t, &npid)) return -1;
        x = find(t, e, " next_prio="); if (!x) return -1;
        r = x + 11; t = tok_end(r, e);
        if (parse_i64(r, t, &nprio)) return -1;
    } else {
        if (starts(p, e, "task ")) p = skip_ws(p + 5, e);
        const char *arrow = find(p, e, " ==> "); if (!arrow) return -1;
        /* left: comm:pid [prio] STATE   (STATE may be "(S)") */
        const char *le = rtrim(p, arrow);
        const char *st0 = le; while (st0 > p && !is_ws(st0[-1])) st0--;
        ps = st0; pse = le;
        if (pse - ps >= 2 && *ps == '(' && pse[-1] == ')') { ps++; pse--; }
        const char *lb = rtrim(p, st0);
        if (lb <= p || lb[-1] != ']') return -1;
        const char *ob = lb - 1; while (ob > p && *ob != '[') ob--;
        if (*ob != '[') return -1;
        if (parse_i64(skip_ws(ob + 1, lb - 1), rtrim(ob + 1, lb - 1), &pprio)) return -1;
        if (split_comm_colon_pid(p, ob, &pc, &pcn, &ppid)) return -1;
        /* right: comm:pid [prio] */
        const char *r = skip_ws(arrow + 5, e);
        const char *re = e;
        if (re <= r || re[-1] != ']') return -1;
        ob = re - 1; while (ob > r && *ob != '[') ob--;
        if (*ob != '[') return -1;
        if (parse_i64(skip_ws(ob + 1, re - 1), rtrim(ob + 1, re - 1), &nprio)) return -1;
        if (split_comm_colon_pid(r, ob, &nc, &ncn, &npid)) return -1;
    }
    emit_switch(o, c, pc, pcn, ppid, pprio, ps, (size_t)(pse - ps), nc, ncn, npid, nprio);
    return 0;
}

/* sched_wakeup / sched_waking / sched_wakeup_new text -> row; 0 ok, -1 unrecognised */
static int do_wakeup(out_t *o, const ctx_t *c, const char *ev, size_t evn, const char *p, const char *e) {
    const char *cm; size_t cmn; int64_t pid, prio = NUL32, tcpu = NUL32, succ = 2;
    p = skip_ws(p, e); e = rtrim(p, e);
    const char *rest;
    if (starts(p, e, "comm=")) {
        const char *q = find(p, e, " pid="); if (!q) return -1;
        cm = p + 5; cmn = (size_t)(q - cm);
        const char *r = q + 5, *t = tok_end(r, e);
        if (parse_u64(r, t, &pid)) return -1;
        rest = t;
    } else {
        if (starts(p, e, "task ")) p = skip_ws(p + 5, e);
        /* comm:pid [prio] ...: the first " [" whose left side ends with ":digits" and holds a number */
        const char *q = p; rest = NULL;
        int tries = 0;
        while ((q = find(q, e, " [")) != NULL && tries++ < 8) {
            const char *cb = memchr(q + 2, ']', (size_t)(e - q - 2));
            int64_t pr;
            if (cb && parse_i64(skip_ws(q + 2, cb), rtrim(q + 2, cb), &pr) == 0 &&
                split_comm_colon_pid(p, q, &cm, &cmn, &pid) == 0) { prio = pr; rest = cb + 1; break; }
            q += 2;
        }
        if (!rest) return -1;
    }
    /* remaining tokens: prio=N success=N target_cpu=N | success=N [007] | CPU:007 */
    for (const char *r = skip_ws(rest, e); r < e; r = skip_ws(r, e)) {
        const char *t = tok_end(r, e);
        int64_t v;
        if (starts(r, t, "prio=")) { if (parse_i64(r + 5, t, &v) == 0) prio = v; }
        else if (starts(r, t, "success=")) { if (parse_u64(r + 8, t, &v) == 0) succ = v != 0; }
        else if (starts(r, t, "target_cpu=")) { if (parse_u64(r + 11, t, &v) == 0 && v < INT32_MAX) tcpu = v; }
        else if (starts(r, t, "CPU:")) { if (parse_u64(r + 4, t, &v) == 0 && v < INT32_MAX) tcpu = v; }
        else if (t - r >= 3 && *r == '[' && t[-1] == ']') { if (parse_u64(r + 1, t - 1, &v) == 0 && v < INT32_MAX) tcpu = v; }
        r = t;
    }
    emit_wakeup(o, c, ev, evn, cm, cmn, pid, prio, tcpu, (int)succ);
    return 0;
}

static int is_wakeup_name(const char *p, const char *e) {
    return span_eq(p, e, "sched_wakeup") || span_eq(p, e, "sched_waking") || span_eq(p, e, "sched_wakeup_new");
}

/* an event by name + text: routes to sched tables, print, stack, or trace_events */
static void do_event(state_t *st, out_t *o, const ctx_t *c, const char *ev, const char *eve, const char *p, const char *e) {
    size_t evn = (size_t)(eve - ev);
    p = skip_ws(p, e); e = rtrim(p, e);
    if (span_eq(ev, eve, "sched_switch")) { if (do_switch(o, c, p, e) == 0) return; }
    else if (is_wakeup_name(ev, eve)) { if (do_wakeup(o, c, ev, evn, p, e) == 0) return; }
    else if (span_eq(ev, eve, "print") || span_eq(ev, eve, "tracing_mark_write")) {
        if (evn == 5) { /* "print: 00000000 text" (old, %08lx ip) or "print: tracing_mark_write: text" */
            const char *t = tok_end(p, e);
            int hex = t - p >= 8;
            for (const char *q = p; q < t && hex; q++) hex = is_hex(*q);
            if (hex) p = skip_ws(t, e);
            else if (t > p && t[-1] == ':') p = skip_ws(t, e);
        }
        emit_event(o, c, "print", 5, p, (size_t)(e - p), 1);
        return;
    } else if (span_eq(ev, eve, "kernel_stack") || span_eq(ev, eve, "user_stack")) {
        char name[16]; memcpy(name, ev, evn); name[evn] = 0;
        start_pending(st, o, c, name, p, (size_t)(e - p));
        return;
    }
    emit_event(o, c, ev, evn, p, (size_t)(e - p), 1);
}

#endif /* STALLSCOPE_FUNCGRAPH_EVENTS_H */
