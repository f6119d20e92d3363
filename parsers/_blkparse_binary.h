/*
 * blktrace binary records read natively (parsers/blktrace.py): each record, in the order `blkparse -i` prints them
 * (_blktrace_order.h), becomes the event the text reader would tokenize from its line (record_event,
 * _blkparse_record.h) and is folded into the same columns, with the line number that line has in `blkparse -i`
 * output. A record whose line record_event does not reproduce field for field (passthrough payloads, cgroups, a name
 * or a message that is not plain text, numbers past what the text reader reads) is rendered (_blktrace_render.h)
 * and its text read by parse_line, as the text path reads it. Included by _blkparse.c once, after fold().
 *
 *   recs = Records(nstreams, per_cpu)   a capture's streams: per-CPU files of one capture, else one stream
 *   recs.need() -> int                  the stream whose next bytes are needed, or -1
 *   recs.feed(i, data)                  the next bytes of stream i; empty data: its end
 *   recs.done() -> bool                 every record read
 *   recs.stats() -> dict                records, notify records, records left out, per stream: records, CPUs
 *   rb.read(recs, max_lines) -> dict or None
 *       folds records until max_lines lines are read or every record is (a dict: the columns, as rb.feed gives them,
 *       and sk_text, the text of the skipped lines, which sk_start and sk_len point into), or until a stream needs
 *       bytes (None: the lines read so far wait in recs for the next call). The GIL is released meanwhile.
 *   BlktraceError(stream, offset, message)   a record that cannot be read: which stream, its byte offset, why
 */
#ifndef STALLSCOPE_BLKPARSE_BINARY_H
#define STALLSCOPE_BLKPARSE_BINARY_H

#include "_blktrace_records.h"
#include "_blktrace_order.h"
#include "_blktrace_render.h"
#include "_blkparse_record.h"

static PyObject *BlktraceError;

typedef struct {
    PyObject_HEAD
    capture_t c;
    out_t out;             /* the lines read since the last dict handed over (open: out holds them) */
    int open;
    int64_t next_line;     /* the line number of the next line */
    buf_t sktext;          /* the skipped lines' text */
    char *scratch;         /* a record's line rendered (BT_MARGIN bytes) */
    action_t actions[ACTIONS_KEPT]; /* the actions' letters, kept (_blkparse_record.h) */
} Records;

/* record t read as the text reader reads its line(s): rendered, then each line tokenized and folded, or skipped (its
 * text kept). 0, or -1 out of memory */
static int fold_as_text(Rebuilder *rb, Records *rs, const Rec *t, uint64_t rel) {
    char *end = render_record(&rs->c.names, rs->scratch, t, rel);
    if (!end) { rs->c.left_out++; return 0; }
    rs->c.shown++;
    out_t *o = &rs->out;
    for (const char *p = rs->scratch; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        ev_t v;
        int rc = parse_line(&v, p, e, &rb->in_summary);
        int64_t line = rs->next_line++;
        o->lines++;
        if (rc == 0) { o->parsed++; if (fold(rb, o, &v, line)) return -1; }
        else if (rc < 0) o->ignored++;
        else if (i64(&o->sk.line, line) || i64(&o->sk.start, (int64_t)rs->sktext.len) || i64(&o->sk.len, e - p) ||
                 i32(&o->sk.reason, rc) || buf_put(&rs->sktext, p, (size_t)(e - p)))
            return -1;
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

/* Folds records until max_lines lines are read: GOT (that many, or fewer when every record is read), NEED (a stream
 * needs bytes), FAIL (rs->c.err says why); -1 out of memory */
static int fold_records(Rebuilder *rb, Records *rs, int64_t max_lines) {
    out_t *o = &rs->out;
    while (o->lines < max_lines) {
        Rec *t;
        uint64_t rel;
        int got = capture_next(&rs->c, &t, &rel);
        if (got == END) return GOT;
        if (got != GOT) return got;
        ev_t v;
        char rwbs[8];
        int how = record_event(&rs->c.names, rs->actions, t, rel, &v, rwbs);
        if (how == AS_EVENT) {
            rs->c.shown++;
            o->lines++;
            o->parsed++;
            rb->in_summary = 0; /* what an event line does */
            if (fold(rb, o, &v, rs->next_line++)) return -1;
        } else if (how == AS_NOTHING) rs->c.left_out++;
        else if (fold_as_text(rb, rs, t, rel)) return -1;
    }
    return GOT;
}

static PyTypeObject RecordsType;

static PyObject *rb_read(Rebuilder *rb, PyObject *args) {
    Records *rs;
    Py_ssize_t max_lines;
    if (!PyArg_ParseTuple(args, "O!n", &RecordsType, &rs, &max_lines)) return NULL;
    if (!rs->scratch) { PyErr_SetString(PyExc_ValueError, "Records not initialised"); return NULL; }
    if (!rs->open) { out_init(&rs->out, (size_t)max_lines / 4); rs->open = 1; }
    int got;
    Py_BEGIN_ALLOW_THREADS
    got = fold_records(rb, rs, (int64_t)max_lines);
    Py_END_ALLOW_THREADS
    if (got == NEED) Py_RETURN_NONE;
    PyObject *d = NULL;
    if (got < 0) PyErr_NoMemory();
    else if (got == FAIL) raise_error(&rs->c.err, BlktraceError);
    else if ((d = to_dict(&rs->out)) &&
             colbuf_set(d, "sk_text", &rs->sktext.p, rs->sktext.len, rs->sktext.cap))
        Py_CLEAR(d);
    out_free(&rs->out);
    rs->open = 0;
    buf_free(&rs->sktext);
    return d;
}

static void records_dealloc(Records *rs) {
    capture_free(&rs->c);
    if (rs->open) out_free(&rs->out);
    buf_free(&rs->sktext);
    free(rs->scratch);
    Py_TYPE(rs)->tp_free((PyObject *)rs);
}

static int records_init(Records *rs, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"nstreams", "per_cpu", NULL};
    int n, per_cpu;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ip", kwlist, &n, &per_cpu)) return -1;
    if (n < 1 || (!per_cpu && n != 1)) { PyErr_SetString(PyExc_ValueError, "one stream, or per-CPU files"); return -1; }
    capture_free(&rs->c);
    if (rs->open) { out_free(&rs->out); rs->open = 0; }
    buf_free(&rs->sktext);
    rs->next_line = 1;
    if (capture_init(&rs->c, n, per_cpu) || (!rs->scratch && !(rs->scratch = malloc(BT_MARGIN)))) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static PyObject *records_need(Records *rs, PyObject *Py_UNUSED(ignored)) { return PyLong_FromLong(rs->c.need); }
static PyObject *records_done(Records *rs, PyObject *Py_UNUSED(ignored)) { return PyBool_FromLong(rs->c.done); }
static PyObject *records_stats(Records *rs, PyObject *Py_UNUSED(ignored)) { return capture_stats(&rs->c); }

static PyObject *records_feed(Records *rs, PyObject *args) {
    int i;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "iy*", &i, &data)) return NULL;
    if (!rs->c.s || i < 0 || i >= rs->c.n) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_IndexError, "no such stream");
        return NULL;
    }
    int failed = capture_feed(&rs->c, i, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef records_methods[] = {
    {"need", (PyCFunction)records_need, METH_NOARGS, "need() -> the stream whose next bytes are needed, or -1"},
    {"feed", (PyCFunction)records_feed, METH_VARARGS, "feed(i, data): stream i's next bytes; empty: its end"},
    {"done", (PyCFunction)records_done, METH_NOARGS, "done() -> whether every record was read"},
    {"stats", (PyCFunction)records_stats, METH_NOARGS, "stats() -> dict"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "parsers._blkparse.Records",
    .tp_basicsize = sizeof(Records),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)records_init,
    .tp_dealloc = (destructor)records_dealloc,
    .tp_methods = records_methods,
    .tp_doc = "The records of a blktrace capture, in blkparse's order, for Rebuilder.read.",
};

#endif
