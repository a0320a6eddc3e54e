/* What grew between two heap snapshots of a process: by type (instances and shallow bytes) and
 * by retaining site (the frames of the retention flame graph, analysis/retention.h: merged
 * retaining paths, with the bytes they retain before and after). Addresses change between dumps
 * and objects come and go, so objects are matched approximately: by type name, and by frame path
 * (root label, then reference label and type per hop), never by address. The model behind
 * `scry diff` and `scry flamegraph --diff`. Pure: two analysed snapshots in, tables out. */
#ifndef SCRY_ANALYSIS_HEAP_DIFF_H
#define SCRY_ANALYSIS_HEAP_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/heap_analysis.h"
#include "analysis/retention.h"
#include "analysis/stacks.h"
#include "common/strbuf.h"

/* The sentence every diff output carries. */
#define HD_MATCHING_NOTE                                                                          \
    "Objects are matched approximately, by type and by retaining path, since addresses change "   \
    "between dumps."

struct hd_type {
    const char *type; /* points into one of the snapshots */
    uint64_t count_before, count_after;
    uint64_t shallow_before, shallow_after;
};

struct hd_site {
    uint32_t node; /* in heap_diff.tree */
    uint64_t retained_before, retained_after;
    uint64_t objects_before, objects_after; /* objects merged into the frame itself */
};

struct heap_diff {
    struct stk_tree tree; /* differential retention tree, finished, not cut */
    struct ret_nodes nodes;
    struct hd_type *types; /* every type, by shallow growth, largest first */
    size_t ntypes;
    struct hd_site *sites; /* retaining sites that changed, by retained growth, largest first */
    size_t nsites;
};

/* Compares two analysed snapshots. Sites are the frames of the differential retention tree
 * whose retained size changed, leaving out structure (frames holding a root, module, class,
 * function, code object, frame, or a module's or class's __dict__) and frames that pass 95% or
 * more of their change on to a child frame of a single object (that child is the site). Types
 * count every object of each snapshot, reachable or not, as `scry analyze` does. Returns 0,
 * -SCRY_E_NO_MEMORY or -SCRY_E_BAD_SNAPSHOT. */
int hd_build(const struct heap_analysis *before, const struct heap_analysis *after,
             struct heap_diff *out);
void hd_free(struct heap_diff *d);

/* A node's frames, outermost first, joined by ';' (its folded stack). */
void hd_node_path(const struct stk_tree *t, uint32_t node, struct strbuf *out);

#endif
