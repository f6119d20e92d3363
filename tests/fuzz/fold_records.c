/*
 * libFuzzer harness of the record-stream fold (parsers/_funcgraph_records.h), the in-process C that reads what
 * tracedat-records writes: any bytes are folded or refused, never read past their end (ASan, UBSan).
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -I"$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
 *       -o /tmp/fold_records tests/fuzz/fold_records.c -lpython3.11
 *   mkdir -p /tmp/records-corpus && for f in tests/golden/tracedat/sandbox-sched-block-stack.dat samples/real/ext4-jbd2/trace.dat; do
 *       parsers/tracedat-records "$f" | head -c 200000 > /tmp/records-corpus/$(basename "$(dirname "$f")").rec; done
 *   /tmp/fold_records -max_total_time=600 -max_len=65536 /tmp/records-corpus
 *
 * Each input is folded twice: whole, and cut in two at a byte it names (a record split across two reads, as the
 * Python reader hands them over: the rest carried to the next call), then the state's open calls and pending stack
 * event are flushed and everything freed.
 */
#include "../../parsers/_funcgraph.c"

static state_t *fresh_state(void) {
    state_t *st = calloc(1, sizeof(state_t));
    if (st) for (int i = 0; i < SEEN_SLOTS; i++) st->seen[i].id = -1;
    return st;
}

static void drain(state_t *st) {
    out_t o; memset(&o, 0, sizeof o);
    flush_pending(st, &o);
    for (int64_t i = 0; i < st->ntasks && !o.oom; i++) flush_frames(st, &o, &st->tasks[i], 0);
    out_free(&o);
}

/* folds [s, e) in reads of at most `step` bytes, carrying the rest of a record as tracedat_records.py does */
static void fold_all(const char *s, const char *e, size_t step) {
    state_t *st = fresh_state();
    if (!st) return;
    int64_t lineno = 1, bad = 0;
    const char *p = s;
    for (const char *lim = p; p < e;) {
        lim = (size_t)(e - lim) > step ? lim + step : e;
        out_t o; memset(&o, 0, sizeof o);
        int64_t used = fold_records(st, &o, p, lim, &lineno, &bad);
        out_free(&o);
        if (used < 0) break;
        p += used;
        if (lim == e && used == 0) break; /* a record cut at the end: refused by the reader */
    }
    drain(st);
    state_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    fold_all(s, s + size, size ? size : 1);
    if (size > 2) fold_all(s + 1, s + size, (size_t)data[0] % (size - 1) + 1);
    return 0;
}
