/* Unit tests for strbuf: growth across many reallocations, and the JSON string writer, whose output
 * must be valid JSON whatever bytes a target process hands us (names, paths, reprs). */
#include <stdlib.h>

#include "common/strbuf.h"
#include "testlib.h"

static void test_empty(void)
{
    struct strbuf sb = STRBUF_INIT;
    CHECK_STR(sb_str(&sb), "");
    CHECK_EQ(sb.len, 0);
    sb_reset(&sb);
    CHECK_STR(sb_str(&sb), "");
    char *s = sb_detach(&sb);
    CHECK(s != NULL);
    CHECK_STR(s, "");
    free(s);
    CHECK(sb.buf == NULL);
    sb_release(&sb);
}

static void test_add_and_growth(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "ab");
    sb_addch(&sb, 'c');
    sb_add(&sb, "d\0e", 3); /* embedded NUL is kept in len */
    CHECK_EQ(sb.len, 6);
    CHECK_EQ(memcmp(sb.buf, "abcd\0e", 7), 0);
    sb_reset(&sb);
    CHECK_EQ(sb.len, 0);
    CHECK_STR(sb_str(&sb), "");
    /* Grow through many doublings, checking contents and the terminator. */
    for (int i = 0; i < 10000; i++)
        sb_addch(&sb, (char)('a' + i % 26));
    CHECK_EQ(sb.len, 10000);
    CHECK(sb.alloc > sb.len);
    CHECK_EQ(sb.buf[10000], 0);
    int bad = 0;
    for (int i = 0; i < 10000; i++)
        bad += sb.buf[i] != (char)('a' + i % 26);
    CHECK_EQ(bad, 0);
    sb_add(&sb, NULL, 0);
    CHECK_EQ(sb.len, 10000);
    sb_release(&sb);
    CHECK(sb.buf == NULL);
    CHECK_EQ(sb.len, 0);
}

static void test_addf(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_addf(&sb, "%d-%s", 42, "x");
    CHECK_STR(sb_str(&sb), "42-x");
    sb_addf(&sb, "%s", "");
    CHECK_STR(sb_str(&sb), "42-x");
    /* One formatted piece far larger than the current allocation. */
    char big[5000];
    memset(big, 'q', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    sb_addf(&sb, "[%s]%u", big, 7u);
    CHECK_EQ(sb.len, 4 + 1 + 4999 + 1 + 1);
    CHECK_EQ(sb.buf[4], '[');
    CHECK_EQ(sb.buf[4 + 1 + 4999], ']');
    CHECK_STR(sb.buf + sb.len - 2, "]7");
    /* Exactly filling the allocation then adding one more byte. */
    struct strbuf t = STRBUF_INIT;
    for (int i = 0; i < 200; i++)
        sb_addf(&t, "%03d", i);
    CHECK_EQ(t.len, 600);
    CHECK_EQ(memcmp(t.buf + 597, "199", 4), 0);
    sb_release(&t);
    sb_release(&sb);
}

static void test_detach(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "hello");
    char *s = sb_detach(&sb);
    CHECK_STR(s, "hello");
    CHECK(sb.buf == NULL);
    CHECK_EQ(sb.len, 0);
    CHECK_EQ(sb.alloc, 0);
    CHECK_STR(sb_str(&sb), "");
    sb_adds(&sb, "again"); /* reusable after detach, independent of the detached buffer */
    CHECK_STR(sb_str(&sb), "again");
    CHECK_STR(s, "hello");
    free(s);
    sb_release(&sb);
}

/* The JSON literal sb_add_json_str writes for len bytes of s. */
static char *json(const char *s, size_t len)
{
    struct strbuf sb = STRBUF_INIT;
    sb_add_json_str(&sb, s, len);
    return sb_detach(&sb);
}

#define CHECK_JSON(in, want)                                                                       \
    do {                                                                                           \
        char *_j = json(in, sizeof(in) - 1);                                                       \
        CHECK_STR(_j, want);                                                                       \
        free(_j);                                                                                  \
    } while (0)

static void test_json_ascii(void)
{
    CHECK_JSON("", "\"\"");
    CHECK_JSON("plain text 123", "\"plain text 123\"");
    CHECK_JSON("a\"b", "\"a\\\"b\"");
    CHECK_JSON("back\\slash", "\"back\\\\slash\"");
    CHECK_JSON("/", "\"/\"");
    CHECK_JSON("\n\t\r", "\"\\n\\t\\r\"");
    CHECK_JSON("\x01\x08\x0c\x1f", "\"\\u0001\\u0008\\u000c\\u001f\"");
    CHECK_JSON("\x7f", "\"\\u007f\"");
    CHECK_JSON("a\0b", "\"a\\u0000b\""); /* an embedded NUL counts by len */
    /* Appends: the quotes surround only the new part. */
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "{\"k\":");
    sb_add_json_str(&sb, "v", 1);
    sb_addch(&sb, '}');
    CHECK_STR(sb_str(&sb), "{\"k\":\"v\"}");
    sb_release(&sb);
}

static void test_json_utf8_kept(void)
{
    CHECK_JSON("caf\xc3\xa9", "\"caf\xc3\xa9\"");                  /* U+00E9, 2 bytes */
    CHECK_JSON("\xc2\xa0", "\"\xc2\xa0\"");                        /* U+00A0, after the C1 block */
    CHECK_JSON("\xe2\x82\xac", "\"\xe2\x82\xac\"");                /* U+20AC euro */
    CHECK_JSON("\xe0\xa0\x80", "\"\xe0\xa0\x80\"");                /* U+0800, smallest 3-byte */
    CHECK_JSON("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");                /* U+D7FF, just below surrogates */
    CHECK_JSON("\xee\x80\x80", "\"\xee\x80\x80\"");                /* U+E000, just above */
    CHECK_JSON("\xef\xbf\xbd", "\"\xef\xbf\xbd\"");                /* U+FFFD */
    CHECK_JSON("\xf0\x9f\x90\x8d", "\"\xf0\x9f\x90\x8d\"");        /* U+1F40D snake */
    CHECK_JSON("\xf4\x8f\xbf\xbd", "\"\xf4\x8f\xbf\xbd\"");/* U+10FFFD */
    CHECK_JSON("\xe6\x97\xa5\xe6\x9c\xac", "\"\xe6\x97\xa5\xe6\x9c\xac\"");
}

/* What common/sanitize.h hides is escaped instead: the data stays exact, a terminal showing the
 * JSON sees no C1 control (U+009B is CSI), bidirectional control or noncharacter. */
static void test_json_controls_escaped(void)
{
    CHECK_JSON("\xc2\x80", "\"\\u0080\"");        /* U+0080, smallest 2-byte */
    CHECK_JSON("a\xc2\x9b" "31m", "\"a\\u009b31m\""); /* CSI */
    CHECK_JSON("\xe2\x80\xae", "\"\\u202e\"");    /* RIGHT-TO-LEFT OVERRIDE */
    CHECK_JSON("\xe2\x81\xa6", "\"\\u2066\"");    /* LEFT-TO-RIGHT ISOLATE */
    CHECK_JSON("\xef\xbf\xbf", "\"\\uffff\"");    /* U+FFFF */
    CHECK_JSON("\xef\xbf\xbe", "\"\\ufffe\"");    /* U+FFFE */
    CHECK_JSON("\xf4\x8f\xbf\xbf", "\"\\udbff\\udfff\""); /* U+10FFFF, a noncharacter */
    CHECK_JSON("\x1b]0;x\x07", "\"\\u001b]0;x\\u0007\"");  /* OSC: set the title */
}

static void test_json_invalid_utf8(void)
{
    CHECK_JSON("\x80", "\"\\ufffd\"");            /* lone continuation byte */
    CHECK_JSON("a\xffz", "\"a\\ufffdz\"");        /* never valid */
    CHECK_JSON("\xc0\xaf", "\"\\ufffd\\ufffd\""); /* overlong '/' */
    CHECK_JSON("\xc1\xbf", "\"\\ufffd\\ufffd\"");
    CHECK_JSON("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");         /* overlong 3-byte */
    CHECK_JSON("\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* overlong 4-byte */
    CHECK_JSON("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");         /* U+D800 surrogate */
    CHECK_JSON("\xed\xbf\xbf", "\"\\ufffd\\ufffd\\ufffd\"");         /* U+DFFF surrogate */
    CHECK_JSON("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* U+110000 */
    CHECK_JSON("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    CHECK_JSON("\xc3", "\"\\ufffd\"");                  /* truncated at the end */
    CHECK_JSON("\xe2\x82", "\"\\ufffd\\ufffd\"");       /* truncated 3-byte */
    CHECK_JSON("\xe2\x82z", "\"\\ufffd\\ufffdz\"");     /* interrupted by ASCII */
    CHECK_JSON("\xc3\"", "\"\\ufffd\\\"\"");            /* interrupted by a quote: still escaped */
    CHECK_JSON("\xf0\x9f\x90", "\"\\ufffd\\ufffd\\ufffd\"");
    /* A valid sequence right after an invalid byte survives. */
    CHECK_JSON("\xff\xc3\xa9", "\"\\ufffd\xc3\xa9\"");
    /* len cuts a valid sequence: the cut part must not be read past len. */
    char *j = json("\xc3\xa9", 1);
    CHECK_STR(j, "\"\\ufffd\"");
    free(j);
}

static void test_json_every_byte_is_valid_output(void)
{
    /* Over all 256 single bytes the output has no raw control chars and only valid UTF-8. */
    for (int c = 0; c < 256; c++) {
        char in[1] = {(char)c};
        char *j = json(in, 1);
        size_t n = strlen(j);
        CHECK(n >= 3);
        CHECK(j[0] == '"' && j[n - 1] == '"');
        /* A lone byte >= 0x80 is never valid UTF-8, so only printable ASCII may come out. */
        for (size_t i = 1; i + 1 < n; i++)
            CHECK((unsigned char)j[i] >= 0x20 && (unsigned char)j[i] < 0x7f);
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            CHECK(n == 3 && j[1] == (char)c);
        if (c >= 0x80)
            CHECK_STR(j, "\"\\ufffd\"");
        free(j);
    }
}

static const struct tl_test tests[] = {
    TL(test_empty),
    TL(test_add_and_growth),
    TL(test_addf),
    TL(test_detach),
    TL(test_json_ascii),
    TL(test_json_utf8_kept),
    TL(test_json_controls_escaped),
    TL(test_json_invalid_utf8),
    TL(test_json_every_byte_is_valid_output),
};
TL_MAIN(tests)
