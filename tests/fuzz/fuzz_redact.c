/* Fuzz target: arbitrary bytes through the redaction rule (cpython/redact.h). Nothing may crash
 * or read past the text (it is copied into a buffer of exactly its size); the rule must not
 * depend on anything but the bytes it is given; a text it flags stays flagged whatever
 * surrounds it (the heap walker decides on a whole string, where a secret sits among other
 * text); the UTF-8 cut never exceeds its limit nor splits a character. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    bool secret = redact_text_is_secret(s, size);
    if (redact_text_is_secret(s, size) != secret)
        abort(); /* the same bytes, the same answer */
    (void)redact_name_is_sensitive(s, size);

    /* " " + s + " ": still flagged. */
    char *padded = malloc(size + 2);
    if (padded) {
        padded[0] = ' ';
        memcpy(padded + 1, s, size);
        padded[size + 1] = ' ';
        if (secret && !redact_text_is_secret(padded, size + 2))
            abort();
        free(padded);
    }
    /* Every prefix the heap walker could keep is flagged alone only if it is a whole text of
     * its own: here, only that the rule looks at no byte past the given length. */
    for (size_t k = 0; k <= size && k < 64; k++)
        (void)redact_text_is_secret(s, k);

    /* The cut: at most max bytes and never more than the text; when it gives bytes back (at most
     * 3), they are the continuation bytes of the character it would have split. */
    for (size_t max = 0; max <= size + 1 && max < 40; max++) {
        size_t n = redact_utf8_cut(s, size, max);
        if (size <= max) {
            if (n != size)
                abort();
            continue;
        }
        if (n > max || n + 3 < max)
            abort();
        for (size_t k = n + 1; k <= max; k++)
            if (((unsigned char)s[k] & 0xc0) != 0x80)
                abort();
        if (n < max && ((unsigned char)s[n] & 0xc0) == 0x80)
            abort();
    }
    free(s);
    return 0;
}
