/* linetable_check: checks py_linetable_line against CPython's own co_lines() for every code unit
 * of many real code objects. Input is the text written by tests/tools/dump_linetables.py:
 *
 *     # scry-linetables 1 <python version>
 *     <firstlineno> <code units> <co_linetable hex or -> <line,line,... or -> <name>
 *     ...
 *     # end <count>
 *
 * Prints the first 20 mismatches and "linetable: N code objects, M instructions checked, K
 * mismatches"; exits 1 on any mismatch or on malformed input (a truncated dump must not pass). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/linetable.h"

#define MAX_SHOWN 20

struct stats {
    long objects, units, mismatches;
};

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Splits s at the next space; returns the token (NUL-terminated in place) or NULL. */
static char *next_field(char **s)
{
    char *p = *s;
    if (!p || !*p)
        return NULL;
    char *sp = strchr(p, ' ');
    if (sp) {
        *sp = 0;
        *s = sp + 1;
    } else {
        *s = NULL;
    }
    return p;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void mismatch(struct stats *st, const char *name, int64_t unit, int got, long want)
{
    st->mismatches++;
    if (st->mismatches <= MAX_SHOWN)
        printf("mismatch: %s unit %" PRId64 ": got %d, want %ld\n", name, unit, got, want);
    else if (st->mismatches == MAX_SHOWN + 1)
        printf("(further mismatches not shown)\n");
}

/* Checks one record line; returns 0, or -1 when the line is malformed. */
static int check_record(char *line, struct stats *st, uint8_t **tab, size_t *tabcap)
{
    char *rest = line;
    char *f_first = next_field(&rest), *f_units = next_field(&rest);
    char *f_hex = next_field(&rest), *f_lines = next_field(&rest);
    const char *name = rest && *rest ? rest : "?";
    long first, nunits;
    if (!f_lines || parse_long(f_first, -1000000000L, 1000000000L, &first) ||
        parse_long(f_units, 0, 100000000L, &nunits))
        return -1;

    size_t hexlen = strcmp(f_hex, "-") == 0 ? 0 : strlen(f_hex);
    if (hexlen % 2)
        return -1;
    size_t len = hexlen / 2;
    if (len > *tabcap) {
        uint8_t *nt = realloc(*tab, len);
        if (!nt)
            return -1;
        *tab = nt;
        *tabcap = len;
    }
    for (size_t i = 0; i < len; i++) {
        int hi = hexval(f_hex[2 * i]), lo = hexval(f_hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        (*tab)[i] = (uint8_t)(hi << 4 | lo);
    }
    /* Exact-size copy so that AddressSanitizer catches a decoder reading past the table. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        return -1;
    if (len)
        memcpy(exact, *tab, len);

    char *lp = strcmp(f_lines, "-") == 0 ? NULL : f_lines;
    long u = 0;
    int rc = 0;
    while (lp && *lp) {
        char *end;
        errno = 0;
        long want = strtol(lp, &end, 10);
        if (errno || end == lp || (*end && *end != ',') || want < -1 || want > INT32_MAX ||
            u >= nunits) {
            rc = -1;
            goto out;
        }
        int got = py_linetable_line(exact, len, (int)first, u);
        if (got != want)
            mismatch(st, name, u, got, want);
        st->units++;
        u++;
        lp = *end ? end + 1 : end;
    }
    if (u != nunits) {
        rc = -1;
        goto out;
    }
    /* The header's two edges: a frame not yet started, and a unit the table does not cover. */
    int got = py_linetable_line(exact, len, (int)first, -1);
    if (got != first)
        mismatch(st, name, -1, got, first);
    got = py_linetable_line(exact, len, (int)first, nunits);
    if (got != -1)
        mismatch(st, name, nunits, got, -1);
    st->objects++;
out:
    free(exact);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DUMP.txt   (written by tests/tools/dump_linetables.py)\n",
                argv[0]);
        return 2;
    }
    FILE *f = strcmp(argv[1], "-") == 0 ? stdin : fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "linetable_check: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    struct stats st = {0, 0, 0};
    char *line = NULL;
    size_t cap = 0;
    uint8_t *tab = NULL;
    size_t tabcap = 0;
    long lineno = 0, declared_end = -1;
    int malformed = 0;
    char version[64] = "?";
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = 0;
        if (lineno == 1) {
            if (sscanf(line, "# scry-linetables 1 %63s", version) != 1) {
                fprintf(stderr, "linetable_check: %s: not a dump_linetables.py file\n", argv[1]);
                malformed = 1;
                break;
            }
            continue;
        }
        if (declared_end >= 0) {
            fprintf(stderr, "linetable_check: %s:%ld: data after the end line\n", argv[1], lineno);
            malformed = 1;
            break;
        }
        if (strncmp(line, "# end ", 6) == 0) {
            if (parse_long(line + 6, 0, 1000000000L, &declared_end)) {
                malformed = 1;
                break;
            }
            continue;
        }
        if (check_record(line, &st, &tab, &tabcap)) {
            fprintf(stderr, "linetable_check: %s:%ld: malformed record\n", argv[1], lineno);
            malformed = 1;
            break;
        }
    }
    if (!malformed && declared_end < 0) {
        fprintf(stderr, "linetable_check: %s: truncated (no end line)\n", argv[1]);
        malformed = 1;
    } else if (!malformed && declared_end != st.objects) {
        fprintf(stderr, "linetable_check: %s: end line says %ld code objects, read %ld\n",
                argv[1], declared_end, st.objects);
        malformed = 1;
    }
    if (f != stdin)
        fclose(f);
    free(line);
    free(tab);
    printf("linetable: %ld code objects, %ld instructions checked, %ld mismatches (python %s)\n",
           st.objects, st.units, st.mismatches, version);
    if (fflush(stdout) != 0)
        return 1;
    return st.mismatches || malformed ? 1 : 0;
}
