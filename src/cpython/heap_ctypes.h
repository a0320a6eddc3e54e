/* What the heap walker knows of C-implemented types beyond the builtin containers: the references
 * and owned native buffers of the standard library's C containers (collections.deque,
 * OrderedDict, defaultdict, io.BytesIO/StringIO and the buffered files, array.array, functools.partial and the lru_cache
 * wrapper, itertools.chain/cycle/count, _asyncio.Future/Task) and of numpy.ndarray, as layouts
 * per version (the generated tables of ctype_layouts.h, probed in each interpreter). A type is
 * recognised by its tp_name (read from the type object) and its tp_basicsize, never by address.
 * The module reads the target only through the callbacks of struct hc_env: it knows nothing of
 * how memory is read or where references go. */
#ifndef SCRY_CPYTHON_HEAP_CTYPES_H
#define SCRY_CPYTHON_HEAP_CTYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hc_type;

struct hc_env {
    void *ctx;
    /* 0, or a negative error when [addr, addr + n) cannot be read. */
    int (*read)(void *ctx, uint64_t addr, void *buf, size_t n);
    /* A reference from the object being walked; kind is an enum hw_edge_kind. Returns 0 or an
     * error that stops the walk. */
    int (*ref)(void *ctx, uint64_t to, int kind, const char *label);
    /* Whether the caller reports the object pointer at this offset already (a member of a
     * heap type's tp_members, followed like __slots__), so that it is not reported twice. */
    bool (*covered)(void *ctx, uint64_t off);
    /* The tp_name of a type object (cached by the caller), or NULL. */
    const char *(*type_name)(void *ctx, uint64_t type);
    uint64_t tp_basicsize, tp_base; /* offsets in PyTypeObject */
    /* 0 unknown; else 1 + the index of the target's numpy in ctl_numpy_dtype (learnt once) */
    int numpy_descr;
    /* Bytes the object header has beyond the default build's 16 (16 in a free-threaded build:
     * its 32-byte header; 0 otherwise). Every table offset is the default build's: each field
     * lies that much further into the object, and the caller looks a type up by its
     * tp_basicsize less this. */
    uint64_t head_delta;
    /* Optional (NULL: not wanted): a native block of size bytes at addr that the object being
     * walked owns (heap_walk.h's sink buffer). Returns 0 or an error that stops the walk. */
    int (*buffer)(void *ctx, uint64_t addr, uint64_t size);
    int minor; /* Python 3.<minor>: the version whose rows of ctype_layouts.h are read */
    uint64_t ob_type; /* offset of ob_type in an object (this build's header) */
};

/* The table entry for a type with that tp_name and tp_basicsize under Python 3.<minor>, or NULL.
 * Layouts that changed between versions are only matched on the versions their table has a row
 * for.
 * A free-threaded build's types are looked up by their tp_basicsize less env.head_delta: their
 * structs are the default build's behind a longer header (checked on 3.13.15t by
 * tests/e2e/test_dump_ctypes.py). */
const struct hc_type *hc_lookup(int minor, const char *tp_name, int64_t basicsize);

/* The entry's tp_name, for messages. */
const char *hc_name(const struct hc_type *t);

/* Walks obj (an instance of t, or of a subclass whose nearest known base is t): reports its
 * references through env->ref and returns in *extra the bytes its __sizeof__ adds to
 * tp_basicsize (+ ob_size * tp_itemsize) for the native memory the object owns. Unreadable memory
 * ends the walk of that object quietly (*extra then holds what was found). */
int hc_walk(const struct hc_type *t, struct hc_env *env, uint64_t obj, uint64_t *extra);

#endif
