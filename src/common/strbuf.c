/* strbuf: amortised-doubling growth. Allocation failure stops the CLI (it cannot go on without
 * it); in the agent it marks the buffer failed (strbuf.h). */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/sanitize.h"

/* Makes room for extra more bytes and the NUL; false (in the agent only) when it cannot. */
static bool grow(struct strbuf *sb, size_t extra)
{
    if (sb->failed)
        return false;
    bool fits = extra <= SIZE_MAX - sb->len - 1;
    if (fits && sb->len + extra + 1 <= sb->alloc)
        return true;
    if (!fits || grow_array(&sb->buf, &sb->alloc, sb->len + extra + 1, 1) != 0) {
#ifdef SCRY_AGENT
        sb->failed = true;
        return false;
#else
        fputs("scry: out of memory\n", stderr);
        abort();
#endif
    }
    return true;
}

void sb_add(struct strbuf *sb, const void *data, size_t len)
{
    if (!grow(sb, len))
        return;
    if (len)
        memcpy(sb->buf + sb->len, data, len);
    sb->len += len;
    sb->buf[sb->len] = 0;
}

void sb_adds(struct strbuf *sb, const char *s) { sb_add(sb, s, strlen(s)); }

void sb_addch(struct strbuf *sb, char c) { sb_add(sb, &c, 1); }

void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n <= 0 || !grow(sb, (size_t)n))
        return;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(sb, fmt, ap);
    va_end(ap);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        need = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < need)
        return 0;
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return need;
}

void sb_add_json_str(struct strbuf *sb, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_addch(sb, '"');
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            sb_addch(sb, '\\');
            sb_addch(sb, (char)c);
            i++;
        } else if (c == '\n') {
            sb_adds(sb, "\\n");
            i++;
        } else if (c == '\t') {
            sb_adds(sb, "\\t");
            i++;
        } else if (c == '\r') {
            sb_adds(sb, "\\r");
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            sb_addf(sb, "\\u%04x", c);
            i++;
        } else {
            size_t n = utf8_seq_len(p + i, len - i);
            if (n == 0) {
                sb_adds(sb, "\\ufffd");
                i++;
            } else {
                /* C1, bidirectional controls, separators and noncharacters (common/sanitize.h)
                 * are escaped: the data stays exact and a terminal showing it sees no control. */
                const char *repl;
                if (n > 1 && (san_next(s + i, n, &repl), repl)) {
                    uint32_t cp = n == 2   ? (uint32_t)(p[i] & 0x1f) << 6
                                  : n == 3 ? (uint32_t)(p[i] & 0x0f) << 12
                                           : (uint32_t)(p[i] & 0x07) << 18;
                    for (size_t k = 1; k < n; k++)
                        cp |= (uint32_t)(p[i + k] & 0x3f) << (6 * (n - 1 - k));
                    if (cp >= 0x10000)
                        sb_addf(sb, "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
                                0xdc00 + ((cp - 0x10000) & 0x3ff));
                    else
                        sb_addf(sb, "\\u%04x", cp);
                } else {
                    sb_add(sb, p + i, n);
                }
                i += n;
            }
        }
    }
    sb_addch(sb, '"');
}

void sb_reset(struct strbuf *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = 0;
}

char *sb_detach(struct strbuf *sb)
{
    if (!sb->buf) {
        if (!grow(sb, 0))
            return NULL;
        sb->buf[0] = 0;
    }
    char *r = sb->buf;
    sb->buf = NULL;
    sb->len = sb->alloc = 0;
    return r;
}

void sb_release(struct strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->alloc = 0;
    sb->failed = false;
}

const char *sb_str(const struct strbuf *sb) { return sb->buf ? sb->buf : ""; }
