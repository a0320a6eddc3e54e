/* Allocation samples joined to a heap snapshot's objects (docs/allocations.md): each live
 * sample's block to the object it holds, each object to the top retainer that dominates it, and
 * the bytes grouped by allocating line or stack. Pure: reads a snapshot (its ALOC chunk) and
 * its analysis. */
#ifndef SCRY_ANALYSIS_ALLOC_JOIN_H
#define SCRY_ANALYSIS_ALLOC_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/heap_analysis.h"
#include "analysis/stacks.h"

/* A sampled block holds the object at block + 0, 16 (GC header) or 32 (and the pre-header of
 * managed dict and weak references), inside the block: no other start is a match. */
#define AJ_MAX_HEADER 32
/* A block more than this larger than the object found at its start held something else (its
 * address was reused) and is not a match; from AJ_PAGE bytes on, the block may also be the
 * object's size rounded up to whole pages (malloc's own mappings report their usable size). */
#define AJ_SIZE_SLACK 64
#define AJ_PAGE 4096
/* Arenas (docs/allocations.md, "Arenas"): recorded from outside, Python's small objects carry
 * no sample; an object of at most AJ_ARENA_OBJECT bytes that no sample holds, lying in an arena
 * of the snapshot's ARNA, is credited with its size to the line that made the arena (an
 * approximation: the arena's free blocks serve any line later). */
#define AJ_ARENA_OBJECT 512
/* A block that holds no object may be an object's own native block (the snapshot's BUFS: a
 * list's item array, numpy's data...): the buffer starts at the block or up to AJ_MAX_HEADER
 * bytes into it (the block's header: 3.11/3.12 split values' prefix, 3.13t's list arrays,
 * 3.15's bytearray storage, a bytes object), and the block is at most AJ_SIZE_SLACK bytes
 * larger than the buffer. Its samples are credited to the owner. */

/* Bytes from one allocating line (the innermost frame of the samples' stacks; file 0 and line 0:
 * samples with no profiled Python frame). */
struct aj_line {
    uint32_t file, func, line; /* string ids of the snapshot, line number */
    uint64_t bytes;            /* the sum of the samples' weights */
    uint64_t samples;
    uint64_t small; /* samples not counted at their block's exact size (blocks below the window,
                       a grown block's growth points): the only ones with sampling error */
    uint64_t error; /* the sampling error of bytes (one standard deviation): W x sqrt(small) */
    uint64_t arena_bytes; /* of bytes: small objects credited by the arena they lie in */
};

struct aj_join {
    const struct heap_analysis *a;
    uint32_t *object; /* per sample: the object its block holds or is a buffer of, or SNAP_NONE */
    uint64_t samples, matched, unmatched;
    uint64_t matched_bytes, unmatched_bytes;
    uint64_t in_buffers, in_buffers_bytes; /* of the matched: blocks that are objects' buffers */
    struct aj_line *unmatched_lines;       /* the unmatched samples by allocating line */
    size_t nunmatched_lines;
    /* Arenas (the snapshot's ARNA; NULL and 0 without): per object, the arena that credits it
     * (SNAP_NONE: none); per arena, the bytes it credits; the totals; the dominator tree's
     * children (objects kids[kid_first[o] .. kid_first[o + 1]) have o as immediate dominator),
     * to sum a retainer's objects. */
    uint32_t *arena_of;
    uint64_t *arena_credit;
    uint64_t arena_objects, arena_bytes;
    uint32_t *kid_first, *kids;
};

/* Returns 0, -SCRY_E_NO_ALLOCATIONS (a snapshot without an ALOC chunk; message recorded) or
 * -SCRY_E_NO_MEMORY. */
int aj_build(const struct heap_analysis *a, struct aj_join *out);
void aj_free(struct aj_join *j);

/* The allocating lines of the samples whose object is dominated by (or is) holder, largest
 * first (malloc'd, *n entries). The holder cannot retain more than its retained size R: when
 * the lines' estimates add up to more (a sample of a small block weighs the whole window), each
 * is scaled down so that they add up to R, and no error exceeds R. A capped estimate is never
 * farther from the truth, which is at most R. */
int aj_lines_retained_by(const struct aj_join *j, uint32_t holder, struct aj_line **out, size_t *n);
/* The same for the samples whose object is marked in member (one byte per object, not 0: in;
 * the instances of a type, say), capped the same way at the members' shallow bytes (which
 * count their own buffers). */
int aj_lines_of_objects(const struct aj_join *j, const uint8_t *member, struct aj_line **out,
                        size_t *n);
/* Retained bytes by allocating stack (outermost frame first, "function (file:line)"), into a
 * flame graph's tree: every matched sample's weight, and each arena's credited bytes along the
 * stack that made it. */
int aj_add_stacks(const struct aj_join *j, struct stk_tree *t);

#endif
