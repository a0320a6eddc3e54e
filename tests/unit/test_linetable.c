/* Unit tests for the CPython 3.11+ location-table decoder on hand-built tables, one entry kind at a
 * time, plus a real table from python3.12. Expected lines are worked out from the format
 * (CPython's Objects/locations.md; shared/reference/cpython-internals.md section 3.5) and were
 * cross-checked by loading the same bytes into a code object (code.replace(co_linetable=...)) and
 * reading co_lines() under 3.11, 3.12 and 3.13. Every table is passed in a heap block of exactly
 * its size, so a sanitizer build catches any read past its end. */
#include <stdint.h>
#include <stdlib.h>

#include "cpython/linetable.h"
#include "testlib.h"

/* Entry start byte: bit 7, then the 4-bit kind, then the run length minus one (1-8 code units). */
#define E(code, units) (uint8_t)(0x80 | ((code) << 3) | ((units) - 1))

static uint8_t *copy_exact(const uint8_t *t, size_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    if (p && len)
        memcpy(p, t, len);
    return p;
}

static int line_at(const uint8_t *t, size_t len, int first, int64_t unit)
{
    uint8_t *p = copy_exact(t, len);
    if (!p)
        return -2;
    int r = py_linetable_line(p, len, first, unit);
    free(p);
    return r;
}

/* One table holding every entry kind, firstlineno 100. Byte offsets of entry ends and the code
 * units each covers are in the comments; `all_kinds_lines` holds the line of each code unit. */
static const uint8_t all_kinds[] = {
    E(0, 1), 0x00,                         /* short 0: same line        unit 0       -> 100 */
    E(13, 2), 0x0a,                        /* no column, svarint +5     units 1-2    -> 105 */
    E(5, 3), 0x12,                         /* short 5                   units 3-5    -> 105 */
    E(10, 1), 0x04, 0x09,                  /* one-line +0, cols 4..9    unit 6       -> 105 */
    E(11, 2), 0x00, 0x03,                  /* one-line +1               units 7-8    -> 106 */
    E(12, 1), 0x01, 0x02,                  /* one-line +2               unit 9       -> 108 */
    E(15, 4),                              /* no location               units 10-13  -> -1  */
    E(9, 1), 0x7f,                         /* short 9: line unchanged by 15  unit 14 -> 108 */
    E(14, 8), 0x0f, 0x02, 0x06, 0x0a,      /* long, svarint -7, endline +2, cols  15-22 -> 101 */
    E(13, 1), 0x03,                        /* no column, svarint -1     unit 23      -> 100 */
    E(14, 1), 0x58, 0x09, 0x00, 0x01, 0x02, /* long, svarint +300 in two groups  24 -> 400 */
    E(1, 1), 0x00, E(2, 1), 0x00, E(3, 1), 0x00, E(4, 1), 0x00, /* short 1-4   25-28 -> 400 */
    E(6, 1), 0x00, E(7, 1), 0x00, E(8, 1), 0x00,                /* short 6-8   29-31 -> 400 */
};
static const int all_kinds_lines[32] = {
    100, 105, 105, 105, 105, 105, 105, 106, 106, 108, -1, -1, -1, -1, 108, 101,
    101, 101, 101, 101, 101, 101, 101, 100, 400, 400, 400, 400, 400, 400, 400, 400,
};
/* For each entry: the byte offset just past it and the first code unit after it. */
static const struct {
    size_t byte_end, unit_end;
} all_kinds_entries[] = {
    {2, 1},   {4, 3},   {6, 6},   {9, 7},   {12, 9},  {15, 10}, {16, 14}, {18, 15}, {23, 23},
    {25, 24}, {31, 25}, {33, 26}, {35, 27}, {37, 28}, {39, 29}, {41, 30}, {43, 31}, {45, 32},
};

static void test_every_entry_kind(void)
{
    CHECK_EQ(sizeof(all_kinds), 45);
    for (int u = 0; u < 32; u++) {
        int got = line_at(all_kinds, sizeof(all_kinds), 100, u);
        if (got != all_kinds_lines[u])
            tl_fail(__FILE__, __LINE__, "unit %d: got %d, want %d", u, got, all_kinds_lines[u]);
    }
}

static void test_short_forms_keep_line(void)
{
    /* Each short code 0-9 alone after a line change: the line must not move, and the column byte
     * (which may look like anything below 0x80) must be skipped. */
    for (int code = 0; code <= 9; code++) {
        const uint8_t t[] = {E(13, 1), 0x06 /* +3 */, E(code, 2), 0x7f, E(13, 1), 0x02 /* +1 */};
        CHECK_EQ(line_at(t, sizeof(t), 7, 0), 10);
        CHECK_EQ(line_at(t, sizeof(t), 7, 1), 10);
        CHECK_EQ(line_at(t, sizeof(t), 7, 2), 10);
        CHECK_EQ(line_at(t, sizeof(t), 7, 3), 11);
        CHECK_EQ(line_at(t, sizeof(t), 7, 4), -1);
    }
}

static void test_run_lengths(void)
{
    /* Lengths 1 and 8, the extremes of the 3-bit field. */
    const uint8_t t[] = {E(13, 8), 0x00, E(13, 1), 0x02, E(10, 8), 0x00, 0x00};
    for (int u = 0; u < 8; u++)
        CHECK_EQ(line_at(t, sizeof(t), 50, u), 50);
    CHECK_EQ(line_at(t, sizeof(t), 50, 8), 51);
    for (int u = 9; u < 17; u++)
        CHECK_EQ(line_at(t, sizeof(t), 50, u), 51);
    CHECK_EQ(line_at(t, sizeof(t), 50, 17), -1);
}

static void test_long_form_varints(void)
{
    /* Long form whose end-line and column varints take several groups: they must be skipped
     * whole, or the next entry would be misread. */
    const uint8_t t[] = {
        E(14, 1), 0x41, 0x01 /* svarint u=65 -> -32 */, 0x7f, 0x7f, 0x01 /* endline */,
        0x50, 0x02 /* col */, 0x45, 0x03 /* endcol */, E(13, 1), 0x04 /* +2 */,
    };
    CHECK_EQ(line_at(t, sizeof(t), 1000, 0), 968);
    CHECK_EQ(line_at(t, sizeof(t), 1000, 1), 970);
    CHECK_EQ(line_at(t, sizeof(t), 1000, 2), -1);
}

static void test_no_location(void)
{
    const uint8_t t[] = {E(15, 1), E(15, 8), E(0, 1), 0x00};
    CHECK_EQ(line_at(t, sizeof(t), 3, 0), -1);
    for (int u = 1; u < 9; u++)
        CHECK_EQ(line_at(t, sizeof(t), 3, u), -1);
    CHECK_EQ(line_at(t, sizeof(t), 3, 9), 3);
}

static void test_negative_unit_and_past_end(void)
{
    CHECK_EQ(line_at(all_kinds, sizeof(all_kinds), 100, -1), 100);
    CHECK_EQ(line_at(all_kinds, sizeof(all_kinds), 100, INT64_MIN), 100);
    CHECK_EQ(line_at(all_kinds, sizeof(all_kinds), 100, 32), -1);
    CHECK_EQ(line_at(all_kinds, sizeof(all_kinds), 100, 33), -1);
    CHECK_EQ(line_at(all_kinds, sizeof(all_kinds), 100, INT64_MAX), -1);
    /* An empty table: no line for any unit, firstlineno before the start. */
    CHECK_EQ(py_linetable_line(NULL, 0, 5, 0), -1);
    CHECK_EQ(py_linetable_line(NULL, 0, 5, -1), 5);
    CHECK_EQ(line_at(all_kinds, 0, 5, 0), -1);
}

static void test_truncated_tables(void)
{
    /* Every prefix of the table: units of entries wholly inside the prefix keep their line, all
     * others (including those of an entry cut in its payload) give -1. */
    for (size_t len = 0; len < sizeof(all_kinds); len++) {
        size_t covered = 0;
        for (size_t e = 0; e < sizeof(all_kinds_entries) / sizeof(all_kinds_entries[0]); e++)
            if (all_kinds_entries[e].byte_end <= len)
                covered = all_kinds_entries[e].unit_end;
        for (int u = 0; u < 34; u++) {
            int want = (size_t)u < covered ? all_kinds_lines[u] : -1;
            int got = line_at(all_kinds, len, 100, u);
            if (got != want)
                tl_fail(__FILE__, __LINE__, "prefix %zu unit %d: got %d, want %d", len, u, got,
                        want);
        }
        CHECK_EQ(line_at(all_kinds, len, 100, -1), 100);
    }
}

static void test_malformed(void)
{
    /* A continuation byte where an entry should start: the decoder lost sync. */
    const uint8_t stray[] = {E(0, 1), 0x00, 0x05, E(0, 1), 0x00};
    CHECK_EQ(line_at(stray, sizeof(stray), 9, 0), 9);
    CHECK_EQ(line_at(stray, sizeof(stray), 9, 1), -1);
    /* A varint that never ends within 32 bits. */
    const uint8_t endless[] = {E(13, 1), 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
    CHECK_EQ(line_at(endless, sizeof(endless), 9, 0), -1);
    /* A varint cut by the end of the table. */
    const uint8_t cut[] = {E(13, 1), 0x41};
    CHECK_EQ(line_at(cut, sizeof(cut), 9, 0), -1);
    /* A line pushed out of int range by deltas is no line, not a wrapped number. */
    const uint8_t big[] = {E(14, 1), 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03 /* +(2^31-1) */, 0, 0, 0};
    CHECK_EQ(line_at(big, sizeof(big), 10, 0), -1);
    CHECK_EQ(line_at(big, sizeof(big), 0, 0), INT32_MAX);
    /* Negative lines from deltas below zero. */
    const uint8_t below[] = {E(13, 1), 0x0b /* -5 */};
    CHECK_EQ(line_at(below, sizeof(below), 2, 0), -1);
}

/* From python3.12.1:
 *     def f(n):                   # line 1
 *         total = 0
 *         for i in range(n):
 *             if i % 3 == 0:
 *                 total += i
 *             else:
 *                 total -= 1
 *         try:
 *             x = 1 / n
 *         except ZeroDivisionError:
 *             x = None
 *         return (total,
 *                 x)
 * f.__code__.co_linetable (136 bytes of co_code, 68 code units) and the line of each code unit
 * from co_lines(), None written as -1. */
static const uint8_t real312[] = {
    0x80, 0x00, 0xd8, 0x0c, 0x0d, 0x80, 0x45, 0xdc, 0x0d, 0x12, 0x90, 0x31, 0x8b, 0x58, 0xf2, 0x00,
    0x04, 0x05, 0x17, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x89, 0x35, 0x90, 0x41, 0x8a, 0x3a,
    0xd8, 0x0c, 0x11, 0x90, 0x51, 0x89, 0x4a, 0x89, 0x45, 0xe0, 0x0c, 0x11, 0x90, 0x51, 0x89, 0x4a,
    0x89, 0x45, 0xf0, 0x09, 0x04, 0x05, 0x17, 0xf0, 0x0a, 0x03, 0x05, 0x11, 0xd8, 0x0c, 0x0d, 0x90,
    0x01, 0x89, 0x45, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x12, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01,
    0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf8, 0xf4, 0x05, 0x00, 0x0c, 0x1d, 0xf2, 0x00, 0x01,
    0x05, 0x11, 0xd8, 0x0c, 0x10, 0x89, 0x01, 0xd8, 0x0c, 0x11, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01,
    0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0, 0x05, 0x01, 0x05, 0x11, 0xfa,
};
static const int real312_lines[68] = {
    1,  2,  2,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  3,  4,  4,  4,  4,  4,  4,
    4,  4,  5,  5,  5,  5,  5,  5,  7,  7,  7,  7,  7,  7,  3,  8,  9,  9,  9,  9,  9,  12, 13,
    12, 12, -1, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 12, 13, 12, 12, 10, -1, -1, -1,
};

static void test_real_python312_table(void)
{
    CHECK_EQ(sizeof(real312), 125);
    for (int u = 0; u < 68; u++) {
        int got = line_at(real312, sizeof(real312), 1, u);
        if (got != real312_lines[u])
            tl_fail(__FILE__, __LINE__, "unit %d: got %d, want %d", u, got, real312_lines[u]);
    }
    CHECK_EQ(line_at(real312, sizeof(real312), 1, 68), -1);
    CHECK_EQ(line_at(real312, sizeof(real312), 1, -1), 1);
    /* The same code moved down the file: every line shifts with firstlineno. */
    CHECK_EQ(line_at(real312, sizeof(real312), 501, 0), 501);
    CHECK_EQ(line_at(real312, sizeof(real312), 501, 45), 513);
    CHECK_EQ(line_at(real312, sizeof(real312), 501, 48), -1);
}

static int frame_line_at(const uint8_t *t, size_t len, int first, int64_t unit)
{
    uint8_t *p = copy_exact(t, len);
    if (!p)
        return -2;
    int r = py_linetable_frame_line(p, len, first, unit);
    free(p);
    return r;
}

/* Issue 27 item 6: the line a sampled frame is on. An instruction without a location is on the
 * line of the last one before it that has one, on firstlineno when none does (3.11's MAKE_CELL
 * and COPY_FREE_VARS before RESUME); 3.12+'s line 0 of a module's RESUME is firstlineno; never
 * line 0 or "no line" for a well-formed table. */
static void test_frame_line(void)
{
    for (int u = 0; u < 32; u++) {
        int want = all_kinds_lines[u] >= 0 ? all_kinds_lines[u] : 108; /* units 10-13 carry */
        CHECK_EQ(frame_line_at(all_kinds, sizeof(all_kinds), 100, u), want);
    }
    CHECK_EQ(frame_line_at(all_kinds, sizeof(all_kinds), 100, -1), 100); /* not started */
    CHECK_EQ(frame_line_at(all_kinds, sizeof(all_kinds), 100, 32), -1);  /* past the end */
    /* def f(): a cell (MAKE_CELL, no location), RESUME on line 7, then line 8 (3.11 and 3.12). */
    static const uint8_t cell[] = {E(15, 1), E(13, 1), 0x00, E(13, 2), 0x02};
    CHECK_EQ(line_at(cell, sizeof(cell), 7, 0), -1);
    CHECK_EQ(frame_line_at(cell, sizeof(cell), 7, 0), 7);
    CHECK_EQ(frame_line_at(cell, sizeof(cell), 7, 1), 7);
    CHECK_EQ(frame_line_at(cell, sizeof(cell), 7, 2), 8);
    /* 3.11's `for x in xs: if x: n += 1` (line 4), then line 5: the JUMP_BACKWARD that closes
     * the loop has no location. */
    static const uint8_t loop[] = {E(13, 2), 0x00, E(13, 3), 0x04, E(13, 2), 0x02,
                                   E(15, 1), E(13, 2), 0x02};
    CHECK_EQ(line_at(loop, sizeof(loop), 1, 7), -1);
    CHECK_EQ(frame_line_at(loop, sizeof(loop), 1, 7), 4);
    CHECK_EQ(frame_line_at(loop, sizeof(loop), 1, 8), 5);
    /* A module's code on 3.12+: RESUME on line 0, then line 1. */
    static const uint8_t module[] = {E(13, 1), 0x03, E(13, 2), 0x02};
    CHECK_EQ(line_at(module, sizeof(module), 1, 0), 0);
    CHECK_EQ(frame_line_at(module, sizeof(module), 1, 0), 1);
    CHECK_EQ(frame_line_at(module, sizeof(module), 1, 1), 1);
    /* Malformed stays -1. */
    static const uint8_t lost[] = {0x01, 0x02};
    CHECK_EQ(frame_line_at(lost, sizeof(lost), 1, 0), -1);
}

static const struct tl_test tests[] = {
    TL(test_every_entry_kind),
    TL(test_short_forms_keep_line),
    TL(test_run_lengths),
    TL(test_long_form_varints),
    TL(test_no_location),
    TL(test_negative_unit_and_past_end),
    TL(test_truncated_tables),
    TL(test_malformed),
    TL(test_frame_line),
    TL(test_real_python312_table),
};
TL_MAIN(tests)
