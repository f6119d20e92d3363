/*
 * One blktrace record as the event the blkparse text reader reads from its line (record_event): the fields parse_line
 * gives for the line _blktrace_render.h writes, made from the record without writing it. Included by _blkparse.c
 * (through _blkparse_binary.h) after _blkparse_line.h (ev_t) and the _blktrace_*.h headers.
 */
#ifndef STALLSCOPE_BLKPARSE_RECORD_H
#define STALLSCOPE_BLKPARSE_RECORD_H

enum { AS_EVENT, AS_NOTHING, AS_TEXT };

/* what record_action and fill_rwbs give for a record, which they read from its action, its zone categories (cat2) and
 * whether it has bytes: kept for the last ACTIONS_KEPT of these, looked up by them (a capture has a few dozen) */
#define ACTIONS_KEPT 64
typedef struct { uint32_t action, cat2; uint8_t bytes, used, pc, rn; uint32_t code; const char *act; char rwbs[8]; } action_t;

static inline const action_t *action_of(action_t *kept, const Rec *t) {
    uint8_t bytes = t->bytes != 0;
    action_t *k = &kept[(t->action ^ t->action >> 16 ^ t->action >> 27 ^ t->cat2 * 5u ^ bytes) & (ACTIONS_KEPT - 1)];
    if (!k->used || k->action != t->action || k->cat2 != t->cat2 || k->bytes != bytes) {
        int pc = 0;
        k->code = 0;
        k->act = record_action(t, &pc, &k->code);
        k->pc = (uint8_t)pc;
        k->rn = (uint8_t)fill_rwbs(k->rwbs, t);
        k->action = t->action;
        k->cat2 = t->cat2;
        k->bytes = bytes;
        k->used = 1;
    }
    return k;
}
#define TEXT_NUMBER_MAX 1000000000000000000ULL /* the text reader reads numbers of at most 18 digits */

/* The event the text reader reads from the line of record t (time rel from the capture's first): AS_EVENT with it in
 * *v (its rwbs written in rwbs, 8 bytes; its action a literal; its comm a Name's), AS_NOTHING when blkparse prints no line for it, AS_TEXT when its line is to
 * be rendered and read as text. */
static int record_event(names_t *names, action_t *kept, const Rec *t, uint64_t rel, ev_t *v, char *rwbs) {
    if (t->action & TA_CGROUP) return AS_TEXT;
    if (t->cpu > INT32_MAX) return AS_TEXT;
    if (rel < (1ull << 31) * 1000000000ull) v->t = (int64_t)rel; /* its seconds fit the %5d of an int they print as */
    else { /* the seconds as that int: wrapped to 32 bits; a negative one does not read back */
        uint32_t secs = (uint32_t)(rel / 1000000000ull);
        if ((int32_t)secs < 0) return AS_TEXT;
        v->t = (int64_t)secs * 1000000000LL + (int64_t)(rel % 1000000000ull);
    }
    v->major = (int32_t)(t->device >> 20); v->minor = (int32_t)(t->device & 0xfffff); v->cpu = (int32_t)t->cpu;
    v->sector = v->nsect = v->elapsed = v->err = v->fsec = v->ssec = v->depth = NUL64;
    v->fmaj = v->fmin = -1;
    v->comm = v->msg = NULL; v->commn = v->msgn = 0;
    if ((t->action & ~TA_CGROUP) == TN_MESSAGE) { /* `m N text`: sequence 0, pid 0, the text trimmed */
        if (!t->pdu_len) return AS_NOTHING;
        const char *m = (const char *)t->pdu;
        size_t a = 0, n = strnlen(m, t->pdu_len);
        if (memchr(m, '\n', n)) return AS_TEXT;
        while (a < n && is_ws(m[a])) a++;
        while (n > a && is_ws(m[n - 1])) n--;
        rwbs[0] = 'N';
        rwbs[1] = 0;
        v->seq = 0; v->pid = 0; v->act = "m"; v->actn = 1; v->rwbs = rwbs; v->rwbsn = 1;
        v->msg = m + a; v->msgn = n - a;
        return AS_EVENT;
    }
    const action_t *k = action_of(kept, t);
    const char *act = k->act;
    if (!act) return AS_NOTHING;
    char a = act[0];
    if (t->seq > INT32_MAX || (k->pc && (a == 'R' || a == 'C' || a == 'D' || a == 'I' || a == 'Q' || a == 'B')))
        return AS_TEXT;
    memcpy(rwbs, k->rwbs, 8);
    size_t rn = k->rn;
    if (rn > 6 || (t->cat2 && rwbs[rwbs[0] == 'F' ? 2 : 1] == '?')) return AS_TEXT; /* letters A-Z only */
    v->seq = t->seq; v->pid = t->pid; v->act = act; v->actn = act[1] ? 2 : 1; v->rwbs = rwbs; v->rwbsn = rn;
    uint32_t nsect = t->bytes >> 9;
    const uint8_t *pdu = t->pdu;
    int named = 1;
    if (t->sector >= TEXT_NUMBER_MAX && a != 'P' && a != 'U') return AS_TEXT;
    switch (a) {
    case 'R': case 'C': /* `sector [+ n] [error]` */
        v->sector = (int64_t)t->sector;
        if (nsect) v->nsect = nsect;
        v->err = t->error;
        named = 0;
        break;
    case 'D': case 'I': case 'Q': case 'B': case 'M': case 'F': case 'G': case 'S': /* `[sector + n] [comm]` */
        if (nsect) { v->sector = (int64_t)t->sector; v->nsect = nsect; }
        break;
    case 'P': break; /* `[comm]` */
    case 'U': v->depth = t->pdu_len >= 8 ? (uint32_t)be64(pdu) : 0; break; /* `[comm] depth` */
    case 'A': { /* `sector + n <- (maj,min) from_sector`, on the device the payload names */
        uint32_t device = 0, from = 0;
        uint64_t from_sector = 0;
        if (t->pdu_len >= 16) { from = be32(pdu); device = be32(pdu + 4); from_sector = be64(pdu + 8); }
        if (from_sector >= TEXT_NUMBER_MAX) return AS_TEXT;
        v->major = (int32_t)(device >> 20); v->minor = (int32_t)(device & 0xfffff);
        v->sector = (int64_t)t->sector; v->nsect = nsect;
        v->fmaj = (int32_t)(from >> 20); v->fmin = (int32_t)(from & 0xfffff); v->fsec = (int64_t)from_sector;
        named = 0;
        break;
    }
    case 'X': /* `sector / split_sector [comm]` */
        v->sector = (int64_t)t->sector;
        v->ssec = t->pdu_len >= 8 ? (uint32_t)be64(pdu) : 0;
        break;
    }
    if (named) {
        const Name *name = find_name(names, t->pid);
        if (!name->clean) return AS_TEXT;
        v->comm = name->comm; v->commn = name->len;
    }
    return AS_EVENT;
}

#endif
