/* Unit tests for the bounds-checked cursor: every read past the end must fail, stay failed and
 * remember where it first failed, because parsers of untrusted bytes check only once per record. */
#include <stdint.h>

#include "common/cursor.h"
#include "testlib.h"

static void test_le_values(void)
{
    static const uint8_t b[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
                                0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0xfe,
                                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    CHECK_EQ(cur_u8(&c), 0x01);
    CHECK_EQ(cur_u16(&c), 0x0302);
    CHECK_EQ_U64(cur_u32(&c), 0x07060504u);
    CHECK_EQ_U64(cur_u64(&c), 0x0f0e0d0c0b0a0908ull);
    CHECK_EQ(c.off, 15);
    CHECK_EQ(cur_u16(&c), 0x1110);
    CHECK(cur_i64(&c) == -2);
    CHECK(cur_ok(&c));
    CHECK(cur_at_end(&c));
    CHECK_EQ(cur_remaining(&c), 0);
}

static void test_i64_negative(void)
{
    /* -2 little-endian, then INT64_MIN. */
    static const uint8_t b[] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    CHECK(cur_i64(&c) == -2);
    CHECK(cur_i64(&c) == INT64_MIN);
    CHECK(cur_at_end(&c));
}

static void test_high_bits(void)
{
    /* Guards against sign extension of the top byte through int promotion. */
    static const uint8_t b[] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x80, 0x00,
                                0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    CHECK_EQ(cur_u16(&c), 0xffff);
    CHECK_EQ_U64(cur_u32(&c), 0x8000ffffu);
    CHECK_EQ_U64(cur_u64(&c), 0x8000000000000000ull);
    CHECK(cur_ok(&c));
    CHECK_EQ(c.off, 14);
}

static void test_read_past_end_sticky(void)
{
    static const uint8_t b[] = {1, 2, 3, 4, 5, 6};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    CHECK_EQ(cur_u32(&c), 0x04030201);
    CHECK(cur_ok(&c));
    CHECK_EQ(cur_u32(&c), 0); /* only 2 left */
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 4);
    CHECK_EQ(c.off, 4); /* a failed read does not move */
    /* Sticky: a read that would fit now still fails and fail_off is kept. */
    CHECK_EQ(cur_u8(&c), 0);
    CHECK_EQ(cur_u16(&c), 0);
    CHECK(cur_bytes(&c, 1) == NULL);
    CHECK(cur_cstr(&c) == NULL);
    CHECK_EQ(cur_varint6(&c), 0);
    cur_seek(&c, 0);
    CHECK_EQ(cur_u8(&c), 0);
    CHECK_EQ(c.fail_off, 4);
    CHECK_EQ(cur_remaining(&c), 0);
    CHECK(!cur_at_end(&c));
}

static void test_u64_straddling_end(void)
{
    /* A u64 whose first half fits must still fail as one read at its own offset. */
    static const uint8_t b[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    cur_skip(&c, 4);
    CHECK_EQ_U64(cur_u64(&c), 0);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 4);
    CHECK_EQ(c.off, 4);
}

static void test_each_width_at_every_short_length(void)
{
    static const uint8_t b[8] = {0};
    for (size_t len = 0; len < 8; len++) {
        struct cursor c;
        cur_init(&c, b, len);
        (void)cur_u64(&c);
        CHECK(!cur_ok(&c));
        CHECK_EQ(c.fail_off, 0);
        if (len < 4) {
            cur_init(&c, b, len);
            (void)cur_u32(&c);
            CHECK(!cur_ok(&c));
        }
        if (len < 2) {
            cur_init(&c, b, len);
            (void)cur_u16(&c);
            CHECK(!cur_ok(&c));
        }
    }
    struct cursor c;
    cur_init(&c, b, 0);
    (void)cur_u8(&c);
    CHECK(!cur_ok(&c));
}

static void test_bytes_read_skip(void)
{
    static const uint8_t b[] = {10, 20, 30, 40, 50};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    const uint8_t *p = cur_bytes(&c, 2);
    CHECK(p == b);
    uint8_t out[4] = {0xaa, 0xaa, 0xaa, 0xaa};
    cur_read(&c, out, 2);
    CHECK_EQ(out[0], 30);
    CHECK_EQ(out[1], 40);
    CHECK_EQ(out[2], 0xaa);
    cur_read(&c, out, 4); /* fails: zero-filled */
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 4);
    CHECK_EQ(out[0], 0);
    CHECK_EQ(out[3], 0);

    cur_init(&c, b, sizeof(b));
    cur_skip(&c, 5);
    CHECK(cur_at_end(&c));
    cur_skip(&c, 1);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 5);

    /* A huge length must not wrap the bound check. */
    cur_init(&c, b, sizeof(b));
    cur_skip(&c, 1);
    CHECK(cur_bytes(&c, SIZE_MAX) == NULL);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 1);
}

static void test_seek_align(void)
{
    static const uint8_t b[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    cur_seek(&c, 16); /* the end is a valid position */
    CHECK(cur_at_end(&c));
    cur_seek(&c, 3);
    CHECK_EQ(cur_u8(&c), 3);
    cur_align(&c, 8);
    CHECK_EQ(c.off, 8);
    cur_align(&c, 8); /* already aligned: no move */
    CHECK_EQ(c.off, 8);
    cur_seek(&c, 9);
    cur_align(&c, 4);
    CHECK_EQ(c.off, 12);
    cur_seek(&c, 13);
    cur_align(&c, 32); /* past the end */
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 13);

    cur_init(&c, b, sizeof(b));
    cur_seek(&c, 17);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 17);
}

static void test_sub(void)
{
    static const uint8_t b[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    struct cursor s = cur_sub(&c, 2, 3);
    CHECK(cur_ok(&s));
    CHECK_EQ(s.len, 3);
    CHECK_EQ(cur_u8(&s), 2);
    CHECK_EQ(cur_u16(&s), 0x0403);
    CHECK(cur_at_end(&s));
    (void)cur_u8(&s); /* reading past the sub-range fails even though the parent has more */
    CHECK(!cur_ok(&s));
    CHECK_EQ(s.fail_off, 3);
    CHECK(cur_ok(&c)); /* the parent is untouched */
    CHECK_EQ(c.off, 0);

    s = cur_sub(&c, 10, 0); /* empty range at the end is fine */
    CHECK(cur_ok(&s));
    CHECK(cur_at_end(&s));
    CHECK(cur_ok(&c));

    s = cur_sub(&c, 8, 3);
    CHECK(!cur_ok(&s));
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 8);
    CHECK_EQ(cur_u8(&s), 0);

    cur_init(&c, b, sizeof(b));
    s = cur_sub(&c, 11, 0);
    CHECK(!cur_ok(&s));
    CHECK(!cur_ok(&c));

    /* off + len wrapping around SIZE_MAX must not pass. */
    cur_init(&c, b, sizeof(b));
    s = cur_sub(&c, 4, SIZE_MAX - 2);
    CHECK(!cur_ok(&s));
    CHECK(!cur_ok(&c));

    /* A sub-cursor of a failed cursor is failed. */
    s = cur_sub(&c, 0, 1);
    CHECK(!cur_ok(&s));
}

static void test_cstr(void)
{
    static const uint8_t b[] = {'a', 'b', 0, 0, 'x', 'y'};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    CHECK_STR(cur_cstr(&c), "ab");
    CHECK_EQ(c.off, 3);
    CHECK_STR(cur_cstr(&c), "");
    CHECK_EQ(c.off, 4);
    CHECK(cur_cstr(&c) == NULL); /* "xy" has no NUL before the end */
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 4);

    /* At the very end and on an empty or NULL buffer. */
    cur_init(&c, b, 3);
    CHECK_STR(cur_cstr(&c), "ab");
    CHECK(cur_cstr(&c) == NULL);
    CHECK_EQ(c.fail_off, 3);
    cur_init(&c, NULL, 0);
    CHECK(cur_cstr(&c) == NULL);
    CHECK(!cur_ok(&c));
    cur_init(&c, NULL, 100); /* NULL data gives an empty cursor whatever len says */
    CHECK_EQ(cur_remaining(&c), 0);
    (void)cur_u8(&c);
    CHECK(!cur_ok(&c));
}

static uint32_t varint_of(const uint8_t *b, size_t n, bool *ok, size_t *used)
{
    struct cursor c;
    cur_init(&c, b, n);
    uint32_t v = cur_varint6(&c);
    *ok = cur_ok(&c);
    *used = c.off;
    return v;
}

static void test_varint6(void)
{
    bool ok;
    size_t used;
    static const uint8_t zero[] = {0x00};
    CHECK_EQ(varint_of(zero, 1, &ok, &used), 0);
    CHECK(ok);
    CHECK_EQ(used, 1);
    static const uint8_t v63[] = {0x3f};
    CHECK_EQ(varint_of(v63, 1, &ok, &used), 63);
    /* 64 = 0 | more, then 1 */
    static const uint8_t v64[] = {0x40, 0x01};
    CHECK_EQ(varint_of(v64, 2, &ok, &used), 64);
    CHECK(ok);
    CHECK_EQ(used, 2);
    /* 1000 = 0b1111101000: low 6 = 0x28, then 15 */
    static const uint8_t v1000[] = {0x68, 0x0f, 0x7f};
    CHECK_EQ(varint_of(v1000, 3, &ok, &used), 1000);
    CHECK_EQ(used, 2);
    /* Bit 7 is not part of the value (it marks entry starts in the location table). */
    static const uint8_t v5[] = {0x05};
    CHECK_EQ(varint_of(v5, 1, &ok, &used), 5);

    /* UINT32_MAX takes six groups: 5 full groups of 63 and a top group of 3. */
    static const uint8_t vmax[] = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    CHECK_EQ_U64(varint_of(vmax, 6, &ok, &used), UINT32_MAX);
    CHECK(ok);
    CHECK_EQ(used, 6);

    /* Truncated: "more" set on the last byte. */
    static const uint8_t trunc[] = {0x41, 0x42};
    CHECK_EQ(varint_of(trunc, 2, &ok, &used), 0);
    CHECK(!ok);
    static const uint8_t empty[1] = {0};
    CHECK_EQ(varint_of(empty, 0, &ok, &used), 0);
    CHECK(!ok);

    /* Overlong: a sixth group with bits above 2^32, or a seventh group, cannot be a 32-bit value. */
    static const uint8_t over33[] = {0x40, 0x40, 0x40, 0x40, 0x40, 0x04};
    struct cursor c;
    cur_init(&c, over33, sizeof(over33));
    CHECK_EQ(cur_varint6(&c), 0);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 5); /* the group that overflows */
    static const uint8_t seven[] = {0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
    varint_of(seven, 7, &ok, &used);
    CHECK(!ok);
    static const uint8_t endless[] = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x01};
    varint_of(endless, sizeof(endless), &ok, &used);
    CHECK(!ok);
}

static int32_t svarint_of(const uint8_t *b, size_t n, bool *ok)
{
    struct cursor c;
    cur_init(&c, b, n);
    int32_t v = cur_svarint6(&c);
    *ok = cur_ok(&c);
    return v;
}

static void test_svarint6(void)
{
    bool ok;
    static const uint8_t z[] = {0x00}, p1[] = {0x02}, m1[] = {0x03}, p31[] = {0x3e},
                         m31[] = {0x3f}, p32[] = {0x40, 0x01}, m100[] = {0x49, 0x03};
    CHECK_EQ(svarint_of(z, 1, &ok), 0);
    CHECK(ok);
    CHECK_EQ(svarint_of(p1, 1, &ok), 1);
    CHECK_EQ(svarint_of(m1, 1, &ok), -1);
    CHECK_EQ(svarint_of(p31, 1, &ok), 31);
    CHECK_EQ(svarint_of(m31, 1, &ok), -31);
    CHECK_EQ(svarint_of(p32, 2, &ok), 32);
    CHECK_EQ(svarint_of(m100, 2, &ok), -100); /* 201 = 0b11001001 */
    CHECK(ok);
    /* Largest magnitudes: u = UINT32_MAX -> -(2^31 - 1); u = UINT32_MAX - 1 -> 2^31 - 1. */
    static const uint8_t mmax[] = {0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    CHECK_EQ(svarint_of(mmax, 6, &ok), -INT32_MAX);
    CHECK(ok);
    static const uint8_t pmax[] = {0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03};
    CHECK_EQ(svarint_of(pmax, 6, &ok), INT32_MAX);
    CHECK(ok);
    static const uint8_t over[] = {0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x01};
    CHECK_EQ(svarint_of(over, sizeof(over), &ok), 0);
    CHECK(!ok);
    static const uint8_t trunc[] = {0x43};
    CHECK_EQ(svarint_of(trunc, 1, &ok), 0);
    CHECK(!ok);
}

static void test_fail_marks_current_offset(void)
{
    static const uint8_t b[] = {1, 2, 3, 4};
    struct cursor c;
    cur_init(&c, b, sizeof(b));
    cur_skip(&c, 3);
    cur_fail(&c);
    CHECK(!cur_ok(&c));
    CHECK_EQ(c.fail_off, 3);
    cur_fail(&c); /* the first failure is kept */
    CHECK_EQ(c.fail_off, 3);
}

static const struct tl_test tests[] = {
    TL(test_le_values),
    TL(test_i64_negative),
    TL(test_high_bits),
    TL(test_read_past_end_sticky),
    TL(test_u64_straddling_end),
    TL(test_each_width_at_every_short_length),
    TL(test_bytes_read_skip),
    TL(test_seek_align),
    TL(test_sub),
    TL(test_cstr),
    TL(test_varint6),
    TL(test_svarint6),
    TL(test_fail_marks_current_offset),
};
TL_MAIN(tests)
