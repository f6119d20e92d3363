/*
 * The file's kallsyms. libtracecmd hands its text to libtraceevent's tep_parse_kallsyms (through its PLT: this
 * definition takes the call), which reads each line with sscanf("%16llx %c %n%*s%n%*1[\t][%n%*s%n") and registers
 * each function (tep_register_function: a list item and copies of its name and module), then sorts them (qsort, a
 * stable merge sort in glibc, by address; the list holds them last registered first) on the first lookup: about half
 * this program's time on a sample's 10x capture. Here the lines of the usual shape (up to 16 hex digits, not "0x";
 * one type character; the name; a tab, '[' and a module, or nothing) are read by hand into a table of the same
 * functions, in the same order, which a resolver (tep_set_function_resolver) sorts as the library would (a stable
 * radix sort by address) and searches as it does (bsearch, func_bcmp's "at or past this one, before the next" over
 * the same array, its zero-address end included). From the first line of any other shape on, the library reads the
 * text, warnings and all, and the table's functions are registered with it first (no resolver). Included by
 * tracedat_records.c once.
 */
#ifndef STALLSCOPE_TRACEDAT_KALLSYMS_H
#define STALLSCOPE_TRACEDAT_KALLSYMS_H

typedef struct { char *func; unsigned long long addr; char *mod; } symbol_t; /* libtraceevent's func_map */
static symbol_t *symbols, *symbol_map; /* in the order read; sorted (a lookup made it: no more are added) */
static size_t nsymbols, symbols_cap;
static int symbols_library; /* the library holds the functions */

static signed char hex_values[256]; /* a character's value as a hex digit, -1: not one (a look-up: no branch between
                                      * digits and letters, which an address mixes at random) */
static void hex_values_init(void) {
    for (int c = 0; c < 256; c++)
        hex_values[c] = (signed char)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1);
}
static int hex_value(char c) { return hex_values[(unsigned char)c]; }
static int scanf_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); } /* isspace in the C locale */
/* the first scanf_space at or after q, or end: 8 bytes at a time while none is <= ' ' */
static char *to_space(char *q, const char *end) {
    for (;;) {
        while (q + 8 <= end) {
            uint64_t x;
            memcpy(&x, q, 8);
            if ((x - 0x2121212121212121ULL) & ~x & 0x8080808080808080ULL) break; /* a byte < 0x21 among them */
            q += 8;
        }
        while (q < end && (unsigned char)*q > ' ') q++;
        if (q >= end || scanf_space(*q)) return q;
        q++; /* a control character, not a space */
    }
}

static void symbols_to_library(struct tep_handle *tep) {
    for (size_t i = 0; i < nsymbols; i++) tep_register_function(tep, symbols[i].func, symbols[i].addr, symbols[i].mod);
    nsymbols = 0;
    symbols_library = 1;
    tep_reset_function_resolver(tep);
}

static int symbol_bcmp(const void *a, const void *b) { /* func_bcmp */
    const symbol_t *fa = a, *fb = b;
    if (fa->addr == fb->addr || (fa->addr > fb->addr && fa->addr < (fb + 1)->addr)) return 0;
    return fa->addr < fb->addr ? -1 : 1;
}

/* `from`, n functions (in the order read), as the library orders them: last read first, stably sorted by address
 * (an LSD radix sort, stable), into `to` (`tmp`: n more) */
static void sort_read_order(const symbol_t *from, size_t n, symbol_t *to, symbol_t *tmp) {
    for (size_t i = 0; i < n; i++) to[i] = from[n - 1 - i];
    symbol_t *src = to, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[((src[i].addr >> shift) & 0xff) + 1]++;
        int one_bucket = 0;
        for (int d = 1; d <= 256; d++) one_bucket |= count[d] == n;
        if (one_bucket) continue;
        for (int d = 1; d <= 256; d++) count[d] += count[d - 1];
        for (size_t i = 0; i < n; i++) dst[count[(src[i].addr >> shift) & 0xff]++] = src[i];
        symbol_t *t = src; src = dst; dst = t;
    }
    if (src != to) memcpy(to, src, n * sizeof *to);
}

/* the table as func_map_init leaves the library's: last read first, stably sorted by address, a zero entry after.
 * A kallsyms lists the kernel's functions in address order, then the modules' (in no order): the sorted head needs
 * no sort (each run of one address reversed), the rest is sorted, and the two are merged, the rest's first on a tie
 * (read later: first in the library's list) */
static symbol_t *sorted_symbols(void) {
    size_t n = nsymbols, head = n ? 1 : 0;
    while (head < n && symbols[head].addr >= symbols[head - 1].addr) head++;
    size_t rest = n - head;
    symbol_t *map = malloc((n + 1) * sizeof *map), *sorted = malloc((head + 2 * rest + 1) * sizeof *sorted);
    if (!map || !sorted) { free(map); free(sorted); return NULL; }
    symbol_t *a = sorted, *b = sorted + head, *tmp = b + rest;
    for (size_t i = 0; i < head;) { /* the head: ascending, a run of one address last read first */
        size_t j = i;
        while (j + 1 < head && symbols[j + 1].addr == symbols[i].addr) j++;
        for (size_t k = 0; k <= j - i; k++) a[i + k] = symbols[j - k];
        i = j + 1;
    }
    sort_read_order(symbols + head, rest, b, tmp);
    size_t i = 0, k = 0, m = 0;
    while (i < head && k < rest) map[m++] = b[k].addr <= a[i].addr ? b[k++] : a[i++];
    while (i < head) map[m++] = a[i++];
    while (k < rest) map[m++] = b[k++];
    free(sorted);
    map[n] = (symbol_t){NULL, 0, NULL};
    return map;
}

static char *resolve_function(void *priv, unsigned long long *addr, char **mod) {
    (void)priv;
    if (!symbol_map && !(symbol_map = sorted_symbols())) return NULL;
    symbol_t key = {NULL, *addr, NULL};
    symbol_t *f = bsearch(&key, symbol_map, nsymbols, sizeof *symbol_map, symbol_bcmp);
    if (!f) return NULL;
    *addr = f->addr;
    *mod = f->mod;
    return f->func;
}

/*
 * The library also finds functions by name: a print format's argument that is a word (an atom that does not start
 * with a digit, "jiffies" in writeback's) is the address of the first function of that name in its own list
 * (test_for_symbol, last registered first). The functions named by the atoms of the events' formats are therefore
 * registered with it too, in the order read (the first of a name stays the first), once the file is open; an argument
 * of a kind not known here puts every function in the library's hands.
 */
static const char **atoms;
static size_t natoms, atoms_cap;
static int collect_atoms(struct tep_print_arg *a, int depth) {
    for (; a; a = a->next) {
        if (depth > 64) return -1;
        switch (a->type) {
        case TEP_PRINT_NULL: case TEP_PRINT_FIELD: case TEP_PRINT_STRING: case TEP_PRINT_BSTRING:
        case TEP_PRINT_BITMASK: case TEP_PRINT_DYNAMIC_ARRAY_LEN: case TEP_PRINT_CPUMASK:
            break;
        case TEP_PRINT_ATOM:
            if (!a->atom.atom || (a->atom.atom[0] >= '0' && a->atom.atom[0] <= '9')) break;
            if (natoms == atoms_cap) {
                size_t cap = atoms_cap ? atoms_cap * 2 : 16;
                const char **grown = realloc(atoms, cap * sizeof *atoms);
                if (!grown) return -1;
                atoms = grown; atoms_cap = cap;
            }
            atoms[natoms++] = a->atom.atom;
            break;
        case TEP_PRINT_FLAGS: if (collect_atoms(a->flags.field, depth + 1)) return -1; break;
        case TEP_PRINT_SYMBOL: if (collect_atoms(a->symbol.field, depth + 1)) return -1; break;
        case TEP_PRINT_HEX: case TEP_PRINT_HEX_STR:
            if (collect_atoms(a->hex.field, depth + 1) || collect_atoms(a->hex.size, depth + 1)) return -1;
            break;
        case TEP_PRINT_INT_ARRAY:
            if (collect_atoms(a->int_array.field, depth + 1) || collect_atoms(a->int_array.count, depth + 1) ||
                collect_atoms(a->int_array.el_size, depth + 1)) return -1;
            break;
        case TEP_PRINT_TYPE: if (collect_atoms(a->typecast.item, depth + 1)) return -1; break;
        case TEP_PRINT_DYNAMIC_ARRAY: if (collect_atoms(a->dynarray.index, depth + 1)) return -1; break;
        case TEP_PRINT_OP:
            if (collect_atoms(a->op.left, depth + 1) || collect_atoms(a->op.right, depth + 1)) return -1;
            break;
        case TEP_PRINT_FUNC: if (collect_atoms(a->func.args, depth + 1)) return -1; break;
        default: return -1;
        }
    }
    return 0;
}
static void register_named_symbols(struct tep_handle *tep) {
    if (symbols_library || !nsymbols) return;
    int events = tep_get_events_count(tep);
    for (int i = 0; i < events; i++) {
        struct tep_event *ev = tep_get_event(tep, i);
        if (ev && collect_atoms(ev->print_fmt.args, 0)) { symbols_to_library(tep); return; }
    }
    for (size_t i = 0; i < nsymbols && natoms; i++)
        for (size_t k = 0; k < natoms; k++)
            if (symbols[i].func[0] == atoms[k][0] && !strcmp(symbols[i].func, atoms[k])) {
                tep_register_function(tep, symbols[i].func, symbols[i].addr, symbols[i].mod);
                break;
            }
}

int tep_parse_kallsyms(struct tep_handle *tep, const char *kallsyms) {
    static int (*library)(struct tep_handle *, const char *);
    if (!library) *(void **)&library = dlsym(RTLD_NEXT, "tep_parse_kallsyms");
    if (!library) return -1;
    if (symbols_library) return library(tep, kallsyms);
    char *copy = strdup(kallsyms); /* the table's names point into it: kept */
    hex_values_init();
    if (!copy) { symbols_to_library(tep); return library(tep, kallsyms); }
    char *p = copy;
    for (;;) {
        while (*p == '\n') p++; /* strtok_r's empty lines */
        if (!*p) break;
        char *line = p, *end = strchrnul(line, '\n');
        unsigned long long addr = 0;
        int digits = 0, v;
        if (line[0] == '0' && (line[1] == 'x' || line[1] == 'X')) goto library_reads;
        for (; digits < 16 && (v = hex_value(line[digits])) >= 0; digits++) addr = addr << 4 | (unsigned)v;
        if (!digits || hex_value(line[digits]) >= 0) goto library_reads;
        char *q = line + digits;
        while (q < end && scanf_space(*q)) q++;
        if (q == end) goto library_reads;
        char ch = *q++;
        while (q < end && scanf_space(*q)) q++;
        char *func = q;
        q = to_space(q, end);
        if (q == func) goto library_reads;
        char *func_end = q, *mod = NULL;
        if (q + 1 < end && q[0] == '\t' && q[1] == '[') {
            char *mod_start = q + 2, *m = mod_start;
            if (m < end && scanf_space(*m)) goto library_reads; /* %*s would skip it, the module would start with it */
            m = to_space(m, end);
            if (m > mod_start) { mod = mod_start; m[-1] = 0; } /* its last character (the ']') cut */
        }
        p = *end ? end + 1 : end;
        if (func[0] != '$' && ch != 'A' && ch != 'a') {
            *func_end = 0;
            if (symbol_map) continue; /* the library's sorted functions are not added to either */
            if (!symbols_library && nsymbols == symbols_cap) {
                size_t cap = symbols_cap ? symbols_cap * 2 : 4096;
                symbol_t *grown = realloc(symbols, cap * sizeof *symbols);
                if (grown) { symbols = grown; symbols_cap = cap; }
                else symbols_to_library(tep);
            }
            if (symbols_library) tep_register_function(tep, func, addr, mod);
            else symbols[nsymbols++] = (symbol_t){func, addr, mod};
        }
        continue;
    library_reads:
        symbols_to_library(tep);
        return library(tep, kallsyms + (line - copy));
    }
    if (!symbols_library && tep_set_function_resolver(tep, resolve_function, NULL)) symbols_to_library(tep);
    return 0;
}

#endif
