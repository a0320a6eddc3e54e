/* The text sanitizer (common/sanitize.h): what it keeps, what it replaces and with what. */
#include <stdlib.h>
#include <string.h>

#include "common/sanitize.h"
#include "testlib.h"

static char *clean(const char *s, size_t len)
{
    struct strbuf sb = STRBUF_INIT;
    san_addn(&sb, s, len);
    return sb_detach(&sb);
}

#define CHECK_CLEAN(in, want)                                                                      \
    do {                                                                                           \
        char *_c = clean(in, sizeof(in) - 1);                                                      \
        CHECK_STR(_c, want);                                                                       \
        free(_c);                                                                                  \
    } while (0)

static void test_kept(void)
{
    CHECK_CLEAN("app.session.Session.close", "app.session.Session.close");
    CHECK_CLEAN("caf\xc3\xa9 \xf0\x9f\x90\x8d \xe6\x97\xa5",
                "caf\xc3\xa9 \xf0\x9f\x90\x8d \xe6\x97\xa5");
    CHECK_CLEAN("\xc2\xa0", "\xc2\xa0");         /* U+00A0: just after the C1 block */
    CHECK_CLEAN("\xef\xbf\xbd", "\xef\xbf\xbd"); /* U+FFFD */
    CHECK_CLEAN("\xef\xb7\xb0", "\xef\xb7\xb0"); /* U+FDF0: just after the noncharacters */
    CHECK_CLEAN("\xe2\x80\x8d", "\xe2\x80\x8d"); /* U+200D ZWJ: emoji need it */
    CHECK_CLEAN("~", "~");
    CHECK(san_is_clean("abc", 3));
    const char *s = "kept as it is";
    CHECK(san_str(s) == s); /* clean text is not copied */
    CHECK_STR(san_str(NULL), "");
}

static void test_controls(void)
{
    CHECK_CLEAN("f\x1b]0;pwned\x07g", "f?]0;pwned?g"); /* OSC: would retitle the terminal */
    CHECK_CLEAN("\x1b[2J", "?[2J");
    CHECK_CLEAN("a\tb\nc\rd", "a?b?c?d");
    CHECK_CLEAN("x\x7fy", "x?y");
    CHECK_CLEAN("a\xc2\x9b" "31mb", "a?31mb");      /* U+009B: CSI in one character */
    CHECK_CLEAN("\xc2\x80\xc2\x9f", "??");
    CHECK_CLEAN("x\xe2\x80\xae" "evil", "x?evil");       /* RIGHT-TO-LEFT OVERRIDE */
    CHECK_CLEAN("\xe2\x81\xa6\xe2\x81\xa9", "??");    /* isolates */
    CHECK_CLEAN("\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "???"); /* LRM, RLM, ALM */
    CHECK_CLEAN("\xe2\x80\xa8\xe2\x80\xa9", "??");    /* line and paragraph separators */
    CHECK_CLEAN("\xef\xbf\xbe\xef\xbf\xbf", "??");    /* U+FFFE, U+FFFF */
    CHECK_CLEAN("\xef\xb7\x90", "?");                 /* U+FDD0 */
    CHECK_CLEAN("\xf0\x9f\xbf\xbf\xf4\x8f\xbf\xbe", "??"); /* U+1FFFF, U+10FFFE */
    CHECK_CLEAN("a\0b", "a?b");
    CHECK(!san_is_clean("\x1b", 1));
    char *c = clean("x\x1by", 3);
    CHECK_STR(san_str("x\x1by"), c);
    free(c);
}

static void test_invalid_utf8(void)
{
    CHECK_CLEAN("\x80", "\xef\xbf\xbd");                          /* lone continuation byte */
    CHECK_CLEAN("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");          /* overlong '/' */
    CHECK_CLEAN("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
    CHECK_CLEAN("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_CLEAN("ab\xe2\x82", "ab\xef\xbf\xbd\xef\xbf\xbd");      /* cut short */
    CHECK_CLEAN("\x9b", "\xef\xbf\xbd"); /* a raw C1 byte is not UTF-8 */
}

/* san_addn_lines: a multi-line text keeps its newlines and nothing else. */
static void test_lines(void)
{
    static const char in[] = "\x1b[31mone\r\n\ntwo\xe2\x80\xae\x07\n\xff";
    struct strbuf sb = STRBUF_INIT;
    san_addn_lines(&sb, in, sizeof(in) - 1);
    CHECK_STR(sb_str(&sb), "?[31mone?\n\ntwo??\n\xef\xbf\xbd");
    sb_reset(&sb);
    san_addn_lines(&sb, "", 0);
    CHECK_EQ(sb.len, 0);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_kept),
    TL(test_controls),
    TL(test_invalid_utf8),
    TL(test_lines),
};

TL_MAIN(tests)
