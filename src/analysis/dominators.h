/* Dominator tree and retained sizes of an object graph: the core of `scry analyze`. Pure algorithms
 * over a graph of dense indices in CSR form; they know nothing of snapshots, so the caller maps
 * objects to 0..n-1 and back.
 *
 * The graph is given a virtual super-root, index n, with an edge to every root. An object's
 * immediate dominator is the last object that every path from the super-root to it must pass
 * through; its retained size is its shallow size plus that of every object it dominates, i.e. the
 * bytes that would be freed if it went away.
 *
 * Only strong references count: the caller passes no weak edges (weakref referents, weak-valued
 * dict entries), so that an object held only weakly is retained by whatever holds it strongly, or is
 * unreachable.
 *
 * Memory (bytes per node of n, per edge of E, besides the caller's graph of 4n + 4E):
 *   dom_compute   4n for idom (the output) + 16 per reachable node of working arrays + 4 per
 *                 non-tree edge from a reachable node (E + nroots - reachable at most), all freed
 *                 before it returns except idom. About 26 B/node at 2.5 edges/node.
 *   dom_retained  8n for retained (the output) + 4n of working array, freed before it returns.
 *   dom_children  4(n+2) + 4 per reachable node, owned by the struct.
 *   dom_top       12 per requested entry.
 * So a whole analysis of a heap with 2.5 edges/object (graph 14, shallow 8, idom 4, the largest
 * working set 22) peaks near 48 bytes per object, 56 if retained is allocated before dom_compute
 * runs (bench/heap, docs/PERFORMANCE.md). */
#ifndef SCRY_ANALYSIS_DOMINATORS_H
#define SCRY_ANALYSIS_DOMINATORS_H

#include <stdint.h>

/* idom value of a node that no root reaches. */
#define DOM_UNREACHABLE UINT32_MAX
/* The largest n accepted: n itself names the super-root and UINT32_MAX means unreachable. */
#define DOM_MAX_NODES (UINT32_MAX - 2u)

/* Immediate dominators by Lengauer-Tarjan (path compression, O(E log n)), iterative: no recursion
 * however deep the graph. succ_off has n+1 entries, node v's successors are
 * succ[succ_off[v] .. succ_off[v+1]); roots may repeat and may be reached from other roots; self
 * loops and repeated edges are fine. Writes n entries of idom: the immediate dominator's index, n
 * for a node dominated by the super-root alone (a root, or an object reachable from two roots by
 * disjoint paths), DOM_UNREACHABLE for a node no root reaches.
 * Returns 0, -SCRY_E_BAD_SNAPSHOT for an index or offset out of range (the graph comes from a
 * snapshot), or -SCRY_E_NO_MEMORY. */
int dom_compute(uint32_t n, const uint32_t *succ_off, const uint32_t *succ, const uint32_t *roots,
                uint32_t nroots, uint32_t *idom);
/* dom_compute, telling progress (if not NULL) how far it is every 65536 nodes of each pass: done
 * of total, a measure of the work (3n: the search, the predecessor lists, the semi-dominators).
 * It is how a command shows a computation of minutes; this file knows no terminal. */
int dom_compute_progress(uint32_t n, const uint32_t *succ_off, const uint32_t *succ,
                         const uint32_t *roots, uint32_t nroots, uint32_t *idom,
                         void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx);

/* Retained sizes from dom_compute's idom: retained[v] = shallow[v] + the retained sizes of the
 * nodes v immediately dominates; 0 for unreachable nodes. Needs no order: a node is finished when
 * its last child is, walking up the tree. shallow may be retained itself (sizes turned into
 * retained sizes in place, without a second array). Returns 0, -SCRY_E_BAD_SNAPSHOT if idom is
 * not a tree (an index out of range or a cycle), or -SCRY_E_NO_MEMORY. */
int dom_retained(uint32_t n, const uint32_t *idom, const uint64_t *shallow, uint64_t *retained);

/* Bytes retained by the super-root: the sum of retained[v] over nodes with idom[v] == n, which is
 * the shallow size of everything reachable. */
uint64_t dom_root_retained(uint32_t n, const uint32_t *idom, const uint64_t *retained);

/* The dominator tree as CSR: the children of node v (v == n for the super-root) are
 * child[off[v] .. off[v+1]), in increasing index order. */
struct dom_children {
    uint32_t n;
    uint32_t *off;   /* n + 2 entries */
    uint32_t *child; /* one entry per reachable node */
};

/* Builds the tree from idom; free with dom_children_free. Returns 0, -SCRY_E_BAD_SNAPSHOT for an
 * idom entry out of range, or -SCRY_E_NO_MEMORY. */
int dom_children_build(uint32_t n, const uint32_t *idom, struct dom_children *out);
void dom_children_free(struct dom_children *c);

static inline uint32_t dom_children_count(const struct dom_children *c, uint32_t v)
{
    return c->off[v + 1] - c->off[v];
}

static inline const uint32_t *dom_children_of(const struct dom_children *c, uint32_t v)
{
    return c->child + c->off[v];
}

/* The k nodes with the largest key (ties: the smaller index first), largest first, written to
 * out[0 .. *nout) (*nout < k when there are fewer candidates). Candidates are nodes[0..count) or,
 * with nodes NULL, 0..count-1; with idom given, nodes it marks unreachable are skipped. A bounded
 * heap: O(count log k), no sort of the whole array. Returns 0 or -SCRY_E_NO_MEMORY. */
int dom_top(const uint64_t *key, const uint32_t *nodes, uint32_t count, const uint32_t *idom,
            uint32_t k, uint32_t *out, uint32_t *nout);

#endif
