/*
 * blktrace binary records (struct blk_io_trace, and blk_io_trace2 of the 2025 kernels) -> the text lines
 * `blkparse -i` prints for them, in the order it prints them. parsers/blktrace.py reads a capture natively
 * (parsers/_blkparse_binary.h: its records straight into the blkparse reader's columns, with the line numbers of
 * these lines); this rendering is its reference, the text the tests and the benchmark compare it with.
 * The reading and ordering are shared by both (_blktrace_records.h, _blktrace_order.h), the lines are
 * _blktrace_render.h's.
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
 *     printed). At most BT_MAX_PENDING records wait: past that the smallest is printed anyway.
 *   - not printed, as blkparse: abort and driver-data records, unknown actions, records without a category.
 * Lines are blkparse's default format (process_default, handle_notify) with an unknown name as "(null)".
 * Differences from blkparse 1.2, on purpose: a record whose CPU differs from its file's is kept (blkparse drops
 * it); cgroup payloads (action bit 8) are read as blkparse 1.3 does, the payload after the cgroup id;
 * version 8 records are read (their action is 64 bits; the zone categories print as ZA ZR ZF ...).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_blktrace_records.h"
#include "_blktrace_order.h"
#include "_blktrace_render.h"

static PyObject *BlktraceError;

typedef struct {
    PyObject_HEAD
    capture_t c;
} Renderer;

static void renderer_dealloc(Renderer *r) {
    capture_free(&r->c);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static int renderer_init(Renderer *r, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"nstreams", "per_cpu", NULL};
    int n, per_cpu;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ip", kwlist, &n, &per_cpu)) return -1;
    if (n < 1 || (!per_cpu && n != 1)) { PyErr_SetString(PyExc_ValueError, "one stream, or per-CPU files"); return -1; }
    capture_free(&r->c);
    if (capture_init(&r->c, n, per_cpu)) { PyErr_NoMemory(); return -1; }
    return 0;
}

static PyObject *renderer_need(Renderer *r, PyObject *Py_UNUSED(ignored)) { return PyLong_FromLong(r->c.need); }

static PyObject *renderer_feed(Renderer *r, PyObject *args) {
    int i;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "iy*", &i, &data)) return NULL;
    if (i < 0 || i >= r->c.n) { PyBuffer_Release(&data); PyErr_SetString(PyExc_IndexError, "no such stream"); return NULL; }
    int failed = capture_feed(&r->c, i, data.buf, (size_t)data.len);
    PyBuffer_Release(&data);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *renderer_render(Renderer *r, PyObject *args) {
    Py_buffer out;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "w*n", &out, &start)) return NULL;
    if ((size_t)out.len < 2 * BT_MARGIN || start < 0 || start > out.len) {
        PyBuffer_Release(&out);
        PyErr_SetString(PyExc_ValueError, "the output buffer is too small");
        return NULL;
    }
    char *p = (char *)out.buf + start, *limit = (char *)out.buf + out.len - BT_MARGIN;
    Py_ssize_t lines = 0;
    int got = GOT;
    while (p < limit) {  /* no GIL released: this renderer serves tests and the benchmark's text */
        Rec *t;
        uint64_t rel;
        got = capture_next(&r->c, &t, &rel);
        if (got != GOT) break;
        char *e = render_record(&r->c.names, p, t, rel);
        if (e) { p = e; lines++; r->c.shown++; } else r->c.left_out++;
    }
    size_t end = (size_t)(p - (char *)out.buf);
    PyBuffer_Release(&out);
    if (got == FAIL) return raise_error(&r->c.err, BlktraceError);
    return Py_BuildValue("(nnO)", (Py_ssize_t)end, lines, r->c.done ? Py_True : Py_False);
}

static PyObject *renderer_stats(Renderer *r, PyObject *Py_UNUSED(ignored)) { return capture_stats(&r->c); }

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
