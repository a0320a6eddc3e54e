/* A frame's local variables and short, redacted texts of Python values, read from a stopped
 * target (`scry stacks --locals`, the asyncio task tree). Values are rendered as a person reads
 * them in a debugger: repr-like for None, bool, int, float, str and bytes, cut at
 * PY_VALUE_MAX_CHARS; containers by type and length; other objects by type and address. The
 * snapshot's redaction rule (redact.h) decides on every text: a local whose name sounds secret,
 * or a str/bytes value the rule flags (judged whole, before the cut), shows as <redacted>. */
#ifndef SCRY_CPYTHON_LOCALS_H
#define SCRY_CPYTHON_LOCALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"
#include "common/strbuf.h"
#include "cpython/runtime.h"

#define PY_VALUE_MAX_CHARS 80 /* characters of a str/bytes value shown before "..." */
#define PY_MAX_LOCALS 1024    /* locals shown per frame; the rest are counted as cut */

struct py_local {
    const char *name;  /* the variable's name (<redacted> when the name itself is a secret) */
    const char *type;  /* the value's type name (tp_name) */
    const char *value; /* the short text of the value, or <redacted> */
    bool redacted;
    bool cell; /* a cell or free variable (the cell's contents are shown) */
};

/* A type object's tp_name in the arena ("?" when unreadable; <redacted> when the rule flags it). */
const char *py_type_name(struct py_runtime *rt, struct arena *a, uint64_t type);

/* Appends the short text of the object at obj (a tagged 3.14+ int already untagged by the
 * caller) and sets *type to its type name (arena). *secret: the rule flagged a str/bytes value,
 * and the text appended is <redacted>. */
int py_value_short(struct py_runtime *rt, struct arena *a, uint64_t obj, struct strbuf *out,
                   const char **type, bool *secret);

/* The bound fast locals (arguments, locals, cells and free variables; unbound ones are left out)
 * of the _PyInterpreterFrame at frame, whose code object is code, in co_localsplusnames order.
 * The array and its strings live in the arena. *cut: more than PY_MAX_LOCALS were bound. */
int py_frame_locals(struct py_runtime *rt, struct arena *a, uint64_t frame, uint64_t code,
                    struct py_local **out, size_t *count, bool *cut);

#endif
