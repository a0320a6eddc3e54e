/* The heap walker: every object of a CPython target reachable from its GC lists and roots, with
 * labelled references, reported to a sink. It follows references the way each type's
 * tp_traverse would (dicts of every layout, lists, tuples, sets, cells, functions, methods,
 * modules, classes, frames, generators and coroutines, instance dicts and inline values,
 * __slots__, and the C containers and numpy arrays of heap_ctypes.h with the native memory they
 * own), scans other GC-tracked extension objects conservatively (HW_EDGE_INFERRED), and reports
 * the untracked leaf objects (str, bytes, int, float, ...) that containers reference. It knows nothing of the snapshot format: `scry dump` connects it to the
 * snapshot writer. */
#ifndef SCRY_CPYTHON_HEAP_WALK_H
#define SCRY_CPYTHON_HEAP_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpython/runtime.h"

/* What a labelled reference is. Labels follow heapspy's notation (BRIEF.md, heapspy.md):
 * `.payload` (attribute), `['CACHE']` or `[<str len=9>]` (dict value under a key), `[3]` (list or
 * tuple index), `.cell_contents`, `.__closure__[0]`, `.__dict__`, `.__class__`, `.locals['x']`. */
enum hw_edge_kind {
    HW_EDGE_ATTR,      /* instance or module attribute, slot, function/class field */
    HW_EDGE_DICT_KEY,  /* a dict's key object itself */
    HW_EDGE_DICT_VALUE,/* a dict's value, labelled by its key */
    HW_EDGE_INDEX,     /* list / tuple / deque item, set member */
    HW_EDGE_CELL,      /* closure cell contents, cells of a function */
    HW_EDGE_LOCAL,     /* a frame's local variable or stack slot */
    HW_EDGE_INTERNAL,  /* bookkeeping: type, mro, bases, code, globals, builtins, ... */
    HW_EDGE_WEAK,      /* a weak reference: never retains */
};

/* Or'd into a kind: the reference was not read from a known layout but inferred by a
 * conservative scan of an extension object's fixed-size body (a word equal to the address of an
 * object). It retains like any other reference; views mark it. */
#define HW_EDGE_INFERRED 0x80

enum hw_object_flags {
    HW_OBJ_GC_TRACKED = 1, /* found on a GC list (tracked in a free-threaded build's heaps) */
    HW_OBJ_IMMORTAL = 2,   /* 3.12+ immortal refcount */
    HW_OBJ_TYPE = 4,       /* a type object */
};

struct hw_sink {
    void *ctx;
    /* Called once per object. type_name is the qualified type name (`app.session.Session`,
     * `builtins.dict`); size is sys.getsizeof's value; content is captured str/bytes contents
     * (NULL unless capture_contents, already capped and redacted). Returning non-zero stops the
     * walk with that error. */
    int (*object)(void *ctx, uint64_t addr, const char *type_name, uint64_t size, uint32_t flags,
                  const char *content, size_t content_len);
    int (*edge)(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind, const char *label);
    /* A root: an object held from outside the object graph (sys.modules, the sys dict, builtins,
     * a thread's frame locals, thread state). label is its root path, e.g. `sys.modules`,
     * `Thread 4242 main (app.py:10) .locals['cache']`. */
    int (*root)(void *ctx, uint64_t addr, const char *label);
    /* Where a function, code object, class or module comes from (file and first line). */
    int (*location)(void *ctx, uint64_t addr, const char *file, int line);
    /* Optional (NULL: not wanted): a block of native memory that the object at owner alone
     * holds and whose bytes its size counts: a list's item array, a dict's keys table or split
     * values, a set's table, a bytearray's buffer, the data of a numpy array that owns it, an
     * array.array's items, a deque's blocks, a buffered file's buffer. addr is where the object
     * points; the allocator's block may start up to a small header before it. Used to credit an
     * allocation sample inside a buffer to its owner (docs/allocations.md). */
    int (*buffer)(void *ctx, uint64_t owner, uint64_t addr, uint64_t size);
    /* Optional, all three or none (NULL: every type name and label goes as text): a text's id
     * in the sink's string table, made on its first use, and object and edge with ids for the
     * type name and the label. The walker asks once for each text that stays the same through
     * the walk (type names, attribute, index and field labels) and passes its id from then on,
     * so that the sink does not look the text up again for every object and reference. */
    int (*intern)(void *ctx, const char *s, uint32_t *id);
    int (*object_id)(void *ctx, uint64_t addr, uint32_t type, uint64_t size, uint32_t flags,
                     const char *content, size_t content_len);
    int (*edge_id)(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind, uint32_t label);
};

struct mc_pool;

/* What a progress report counts: bytes of the target's memory copied (of total), or objects
 * reported so far (total 0: not known before the end). */
enum hw_progress_phase { HW_PROGRESS_COPY, HW_PROGRESS_OBJECTS };

struct hw_options {
    bool capture_contents;
    size_t max_str;     /* cap on captured contents, bytes */
    struct mc_pool *copy_pool; /* hw_walk_resuming: memory prepared for the copy, or NULL */
    /* Optional (NULL: none): how far the walk is, every 4 MiB copied and every 4096 objects,
     * so that a command can show it; the walker itself knows no terminal. */
    void (*progress)(void *ctx, enum hw_progress_phase phase, uint64_t done, uint64_t total);
    void *progress_ctx;
};

struct hw_stats {
    uint64_t objects, edges, roots, bytes; /* bytes: sum of shallow sizes */
    uint64_t gc_tracked, permanent;        /* objects on the GC lists; of those, frozen ones */
    uint64_t unreadable;                   /* pointers that could not be followed */
    uint64_t max_waiting; /* the most objects on the work stack at once (its memory: 16 B each) */
    bool gc_running; /* the walk failed because a collection was in progress (nothing was
                        reported to the sink yet): resume the target and try again */
};

/* Walks every interpreter of rt's target (which must be stopped or a core). Fails with
 * read_failed when a collection is in progress (retry) or the GC lists are damaged. */
int hw_walk(struct py_runtime *rt, const struct hw_options *opt, const struct hw_sink *sink,
            struct hw_stats *stats);

/* hw_walk for a live target that the caller has stopped, with a shorter pause: the target's
 * writable memory (at most max_copy bytes) and its threads' frame chains are copied first, then
 * resume(resume_ctx) lets the target run while the walk reads the copy. When the writable memory
 * is larger than max_copy, the walk runs first and resume is called after it. resume is called
 * exactly once, on every path. */
int hw_walk_resuming(struct py_runtime *rt, const struct hw_options *opt,
                     const struct hw_sink *sink, struct hw_stats *stats, uint64_t max_copy,
                     void (*resume)(void *ctx), void *resume_ctx);

#endif
