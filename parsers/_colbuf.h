/* A column handed to Python without a copy, shared by the C tokenizers (parsers/_*.c): a small object that owns
 * the malloc'd bytes, exposes them read-only through the buffer protocol (numpy.frombuffer, pyarrow.py_buffer)
 * and len(), and frees them when the last view is gone. Each module calls PyType_Ready(&colbuf_type) once. */
#ifndef STALLSCOPE_COLBUF_H
#define STALLSCOPE_COLBUF_H

#include <Python.h>
#include <stdlib.h>

typedef struct { PyObject_HEAD char *p; Py_ssize_t len; } colbuf;
static void colbuf_dealloc(colbuf *self) { free(self->p); Py_TYPE(self)->tp_free((PyObject *)self); }
static int colbuf_getbuffer(colbuf *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : (char *)"", self->len, 1, flags);
}
static Py_ssize_t colbuf_len(colbuf *self) { return self->len; }
static PyBufferProcs colbuf_as_buffer = {(getbufferproc)colbuf_getbuffer, NULL};
static PySequenceMethods colbuf_as_sequence = {.sq_length = (lenfunc)colbuf_len};
static PyTypeObject colbuf_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "parsers.Column", .tp_basicsize = sizeof(colbuf), .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a column's bytes, owned", .tp_dealloc = (destructor)colbuf_dealloc, .tp_as_buffer = &colbuf_as_buffer,
    .tp_as_sequence = &colbuf_as_sequence,
};

/* d[key] = a column of the len bytes at *data, allocated with room for cap (shrunk to len, in place); the column
 * takes the memory over (*data = NULL) once it exists, else *data stays the caller's. 0, or -1 with an exception. */
static int colbuf_set(PyObject *d, const char *key, char **data, size_t len, size_t cap) {
    colbuf *c = PyObject_New(colbuf, &colbuf_type);
    if (!c) return -1;
    char *p = *data;
    if (p && len < cap) {
        char *q = realloc(p, len ? len : 1);
        if (q) p = q;
    }
    c->p = p; c->len = (Py_ssize_t)len;
    *data = NULL;
    int rc = PyDict_SetItemString(d, key, (PyObject *)c);
    Py_DECREF(c);
    return rc;
}

#endif
