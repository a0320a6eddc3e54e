/* CPython 3.11+ location table decoder (format: CPython's Objects/locations.md; summary in
 * shared/reference/cpython-internals.md section 3.5). Entries cover consecutive runs of code
 * units; each starts with a byte whose bit 7 is set, carrying the entry kind and run length. */
#include "linetable.h"

#include <stdbool.h>

/* A tiny bounded reader; the shared cursor is not used so this stays usable from the agent's
 * signal handler with nothing but the stack. */
struct lt_reader {
    const uint8_t *p;
    size_t len, off;
    bool bad;
};

static uint8_t lt_byte(struct lt_reader *r)
{
    if (r->off >= r->len) {
        r->bad = true;
        return 0;
    }
    return r->p[r->off++];
}

static uint32_t lt_varint(struct lt_reader *r)
{
    uint32_t v = 0;
    for (unsigned shift = 0; shift <= 30; shift += 6) {
        uint8_t b = lt_byte(r);
        v |= (uint32_t)(b & 63) << shift;
        if (!(b & 64) || r->bad)
            return v;
    }
    r->bad = true;
    return 0;
}

static int32_t lt_svarint(struct lt_reader *r)
{
    uint32_t u = lt_varint(r);
    return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/* carry: a unit without a location takes the line of the last entry with one before it (the
 * first line before any), as a frame resting there still shows the line it was on. */
static int decode(const uint8_t *table, size_t len, int firstlineno, int64_t unit, bool carry)
{
    if (unit < 0)
        return firstlineno;
    struct lt_reader r = {table, table ? len : 0, 0, false};
    int64_t addr = 0;
    int64_t line = firstlineno;
    while (r.off < r.len) {
        uint8_t first = lt_byte(&r);
        if (!(first & 0x80))
            return -1; /* lost sync: not the start of an entry */
        int code = (first >> 3) & 15;
        int64_t units = (first & 7) + 1;
        bool has_line = true;
        switch (code) {
        case 15: /* no location */
            has_line = false;
            break;
        case 14: /* long form: line delta, end line delta, column, end column */
            line += lt_svarint(&r);
            lt_varint(&r);
            lt_varint(&r);
            lt_varint(&r);
            break;
        case 13: /* no column information */
            line += lt_svarint(&r);
            break;
        case 10:
        case 11:
        case 12: /* one-line form: line delta in the code, then column and end column */
            line += code - 10;
            lt_byte(&r);
            lt_byte(&r);
            break;
        default: /* short form: same line, one byte of columns */
            lt_byte(&r);
            break;
        }
        if (r.bad)
            return -1;
        if (unit < addr + units)
            return (has_line || carry) && line >= 0 && line <= INT32_MAX ? (int)line : -1;
        addr += units;
    }
    return -1;
}

int py_linetable_line(const uint8_t *table, size_t len, int firstlineno, int64_t unit)
{
    return decode(table, len, firstlineno, unit, false);
}

int py_linetable_frame_line(const uint8_t *table, size_t len, int firstlineno, int64_t unit)
{
    int line = decode(table, len, firstlineno, unit, true);
    return line == 0 ? firstlineno : line; /* 3.12+: the RESUME that opens a module's code */
}
