/* Writing a heap snapshot (docs/snapshot-format.md). The writer takes objects, references, roots
 * and locations in any order (a reference may name an address before or without its object),
 * keeps them in compact arrays with their strings interned, and at close sorts the objects by
 * address, turns addresses into indexes, builds the CSR edge arrays and writes the file with checksums.
 * Memory while writing: about 24 bytes per object and 24 per reference, plus the distinct strings;
 * at close a temporary address index of 32-64 bytes per object.
 *
 * Calling sequence: snap_writer_open; any number of snap_add_* and snap_set_meta (in any order);
 * then exactly one of snap_writer_close (writes a temporary file made by common/outfile.h,
 * fsyncs, renames it to path) or snap_writer_abort (nothing is left on disk). After an
 * snap_add_* failure only abort is allowed. Not thread-safe: one thread feeds one writer. */
#ifndef SCRY_SNAPSHOT_SNAP_WRITER_H
#define SCRY_SNAPSHOT_SNAP_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/format.h"

struct snap_writer;

struct snap_meta {
    uint32_t pid;
    const char *python_version; /* NULL: "" */
    uint64_t rss_bytes;         /* 0: unknown */
    int64_t dump_time_us;       /* Unix epoch, UTC */
    uint64_t pause_us;
    bool capture_contents;
    uint32_t max_str;
    const char *tool_version; /* NULL: "" */
    bool c_samples_only;      /* SNAP_META_C_SAMPLES_ONLY */
};

struct snap_write_stats {
    uint64_t objects, edges, roots, locations, contents, strings;
    uint64_t dropped_edges, duplicate_objects, dropped_roots, dropped_locations;
    uint64_t file_bytes;   /* size of the file written */
    uint64_t shallow_bytes; /* sum of object sizes */
};

/* Creates the temporary file (mode 0600) now, so that a bad path fails before any walk.
 * Returns 0 and *out, or -SCRY_E_IO / -SCRY_E_NO_MEMORY. */
int snap_writer_open(const char *path, struct snap_writer **out);

/* An object. type_name is interned; content (content_len bytes, may hold NULs) is stored only if
 * not NULL, and only when the meta says capture_contents (the caller has capped and redacted it).
 * flags: enum snap_object_flags. addr 0 is refused (-SCRY_E_INTERNAL). */
int snap_add_object(struct snap_writer *w, uint64_t addr, const char *type_name, uint64_t size,
                    uint32_t flags, const char *content, size_t content_len);
/* A reference from one address to another; kind: enum snap_edge_kind; label NULL or "" for none.
 * Kept only if both addresses turn out to be objects (else counted as dropped). */
int snap_add_edge(struct snap_writer *w, uint64_t from, uint64_t to, unsigned kind,
                  const char *label);
int snap_add_root(struct snap_writer *w, uint64_t addr, const char *label);
/* The id of a string in the snapshot's table, added if new: a caller that passes the same text
 * many times (type names, attribute labels) asks once and gives the id to the calls below, which
 * then look nothing up. Ids are numbered in the order of first use, as the calls above number
 * them. */
int snap_intern(struct snap_writer *w, const char *s, uint32_t *id);
/* snap_add_object and snap_add_edge with a type name or label id from snap_intern (an id not
 * given by it: -SCRY_E_INTERNAL). */
int snap_add_object_id(struct snap_writer *w, uint64_t addr, uint32_t type, uint64_t size,
                       uint32_t flags, const char *content, size_t content_len);
int snap_add_edge_id(struct snap_writer *w, uint64_t from, uint64_t to, unsigned kind,
                     uint32_t label);
/* Where the object at addr comes from; a second location for the same object is dropped. A
 * negative line is stored as 0 (unknown). */
int snap_add_location(struct snap_writer *w, uint64_t addr, const char *file, int line);
/* Live allocation samples (the ALOC chunk, docs/allocations.md). The chunk is written, and the
 * file's minor version is 2, once snap_set_alloc_info was called. A frame is a stack's item
 * (outermost first); a stack is frames [first, first + depth) of those added; a sample's stack
 * is an index of those added or SNAP_NONE. */
int snap_add_alloc_frame(struct snap_writer *w, const char *file, const char *func, int line);
int snap_add_alloc_stack(struct snap_writer *w, uint32_t first, uint32_t depth);
int snap_add_alloc_sample(struct snap_writer *w, uint64_t addr, uint64_t size, uint64_t weight,
                          uint32_t stack);
/* window: the sampling window (bytes); dropped: samples left out because they were not live
 * through the whole walk. */
void snap_set_alloc_info(struct snap_writer *w, uint64_t window, uint64_t dropped);
/* An arena of Python's small-object allocator and the stack that made it (the ARNA chunk,
 * written with ALOC: stack is an index of the stacks added, or SNAP_NONE); makes the file 1.4.
 * Arenas are sorted by address at close, and one overlapping the one before is dropped. */
int snap_add_arena(struct snap_writer *w, uint64_t addr, uint64_t size, uint32_t stack);
/* A native block that the object at owner alone holds (the BUFS chunk, written with ALOC to
 * credit samples inside it to the owner). Kept only if owner turns out to be an object. */
int snap_add_buffer(struct snap_writer *w, uint64_t owner, uint64_t addr, uint64_t size);
/* Copies *m (strings included); the last call wins. Never fails (strings are interned at close). */
void snap_set_meta(struct snap_writer *w, const struct snap_meta *m);

/* Writes the snapshot and frees the writer (also on failure, which removes the temporary file).
 * Returns 0 and fills *stats (may be NULL), or a negative error with the message recorded. */
int snap_writer_close(struct snap_writer *w, struct snap_write_stats *stats);
/* Frees the writer and removes the temporary file. w may be NULL. */
void snap_writer_abort(struct snap_writer *w);

#endif
