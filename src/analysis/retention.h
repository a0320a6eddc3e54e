/* The retention flame graph of a heap snapshot: its dominator tree as weighted stacks
 * (analysis/stacks.h), one frame per hop of a retaining path, merged by frame text so that the
 * items of a collection become one frame. Frame text, merge rules and widths follow heapspy's
 * "Retention flame graph" (docs/flamegraph.md, "Heap snapshots"):
 *   - a root object: its root label (`sys.modules['app']`);
 *   - any other object: the label of the reference breadth-first search entered it through, a
 *     space, its type without `builtins.` (`['CACHE'] dict`, `.payload bytes`); list, tuple and
 *     deque indices are written `[<index>]` so that all items merge;
 *   - `...` before the label when that reference does not come from the object's dominator (it
 *     was reached through objects its dominator owns), and so for objects only the super-root
 *     dominates that are not roots themselves (shared by several roots: a top-level frame).
 * Sibling frames with the same text are one frame, and their children merge in turn. A frame's
 * self weight is the sum of the shallow sizes of its objects, so its total is their retained
 * size, and the folded lines of a snapshot add up to its reachable bytes exactly.
 * Pure: reads a validated snapshot and its analysis, never the target. */
#ifndef SCRY_ANALYSIS_RETENTION_H
#define SCRY_ANALYSIS_RETENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/heap_analysis.h"
#include "analysis/stacks.h"
#include "common/strbuf.h"

/* Default cutoffs of a heap graph (heapspy): frames under 0.01% of reachable bytes and objects
 * deeper than 32 frames go into [other]. */
#define RET_DEFAULT_MIN_PCT 0.01
#define RET_DEFAULT_MAX_DEPTH 32u

/* What the tree's nodes stand for, per node of the stk_tree (index = node id), kept while the
 * tree is built: how many objects were merged into each node on either side, and whether any of
 * them is structure (ha_is_structural: roots, modules, classes, functions, a module's
 * __dict__ ...). Arrays grow with the tree; ncap entries are valid, zero beyond the nodes made. */
struct ret_nodes {
    uint64_t *objects;        /* after (or the only side) */
    uint64_t *objects_before; /* differential trees */
    bool *structural;
    size_t cap;
};

/* Adds the retention stacks of an analysed snapshot to t (not finished): to the "before" side of
 * a differential tree when before is set, else to the "after" (or only) side. nodes may be NULL;
 * otherwise it is filled for the nodes this call touches (zero it before the first call, free
 * with ret_nodes_free). Iterative: any depth of dominator tree. Returns 0, -SCRY_E_NO_MEMORY or
 * -SCRY_E_BAD_SNAPSHOT (a dominator tree that is not one). */
int ret_add_snapshot(struct stk_tree *t, const struct heap_analysis *a, bool before,
                     struct ret_nodes *nodes);
void ret_nodes_free(struct ret_nodes *n);

/* The frame text of one reachable object (as ret_add_snapshot names it, before stk_frame's
 * `;` -> `:`). entry_edge is the edge BFS entered obj through (ret_entry_edges), or NULL to
 * look it up (slow on wide parents: for tests and single objects). */
void ret_frame_text(const struct heap_analysis *a, const uint32_t *entry_edge, uint32_t obj,
                    struct strbuf *out);

/* Per object, the index of the first strong edge from its breadth-first parent to it (the edge
 * the search entered it through), SNAP_NONE for roots and unreachable objects: one pass over the
 * edges. malloc'd, a->n entries; NULL when out of memory. */
uint32_t *ret_entry_edges(const struct heap_analysis *a);

#endif
