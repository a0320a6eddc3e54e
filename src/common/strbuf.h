/* A growable NUL-terminated byte string: the buffer every renderer and message builder writes to.
 *
 * Out of memory: the command-line program stops with a message (it cannot go on without it); the
 * agent (compiled with -DSCRY_AGENT), which runs inside the user's program and must never stop it,
 * marks the buffer failed instead: later additions are dropped, and callers check sb_failed()
 * before they use what was built (py_read_str, the part writer). */
#ifndef SCRY_COMMON_STRBUF_H
#define SCRY_COMMON_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct strbuf {
    char *buf; /* always NUL-terminated once anything was added; NULL while empty */
    size_t len;
    size_t alloc;
    bool failed; /* agent only: an allocation failed; the contents are incomplete (sticky) */
};

#define STRBUF_INIT {NULL, 0, 0, false}

/* True once an allocation failed (only ever in the agent; see above). */
static inline bool sb_failed(const struct strbuf *sb) { return sb->failed; }

void sb_add(struct strbuf *sb, const void *data, size_t len);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addch(struct strbuf *sb, char c);
void sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Appends s as a JSON string literal, quotes included; invalid UTF-8 bytes become U+FFFD. */
void sb_add_json_str(struct strbuf *sb, const char *s, size_t len);
/* Empties the buffer (a failed one stays failed). */
void sb_reset(struct strbuf *sb);
/* Returns the buffer (owned by the caller) and leaves sb empty; never NULL, but in the agent when
 * out of memory. */
char *sb_detach(struct strbuf *sb);
void sb_release(struct strbuf *sb);
/* Pointer to the contents, "" while empty. */
const char *sb_str(const struct strbuf *sb);

#endif
