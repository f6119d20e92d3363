/* Column buffers handed to Python and given back for the next chunk (parsers/_funcgraph.c). A chunk's columns live
 * until DuckDB has inserted them (a few chunks later); freed, each large block went back to the OS (glibc maps blocks
 * of 1 MiB and more on their own: backend/ingest/memory.py) and the next chunk's faulted fresh zeroed pages in. Here a
 * column returns its block to its tokenizer state's pool, and the next chunk's buffers are taken from it.
 *
 * Every pool call is made with the GIL held: a column is freed by Python (which holds it), and the tokenizer takes
 * its blocks before it releases the GIL. Each column holds a reference to the state that owns the pool, so the pool
 * outlives its columns; it is bounded (POOL_SLOTS blocks, POOL_BYTES bytes): a block given back to a full pool makes
 * room by freeing the oldest ones (a block no column fits any more ages out), and a block under POOL_MIN bytes is
 * freed (malloc reuses those from its heap). */
#ifndef STALLSCOPE_COLPOOL_H
#define STALLSCOPE_COLPOOL_H

#include <Python.h>
#include <stdlib.h>
#include <string.h>

#define POOL_SLOTS 256
#define POOL_BYTES ((size_t)32 << 20)
#define POOL_MIN ((size_t)64 << 10)

typedef struct { char *p; size_t cap; } pool_block;
typedef struct { pool_block b[POOL_SLOTS]; int n; size_t bytes; } colpool;

static void pool_drop_oldest(colpool *pl) {
    free(pl->b[0].p);
    pl->bytes -= pl->b[0].cap;
    memmove(pl->b, pl->b + 1, sizeof pl->b[0] * (size_t)--pl->n);
}

static void pool_give(colpool *pl, char *p, size_t cap) {
    if (!p) return;
    if (cap < POOL_MIN || cap > POOL_BYTES) { free(p); return; }
    while (pl->n && (pl->n == POOL_SLOTS || pl->bytes + cap > POOL_BYTES)) pool_drop_oldest(pl);
    pl->b[pl->n].p = p; pl->b[pl->n].cap = cap; /* the newest last */
    pl->n++; pl->bytes += cap;
}

/* the smallest block of at least want bytes and at most 4 times that (NULL: none, or want is under POOL_MIN); *cap =
 * its size */
static char *pool_take(colpool *pl, size_t want, size_t *cap) {
    int best = -1;
    if (want < POOL_MIN) return NULL;
    for (int i = 0; i < pl->n; i++)
        if (pl->b[i].cap >= want && pl->b[i].cap <= 4 * want && (best < 0 || pl->b[i].cap < pl->b[best].cap)) best = i;
    if (best < 0) return NULL;
    char *p = pl->b[best].p;
    *cap = pl->b[best].cap;
    pl->bytes -= *cap;
    memmove(pl->b + best, pl->b + best + 1, sizeof pl->b[0] * (size_t)(--pl->n - best)); /* the order kept: oldest first */
    return p;
}

static void pool_clear(colpool *pl) {
    for (int i = 0; i < pl->n; i++) free(pl->b[i].p);
    pl->n = 0; pl->bytes = 0;
}

/* a column: the bytes (read-only buffer protocol, len()), given back to `pool` when freed; `owner` keeps the pool */
typedef struct { PyObject_HEAD char *p; Py_ssize_t len; size_t cap; colpool *pool; PyObject *owner; } poolcol;
static void poolcol_dealloc(poolcol *self) {
    if (self->pool) pool_give(self->pool, self->p, self->cap);
    else free(self->p);
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}
static int poolcol_getbuffer(poolcol *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : (char *)"", self->len, 1, flags);
}
static Py_ssize_t poolcol_len(poolcol *self) { return self->len; }
static PyBufferProcs poolcol_as_buffer = {(getbufferproc)poolcol_getbuffer, NULL};
static PySequenceMethods poolcol_as_sequence = {.sq_length = (lenfunc)poolcol_len};
static PyTypeObject poolcol_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "parsers.PooledColumn", .tp_basicsize = sizeof(poolcol), .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a column's bytes, given back to its tokenizer's pool when freed", .tp_dealloc = (destructor)poolcol_dealloc,
    .tp_as_buffer = &poolcol_as_buffer, .tp_as_sequence = &poolcol_as_sequence,
};

/* d[key] = a column of the len bytes at *data (capacity cap), given back to pool (kept alive by owner) when freed; the
 * column takes the memory over (*data = NULL) once it exists. A block far larger than its bytes is shrunk first (it
 * would hold memory while it waits for its insert). 0, or -1 with an exception. */
static int poolcol_set(PyObject *d, const char *key, char **data, size_t len, size_t cap, colpool *pool,
                       PyObject *owner) {
    poolcol *c = PyObject_New(poolcol, &poolcol_type);
    if (!c) return -1;
    char *p = *data;
    if (p && cap > 2 * len + (64 << 10)) {
        char *q = realloc(p, len ? len : 1);
        if (q) { p = q; cap = len ? len : 1; }
    }
    c->p = p; c->len = (Py_ssize_t)len; c->cap = cap; c->pool = pool; c->owner = owner;
    Py_XINCREF(owner);
    *data = NULL;
    int rc = PyDict_SetItemString(d, key, (PyObject *)c);
    Py_DECREF(c);
    return rc;
}

#endif
