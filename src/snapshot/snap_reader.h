/* Reading a heap snapshot (docs/snapshot-format.md): snap_open maps the file and validates all of
 * it up front (checksums, every index and offset, the CSR arrays), so the accessors below are
 * plain array reads with no bounds checks and no failure path. Indexes passed to them must be in
 * range (object < nobjects, string id < nstrings, ...): values read from the snapshot itself
 * always are.
 *
 * Calling sequence: snap_open (or snap_open_buffer), any accessors, snap_close. A struct snap is
 * read-only after opening: any number of threads may read it at once. Every pointer returned
 * points into the mapping and stays valid until snap_close. */
#ifndef SCRY_SNAPSHOT_SNAP_READER_H
#define SCRY_SNAPSHOT_SNAP_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/format.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the snapshot reader maps little-endian records in place: port it for big-endian hosts"
#endif

#define SNAP_NONE UINT32_MAX

/* These structs are the on-disk records, used in place. */
struct snap_object {
    uint64_t addr;
    uint64_t size;  /* shallow, as sys.getsizeof */
    uint32_t type;  /* string id of the qualified type name */
    uint32_t flags; /* enum snap_object_flags */
};

struct snap_root {
    uint32_t object;
    uint32_t label; /* string id */
};

struct snap_location {
    uint32_t object;
    uint32_t file; /* string id */
    uint32_t line;
};

struct snap_content {
    uint32_t object;
    uint32_t string;
};

_Static_assert(sizeof(struct snap_object) == SNAP_OBJ_SIZE, "OBJS record layout");
_Static_assert(sizeof(struct snap_root) == SNAP_ROOT_SIZE, "ROOT record layout");
_Static_assert(sizeof(struct snap_location) == SNAP_LOC_SIZE, "LOCS record layout");
_Static_assert(sizeof(struct snap_content) == SNAP_CONT_SIZE, "CONT record layout");

/* ALOC (1.2): live allocation samples of a program under scry run (docs/allocations.md). */
struct snap_alloc_sample {
    uint64_t addr;   /* the sampled block's start */
    uint64_t size;   /* its size in bytes */
    uint64_t weight; /* the bytes the sample stands for */
    uint32_t stack;  /* index into the stacks, or SNAP_NONE */
    uint32_t zero;
};
struct snap_alloc_stack {
    uint32_t first, depth; /* frames [first, first + depth), outermost first */
};
struct snap_alloc_frame {
    uint32_t file, func; /* string ids */
    uint32_t line;
};
/* BUFS (1.3): a native block an object alone holds (a list's item array, numpy's data...),
 * sorted by address; docs/allocations.md. */
struct snap_buffer {
    uint64_t addr, size;
    uint32_t object; /* its owner */
    uint32_t zero;
};
_Static_assert(sizeof(struct snap_buffer) == SNAP_BUF_SIZE, "BUFS record layout");
/* ARNA (1.4): an arena of Python's small-object allocator made while allocations were recorded
 * from outside, with the stack that made it (an ALOC stack), sorted by address;
 * docs/allocations.md, "Arenas". */
struct snap_arena {
    uint64_t addr, size;
    uint32_t stack; /* index into the ALOC stacks, or SNAP_NONE */
    uint32_t zero;
};
_Static_assert(sizeof(struct snap_arena) == SNAP_ARNA_SIZE, "ARNA record layout");
_Static_assert(sizeof(struct snap_alloc_sample) == SNAP_ALOC_SAMPLE_SIZE, "ALOC sample layout");
_Static_assert(sizeof(struct snap_alloc_stack) == SNAP_ALOC_STACK_SIZE, "ALOC stack layout");
_Static_assert(sizeof(struct snap_alloc_frame) == SNAP_ALOC_FRAME_SIZE, "ALOC frame layout");

/* META, decoded. */
struct snap_meta_info {
    uint32_t pid;
    bool capture_contents;
    bool c_samples_only; /* SNAP_META_C_SAMPLES_ONLY: no sample of Python's small objects */
    uint32_t max_str;
    uint64_t rss_bytes;
    int64_t dump_time_us; /* Unix epoch, UTC */
    uint64_t pause_us;
    const char *python_version; /* never NULL ("" if unknown) */
    const char *tool_version;
    uint64_t dropped_edges, duplicate_objects;
    uint32_t dropped_roots, dropped_locations;
};

struct snap_chunk_info {
    uint32_t type; /* enum snap_chunk_type, or an unknown (skipped) one */
    uint32_t crc;
    uint64_t offset, length;
};

/* Treat every field as read-only. */
struct snap {
    const uint8_t *base;
    size_t size;
    bool mapped; /* base is an mmap (else malloc'd, owned) */
    uint16_t major, minor;

    uint32_t nobjects, nedges, nstrings, nroots, nlocations, ncontents;
    const struct snap_object *objects;
    const uint32_t *edge_first;  /* nobjects + 1 */
    const uint32_t *edge_target; /* nedges: object index */
    const uint32_t *edge_label;  /* nedges: string id */
    const uint8_t *edge_kind;    /* nedges: enum snap_edge_kind */
    const uint32_t *inferred;    /* ninferred edge indexes, increasing (INFR, 1.1) */
    uint32_t ninferred;
    const uint32_t *str_off;     /* nstrings + 1 */
    const char *str_blob;
    const struct snap_root *roots;
    const struct snap_location *locations;
    const struct snap_content *contents;

    uint64_t shallow_total; /* sum of object sizes (saturating) */
    struct snap_meta_info meta;
    bool has_allocations; /* an ALOC chunk */
    uint64_t alloc_window, alloc_dropped;
    uint32_t nalloc_samples, nalloc_stacks, nalloc_frames;
    const struct snap_alloc_sample *alloc_samples;
    const struct snap_alloc_stack *alloc_stacks;
    const struct snap_alloc_frame *alloc_frames;
    uint32_t nbuffers; /* BUFS (1.3); 0 when absent */
    const struct snap_buffer *buffers;
    uint32_t narenas; /* ARNA (1.4); 0 when absent */
    const struct snap_arena *arenas;
    uint32_t nchunks;
    struct snap_chunk_info *chunks; /* directory as read, nchunks entries (malloc'd) */
};

/* Maps and validates path. Returns 0 and fills *out (owned by the caller: snap_close), or
 * -SCRY_E_IO (cannot open, stat or map; not a regular file) or -SCRY_E_BAD_SNAPSHOT (with a
 * message naming the file, the problem and the byte offset), message recorded with err_fail. */
int snap_open(const char *path, struct snap *out);
/* The same over a copy of len bytes at data (tests, fuzzing); name appears in messages. */
int snap_open_buffer(const void *data, size_t len, const char *name, struct snap *out);
/* A mapped snapshot's pages out of the process (nothing for one in memory): the next access
 * reads them again from the page cache. Between passes that touch different parts of a large
 * snapshot (the edges, then the objects), so that the process's peak holds only what one pass
 * uses. snap_open does it once the file is validated. */
void snap_release_pages(const struct snap *s);
/* Unmaps and frees; s may be zeroed or already closed. */
void snap_close(struct snap *s);

static inline uint32_t snap_nobjects(const struct snap *s) { return s->nobjects; }

static inline const struct snap_object *snap_object(const struct snap *s, uint32_t i)
{
    return &s->objects[i];
}

/* Object i's outgoing edges are indexes [*begin, *end) into the edge arrays. */
static inline void snap_edges(const struct snap *s, uint32_t i, uint32_t *begin, uint32_t *end)
{
    *begin = s->edge_first[i];
    *end = s->edge_first[i + 1];
}

static inline uint32_t snap_edge_target(const struct snap *s, uint32_t e)
{
    return s->edge_target[e];
}
static inline uint32_t snap_edge_label(const struct snap *s, uint32_t e)
{
    return s->edge_label[e];
}
static inline unsigned snap_edge_kind(const struct snap *s, uint32_t e) { return s->edge_kind[e]; }
/* Whether edge e was inferred by a conservative scan (binary search in INFR; false before 1.1). */
bool snap_edge_inferred(const struct snap *s, uint32_t e);

/* The string with that id, NUL-terminated; snap_string_len also gives its length (captured
 * bytes contents may hold NULs). */
static inline const char *snap_string(const struct snap *s, uint32_t id)
{
    return s->str_blob + s->str_off[id];
}
static inline const char *snap_string_len(const struct snap *s, uint32_t id, size_t *len)
{
    *len = s->str_off[id + 1] - s->str_off[id] - 1;
    return s->str_blob + s->str_off[id];
}

static inline const char *snap_type_name(const struct snap *s, uint32_t i)
{
    return snap_string(s, s->objects[i].type);
}

/* The index of the object at addr, or SNAP_NONE (binary search). */
uint32_t snap_find(const struct snap *s, uint64_t addr);

static inline uint32_t snap_nroots(const struct snap *s) { return s->nroots; }
static inline const struct snap_root *snap_root(const struct snap *s, uint32_t i)
{
    return &s->roots[i];
}

static inline uint32_t snap_nlocations(const struct snap *s) { return s->nlocations; }
static inline const struct snap_location *snap_location_at(const struct snap *s, uint32_t i)
{
    return &s->locations[i];
}
/* Object's location (binary search): true with the file and line, or false. */
bool snap_location(const struct snap *s, uint32_t object, const char **file, uint32_t *line);

/* Object's captured content: true with its bytes and length, or false (none captured). */
bool snap_content(const struct snap *s, uint32_t object, const char **data, size_t *len);

static inline const struct snap_meta_info *snap_meta(const struct snap *s) { return &s->meta; }

#endif
