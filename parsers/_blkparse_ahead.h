/*
 * The tail of a chunk tokenized ahead by a second thread (tokenize_tail: each line's fields in a pre_t), folded
 * afterwards in order by rb_feed. Included by _blkparse.c once, after _blkparse_line.h (parse_line) and the open
 * requests; its chunk loop (rb_feed) starts the thread.
 */
#ifndef STALLSCOPE_BLKPARSE_AHEAD_H
#define STALLSCOPE_BLKPARSE_AHEAD_H

/* The tail of a chunk is tokenized (parse_line) by a thread of its own while this one tokenizes and folds the head,
 * then folds the tail's lines in order: the fold (requests, in file order) stays in one thread, the tokenizing,
 * most of the work, is split. A line's outcome depends on whether the summary block has begun (in_summary), which
 * the tail's thread knows only from its first event line or summary header on: until then it tokenizes a line
 * both ways, and a line whose outcome differs (a line that is not an event) is tokenized again in the fold. */
#define REDO 1000
#define SPLIT_MIN (1 << 20)  /* chunks smaller than this are tokenized in one thread */
struct pre_s { ev_t v; const char *p, *e; int rc; int8_t state; }; /* state: after the line; -1: unchanged */
typedef struct { const char *from, *to; pre_t *lines; size_t n, cap; int failed; } tail_t;

static void *tokenize_tail(void *arg) {
    tail_t *t = arg;
    int known = -1; /* in_summary, once a line tells it */
    for (const char *p = t->from; p < t->to;) {
        const char *nl = memchr(p, '\n', t->to - p), *e = nl ? nl : t->to;
        pre_t *q = room_for(t->lines, t->n, &t->cap, sizeof *q);
        if (!q) { t->failed = 1; return NULL; }
        t->lines = q;
        pre_t *x = &t->lines[t->n++];
        x->p = p; x->e = e; x->state = -1;
        if (known >= 0) {
            int before = known;
            x->rc = parse_line(&x->v, p, e, &known);
            if (known != before) x->state = (int8_t)known;
        } else {
            int a = 0, b = 1;
            ev_t v2;
            int ra = parse_line(&x->v, p, e, &a), rb2 = parse_line(&v2, p, e, &b);
            x->rc = ra == rb2 ? ra : REDO;
            if (a == b) known = x->state = (int8_t)a; /* an event line (0) or a summary header (1) */
        }
        if (!nl) break;
        p = nl + 1;
    }
    return NULL;
}

#endif
