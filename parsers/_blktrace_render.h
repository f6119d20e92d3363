/*
 * blktrace records written as the text lines blkparse's default format prints for them (process_default,
 * handle_notify; blkparse 1.2, read to learn, not copied), an unknown name as "(null)". Included by
 * parsers/_blktrace.c (whole captures as text) and parsers/_blkparse.c (a record the native reader hands to the
 * text reader), after _blktrace_records.h.
 */
#ifndef STALLSCOPE_BLKTRACE_RENDER_H
#define STALLSCOPE_BLKTRACE_RENDER_H

#define BT_MARGIN (80 << 10) /* the longest line: a message of 64 KiB plus its header */

static char *put_digits(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

/* %<width>lld, %-<width>lld */
static char *put_int(char *p, int64_t v, int width, int left) {
    char tmp[24], *e = tmp;
    if (v < 0) { *e++ = '-'; e = put_digits(e, (uint64_t)0 - (uint64_t)v); }
    else e = put_digits(e, (uint64_t)v);
    int n = (int)(e - tmp);
    if (!left) for (; n < width; width--) *p++ = ' ';
    memcpy(p, tmp, (size_t)(e - tmp));
    p += e - tmp;
    if (left) for (; n < width; n++) *p++ = ' ';
    return p;
}

static char *put_uint(char *p, uint64_t v, int width) {
    char tmp[24];
    char *e = put_digits(tmp, v);
    for (int n = (int)(e - tmp); n < width; n++) *p++ = ' ';
    memcpy(p, tmp, (size_t)(e - tmp));
    return p + (e - tmp);
}

static char *put_str(char *p, const char *s, int width) {
    size_t n = strlen(s);
    for (int k = (int)n; k < width; k++) *p++ = ' ';
    memcpy(p, s, n);
    return p + n;
}

/* the RWBS letters of a record into rwbs (8 bytes), NUL-terminated: their number */
static size_t fill_rwbs(char *rwbs, const Rec *t) {
    uint32_t a = t->action;
    int i = 0;
    if (a & TC_ACT(TC_FLUSH)) rwbs[i++] = 'F';
    if (a & TC_ACT(TC_DISCARD)) rwbs[i++] = 'D';
    else if (a & TC_ACT(TC_WRITE)) rwbs[i++] = 'W';
    else if (t->bytes) rwbs[i++] = 'R';
    else if (t->cat2) {  /* version 8: zone append, reset, reset all, finish, open, close */
        static const char kinds[] = "?ARXFOC";
        int k = 1;
        while (k < 7 && !(t->cat2 & (1u << k))) k++;
        rwbs[i++] = 'Z';
        rwbs[i++] = k < 7 ? kinds[k] : '?';
    } else rwbs[i++] = 'N';
    if (a & TC_ACT(TC_FUA)) rwbs[i++] = 'F';
    if (a & TC_ACT(TC_AHEAD)) rwbs[i++] = 'A';
    if (a & TC_ACT(TC_SYNC)) rwbs[i++] = 'S';
    if (a & TC_ACT(TC_META)) rwbs[i++] = 'M';
    rwbs[i] = 0;
    return (size_t)i;
}

static char *put_time(char *p, uint64_t rel) {
    p = put_int(p, (int32_t)(uint32_t)(rel / 1000000000ull), 5, 0);
    *p++ = '.';
    uint64_t ns = rel % 1000000000ull;
    for (int k = 8; k >= 0; k--) { p[k] = (char)('0' + ns % 10); ns /= 10; }
    return p + 9;
}

static char *put_header(char *p, uint32_t device, uint32_t cpu, const char *seq, uint32_t seqv, uint64_t rel,
                        uint32_t pid, const char *cg, const char *act, const char *rwbs) {
    p = put_int(p, device >> 20, 3, 0);
    *p++ = ',';
    p = put_int(p, device & 0xfffff, 3, 1);
    *p++ = ' ';
    p = put_int(p, (int32_t)cpu, 2, 0);
    *p++ = ' ';
    p = seq ? put_str(p, seq, 8) : put_int(p, (int32_t)seqv, 8, 0);
    *p++ = ' ';
    p = put_time(p, rel);
    *p++ = ' ';
    p = put_uint(p, pid, 5);
    *p++ = ' ';
    if (cg) { size_t n = strlen(cg); memcpy(p, cg, n); p += n; }
    p = put_str(p, act, 2);
    *p++ = ' ';
    p = put_str(p, rwbs, 3);
    *p++ = ' ';
    return p;
}

static char *put_pdu_hex(char *p, const uint8_t *b, size_t n) {  /* blkparse's dump_pdu, capped at ~4 KiB */
    static const char hex[] = "0123456789abcdef";
    char *start = p;
    for (size_t i = 0; i < n && p - start < 4000; i++) {
        if (i) *p++ = ' ';
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
        if (!b[i]) {
            size_t k = i;
            while (k < n && !b[k]) k++;
            if (k == n) { memcpy(p, " ..", 3); p += 3; break; }
        }
    }
    return p;
}

/* The action's letters blkparse prints for a record that is not a message (NULL: it prints none: no category, an
 * unknown action); *pc: a passthrough (SCSI) record, *code: the action's number. */
static const char *record_action(const Rec *t, int *pc, uint32_t *code) {
    if (!(t->action & 0xffff0000u) && !t->cat2) return NULL;  /* no category: blkparse's act_mask lets it by */
    *code = (t->action & 0xffff) & ~TA_CGROUP;
    *pc = (t->action & TC_ACT(TC_PC)) != 0;
    if (*pc) {
        switch (*code) {
        case 1: return "Q"; case 4: return "G"; case 5: return "S"; case 6: return "R"; case 7: return "D";
        case 8: return "C"; case 12: return "I";
        }
        return NULL;
    }
    switch (*code) {
    case 1: return "Q"; case 2: return "M"; case 3: return "F"; case 4: return "G"; case 5: return "S";
    case 6: return "R"; case 7: return "D"; case 8: return "C"; case 9: return "P"; case 10: return "U";
    case 11: return "UT"; case 12: return "I"; case 13: return "X"; case 14: return "B"; case 15: return "A";
    }
    return NULL;
}

/* One record's line at p (or none: left out as blkparse leaves it out), its time `rel` from the capture's first.
 * Returns the end, or NULL for none. */
static char *render_record(names_t *names, char *p, const Rec *t, uint64_t rel) {
    const uint8_t *pdu = t->pdu;
    size_t pdu_len = t->pdu_len;
    int cgroup = (t->action & TA_CGROUP) != 0;
    char cg[24] = "";
    if (cgroup && pdu_len >= 8) {
        snprintf(cg, sizeof cg, "%x,%x ", rd32(pdu, t->swap), rd32(pdu + 4, t->swap));
        pdu += 8;
        pdu_len -= 8;
    } else if (cgroup) cgroup = 0;
    if ((t->action & ~TA_CGROUP) == TN_MESSAGE) {
        if (!pdu_len) return NULL;
        p = put_header(p, t->device, t->cpu, "0", 0, rel, 0, cgroup ? cg : NULL, "m", "N");
        size_t k = 0;
        while (k < pdu_len && pdu[k]) k++;
        memcpy(p, pdu, k);
        p += k;
        *p++ = '\n';
        return p;
    }
    int pc;
    uint32_t code;
    const char *act = record_action(t, &pc, &code);
    if (!act) return NULL;
    /* the payloads blkparse shows: only the records it passes them with (log_pc: PC D C I) */
    int with_pdu = pc && (code == 7 || code == 8 || code == 12);
    char rwbs[8];
    fill_rwbs(rwbs, t);
    uint32_t device = t->device;
    uint32_t from = 0;
    uint64_t from_sector = 0;
    if (act[0] == 'A') {
        if (pdu_len >= 16) { from = be32(pdu); device = be32(pdu + 4); from_sector = be64(pdu + 8); }
        else device = 0;
    }
    uint32_t nsect = t->bytes >> 9;
    p = put_header(p, device, t->cpu, NULL, t->seq, rel, t->pid, NULL, act, rwbs);
    const char *name = find_name(names, t->pid)->comm;
    switch (act[0]) {
    case 'R': case 'C':
        if (pc) {
            if (with_pdu && pdu_len) { *p++ = '('; p = put_pdu_hex(p, pdu, pdu_len); *p++ = ')'; *p++ = ' '; }
        } else {
            p = put_digits(p, t->sector);
            if (nsect) { memcpy(p, " + ", 3); p = put_digits(p + 3, nsect); }
            *p++ = ' ';
        }
        *p++ = '[';
        p = put_int(p, t->error, 0, 0);
        *p++ = ']';
        break;
    case 'D': case 'I': case 'Q': case 'B':
        if (pc) {
            p = put_digits(p, t->bytes);
            *p++ = ' ';
            if (with_pdu && pdu_len) { *p++ = '('; p = put_pdu_hex(p, pdu, pdu_len); *p++ = ')'; *p++ = ' '; }
        } else if (nsect) {
            p = put_digits(p, t->sector);
            memcpy(p, " + ", 3);
            p = put_digits(p + 3, nsect);
            *p++ = ' ';
        }
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'M': case 'F': case 'G': case 'S':
        if (nsect) {
            p = put_digits(p, t->sector);
            memcpy(p, " + ", 3);
            p = put_digits(p + 3, nsect);
            *p++ = ' ';
        }
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'P':
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    case 'U':
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']'; *p++ = ' ';
        p = put_digits(p, pdu_len >= 8 ? (uint32_t)be64(pdu) : 0);
        break;
    case 'A':
        p = put_digits(p, t->sector);
        memcpy(p, " + ", 3);
        p = put_digits(p + 3, nsect);
        memcpy(p, " <- (", 5);
        p = put_int(p + 5, from >> 20, 0, 0);
        *p++ = ',';
        p = put_int(p, from & 0xfffff, 0, 0);
        *p++ = ')';
        *p++ = ' ';
        p = put_digits(p, from_sector);
        break;
    case 'X':
        p = put_digits(p, t->sector);
        memcpy(p, " / ", 3);
        p = put_digits(p + 3, pdu_len >= 8 ? (uint32_t)be64(pdu) : 0);
        *p++ = ' ';
        *p++ = '['; p = put_str(p, name, 0); *p++ = ']';
        break;
    }
    *p++ = '\n';
    return p;
}

#endif
