/* Fuzz target: arbitrary bytes through the text sanitizer (common/sanitize.h). What it gives back
 * must be valid UTF-8 holding none of the hidden characters, must be left unchanged by a second
 * pass, and must equal the input exactly when the input was clean; the JSON string writer must
 * escape the same characters. Nothing may crash on any input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sanitize.h"
#include "common/strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An independent check of the rule: decodes strictly and refuses what must never be shown. */
static void check_clean(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c;
            len = 1;
        } else if ((c & 0xe0) == 0xc0) {
            cp = c & 0x1f;
            len = 2;
        } else if ((c & 0xf0) == 0xe0) {
            cp = c & 0x0f;
            len = 3;
        } else if ((c & 0xf8) == 0xf0) {
            cp = c & 0x07;
            len = 4;
        } else {
            abort();
        }
        if (i + len > n)
            abort();
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                abort();
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            abort(); /* overlong, past the last code point, surrogate */
        if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
            cp == 0x200f || cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
            (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0xfdd0 && cp <= 0xfdef) ||
            (cp & 0xfffe) == 0xfffe)
            abort();
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, j = STRBUF_INIT;
    san_addn(&a, in, size);
    check_clean((const unsigned char *)sb_str(&a), a.len);
    san_addn(&b, sb_str(&a), a.len);
    if (a.len != b.len || memcmp(sb_str(&a), sb_str(&b), a.len) != 0)
        abort(); /* a second pass changes nothing */
    if (san_is_clean(in, size) && (a.len != size || memcmp(sb_str(&a), in, size) != 0))
        abort(); /* clean text is kept byte for byte */
    if (!san_is_clean(sb_str(&a), a.len))
        abort();
    /* JSON escapes what the sanitizer hides: the literal is clean once its quotes are off. */
    sb_add_json_str(&j, in, size);
    check_clean((const unsigned char *)sb_str(&j), j.len);
    /* san_str on a NUL-terminated copy agrees with san_addn up to the first NUL. */
    char *z = malloc(size + 1);
    if (z) {
        memcpy(z, in, size);
        z[size] = 0;
        struct strbuf c = STRBUF_INIT;
        san_add(&c, z);
        if (strcmp(san_str(z), sb_str(&c)) != 0)
            abort();
        sb_release(&c);
        free(z);
    }
    sb_release(&a);
    sb_release(&b);
    sb_release(&j);
    return 0;
}
