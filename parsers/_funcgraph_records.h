/*
 * The record stream of parsers/tracedat_records.c (a trace.dat's events decoded by libtracecmd in a child process)
 * folded into the same rows as the text of `trace-cmd report` gives: each record is what parse_line would have read
 * from the report's line(s) for that event, with the line numbers of the report. Its layout is described in
 * tracedat_records.c. The stream is read as untrusted input: every field is bounds-checked, and a record that does not
 * fit in what is left is left for the next call (or, at the stream's end, refused). Included by _funcgraph.c once,
 * after _funcgraph_ahead.h.
 */
#ifndef STALLSCOPE_FUNCGRAPH_RECORDS_H
#define STALLSCOPE_FUNCGRAPH_RECORDS_H

#define MAX_FRAME_IDS (1 << 24) /* distinct stack-frame addresses */
#define MAX_NAME_IDS (1 << 24)  /* distinct names ('M': tasks', functions') */

typedef struct { const char *p, *e; } rd_t;
static int rd_take(rd_t *r, void *v, size_t n) {
    if ((size_t)(r->e - r->p) < n) return -1;
    memcpy(v, r->p, n); r->p += n; return 0;
}
static int rd_span(rd_t *r, size_t n, const char **s) {
    if ((size_t)(r->e - r->p) < n) return -1;
    *s = r->p; r->p += n; return 0;
}
static int rd_str(rd_t *r, const char **s, size_t *n) {
    uint8_t k;
    if (rd_take(r, &k, 1) || rd_span(r, k, s)) return -1;
    *n = k; return 0;
}
/* a name by its id ('M'; the id in *idp when not NULL): 0, -1 when it does not fit in what is left, 1 when the id
 * is not one given yet */
static int rd_name(rd_t *r, const state_t *st, const char **s, size_t *n, uint32_t *idp) {
    uint32_t id;
    if (rd_take(r, &id, 4)) return -1;
    if (id >= st->names.n) return 1;
    texts_at(&st->names, id, s, n);
    if (idp) *idp = id;
    return 0;
}

/* the lines [p,e) of the report, as parse_line reads them: lines read, each numbered from *lineno */
static void fold_lines(state_t *st, out_t *o, const char *base, const char *p, const char *e, int64_t *lineno) {
    while (p < e && !o->oom) {
        const char *nl = memchr(p, '\n', (size_t)(e - p)), *le = nl ? nl : e;
        skipped(o, parse_line(st, o, p, le, *lineno, (int64_t)(p - base)), *lineno, p - base, le - p);
        (*lineno)++;
        p = nl ? nl + 1 : e;
    }
}


/* one record at r->p: 0 folded (r->p past it), 1 it does not fit in what is left (r->p unmoved), -1 malformed */
static int fold_record(state_t *st, out_t *o, const char *base, rd_t *r, int64_t *lineno) {
    const rd_t at = *r;
    const int64_t line0 = *lineno;
    uint8_t kind;
    if (rd_take(r, &kind, 1)) return 1;
    if (!memchr("TNMSWFKE", kind, 8)) return -1;
    uint32_t n;
    const char *s;
    if (kind == 'T') {
        if (rd_take(r, &n, 4) || rd_span(r, n, &s)) { *r = at; *lineno = line0; return 1; }
        fold_lines(st, o, base, s, s + n, lineno);
        return 0;
    }
    if (kind == 'N') {
        uint32_t id; uint16_t len;
        if (rd_take(r, &id, 4) || rd_take(r, &len, 2) || rd_span(r, len, &s)) { *r = at; *lineno = line0; return 1; }
        if (id != st->frames.n || id >= MAX_FRAME_IDS) return -1;
        size_t at = st->frames.text.len;
        if (texts_add(&st->frames, s, len)) { o->oom = 1; return 0; }
        utf8_fix((unsigned char *)st->frames.text.p + at, (unsigned char *)st->frames.text.p + at + len); /* once */
        return 0;
    }
    if (kind == 'M') { /* (not made UTF-8 here: each use is, as the report's text would be) */
        uint32_t id; uint16_t len;
        if (rd_take(r, &id, 4) || rd_take(r, &len, 2) || rd_span(r, len, &s)) { *r = at; *lineno = line0; return 1; }
        if (id != st->names.n || id >= MAX_NAME_IDS) return -1;
        if (texts_add(&st->names, s, len) || put32(&st->name_funcs, 0)) o->oom = 1;
        return 0;
    }
    /* an event's line: its task and time */
    int64_t t; int32_t cpu, pid; const char *comm; size_t commn;
    if (rd_take(r, &t, 8) || rd_take(r, &cpu, 4) || rd_take(r, &pid, 4)) { *r = at; *lineno = line0; return 1; }
    int named = rd_name(r, st, &comm, &commn, NULL);
    if (named > 0) return -1;
    if (named < 0) { *r = at; *lineno = line0; return 1; }
    ctx_t c;
    c.line = (*lineno)++; c.t = t; c.pid = pid; c.cpu = cpu < 0 ? NUL32 : cpu; c.comm = comm; c.commn = commn; c.has_comm = 1;
    c.key = task_key(c.pid, c.cpu);
    int rc = 0;
    if (kind == 'S') {
        const char *pc, *ps, *nc; size_t pcn, psn, ncn; int64_t ppid, npid; int32_t pprio, nprio;
        if (rd_str(r, &pc, &pcn) || rd_take(r, &ppid, 8) || rd_take(r, &pprio, 4) || rd_str(r, &ps, &psn) ||
            rd_str(r, &nc, &ncn) || rd_take(r, &npid, 8) || rd_take(r, &nprio, 4)) { *r = at; *lineno = line0; return 1; }
        flush_pending(st, o);
        emit_switch(o, &c, pc, pcn, ppid, pprio, ps, psn, nc, ncn, npid, nprio);
    } else if (kind == 'W') {
        const char *ev, *cm; size_t evn, cmn; int64_t wpid; int32_t prio, tcpu; uint8_t succ;
        if (rd_str(r, &ev, &evn) || rd_str(r, &cm, &cmn) || rd_take(r, &wpid, 8) || rd_take(r, &prio, 4) ||
            rd_take(r, &tcpu, 4) || rd_take(r, &succ, 1)) { *r = at; *lineno = line0; return 1; }
        if (succ > 2) return -1;
        flush_pending(st, o);
        emit_wakeup(o, &c, ev, evn, cm, cmn, wpid, prio, tcpu, succ);
    } else if (kind == 'F') {
        uint8_t fk; int64_t dur; int32_t depth; uint32_t id;
        if (rd_take(r, &fk, 1) || rd_take(r, &dur, 8) || rd_take(r, &depth, 4)) { *r = at; *lineno = line0; return 1; }
        if (fk < FG_ENTRY || fk > FG_EXIT) return -1;
        size_t len = 0;
        s = NULL;
        if (fk == FG_EXIT) { /* no name */
            if (rd_take(r, &id, 4)) { *r = at; *lineno = line0; return 1; }
            if (id != UINT32_MAX) return -1;
        } else {
            int named = rd_name(r, st, &s, &len, &id);
            if (named > 0) return -1;
            if (named < 0) { *r = at; *lineno = line0; return 1; }
        }
        flush_pending(st, o);
        fgrec_t x;
        rec_clear(&x);
        x.kind = fk; x.dur = dur; x.depth = -1; x.indent = depth < 0 ? 0 : depth;
        x.name = s; x.namee = s ? s + len : NULL;
        st->folding_name = s ? (size_t)id + 1 : 0;
        rc = do_fg(st, o, &c, &x);
        st->folding_name = 0;
        skipped_text(o, rc, c.line, s, len); /* (the function's name: not in the chunk) */
    } else if (kind == 'K') {
        if (rd_take(r, &n, 4) || (size_t)(r->e - r->p) / 4 < n) { *r = at; *lineno = line0; return 1; }
        flush_pending(st, o);
        static const char name[] = "kernel_stack", head[] = "<stack trace >";
        do_event(st, o, &c, name, name + sizeof name - 1, head, head + sizeof head - 1);
        if (st->pend && !st->pend_frames) st->pend_utf8 = 1; /* its head; the frames' text was made UTF-8 ('N') */
        /* each frame's "=> frame" line, as parse_line adds it to the pending stack event (past MAX_FOLD: cut), kept
         * as its id: flush_pending copies the text once, into the row */
        pend_materialize(st, o);
        size_t len = st->pend_text.len;
        for (uint32_t i = 0; i < n && !o->oom; i++) {
            uint32_t id = UINT32_MAX;
            if (rd_take(r, &id, 4) || id >= st->frames.n) return -1;
            const char *frame;
            size_t fn;
            texts_at(&st->frames, id, &frame, &fn);
            if (len + fn + 1 > MAX_FOLD) { st->n_folded_cut++; continue; }
            if (put32(&st->pend_ids, (int32_t)id)) { o->oom = 1; break; }
            len += fn + 1;
            st->pend_frames++;
        }
        *lineno += n;
    } else if (kind == 'E') {
        const char *ev; size_t evn;
        if (rd_str(r, &ev, &evn) || rd_take(r, &n, 4) || rd_span(r, n, &s)) { *r = at; *lineno = line0; return 1; }
        flush_pending(st, o);
        const char *e = s + n, *nl = memchr(s, '\n', n), *le = nl ? nl : e;
        do_event(st, o, &c, ev, ev + evn, s, le);
        if (nl) fold_lines(st, o, base, nl + 1, e, lineno); /* the text's further lines: the report's next lines */
    } else {
        return -1;
    }
    st->n_evline++; /* a trace-cmd report line: no latency flags */
    st->n_evline_noflags++;
    return 0;
}

/* the whole records at the start of [s,e): bytes folded, or -1 (malformed at *bad, bytes from s) */
static int64_t fold_records(state_t *st, out_t *o, const char *s, const char *e, int64_t *lineno, int64_t *bad) {
    rd_t r = {s, e};
    while (r.p < e && !o->oom) {
        const char *at = r.p;
        int rc = fold_record(st, o, s, &r, lineno);
        if (rc > 0) break;
        if (rc < 0) { *bad = at - s; return -1; }
    }
    return r.p - s;
}

#endif /* STALLSCOPE_FUNCGRAPH_RECORDS_H */
