/* The text sanitizer (see sanitize.h for the rule). */
#include "common/sanitize.h"

#include <stdint.h>
#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd"

/* Strict UTF-8: the length of the valid sequence at s and its code point, or 0. */
static size_t decode(const unsigned char *s, size_t n, uint32_t *cp_out)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
        *cp_out = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    *cp_out = cp;
    return len;
}

static bool hidden(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
           cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0xfdd0 && cp <= 0xfdef) ||
           (cp & 0xfffe) == 0xfffe;
}

size_t san_next(const char *s, size_t n, const char **repl)
{
    uint32_t cp;
    size_t len = decode((const unsigned char *)s, n, &cp);
    if (len == 0) {
        *repl = REPLACEMENT;
        return 1;
    }
    *repl = hidden(cp) ? "?" : NULL;
    return len;
}

void san_addn(struct strbuf *sb, const char *s, size_t n)
{
    size_t i = 0, run = 0; /* run: clean bytes not yet appended, ending at i */
    while (i < n) {
        const char *repl;
        size_t len = san_next(s + i, n - i, &repl);
        if (repl) {
            if (run)
                sb_add(sb, s + i - run, run);
            run = 0;
            sb_adds(sb, repl);
        } else {
            run += len;
        }
        i += len;
    }
    if (run)
        sb_add(sb, s + n - run, run);
}

void san_addn_lines(struct strbuf *sb, const char *s, size_t n)
{
    for (;;) {
        const char *nl = memchr(s, '\n', n);
        size_t part = nl ? (size_t)(nl - s) : n;
        san_addn(sb, s, part);
        if (!nl)
            return;
        sb_addch(sb, '\n');
        s += part + 1;
        n -= part + 1;
    }
}

void san_add(struct strbuf *sb, const char *s)
{
    if (s)
        san_addn(sb, s, strlen(s));
}

bool san_is_clean(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *repl;
        i += san_next(s + i, n - i, &repl);
        if (repl)
            return false;
    }
    return true;
}

const char *san_str(const char *s)
{
    static _Thread_local struct strbuf ring[16];
    static _Thread_local unsigned next;
    if (!s)
        return "";
    size_t n = strlen(s);
    if (san_is_clean(s, n))
        return s;
    struct strbuf *sb = &ring[next++ % 16];
    sb_reset(sb);
    san_addn(sb, s, n);
    return sb_str(sb);
}
