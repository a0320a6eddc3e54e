/* Object address -> object index for the snapshot writer's close (snap_writer.c), over the
 * objects sorted by address, one per address: a table of the 2 KiB pages that hold an object,
 * each with the range of the objects that start in it, and a binary search in that range (at
 * most 128 objects, a few cache lines). It costs about 16 bytes per page of heap rather than
 * 32-64 per object (a table of every address), which at close was the largest thing scry held
 * (docs/PERFORMANCE.md, "the dumper's memory"). */
#ifndef SCRY_SNAPSHOT_SNAP_INDEX_H
#define SCRY_SNAPSHOT_SNAP_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot/snap_reader.h" /* struct snap_object */

struct snap_index {
    struct snap_index_slot {
        uint64_t page; /* page number + 1; 0: empty */
        uint32_t lo, hi;
    } *slots;
    size_t mask;
    const struct snap_object *objs; /* borrowed: must outlive the index */
};

/* 0 or -SCRY_E_NO_MEMORY (not recorded). objs: n objects in increasing address order. */
int snap_index_build(struct snap_index *ix, const struct snap_object *objs, size_t n);
/* The index of the object at exactly addr: true and *index, or false. */
bool snap_index_get(const struct snap_index *ix, uint64_t addr, uint64_t *index);
void snap_index_free(struct snap_index *ix);

#endif
