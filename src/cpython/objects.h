/* Reading Python objects out of a target: str, int, dict entries, module dicts and instance
 * attributes (managed dicts, split and inline values). Every pointer comes from the target and is
 * read through the reader, with sizes capped, so a torn or hostile image gives an error, never a
 * crash or an unbounded loop. */
#ifndef SCRY_CPYTHON_OBJECTS_H
#define SCRY_CPYTHON_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "cpython/runtime.h"

/* ob_type of obj. */
int py_type_of(struct py_runtime *rt, uint64_t obj, uint64_t *type);

/* Appends the contents of a str object as UTF-8, at most max_chars characters (longer strings
 * are cut). Fails with read_failed if obj is not a str or cannot be read. */
int py_read_str(struct py_runtime *rt, uint64_t obj, size_t max_chars, struct strbuf *out);

/* Compares a str object with a C string without copying more than needed. */
int py_str_equals(struct py_runtime *rt, uint64_t obj, const char *s, bool *equal);

/* The value of an int object that fits in 64 bits (unsigned or negative). */
int py_read_int(struct py_runtime *rt, uint64_t obj, int64_t *value, bool *is_unsigned_large);

/* One key/value pair of a dict, in insertion order. */
struct py_dict_iter {
    uint64_t dict, keys, values, entries;
    uint64_t nentries, index;
    int kind; /* dk_kind: 0 general, 1 unicode, 2 split */
    bool values_indirect;
};

int py_dict_iter_init(struct py_runtime *rt, uint64_t dict, struct py_dict_iter *it);
/* Returns 1 with the next pair, 0 at the end, or a negative error. */
int py_dict_next(struct py_runtime *rt, struct py_dict_iter *it, uint64_t *key, uint64_t *value);

/* Looks up a str key (compared by contents) in a dict. Sets *value to 0 when absent. */
int py_dict_get_str(struct py_runtime *rt, uint64_t dict, const char *key, uint64_t *value);

/* The value of instance attribute `name` stored in obj's managed dict or inline values (not
 * descriptors or slots). *value is 0 when absent. */
int py_instance_attr(struct py_runtime *rt, uint64_t obj, const char *name, uint64_t *value);

/* sys.modules[name].__dict__, or 0 when the module is not loaded. */
int py_module_dict(struct py_runtime *rt, uint64_t interp, const char *name, uint64_t *dict);

#endif
