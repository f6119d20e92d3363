/*
 * The classes of a line of ftrace text and their readers: event lines ("comm-pid [cpu] ts: event: text", and the
 * trace-cmd funcgraph events, with fgev_fast for the commonest), tracefs function_graph lines, context-switch
 * markers, headers, lost-events and stack-frame lines; parse_line tries them in order. The *_fields readers read
 * no state (the tail of a chunk is tokenized ahead with them, _funcgraph_ahead.h). Included by _funcgraph.c once,
 * after _funcgraph_calls.h.
 */
#ifndef STALLSCOPE_FUNCGRAPH_LINE_H
#define STALLSCOPE_FUNCGRAPH_LINE_H

/* ---------------------------------------------------------------- line classes */
/* "comm-pid [(tgid)] [cpu] [flags] ts: event: text" -> 0 with *c (its time, CPU, task; not its line or key), *rest
 * (what follows the timestamp) and *noflags (no latency flags column); -1 not such a line (*reason R_CPU: a CPU out of
 * range). Reads no state: the tail of a chunk is tokenized ahead, in a second thread (pre_line) */
static int ev_fields(const char *p, const char *e, ctx_t *c, const char **rest, int *noflags, int *reason) {
    const char *q = p;
    int tries = 0;
    while ((q = memchr(q, '[', (size_t)(e - q))) != NULL && tries++ < 16) {
        const char *d = q + 1;
        while (d < e && is_digit(*d)) d++;
        if (d == q + 1 || d >= e || *d != ']' || d + 1 >= e || !is_ws(d[1])) { q++; continue; }
        /* left side: comm-pid, optionally followed by "(tgid)" */
        const char *l = rtrim(p, q);
        if (l > p && l[-1] == ')') {
            const char *op = l - 1, *lim = l - 40 > p ? l - 40 : p;
            while (op > lim && *op != '(') op--;
            if (*op != '(') { q++; continue; }
            int okt = 1;
            for (const char *x = op + 1; x < l - 1; x++) if (!(is_digit(*x) || *x == '-' || *x == ' ')) okt = 0;
            if (!okt) { q++; continue; }
            l = rtrim(p, op);
        }
        const char *comm; size_t commn; int64_t pid, cpu;
        if (split_comm_pid(p, l, &comm, &commn, &pid)) { q++; continue; }
        if (parse_u64(q + 1, d, &cpu)) { q++; continue; }
        /* flags? timestamp ending with ':' */
        const char *r = skip_ws(d + 1, e), *t = tok_end(r, e);
        int64_t ts;
        *noflags = 1;
        if (!(t > r && t[-1] == ':' && parse_time(r, t - 1, &ts) == 0)) {
            *noflags = 0;
            r = skip_ws(t, e); t = tok_end(r, e);
            if (!(t > r && t[-1] == ':' && parse_time(r, t - 1, &ts) == 0)) {
                /* "--ts-diff": "ts (+delta):" */
                if (!(parse_time(r, t, &ts) == 0)) { q++; continue; }
                r = skip_ws(t, e); t = tok_end(r, e);
                if (!(t > r && *r == '(' && t[-1] == ':')) { q++; continue; }
            }
        }
        if (cpu >= INT32_MAX) { *reason = R_CPU; return -1; }
        c->t = ts; c->pid = pid; c->cpu = (int32_t)cpu; c->comm = comm; c->commn = commn; c->has_comm = 1;
        *rest = skip_ws(t, e);
        return 0;
    }
    return -1;
}

/* the event [r,e) after an event line's timestamp: 1 a funcgraph_entry / funcgraph_exit, with *rec (*why > 0: a
 * skip), 0 any other. Reads no state */
static int fgev_fields(const char *r, const char *e, fgrec_t *rec, int *why) {
    const char *ne = tok_end(r, e);
    if (!(ne > r && ne[-1] == ':')) return 0;
    const char *ev = r, *eve = ne - 1;
    if (!(span_eq(ev, eve, "funcgraph_entry") || span_eq(ev, eve, "funcgraph_exit"))) return 0;
    int is_exit = eve - ev == 14;
    rec_clear(rec);
    const char *body = skip_ws(ne, e);
    if (parse_raw(body, e, is_exit, rec) == 0) return 1;
    const char *bar = memchr(body, '|', (size_t)(e - body));
    if (!bar) { *why = R_EVENT_FG; return 1; }
    const char *de = rtrim(body, bar);
    rec->dur = NUL64;
    if (de > body && parse_duration(body, de, &rec->dur)) { *why = R_EVENT_FG; return 1; }
    if (parse_body(bar + 1, e, rec) || rec->kind == FG_COMMENT ||
        (is_exit && rec->kind != FG_EXIT) || (!is_exit && rec->kind == FG_EXIT)) { *why = R_EVENT_FG; return 1; }
    return 1;
}

/* The commonest line of a trace-cmd report of a function_graph capture, read in one pass where the general reading
 * (ev_fields, then fgev_fields) scans some spans twice: "comm-pid [cpu] secs.frac: funcgraph_entry|funcgraph_exit:
 * [[mark] dur us] | body", without latency flags or "(tgid)", the first '[' of the line the CPU's. 1: it is one, and
 * *c, *rec and *noflags are what ev_fields and fgev_fields give for it; 0: anything else (then nothing is written and
 * the general reading decides). [s,e) is the line without its outer whitespace, and its first byte is neither a
 * digit, '|' nor a duration mark (so that fg_start is false: a line that may be a tracefs function_graph line is
 * read as before). Reads no state. */
static int fgev_fast(const char *s, const char *e, ctx_t *c, fgrec_t *rec, int *noflags) {
    const char *q = memchr(s, '[', (size_t)(e - s));
    if (!q) return 0;
    const char *d = q + 1;
    uint64_t cpu = 0;
    while (d < e && is_digit(*d)) cpu = cpu * 10 + (uint64_t)(*d++ - '0');
    if (d == q + 1 || d - q - 1 > 18 || d + 1 >= e || *d != ']' || !is_ws(d[1]) || cpu >= INT32_MAX) return 0;
    /* comm-pid: the digits after the last '-' before the '[' (split_comm_pid) */
    const char *l = rtrim(s, q), *pd = l;
    uint64_t pid = 0, mul = 1;
    while (pd > s && is_digit(pd[-1])) { pd--; pid += (uint64_t)(*pd - '0') * mul; mul *= 10; }
    if (pd == l || pd == s || pd[-1] != '-' || l - pd > 18) return 0;
    /* the timestamp, "secs.frac:" or a raw count "N:" (parse_time) */
    const char *r = skip_ws(d + 1, e), *t = r;
    uint64_t secs = 0, frac = 0;
    while (t < e && is_digit(*t)) secs = secs * 10 + (uint64_t)(*t++ - '0');
    size_t ni = (size_t)(t - r);
    if (ni == 0 || ni > 18 || t >= e) return 0;
    int64_t ts;
    if (*t == ':') {
        ts = (int64_t)secs;
    } else {
        if (*t != '.' || secs > 9000000000ULL) return 0;
        const char *f0 = ++t;
        while (t < e && is_digit(*t)) frac = frac * 10 + (uint64_t)(*t++ - '0');
        int nd = (int)(t - f0);
        if (nd < 1 || nd > 9 || t >= e || *t != ':') return 0;
        for (int i = nd; i < 9; i++) frac *= 10;
        ts = (int64_t)(secs * 1000000000ULL + frac);
    }
    t++; /* past the ':', which must end the token */
    if (t < e && !is_ws(*t)) return 0;
    /* the event's name */
    const char *ev = skip_ws(t, e), *ne = tok_end(ev, e);
    size_t evn = (size_t)(ne - ev);
    int is_exit;
    if (evn == 16 && memcmp(ev, "funcgraph_entry:", 16) == 0) is_exit = 0;
    else if (evn == 15 && memcmp(ev, "funcgraph_exit:", 15) == 0) is_exit = 1;
    else return 0;
    const char *body = skip_ws(ne, e);
    if (body < e && (*body == 'f' || *body == '-' || *body == '<')) return 0; /* maybe a raw form (parse_raw) */
    const char *bar = body;
    while (bar < e && *bar != '|') bar++;
    if (bar == e) return 0;
    rec_clear(rec);
    rec->dur = NUL64;
    const char *de = rtrim(body, bar);
    if (de > body && parse_duration(body, de, &rec->dur)) return 0;
    if (parse_body(bar + 1, e, rec) || rec->kind == FG_COMMENT || (is_exit && rec->kind != FG_EXIT) ||
        (!is_exit && rec->kind == FG_EXIT))
        return 0;
    c->t = ts; c->pid = (int64_t)pid; c->cpu = (int32_t)cpu; c->comm = s; c->commn = (size_t)(pd - 1 - s);
    c->has_comm = 1;
    *noflags = 1;
    return 1;
}

/* whether the trimmed line [s,e) may be read by fgev_fast: its first byte makes fg_start false */
static inline int fgev_fast_may(const char *s) { return !is_digit(*s) && *s != '|' && !is_mark(*s); }

/* what follows an event line's timestamp [r,e) when it is not a funcgraph_entry / funcgraph_exit -> its rows */
static void event_rest(state_t *st, out_t *o, const ctx_t *c, const char *r, const char *e) {
    /* event name: a token ending with ':' */
    const char *ne = tok_end(r, e);
    if (ne > r && ne[-1] == ':') {
        do_event(st, o, c, r, ne - 1, ne, e);
        return;
    }
    if (starts(r, e, "<stack trace>") || starts(r, e, "<user stack trace>")) {
        start_pending(st, o, c, r[1] == 'u' ? "user_stack" : "kernel_stack", r, (size_t)(rtrim(r, e) - r));
        return;
    }
    /* the function tracer: "func <-parent" */
    emit_event(o, c, find(r, e, " <-") ? "function" : "unknown", find(r, e, " <-") ? 8 : 7, r,
               (size_t)(rtrim(r, e) - r), 1);
}

/* an event line -> its rows: 0, or -1 (not one) */
static int parse_event_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int *reason) {
    ctx_t c; const char *r; int noflags;
    if (ev_fields(p, e, &c, &r, &noflags, reason)) return -1;
    st->n_evline++;
    if (noflags) st->n_evline_noflags++;
    c.line = line;
    c.key = task_key(c.pid, c.cpu);
    fgrec_t rec; int why = 0;
    if (fgev_fields(r, e, &rec, &why)) {
        *reason = why ? why : do_fg(st, o, &c, &rec);
        return 0;
    }
    event_rest(st, o, &c, r, e);
    return 0;
}

/* " N)  a-1  =>  b-2" context-switch marker of the tracefs function_graph output */
static int parse_ctx_marker(state_t *st, out_t *o, const char *p, const char *e, int64_t line) {
    const char *arrow = find(p, e, " => ");
    if (!arrow) return -1;
    const char *q = skip_ws(p, e);
    int64_t cpu = NUL32;
    const char *t = tok_end(q, e);
    if (t > q && t[-1] == ')' && t < arrow) {
        if (parse_u64(q, t - 1, &cpu)) return -1;
        q = t;
    }
    const char *ac, *bc; size_t acn, bcn; int64_t apid, bpid;
    if (split_comm_pid(q, arrow, &ac, &acn, &apid) || split_comm_pid(arrow + 4, e, &bc, &bcn, &bpid)) return -1;
    if (cpu == NUL32) return 0; /* nothing to track without a CPU */
    if (cpu >= MAX_CPU) return R_CPU;
    int32_t ci = (int32_t)cpu;
    if (!st->cur_known[ci]) {
        /* the lines of this CPU so far were a's: give them the open calls rebuilt without a task */
        int created;
        task_t *anon = get_task(st, task_key(NUL64, ci), NUL64, &created);
        if (!anon) { o->oom = 1; return 0; }
        if (anon->n) {
            task_t *a = get_task(st, task_key(apid, ci), apid, &created);
            if (!a) { o->oom = 1; return 0; }
            anon = get_task(st, task_key(NUL64, ci), NUL64, &created); /* the array may have moved */
            if (created || a->n == 0) {
                frame_t *tmp = a->fr; int32_t cap = a->cap;
                a->fr = anon->fr; a->cap = anon->cap; a->n = anon->n; a->base = anon->base;
                int32_t cid = intern(st, ac, acn);
                for (int32_t i = 0; i < a->n; i++) if (a->fr[i].comm < 0) a->fr[i].comm = cid;
                anon->fr = tmp; anon->cap = cap; anon->n = 0;
            }
        }
    }
    st->cur_known[ci] = 1;
    st->cur_pid[ci] = bpid;
    st->cur_comm[ci] = intern(st, bc, bcn);
    if (st->cur_comm[ci] < 0) o->oom = 1;
    (void)line;
    return 0;
}

/* a line of the tracefs function_graph output: [abstime |] [cpu)] [comm-pid |] [flags |] [duration] | body
 * -> 0 with *c (its time, CPU and task when shown; not its line or key) and *rec (*reason > 0: a skip); 1 an irq
 * marker (ignored); -1 not such a line. Reads no state (see ev_fields) */
static int fg_fields(const char *p, const char *e, ctx_t *c, fgrec_t *rec, int *reason) {
    const char *q = skip_ws(p, e);
    int64_t ts = NUL64, cpu = NUL32, pid = NUL64;
    const char *comm = NULL; size_t commn = 0;
    const char *t = tok_end(q, e);
    /* abstime */
    if (t > q && is_digit(*q)) {
        const char *n = skip_ws(t, e);
        int64_t v;
        if (n < e && *n == '|' && parse_time(q, t, &v) == 0 && memchr(q, '.', (size_t)(t - q))) {
            ts = v; q = skip_ws(n + 1, e); t = tok_end(q, e);
        }
    }
    /* cpu */
    if (t - q >= 2 && t[-1] == ')' && is_digit(*q)) {
        if (parse_u64(q, t - 1, &cpu)) return -1;
        if (cpu >= MAX_CPU) { *reason = R_CPU; return 0; }
        q = t;
    }
    /* columns up to the body */
    int64_t dur = NUL64;
    const char *body = NULL;
    int have_dur = 0;
    for (int col = 0; col < 4 && !body; col++) {
        const char *bar = memchr(q, '|', (size_t)(e - q));
        if (!bar) return -1;
        const char *s = skip_ws(q, bar), *se = rtrim(s, bar);
        if (se == s) { body = bar + 1; break; }
        if (find(s, se, "==========>") || find(s, se, "<==========")) return 1; /* irq entry/exit marker: ignored */
        if (!have_dur && parse_duration(s, se, &dur) == 0) { body = bar + 1; break; }
        if (se - s == 1 && is_mark(*s)) { body = bar + 1; break; } /* a mark without a number */
        if (pid == NUL64 && !comm) {
            const char *cm; size_t cmn; int64_t pd;
            if (split_comm_pid(s, se, &cm, &cmn, &pd) == 0) { comm = cm; commn = cmn; pid = pd; q = bar + 1; continue; }
        }
        /* latency flags: 4-5 chars of [.a-zA-Z0-9] */
        if (se - s >= 3 && se - s <= 6) {
            int ok = 1;
            for (const char *x = s; x < se; x++) if (!(*x == '.' || is_digit(*x) || (*x >= 'a' && *x <= 'z') || (*x >= 'A' && *x <= 'Z'))) ok = 0;
            if (ok) { q = bar + 1; continue; }
        }
        return -1;
    }
    if (!body) return -1;
    rec_clear(rec);
    if (parse_body(body, e, rec)) {
        if (cpu != NUL32 || ts != NUL64) { *reason = R_FG_BODY; return 0; }
        return -1;
    }
    rec->dur = dur;
    c->t = ts; c->cpu = (int32_t)cpu; c->comm = comm; c->commn = commn; c->has_comm = comm != NULL; c->pid = pid;
    return 0;
}

/* a function_graph line's fields (fg_fields) -> its call stack operations: 0 or a skip reason. A line without its
 * task takes its CPU's current one (the context-switch markers) */
static int fg_fold(state_t *st, out_t *o, ctx_t *c, fgrec_t *rec, int64_t line) {
    st->n_fgtext++;
    c->line = line;
    char cbuf[4096]; /* a copy: the interned text may move when the arena grows */
    if (c->pid == NUL64 && c->cpu != NUL32 && st->cur_known[c->cpu]) {
        c->pid = st->cur_pid[c->cpu];
        int32_t id = st->cur_comm[c->cpu];
        if (id >= 0) {
            const char *a = istr(st, id, &c->commn);
            if (c->commn > sizeof cbuf) c->commn = sizeof cbuf;
            memcpy(cbuf, a, c->commn);
            c->comm = cbuf; c->has_comm = 1;
        }
    }
    c->key = task_key(c->pid, c->cpu);
    return do_fg(st, o, c, rec);
}

static int parse_fg_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int *reason) {
    ctx_t c; fgrec_t rec; int why = 0;
    int rc = fg_fields(p, e, &c, &rec, &why);
    if (rc == 0) *reason = why ? why : fg_fold(st, o, &c, &rec, line);
    return rc;
}

static int is_dashes(const char *p, const char *e) {
    if (e - p < 10) return 0;
    for (; p < e; p++) if (*p != '-') return 0;
    return 1;
}

/* whether the trimmed line [s,e) starts as a tracefs function_graph line does: with the abstime, the CPU "N)", a
 * duration or "|" (parse_line and pre_line try it as one first) */
static int fg_start(const char *s, const char *e) {
    const char *t0 = tok_end(s, e), *n0 = skip_ws(t0, e);
    return *s == '|' || is_mark(*s) || (is_digit(*s) && (t0[-1] == ')' || (n0 < e && *n0 == '|') || starts(n0, e, "us")));
}

/* whether such a line is a " N)  a-1  =>  b-2" context-switch marker (parse_ctx_marker) */
static int ctx_marker(const char *s, const char *e) {
    return find(s, e, " => ") && !memchr(s, '|', (size_t)(e - s));
}

/* one line [p,e) -> 0 handled, -1 ignored, >0 skip reason */
static int parse_line(state_t *st, out_t *o, const char *p, const char *e, int64_t line, int64_t off) {
    const char *s = skip_ws(p, e);
    e = rtrim(s, e);
    if (s == e) return -1;
    if (*s == '#') {
        if (o->nh < MAX_HEAD && (put64(&o->h_start, off + (s - p)) || put64(&o->h_len, e - s))) o->oom = 1;
        else if (o->nh < MAX_HEAD) o->nh++;
        return -1;
    }
    if (e - s >= 2 && s[0] == '=' && s[1] == '>') {
        if (!st->pend) return R_FRAME_ORPHAN;
        pend_materialize(st, o);
        if (st->pend_text.len + (size_t)(e - s) + 1 > MAX_FOLD) { st->n_folded_cut++; return -1; }
        if (put8(&st->pend_text, '\n') || buf_put(&st->pend_text, s, (size_t)(e - s))) o->oom = 1;
        st->pend_frames++;
        st->pend_utf8 = 0;
        return -1;
    }
    flush_pending(st, o);
    if (is_dashes(s, e)) return -1;
    if (starts(s, e, "cpus=")) {
        if (o->nh < MAX_HEAD && (put64(&o->h_start, off + (s - p)) || put64(&o->h_len, e - s))) o->oom = 1;
        else if (o->nh < MAX_HEAD) o->nh++;
        return -1;
    }
    if (starts(s, e, "CPU:") || starts(s, e, "CPU ")) {
        const char *b = memchr(s, '[', (size_t)(e - s));
        if (b && (find(b, e, "LOST") || find(b, e, "DROPPED"))) {
            int64_t cpu = NUL32;
            const char *d = s + 4; while (d < e && is_digit(*d)) d++;
            if (parse_u64(s + 4, d, &cpu) || cpu > INT32_MAX - 1) cpu = NUL32;
            const char *be = memchr(b, ']', (size_t)(e - b));
            ctx_t c; memset(&c, 0, sizeof c);
            c.line = line; c.t = NUL64; c.pid = NUL64; c.cpu = (int32_t)cpu;
            emit_event(o, &c, "lost_events", 11, b + 1, (size_t)((be ? be : e) - b - 1), 1);
            st->n_lost++;
            return 0;
        }
    }
    if (starts(s, e, "#####")) return -1;
    if (fgev_fast_may(s)) {
        ctx_t c; fgrec_t rec; int noflags;
        if (fgev_fast(s, e, &c, &rec, &noflags)) { /* what parse_event_line does with such a line */
            st->n_evline++;
            if (noflags) st->n_evline_noflags++;
            c.line = line;
            c.key = task_key(c.pid, c.cpu);
            return do_fg(st, o, &c, &rec);
        }
    }
    int reason = 0;
    int fg_first = fg_start(s, e);
    if (fg_first) {
        if (ctx_marker(s, e)) {
            int rc = parse_ctx_marker(st, o, s, e, line);
            if (rc >= 0) return rc;
            return R_CTX;
        }
        int rc = parse_fg_line(st, o, s, e, line, &reason);
        if (rc == 0) return reason;
        if (rc == 1) return -1;
    }
    if (parse_event_line(st, o, s, e, line, &reason) == 0) return reason;
    if (!fg_first) {
        int rc = parse_fg_line(st, o, s, e, line, &reason);
        if (rc == 0) return reason;
        if (rc == 1) return -1;
    }
    return R_UNKNOWN;
}

#endif /* STALLSCOPE_FUNCGRAPH_LINE_H */
