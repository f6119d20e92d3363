/*
 * The records of a blktrace capture in the order `blkparse -i` prints them (the rules: parsers/_blktrace.c's top):
 * capture_next() gives the next record to print, with its time from the capture's first, until every stream is read;
 * it stops when a stream needs bytes (capture_t.need) and goes on once they are fed (stream_feed). Included by
 * parsers/_blktrace.c and parsers/_blkparse.c after _blktrace_records.h.
 */
#ifndef STALLSCOPE_BLKTRACE_ORDER_H
#define STALLSCOPE_BLKTRACE_ORDER_H

typedef struct {
    int n, per_cpu, setup, need, done;
    Stream *s;
    Stream *head, *pending;   /* per-CPU mode: the list, the stream whose batch is being read */
    uint64_t genesis;
    int have_genesis;
    names_t names;
    /* one-stream mode */
    Rec **heap; size_t heapn, heapcap;
    uint64_t batch_no;
    uint64_t *seqkey; int64_t *seqlast; size_t seqn, seqcap;
    /* the record capture_next gave last, let go at the next call: per-CPU mode (the head's), one stream (its own) */
    int taken;
    Rec *taken_rec;
    uint64_t shown, left_out, forced, v2;
    bt_error_t err;
} capture_t;

/* nstreams streams: per-CPU files of one capture (per_cpu), else one stream. 0, or -1 out of memory */
static int capture_init(capture_t *c, int n, int per_cpu) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->per_cpu = per_cpu;
    c->need = -1;
    c->s = calloc((size_t)n, sizeof(Stream));
    if (!c->s) return -1;
    for (int i = 0; i < n; i++) {
        c->s[i].swap = -1;
        c->s[i].q = calloc(BT_BATCH, sizeof(Rec));
        if (!c->s[i].q) return -1;
    }
    return 0;
}

static void capture_free(capture_t *c) {
    if (c->s) {
        for (int i = 0; i < c->n; i++) {
            Stream *s = &c->s[i];
            if (s->q) for (int k = s->qhead; k < s->qn; k++) free(s->q[k].pdu);
            free(s->q);
            free(s->buf);
        }
        free(c->s);
    }
    if (c->taken_rec) { free(c->taken_rec->pdu); free(c->taken_rec); }
    for (size_t i = 0; i < c->heapn; i++) { free(c->heap[i]->pdu); free(c->heap[i]); }
    free(c->heap);
    free(c->names.slots);
    free(c->seqkey);
    free(c->seqlast);
    memset(c, 0, sizeof *c);
}

/* the bytes of stream i (empty: its end): 0, or -1 out of memory */
static int capture_feed(capture_t *c, int i, const void *data, size_t len) {
    if (stream_feed(&c->s[i], data, len)) return -1;
    if (c->need == i) c->need = -1;
    return 0;
}

/* ---- per-CPU files: blkparse's list of streams ---- */
static inline uint64_t peek_time(const Stream *s) { return s->head_time; }

static void ms_insert(capture_t *c, Stream *s) {
    uint64_t t = peek_time(s);
    Stream *h = c->head;
    if (!h) { c->head = s; return; }
    if (t < peek_time(h)) { s->next = h; c->head = s; return; }
    while (h->next && peek_time(h->next) < t) h = h->next;
    s->next = h->next;
    h->next = s;
}

/* Reads stream i's next batch (resumable: NEED returns with the batch kept as far as it got). */
static int prime(capture_t *c, int i) {
    Stream *s = &c->s[i];
    if (!s->priming) { s->qn = s->qhead = 0; s->priming = 1; }
    while (s->qn < BT_BATCH) {
        int notify, got = read_record(s, i, &s->q[s->qn], &notify, &c->names, &c->v2, &c->err);
        if (got == NEED) { c->need = i; return NEED; }
        if (got == FAIL) return FAIL;
        if (got == END) break;
        if (!notify) s->qn++;
    }
    s->priming = 0;
    if (s->qn) s->head_time = s->q[0].time;
    return GOT;
}

/* the head goes back to its place in the list when another stream's next record is strictly earlier */
static void requeue_head(capture_t *c, Stream *s) {
    if (s->next && peek_time(s) > peek_time(s->next)) { c->head = s->next; s->next = NULL; ms_insert(c, s); }
}

static int next_per_cpu(capture_t *c, Rec **out, uint64_t *rel) {
    while (c->setup < c->n) {  /* every file's first batch, in CPU order, as blkparse sets them up */
        int got = prime(c, c->setup);
        if (got != GOT) return got;
        if (c->s[c->setup].qn) ms_insert(c, &c->s[c->setup]);
        c->setup++;
        if (c->setup == c->n && c->head) { c->genesis = peek_time(c->head); c->have_genesis = 1; }
    }
    if (c->taken) {  /* the record given last: done with */
        Stream *s = c->head;
        Rec *t = &s->q[s->qhead];
        if (t->pdu) { free(t->pdu); t->pdu = NULL; }
        s->qhead++;
        c->taken = 0;
        if (s->qhead == s->qn) c->pending = s;
        else {
            s->head_time = s->q[s->qhead].time;
            requeue_head(c, s);
        }
    }
    for (;;) {
        Stream *s = c->pending;
        if (s) {  /* a stream whose batch ran out, being read again */
            int got = prime(c, (int)(s - c->s));
            if (got != GOT) return got;
            c->pending = NULL;
            if (!s->qn) { c->head = s->next; s->next = NULL; continue; }
            requeue_head(c, s);
            continue;
        }
        if (!c->head) { c->done = 1; return END; }
        s = c->head;
        *out = &s->q[s->qhead];
        *rel = (*out)->time - c->genesis;
        c->taken = 1;
        return GOT;
    }
}

/* ---- one stream: blkparse -i - ---- */
static inline int rec_less(const Rec *a, const Rec *b) {  /* times relative to the genesis when pushed */
    if (a->time != b->time) return a->time < b->time;
    if (a->device != b->device) return a->device < b->device;
    if (a->seq != b->seq) return a->seq < b->seq;
    return a->order < b->order;
}

static void heap_push(capture_t *c, Rec *x) {
    size_t i = c->heapn++;
    while (i) {
        size_t up = (i - 1) / 2;
        if (!rec_less(x, c->heap[up])) break;
        c->heap[i] = c->heap[up];
        i = up;
    }
    c->heap[i] = x;
}

static Rec *heap_pop(capture_t *c) {
    Rec *top = c->heap[0], *x = c->heap[--c->heapn];
    size_t i = 0, n = c->heapn;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= n) break;
        if (k + 1 < n && rec_less(c->heap[k + 1], c->heap[k])) k++;
        if (!rec_less(c->heap[k], x)) break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (n) c->heap[i] = x;
    return top;
}

static int64_t *seq_last(capture_t *c, uint32_t device, uint32_t cpu) {  /* -1: nothing printed yet */
    uint64_t key = (uint64_t)device << 32 | cpu;
    for (size_t i = 0; i < c->seqn; i++) if (c->seqkey[i] == key) return &c->seqlast[i];
    if (c->seqn == c->seqcap) {
        size_t cap = c->seqcap ? c->seqcap * 2 : 64;
        uint64_t *k = realloc(c->seqkey, cap * sizeof *k);
        if (!k) return NULL;
        c->seqkey = k;
        int64_t *l = realloc(c->seqlast, cap * sizeof *l);
        if (!l) return NULL;
        c->seqlast = l;
        c->seqcap = cap;
    }
    c->seqkey[c->seqn] = key;
    c->seqlast[c->seqn] = -1;
    return &c->seqlast[c->seqn++];
}

static int next_stream(capture_t *c, Rec **out, uint64_t *rel) {
    Stream *s = &c->s[0];
    if (c->taken_rec) { free(c->taken_rec->pdu); free(c->taken_rec); c->taken_rec = NULL; }
    for (;;) {
        /* the smallest record, when it may be printed */
        int force = s->eof && s->pos == s->len && !s->priming;
        if (c->heapn) {
            Rec *t = c->heap[0];
            int64_t *last = NULL;
            int ok = 1;
            if ((t->action & ~TA_CGROUP) != TN_MESSAGE) {
                last = seq_last(c, t->device, t->cpu);
                if (!last) return c->err.kind = BT_NOMEM, FAIL;
                if (*last >= 0 && (uint64_t)t->seq != (uint64_t)*last + 1 && !force) {
                    if (c->heapn <= BT_MAX_PENDING) ok = 0;  /* a gap: wait for the next batch */
                    else c->forced++;
                }
            }
            if (ok) {
                heap_pop(c);
                if (last) *last = t->seq;
                c->taken_rec = *out = t;
                *rel = t->time;  /* relative already */
                return GOT;
            }
        }
        if (force) { c->done = 1; return END; }
        /* read the next batch: up to BT_BATCH records, the notify records among them taken on the way */
        if (!s->priming) { s->priming = 1; s->qn = 0; }
        while (s->qn < BT_BATCH) {
            int notify, got = read_record(s, 0, &s->q[s->qn], &notify, &c->names, &c->v2, &c->err);
            if (got == NEED) { c->need = 0; return NEED; }
            if (got == FAIL) return FAIL;
            if (got == END) break;
            if (!notify) s->qn++;
        }
        s->priming = 0;
        if (!c->have_genesis && s->qn) {  /* the first batch's smallest time (looked for again while it is 0) */
            uint64_t g = UINT64_MAX;
            for (int k = 0; k < s->qn; k++) if (s->q[k].time < g) g = s->q[k].time;
            c->genesis = g;
            c->have_genesis = g != 0;
        }
        if (c->heapn + (size_t)s->qn > c->heapcap) {
            size_t cap = c->heapcap ? c->heapcap : 4096;
            while (cap < c->heapn + (size_t)s->qn) cap *= 2;
            Rec **h = realloc(c->heap, cap * sizeof *h);
            if (!h) return c->err.kind = BT_NOMEM, FAIL;
            c->heap = h;
            c->heapcap = cap;
        }
        for (int k = 0; k < s->qn; k++) {  /* blkparse sorts a batch from its last record read */
            Rec *t = malloc(sizeof(Rec));
            if (!t) return c->err.kind = BT_NOMEM, FAIL;
            *t = s->q[k];
            s->q[k].pdu = NULL;
            t->time -= c->genesis;
            t->order = c->batch_no << 32 | (uint32_t)(0xffffffffu - (uint32_t)k);
            heap_push(c, t);
        }
        s->qn = 0;
        c->batch_no++;
    }
}

/* The next record to print (*out, valid until the next call) and its time from the capture's first (*rel): GOT;
 * NEED (the stream c->need needs bytes); END (all printed: c->done); FAIL (c->err says why). */
static int capture_next(capture_t *c, Rec **out, uint64_t *rel) {
    if (c->done) return END;
    if (c->need >= 0) return NEED;
    return c->per_cpu ? next_per_cpu(c, out, rel) : next_stream(c, out, rel);
}

/* {streams: [{records, notify, cpu_min, cpu_max, swapped}], shown, left_out, forced, version8, genesis_ns} */
static PyObject *capture_stats(const capture_t *c) {
    PyObject *streams = PyList_New(c->n);
    if (!streams) return NULL;
    for (int i = 0; i < c->n; i++) {
        const Stream *s = &c->s[i];
        PyObject *d = Py_BuildValue("{s:K,s:K,s:L,s:L,s:i}", "records", (unsigned long long)s->records, "notify",
                                    (unsigned long long)s->notify, "cpu_min", (long long)s->cpu_min, "cpu_max",
                                    (long long)s->cpu_max, "swapped", s->swap == 1);
        if (!d) { Py_DECREF(streams); return NULL; }
        PyList_SET_ITEM(streams, i, d);
    }
    return Py_BuildValue("{s:N,s:K,s:K,s:K,s:K,s:K}", "streams", streams, "shown", (unsigned long long)c->shown,
                         "left_out", (unsigned long long)c->left_out, "forced", (unsigned long long)c->forced,
                         "version8", (unsigned long long)c->v2, "genesis_ns", (unsigned long long)c->genesis);
}

#endif
