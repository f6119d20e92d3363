/*
 * btt's averages, computed as btt (blktrace 1.2) computes them, from the events of a blkparse text in file order
 * (included by _blkparse.c; each event is given to btt_event() before the request rebuilding sees it).
 *
 * btt keys everything on the queued bio (Q), not on the request: per device, the live Qs sit in a red-black tree
 * ordered by start sector (a Q at the start of a live one goes to its right: both stay). Then
 *   G, S, I, M/F  find a Q by descending the tree from its root to the first node whose range holds the event's
 *                 sector (with overlapping Qs, which one depends on the tree's shape: hence the same tree):
 *                 G: Q2G (and S2G after an S), I: G2I, M/F: Q2M;
 *   D             every Q of the tree whose range lies within the D's: I2D if it was inserted, else M2D if merged;
 *   C             every Q within the C's range: Q2C, and D2C if dispatched; the Q then leaves the tree;
 *   A             Q2A, to the Q at the remap's source sector on its source device;
 *   Q             Q2Q, from the device's previous Q.
 * "Within" is btt's walk: it goes left only when the range starts before the node and right only when the node
 * ends before the range does, so a Q in a pruned subtree is not seen. A device's events before its first Q or A
 * are left out; events without a size (flushes) too. A duration that is not positive counts as 1 ns (btt's
 * tdelta). Device-mapper and md devices (majors 9, 253, 254) count Q2Q, Q2A and Q2C apart (btt's "dm" rows).
 * The sums are kept per device and per the pid of the Q (Q2Q per device only).
 *
 * Faster paths, with the same outcome (the tree keeps its shape either way): the live Qs are also indexed by
 * (device, start sector) in a hash table, and each device keeps the list of its Qs that overlap the next Q in start
 * order ("overlappers": few, a split's parent that was never completed and what was queued inside it). A sector
 * inside a Q but not at its start lies inside an overlapper: so when no overlapper holds the sector,
 *   the descent to a sector that starts a Q finds that Q (no node on the way holds the sector);
 *   the walk within a range that starts at a Q that overlaps nothing finds that Q alone if the range ends where the
 *   Q does, nothing if it ends before (any other Q within would start inside that Q), and no node on the way is
 *   pruned.
 * A Q at a new start finds its place and its neighbours in one descent.
 */
#ifndef STALLSCOPE_BTT_H
#define STALLSCOPE_BTT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { BT_Q2QDM, BT_Q2ADM, BT_Q2CDM, BT_Q2Q, BT_Q2A, BT_Q2G, BT_S2G, BT_G2I, BT_Q2M, BT_I2D, BT_M2D, BT_D2C, BT_Q2C,
       BT_METRICS };
static const char *const BT_NAMES[BT_METRICS] = {"Q2Qdm", "Q2Adm", "Q2Cdm", "Q2Q", "Q2A", "Q2G", "S2G", "G2I", "Q2M",
                                                 "I2D", "M2D", "D2C", "Q2C"};
#define BT_NONE INT64_MIN

typedef struct { int64_t n, min, max, total; } bt_avg_t;
typedef struct { int32_t dev, used; int64_t pid; bt_avg_t a[BT_METRICS]; } bt_acc_t; /* pid -1: the device's own */
/* a live Q: its place in the tree (what a descent reads: 32 bytes, two to a cache line) and, apart, its times */
typedef struct {
    int64_t start, end;
    int32_t left, right, parent;
    int8_t red, ovl; /* ovl: an overlapper (below) */
} bt_node_t;
/* ovix: its place among the overlappers; acc: its sums' slot (bt_acc_q), while the table is of generation acc_gen */
typedef struct { int64_t t, g, i, m, d, s, pid; int32_t ovix, acc; uint32_t acc_gen; } bt_q_t;
typedef struct { int64_t start, end; int32_t node; } bt_ovl_t;           /* an overlapper: its range, its node */
typedef struct {
    int32_t major, minor, root; int8_t pre_culling, remapper; int64_t last_q;
    bt_ovl_t *ovl; size_t novl, ovlcap;  /* its overlappers */
    int64_t *cov; size_t covcap;         /* their starts in order, each with the furthest end so far (2 per) */
    int8_t cov_stale;                    /* cov is to be remade from ovl before it is read */
} bt_dev_t;
/* the index: a live Q's node by (device, start); node -1: a free slot */
typedef struct { int64_t start; int32_t dev, node; } bt_slot_t;

typedef struct {
    bt_dev_t *devs; size_t ndevs, devcap;
    bt_node_t *nodes; size_t nnodes, nodecap;
    bt_q_t *qs;  /* a node's times, at its index */
    int32_t *freel; size_t nfree, freecap;
    bt_acc_t *acc; size_t nacc, acccap;  /* open addressing on (dev, pid) */
    uint32_t acc_gen;                     /* how many times acc was remade */
    int32_t *found; size_t nfound, foundcap;
    bt_slot_t *ix; size_t ixcap, ixused;
    int failed;
} btt_t;

static void btt_free(btt_t *b) {
    for (size_t k = 0; k < b->ndevs; k++) { free(b->devs[k].ovl); free(b->devs[k].cov); }
    free(b->devs); free(b->nodes); free(b->qs); free(b->freel); free(b->acc); free(b->found); free(b->ix);
    memset(b, 0, sizeof *b);
}

static __attribute__((noinline)) int bt_new_dev(btt_t *b, int32_t major, int32_t minor) {
    if (b->ndevs == b->devcap) {
        size_t cap = b->devcap ? b->devcap * 2 : 8;
        bt_dev_t *d = realloc(b->devs, cap * sizeof *d);
        if (!d) { b->failed = 1; return -1; }
        b->devs = d; b->devcap = cap;
    }
    bt_dev_t *d = &b->devs[b->ndevs];
    d->major = major; d->minor = minor; d->root = -1; d->pre_culling = 1; d->last_q = BT_NONE;
    d->ovl = NULL; d->novl = d->ovlcap = 0;
    d->cov = NULL; d->covcap = 0; d->cov_stale = 0;
    d->remapper = major == 9 || major == 253 || major == 254;
    return (int)b->ndevs++;
}
static inline int bt_dev(btt_t *b, int32_t major, int32_t minor, int create) {
    for (size_t k = b->ndevs; k-- > 0;)
        if (b->devs[k].major == major && b->devs[k].minor == minor) return (int)k;
    return create ? bt_new_dev(b, major, minor) : -1;
}

/* ---- the sums ---- */
static inline uint64_t bt_hash(int32_t dev, int64_t pid) {
    uint64_t h = (uint64_t)pid * 0x9E3779B97F4A7C15ULL ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4FULL;
    return h ^ (h >> 31);
}
static bt_acc_t *bt_acc(btt_t *b, int32_t dev, int64_t pid) {
    if (b->nacc * 2 >= b->acccap) {
        size_t cap = b->acccap ? b->acccap * 2 : 64, old = b->acccap;
        bt_acc_t *a = calloc(cap, sizeof *a), *was = b->acc;
        if (!a) { b->failed = 1; return NULL; }
        b->acc = a; b->acccap = cap; b->acc_gen++;
        for (size_t k = 0; k < old; k++) if (was[k].used) {
            size_t i = bt_hash(was[k].dev, was[k].pid) & (cap - 1);
            while (a[i].used) i = (i + 1) & (cap - 1);
            a[i] = was[k];
        }
        free(was);
    }
    size_t i = bt_hash(dev, pid) & (b->acccap - 1);
    while (b->acc[i].used && !(b->acc[i].dev == dev && b->acc[i].pid == pid)) i = (i + 1) & (b->acccap - 1);
    if (!b->acc[i].used) { b->acc[i].used = 1; b->acc[i].dev = dev; b->acc[i].pid = pid; b->nacc++; }
    return &b->acc[i];
}
static inline void bt_sum(bt_acc_t *e, int metric, int64_t v);
static void bt_add(btt_t *b, int32_t dev, int64_t pid, int metric, int64_t v) {
    bt_acc_t *e = bt_acc(b, dev, pid);
    if (e) bt_sum(e, metric, v);
}
/* bt_add() to the sums of live Q q's pid on its device dev: their slot is kept with the Q (found again when the table
 * was remade since) */
static void bt_add_q(btt_t *b, int32_t dev, bt_q_t *q, int metric, int64_t v) {
    if (q->acc < 0 || q->acc_gen != b->acc_gen) {
        bt_acc_t *e = bt_acc(b, dev, q->pid);
        if (!e) return;
        q->acc = (int32_t)(e - b->acc); q->acc_gen = b->acc_gen;
    }
    bt_sum(&b->acc[q->acc], metric, v);
}
static inline void bt_sum(bt_acc_t *e, int metric, int64_t v) {
    bt_avg_t *a = &e->a[metric];
    if (a->n++ == 0) a->min = a->max = a->total = v;
    else { if (v < a->min) a->min = v; else if (v > a->max) a->max = v; a->total += v; }
}
static inline int64_t bt_delta(int64_t from, int64_t to) { return from < to ? to - from : 1; }

/* ---- the index of live Qs by (device, start): open addressing, linear probing ---- */
static inline size_t bt_ixslot(const btt_t *b, int32_t dev, int64_t start) {
    uint64_t h = (uint64_t)start * 0x9E3779B97F4A7C15ULL ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4FULL;
    return (size_t)(h ^ (h >> 29)) & (b->ixcap - 1);
}
/* the node of the live Q at (dev, start), else -1 */
static inline int32_t bt_ix_get(const btt_t *b, int32_t dev, int64_t start) {
    if (!b->ixcap) return -1;
    for (size_t i = bt_ixslot(b, dev, start);; i = (i + 1) & (b->ixcap - 1)) {
        const bt_slot_t *x = &b->ix[i];
        if (x->node < 0) return -1;
        if (x->start == start && x->dev == dev) return x->node;
    }
}
static void bt_ix_put(btt_t *b, int32_t dev, int64_t start, int32_t node) { /* (dev, start) is not there yet */
    if (b->ixused * 2 >= b->ixcap) {
        size_t cap = b->ixcap ? b->ixcap * 2 : 1024, old = b->ixcap;
        bt_slot_t *was = b->ix, *x = malloc(cap * sizeof *x);
        if (!x) { b->failed = 1; return; }
        for (size_t i = 0; i < cap; i++) x[i].node = -1;
        b->ix = x; b->ixcap = cap;
        for (size_t k = 0; k < old; k++) if (was[k].node >= 0) {
            size_t i = bt_ixslot(b, was[k].dev, was[k].start);
            while (x[i].node >= 0) i = (i + 1) & (cap - 1);
            x[i] = was[k];
        }
        free(was);
    }
    size_t i = bt_ixslot(b, dev, start);
    while (b->ix[i].node >= 0) i = (i + 1) & (b->ixcap - 1);
    b->ix[i].start = start; b->ix[i].dev = dev; b->ix[i].node = node;
    b->ixused++;
}
static void bt_ix_del(btt_t *b, int32_t dev, int64_t start) { /* backward-shift deletion */
    size_t mask = b->ixcap - 1, i = bt_ixslot(b, dev, start);
    while (b->ix[i].node >= 0 && !(b->ix[i].start == start && b->ix[i].dev == dev)) i = (i + 1) & mask;
    if (b->ix[i].node < 0) return;
    b->ix[i].node = -1;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (b->ix[j].node < 0) break;
        size_t k = bt_ixslot(b, b->ix[j].dev, b->ix[j].start);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) { b->ix[i] = b->ix[j]; b->ix[j].node = -1; i = j; }
    }
    b->ixused--;
}

/* ---- the red-black tree of live Qs (one per device), as the kernel's rbtree shapes it ---- */
#define N(x) (b->nodes[x])
static void bt_rotate_left(btt_t *b, int32_t *root, int32_t x) {
    int32_t y = N(x).right;
    N(x).right = N(y).left;
    if (N(y).left >= 0) N(N(y).left).parent = x;
    N(y).parent = N(x).parent;
    if (N(x).parent < 0) *root = y;
    else if (x == N(N(x).parent).left) N(N(x).parent).left = y;
    else N(N(x).parent).right = y;
    N(y).left = x; N(x).parent = y;
}
static void bt_rotate_right(btt_t *b, int32_t *root, int32_t x) {
    int32_t y = N(x).left;
    N(x).left = N(y).right;
    if (N(y).right >= 0) N(N(y).right).parent = x;
    N(y).parent = N(x).parent;
    if (N(x).parent < 0) *root = y;
    else if (x == N(N(x).parent).right) N(N(x).parent).right = y;
    else N(N(x).parent).left = y;
    N(y).right = x; N(x).parent = y;
}
/* inserts z under y, where a descent by z's start ends (y < 0: an empty tree) */
static void bt_insert_at(btt_t *b, int32_t *root, int32_t z, int32_t y) {
    N(z).parent = y; N(z).left = N(z).right = -1; N(z).red = 1;
    if (y < 0) *root = z;
    else if (N(z).start < N(y).start) N(y).left = z;
    else N(y).right = z;
    while (N(z).parent >= 0 && N(N(z).parent).red) {
        int32_t p = N(z).parent, g = N(p).parent;
        if (p == N(g).left) {
            int32_t u = N(g).right;
            if (u >= 0 && N(u).red) { N(p).red = 0; N(u).red = 0; N(g).red = 1; z = g; continue; }
            if (z == N(p).right) { z = p; bt_rotate_left(b, root, z); p = N(z).parent; g = N(p).parent; }
            N(p).red = 0; N(g).red = 1; bt_rotate_right(b, root, g);
        } else {
            int32_t u = N(g).left;
            if (u >= 0 && N(u).red) { N(p).red = 0; N(u).red = 0; N(g).red = 1; z = g; continue; }
            if (z == N(p).left) { z = p; bt_rotate_right(b, root, z); p = N(z).parent; g = N(p).parent; }
            N(p).red = 0; N(g).red = 1; bt_rotate_left(b, root, g);
        }
    }
    N(*root).red = 0;
}
static void bt_erase(btt_t *b, int32_t *root, int32_t z) {
    int32_t child, parent;
    int8_t red;
    if (N(z).left < 0 || N(z).right < 0) { /* at most one child: it takes z's place */
        child = N(z).left >= 0 ? N(z).left : N(z).right;
        parent = N(z).parent; red = N(z).red;
        if (child >= 0) N(child).parent = parent;
        if (parent < 0) *root = child;
        else if (N(parent).left == z) N(parent).left = child;
        else N(parent).right = child;
    } else { /* z's successor (leftmost of its right subtree) takes its place and colour */
        int32_t y = N(z).right;
        while (N(y).left >= 0) y = N(y).left;
        child = N(y).right; parent = N(y).parent; red = N(y).red;
        if (parent == z) parent = y;
        else {
            if (child >= 0) N(child).parent = parent;
            N(parent).left = child;
            N(y).right = N(z).right; N(N(z).right).parent = y;
        }
        N(y).parent = N(z).parent; N(y).red = N(z).red; N(y).left = N(z).left; N(N(z).left).parent = y;
        if (N(z).parent < 0) *root = y;
        else if (N(N(z).parent).left == z) N(N(z).parent).left = y;
        else N(N(z).parent).right = y;
    }
    if (red) return;
    /* a black node left: rebalance from `child` (possibly none) under `parent` */
    while ((child < 0 || !N(child).red) && child != *root) {
        if (N(parent).left == child) {
            int32_t w = N(parent).right;
            if (N(w).red) { N(w).red = 0; N(parent).red = 1; bt_rotate_left(b, root, parent); w = N(parent).right; }
            if ((N(w).left < 0 || !N(N(w).left).red) && (N(w).right < 0 || !N(N(w).right).red)) {
                N(w).red = 1; child = parent; parent = N(child).parent;
            } else {
                if (N(w).right < 0 || !N(N(w).right).red) {
                    N(N(w).left).red = 0; N(w).red = 1; bt_rotate_right(b, root, w); w = N(parent).right;
                }
                N(w).red = N(parent).red; N(parent).red = 0; N(N(w).right).red = 0;
                bt_rotate_left(b, root, parent);
                child = *root; break;
            }
        } else {
            int32_t w = N(parent).left;
            if (N(w).red) { N(w).red = 0; N(parent).red = 1; bt_rotate_right(b, root, parent); w = N(parent).left; }
            if ((N(w).right < 0 || !N(N(w).right).red) && (N(w).left < 0 || !N(N(w).left).red)) {
                N(w).red = 1; child = parent; parent = N(child).parent;
            } else {
                if (N(w).left < 0 || !N(N(w).left).red) {
                    N(N(w).right).red = 0; N(w).red = 1; bt_rotate_left(b, root, w); w = N(parent).left;
                }
                N(w).red = N(parent).red; N(parent).red = 0; N(N(w).left).red = 0;
                bt_rotate_right(b, root, parent);
                child = *root; break;
            }
        }
    }
    if (child >= 0) N(child).red = 0;
}
static int32_t bt_find(btt_t *b, int32_t n, int64_t sec) {
    while (n >= 0) {
        if (sec < N(n).start) n = N(n).left;
        else if (sec >= N(n).end) n = N(n).right;
        else return n;
    }
    return -1;
}
static void bt_found(btt_t *b, int32_t n) {
    if (b->nfound == b->foundcap) {
        size_t cap = b->foundcap ? b->foundcap * 2 : 64;
        int32_t *f = realloc(b->found, cap * sizeof *f);
        if (!f) { b->failed = 1; return; }
        b->found = f; b->foundcap = cap;
    }
    b->found[b->nfound++] = n;
}
static void bt_within(btt_t *b, int32_t n, int64_t s, int64_t e) { /* btt's walk, its order: node, left, right */
    while (n >= 0) {
        if (s <= N(n).start && N(n).end <= e) {
            bt_found(b, n);
            if (b->failed) return;
        }
        int go_left = s < N(n).start, go_right = N(n).end < e;
        if (go_left && go_right) bt_within(b, N(n).left, s, e);
        n = go_right ? N(n).right : go_left ? N(n).left : -1;
    }
}
/* the node before / after n in start order, else -1 */
static int32_t bt_prev(btt_t *b, int32_t n) {
    if (N(n).left >= 0) { for (n = N(n).left; N(n).right >= 0;) n = N(n).right; return n; }
    int32_t p = N(n).parent;
    while (p >= 0 && n == N(p).left) { n = p; p = N(p).parent; }
    return p;
}
static int32_t bt_next(btt_t *b, int32_t n) {
    if (N(n).right >= 0) { for (n = N(n).right; N(n).left >= 0;) n = N(n).left; return n; }
    int32_t p = N(n).parent;
    while (p >= 0 && n == N(p).right) { n = p; p = N(p).parent; }
    return p;
}
/* whether neighbours x (first) and y overlap (none, -1: no) */
static inline int bt_ov(btt_t *b, int32_t x, int32_t y) { return x >= 0 && y >= 0 && N(x).end > N(y).start; }
/* n is an overlapper of d, or not */
static inline void bt_set_ov(btt_t *b, bt_dev_t *d, int32_t n, int on) {
    if (N(n).ovl == on) return;
    N(n).ovl = (int8_t)on;
    int32_t *ix = &b->qs[n].ovix;
    if (on) {
        if (d->novl == d->ovlcap) {
            size_t cap = d->ovlcap ? d->ovlcap * 2 : 16;
            bt_ovl_t *o = realloc(d->ovl, cap * sizeof *o);
            if (!o) { b->failed = 1; return; }
            d->ovl = o; d->ovlcap = cap;
        }
        d->ovl[d->novl] = (bt_ovl_t){N(n).start, N(n).end, n};
        d->cov_stale = 1;
        *ix = (int32_t)d->novl++;
    } else {
        d->cov_stale = 1;
        bt_ovl_t last = d->ovl[--d->novl];
        if ((size_t)*ix != d->novl) { d->ovl[*ix] = last; b->qs[last.node].ovix = *ix; }
        *ix = -1;
    }
}
static int bt_cmp_start(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, c = *(const int64_t *)y;
    return (a > c) - (a < c);
}
/* whether an overlapper of d holds sec past its start: the furthest end of those that start before sec, found by
 * bisection in cov (remade when the overlappers changed: seldom) */
static int bt_covered(btt_t *b, bt_dev_t *d, int64_t sec) {
    if (!d->novl) return 0;
    if (d->cov_stale) {
        if (d->covcap < 2 * d->novl) {
            int64_t *c = realloc(d->cov, 2 * d->ovlcap * sizeof *c);
            if (!c) { b->failed = 1; return 1; } /* (the slow way then: the same outcome) */
            d->cov = c; d->covcap = 2 * d->ovlcap;
        }
        for (size_t i = 0; i < d->novl; i++) { d->cov[2 * i] = d->ovl[i].start; d->cov[2 * i + 1] = d->ovl[i].end; }
        qsort(d->cov, d->novl, 2 * sizeof *d->cov, bt_cmp_start);
        for (size_t i = 1; i < d->novl; i++)
            if (d->cov[2 * i + 1] < d->cov[2 * i - 1]) d->cov[2 * i + 1] = d->cov[2 * i - 1];
        d->cov_stale = 0;
    }
    size_t lo = 0, hi = d->novl; /* the first that starts at or past sec */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->cov[2 * mid] < sec) lo = mid + 1; else hi = mid;
    }
    return lo > 0 && d->cov[2 * lo - 1] > sec;
}
/* takes node z out of device d's tree and the index */
static void bt_remove(btt_t *b, bt_dev_t *d, int32_t dev, int32_t z) {
    bt_set_ov(b, d, z, 0);
    if (bt_covered(b, d, N(z).start)) { /* the Q before z may overlap it: does it overlap the one after? */
        int32_t p = bt_prev(b, z);
        if (p >= 0) bt_set_ov(b, d, p, bt_ov(b, p, bt_next(b, z)));
    } /* else the Q before ends by z's start, and before the next one's */
    bt_ix_del(b, dev, N(z).start);
    bt_erase(b, &d->root, z);
}
/* bt_find(), the same node: the index's when the sector starts a Q that no overlapper holds */
static inline int32_t bt_lookup(btt_t *b, int32_t dev, int64_t sec) {
    bt_dev_t *d = &b->devs[dev];
    int32_t n = bt_ix_get(b, dev, sec);
    if (n >= 0 && !bt_covered(b, d, sec)) return n;
    return bt_find(b, d->root, sec);
}
#undef N

static int32_t bt_new_node(btt_t *b) {
    if (b->nfree) return b->freel[--b->nfree];
    if (b->nnodes == b->nodecap) {
        size_t cap = b->nodecap ? b->nodecap * 2 : 1024;
        bt_node_t *n = realloc(b->nodes, cap * sizeof *n);
        if (!n) { b->failed = 1; return -1; }
        b->nodes = n;
        bt_q_t *q = realloc(b->qs, cap * sizeof *q);
        if (!q) { b->failed = 1; return -1; }
        b->qs = q; b->nodecap = cap;
    }
    return (int32_t)b->nnodes++;
}
static void bt_free_node(btt_t *b, int32_t n) {
    if (b->nfree == b->freecap) {
        size_t cap = b->freecap ? b->freecap * 2 : 1024;
        int32_t *f = realloc(b->freel, cap * sizeof *f);
        if (!f) { b->failed = 1; return; }
        b->freel = f; b->freecap = cap;
    }
    b->freel[b->nfree++] = n;
}

/* One event: act (1-2 letters), its device, time, pid, sector and size (sectors; NUL64: none), the remap's source */
static void btt_event(btt_t *b, const char *act, size_t actn, int32_t major, int32_t minor, int64_t t, int64_t pid,
                      int64_t sector, int64_t nsect, int32_t fmaj, int32_t fmin, int64_t fsec) {
    if (b->failed || actn != 1) return;
    char a = act[0];
    if (a == 'A') {
        int k = bt_dev(b, major, minor, 1);
        if (k < 0) return;
        b->devs[k].pre_culling = 0;
        int f = fmaj >= 0 ? bt_dev(b, fmaj, fmin, 0) : -1;
        if (f < 0 || fsec == BT_NONE) return;
        int32_t q = bt_lookup(b, f, fsec);
        if (q >= 0)
            bt_add_q(b, f, &b->qs[q], b->devs[f].remapper ? BT_Q2ADM : BT_Q2A, bt_delta(b->qs[q].t, t));
        return;
    }
    switch (a) {
    case 'Q': case 'G': case 'S': case 'I': case 'M': case 'F': case 'D': case 'C': break;
    default: return;
    }
    if (sector == BT_NONE || nsect == BT_NONE || nsect <= 0) return;
    int k = bt_dev(b, major, minor, 1);
    if (k < 0) return;
    bt_dev_t *d = &b->devs[k];
    if (d->pre_culling) {
        if (a != 'Q') return;
        d->pre_culling = 0;
    }
    if (a == 'Q') {
        /* a live Q that starts there is replaced, in its place in the tree; else the new one goes where the descent
         * ends (y), between the Qs before and after it */
        int32_t n = d->root, y = -1, before = -1, after = -1;
        while (n >= 0 && b->nodes[n].start != sector) {
            const bt_node_t *x = &b->nodes[n];
            int left = sector < x->start;
            y = n;
            after = left ? n : after;
            before = left ? before : n;
            n = left ? x->left : x->right;
        }
        int fresh = n < 0;
        if (fresh) {
            if ((n = bt_new_node(b)) < 0) return;
        } else if (b->nodes[n].right >= 0) /* the Q after it */
            for (after = b->nodes[n].right; b->nodes[after].left >= 0;) after = b->nodes[after].left;
        b->nodes[n].start = sector; b->nodes[n].end = sector + nsect;
        bt_q_t *q = &b->qs[n];
        q->t = t; q->pid = pid; q->acc = -1;
        q->g = q->i = q->m = q->d = BT_NONE; q->s = 0;
        if (fresh) {
            q->ovix = -1; b->nodes[n].ovl = 0;
            bt_insert_at(b, &d->root, n, y);
            bt_ix_put(b, k, sector, n);
            if (before >= 0) bt_set_ov(b, d, before, bt_ov(b, before, n));
        } else if (b->nodes[n].ovl) { d->ovl[q->ovix].end = sector + nsect; d->cov_stale = 1; } /* its end moved */
        bt_set_ov(b, d, n, bt_ov(b, n, after));
        if (d->last_q != BT_NONE) bt_add(b, k, -1, d->remapper ? BT_Q2QDM : BT_Q2Q, t > d->last_q ? t - d->last_q : 1);
        d->last_q = t;
        return;
    }
    if (a == 'D' || a == 'C') {
        b->nfound = 0;
        int32_t x = bt_ix_get(b, k, sector); /* a Q of the same start: the only one within, if any */
        if (x < 0 || b->nodes[x].ovl || b->nodes[x].end < sector + nsect || bt_covered(b, d, sector))
            bt_within(b, d->root, sector, sector + nsect);
        else if (b->nodes[x].end == sector + nsect) bt_found(b, x);
        for (size_t j = 0; j < b->nfound && !b->failed; j++) {
            int32_t n = b->found[j];
            bt_q_t *q = &b->qs[n];
            if (a == 'D') {
                if (q->i != BT_NONE) bt_add_q(b, k, q, BT_I2D, bt_delta(q->i, t));
                else if (q->m != BT_NONE) bt_add_q(b, k, q, BT_M2D, bt_delta(q->m, t));
                q->d = t;
            } else {
                bt_add_q(b, k, q, d->remapper ? BT_Q2CDM : BT_Q2C, bt_delta(q->t, t));
                if (q->d != BT_NONE) bt_add_q(b, k, q, BT_D2C, bt_delta(q->d, t));
                bt_remove(b, &b->devs[k], k, n);
                bt_free_node(b, n);
            }
        }
        return;
    }
    int32_t n = bt_lookup(b, k, sector);
    if (n < 0) return;
    bt_q_t *q = &b->qs[n];
    switch (a) {
    case 'G':
        q->g = t;
        bt_add_q(b, k, q, BT_Q2G, bt_delta(q->t, t));
        if (q->s != 0) bt_add_q(b, k, q, BT_S2G, bt_delta(q->s, t));
        break;
    case 'S': q->s = t; break;
    case 'I':
        q->i = t;
        if (q->g != BT_NONE) bt_add_q(b, k, q, BT_G2I, bt_delta(q->g, t));
        break;
    default: /* M, F */
        q->m = t;
        bt_add_q(b, k, q, BT_Q2M, bt_delta(q->t, t));
    }
}

#endif
