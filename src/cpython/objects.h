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

/* Type flags (object.h's Py_TPFLAGS_*: the same bits in every supported version) */
#define TPFLAGS_INLINE_VALUES (1UL << 2)
#define TPFLAGS_MANAGED_DICT (1UL << 4)
#define TPFLAGS_HEAPTYPE (1UL << 9)
#define TPFLAGS_READY (1UL << 12)
#define TPFLAGS_HAVE_GC (1UL << 14)
#define TPFLAGS_UNICODE_SUBCLASS (1UL << 28)
#define TPFLAGS_BASE_EXC_SUBCLASS (1UL << 30)
#define TPFLAGS_TYPE_SUBCLASS (1UL << 31)

/* ---- decoders: the one reading of each object layout, over bytes the caller has read (through
 * the reader, or the heap walker's block cache) ---- */

/* A str's header. */
struct py_str_hdr {
    uint64_t length, data;     /* characters, and where they are */
    uint64_t utf8, utf8_length; /* a non-ASCII str's cached UTF-8 copy (0 when none) */
    int kind;                  /* bytes per character: 1, 2 or 4 */
    bool ascii, compact, interned;
};

/* Bytes of a str object py_str_decode reads. */
size_t py_str_hdr_size(const struct py_layout *L);
/* Decodes the header of the str at obj from hdr (py_str_hdr_size bytes read there); fails with
 * read_failed when it is not a plausible str header. */
int py_str_decode(const struct py_layout *L, uint64_t obj, const uint8_t *hdr,
                  struct py_str_hdr *h);
/* str.__sizeof__ of a str with that header (its cached UTF-8 copy included). */
uint64_t py_str_sizeof(const struct py_layout *L, const struct py_str_hdr *h);
/* Appends n characters of `kind` bytes each as UTF-8 (a lone surrogate as U+FFFD); with
 * max_bytes, stops before out holds more than max_bytes bytes past `start`. Returns false when it
 * stopped there. */
bool py_utf8_from_chars(struct strbuf *out, const uint8_t *chars, size_t n, int kind, size_t start,
                        size_t max_bytes);

/* An int's digit count and sign from the word at H->long_tag (lv_tag, or 3.11's ob_size). */
void py_long_shape(const struct py_layout *L, uint64_t tag, uint64_t *ndigits, bool *negative);

/* A dict keys object's header (PyDictKeysObject) and where its entries are. */
struct py_dict_keys {
    uint64_t refcnt, usable, nentries;
    uint64_t entries;              /* address of the entry array (after the index table) */
    uint8_t log2_size, log2_index_bytes, kind; /* kind: 0 general, 1 unicode, 2 split */
    uint32_t esize, key_off, value_off; /* one entry's size, its key's and value's offsets */
};

#define PY_DICT_KIND_GENERAL 0
#define PY_DICT_KIND_SPLIT 2

/* Decodes the keys object at `keys` from hdr (H->dk_indices bytes read there); fails with
 * read_failed on an impossible header (table sizes over 2^40, a kind over 2, counts over 2^32). */
int py_dict_keys_decode(const struct py_heap_layout *H, uint64_t keys, const uint8_t *hdr,
                        struct py_dict_keys *k);
/* Bytes a keys object of that shape takes (_PyDict_KeysSize). */
uint64_t py_dict_keys_sizeof(const struct py_heap_layout *H, uint8_t log2_size,
                             uint8_t log2_index_bytes, int kind);

/* ---- readers through the runtime's reader ---- */

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
    uint64_t dict, values; /* values: the split values' array, 0 for a combined table */
    struct py_dict_keys k;
    uint64_t index;
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
