/* What a heap snapshot retains, and through what: dominators and retained sizes over the strong
 * references, breadth-first retaining paths from the roots, the top retainers, and the type
 * histogram. The model behind `scry analyze` and `scry query`; it reads a validated snapshot and
 * never the target. */
#ifndef SCRY_ANALYSIS_HEAP_ANALYSIS_H
#define SCRY_ANALYSIS_HEAP_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "snapshot/snap_reader.h"

struct heap_analysis {
    const struct snap *s;
    uint32_t n;
    uint64_t *retained;     /* per object; 0 when unreachable */
    uint32_t *idom;         /* dominators.h semantics: n = the super-root, DOM_UNREACHABLE */
    uint32_t *parent;       /* breadth-first parent from the roots; SNAP_NONE for roots and
                               unreachable objects */
    uint32_t *root_label;   /* per object: its root label's string id, or SNAP_NONE */
    uint64_t reachable_objects, reachable_bytes;
    uint64_t weak_edges;    /* references not counted as retaining */
};

/* Runs the whole analysis (O(objects + references)). Returns 0, -SCRY_E_NO_MEMORY, or
 * -SCRY_E_BAD_SNAPSHOT if the graph is inconsistent. */
int ha_build(const struct snap *s, struct heap_analysis *out);
/* The steps of ha_build that take long on a big heap, for a command's progress line. */
enum ha_step { HA_STEP_GRAPH, HA_STEP_DOMINATORS, HA_STEP_RETAINED };
/* ha_build, telling progress (if not NULL) each step as it starts (done 0) and how far the
 * dominators are (done of total, dom_compute_progress's measure; 0 of 0 for the other steps). */
int ha_build_progress(const struct snap *s, struct heap_analysis *out,
                      void (*progress)(void *ctx, enum ha_step step, uint64_t done,
                                       uint64_t total),
                      void *ctx);
void ha_free(struct heap_analysis *a);

/* The object's retaining path as one line, root first: `sys.modules['app'].__dict__['CACHE']`.
 * Unreachable objects get `<unreachable>`. */
void ha_path_inline(const struct heap_analysis *a, uint32_t obj, struct strbuf *out);

/* One hop of a retaining path: the label to write and the object it reaches. */
struct ha_hop {
    const char *label;
    uint32_t object;
    bool inferred; /* the reference was inferred by a conservative scan (snap_edge_inferred) */
};

/* The path root first: hops[0] is the root (its label is the root label), the last is obj.
 * Returns the number of hops written (at most max; 0 when unreachable). */
size_t ha_path(const struct heap_analysis *a, uint32_t obj, struct ha_hop *hops, size_t max);

/* Whether an object is a namespace or structure rather than data: a root, a module, a class, a
 * function or code object, a frame, or the __dict__ of a module or class. Such objects are left
 * out of the top retainers (they retain everything under them and name nothing). */
bool ha_is_structural(const struct heap_analysis *a, uint32_t obj);

/* The k objects that retain the most data: not structural, and not merely passing almost all of
 * their retained size on to a single object they dominate (then that object is the holder).
 * Writes indexes, largest first; returns how many. */
size_t ha_top_retainers(const struct heap_analysis *a, size_t k, uint32_t *out);

/* outer[i] of ha_nest_retainers for a retainer that no other listed one dominates. */
#define HA_NOT_NESTED SIZE_MAX

/* Which listed retainer each one lies inside: outer[i] is the position in top of the nearest
 * other retainer of top[0..ntop) that dominates top[i] (freeing that one frees top[i] too: a
 * DataFrame and the block inside it), or HA_NOT_NESTED. A retainer inside another is shown under
 * it, never beside it, so that no reader adds its bytes twice. O(ntop x dominator-tree depth).
 * Returns 0 or -SCRY_E_NO_MEMORY. */
int ha_nest_retainers(const struct heap_analysis *a, const uint32_t *top, size_t ntop,
                      size_t *outer);

/* The order the retainers are shown in: each one not nested first, in list order, followed by
 * those inside it (each followed by those inside it in turn), with depth[k] the nesting of
 * order[k] (0: not nested). order and depth have ntop entries. Returns 0 or -SCRY_E_NO_MEMORY. */
int ha_nest_order(const size_t *outer, size_t ntop, size_t *order, size_t *depth);

/* What the listed retainers hold together: the retained size of each one that lies inside no
 * other (the nested ones are already in their outer one's). */
uint64_t ha_retainers_total(const struct heap_analysis *a, const uint32_t *top,
                            const size_t *outer, size_t ntop);

/* Per type: instances, shallow bytes, and retained bytes (what would be freed if every instance
 * went away: nested instances are not counted twice). */
struct ha_type {
    uint32_t type; /* string id */
    uint64_t count, shallow, retained;
};

/* All types, by retained size, largest first (malloc'd, *ntypes entries). */
int ha_types(const struct heap_analysis *a, struct ha_type **out, size_t *ntypes);

#endif
