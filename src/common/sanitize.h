/* The one rule for text that scry shows: names, paths, command lines and messages come from the
 * program, a snapshot, a core or a profile, and must not drive a terminal or break a document.
 * Every character is kept except:
 *   - bytes that are not valid UTF-8 (overlong forms, surrogates, past U+10FFFF, cut short):
 *     each becomes U+FFFD;
 *   - C0 controls (U+0000-U+001F, tab and newline included), DEL and the C1 controls
 *     (U+0080-U+009F: CSI, OSC, ... in their one-character forms), the line and paragraph
 *     separators U+2028/U+2029, the bidirectional controls (U+061C, U+200E, U+200F,
 *     U+202A-U+202E, U+2066-U+2069: they reorder what follows them on the line) and the
 *     noncharacters (U+FDD0-U+FDEF, U+xxFFFE and U+xxFFFF: not allowed in XML): each becomes '?'.
 * Used by every text output on a terminal (stacks, analyze, query, diff, check, folded stacks,
 * view --cli, error messages) and by the SVG writer; JSON output escapes instead (it keeps the
 * data exact). */
#ifndef SCRY_COMMON_SANITIZE_H
#define SCRY_COMMON_SANITIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* The character at s (n > 0 bytes left): returns how many bytes it takes (1-4) and sets *repl to
 * NULL when it is shown as it is, else to its replacement ("?" or U+FFFD). */
size_t san_next(const char *s, size_t n, const char **repl);
/* Appends n bytes of s, cleaned. */
void san_addn(struct strbuf *sb, const char *s, size_t n);
/* Appends n bytes of s cleaned line by line: each newline kept (a multi-line text's layout, as
 * an error message quoting a program's output), everything else as san_addn. */
void san_addn_lines(struct strbuf *sb, const char *s, size_t n);
/* Appends the NUL-terminated s, cleaned; NULL appends nothing. */
void san_add(struct strbuf *sb, const char *s);
/* s itself when it needs no change (the usual case: nothing is copied), else a cleaned copy
 * that stays valid for the next 15 calls on this thread: for printf-style arguments,
 * sb_addf(out, "%s: %s", san_str(a), san_str(b)). NULL gives "". */
const char *san_str(const char *s);
/* True if s needs no change. */
bool san_is_clean(const char *s, size_t n);

#endif
