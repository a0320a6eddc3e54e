/* Dominator tree (Lengauer-Tarjan) and retained sizes over an index graph; see dominators.h.
 *
 * The graph is huge (millions of objects) and may be one long chain (a linked list of a million
 * nodes), so nothing here recurses and memory is counted in bytes per object:
 *   - the depth-first search keeps its stack in the tree itself (an edge cursor per node, the DFS
 *     parent to go back to), not in a separate stack;
 *   - path compression walks up by reversing the ancestor pointers and back down restoring them,
 *     so it needs no stack either;
 *   - four arrays indexed by DFS number do all the work, each holding two things in turn:
 *       anc    DFS parent, then the compressed forest ancestor (a node's parent is still its
 *              ancestor when it is processed, since only linked nodes are compressed)
 *       label  DFS number -> vertex during the search; then the head of the node's bucket until the
 *              node is processed, its eval label after; at the end DFS number -> vertex again
 *       ps     the edge cursor during the search; then the predecessor lists' offsets, each slot
 *              replaced by a semi-dominator once no longer needed
 *       dom    predecessor counts during the search; then the next node in the same bucket,
 *              then the immediate dominator
 *   - the vertex -> DFS number map lives in the caller's idom array until the end;
 *   - predecessor lists leave out DFS tree edges: a node's parent is where its semi-dominator
 *     search starts anyway, so they would add nothing (saves 4 bytes per reachable node).
 *
 * Forest linking follows the DFS order: nodes are processed from the last DFS number down, and a
 * node is linked to its parent as soon as it is processed, so "v is in the forest" is just
 * "v >= last" for the current threshold, as in LLVM's SemiNCA; no link operation is needed. */
#include "analysis/dominators.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define NONE UINT32_MAX

/* The graph's indices are as scattered as the objects' order in the snapshot, so the passes over
 * every node wait on cache misses; asking for lines a little ahead overlaps them. */
#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif
#define AHEAD 16

/* The node with the smallest semi-dominator on the forest path from v up to, not including, its
 * forest root; v itself when v is not linked yet (v < last). semi[x] is valid for linked x. */
static inline uint32_t lt_eval(uint32_t v, uint32_t last, uint32_t *anc, uint32_t *label,
                               const uint32_t *semi)
{
    if (v < last)
        return v;
    if (anc[v] < last)
        return label[v];
    /* Up: reverse the pointers until the topmost linked node x, whose ancestor is the root. */
    uint32_t prev = NONE, x = v;
    while (anc[x] >= last) {
        uint32_t up = anc[x];
        anc[x] = prev;
        prev = x;
        x = up;
    }
    /* Down: point every node at the root, carrying the best label from above. */
    uint32_t root = anc[x], best = label[x];
    for (uint32_t y = prev; y != NONE;) {
        uint32_t down = anc[y];
        anc[y] = root;
        if (semi[best] < semi[label[y]])
            label[y] = best;
        else
            best = label[y];
        y = down;
    }
    return label[v];
}

int dom_compute(uint32_t n, const uint32_t *succ_off, const uint32_t *succ, const uint32_t *roots,
                uint32_t nroots, uint32_t *idom)
{
    return dom_compute_progress(n, succ_off, succ, roots, nroots, idom, NULL, NULL);
}

#define PROGRESS_EVERY 65536u

/* Pass k (0-2) of 3 is done of m nodes through: reported as a share of 3n. */
static void report(void (*progress)(void *, uint64_t, uint64_t), void *ctx, uint32_t n,
                   unsigned k, uint64_t done, uint64_t m)
{
    if (progress && m)
        progress(ctx, (uint64_t)k * n + done * n / m, 3 * (uint64_t)n);
}

/* The graph and the working arrays of one computation (dom_compute_progress), indexed by DFS
 * number; the comments there say what each holds at which pass. */
struct lt {
    uint32_t n, nroots, nedges;
    const uint32_t *succ_off, *succ, *roots;
    uint32_t *anc, *label, *ps, *dom, *pred;
    uint32_t *pre;  /* vertex -> DFS number until the end */
    uint32_t m;     /* the nodes reached, the super-root included */
    uint64_t total; /* predecessors other than DFS parents */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *ctx;
};

/* 1. Depth-first search from the super-root (DFS number 0), numbering in preorder, counting
 * each node's predecessors other than its DFS parent as it goes: an edge u -> s to a node seen
 * before is such a predecessor unless u is s's parent (a repeated tree edge). */
static int lt_search(struct lt *g)
{
    const uint32_t n = g->n, nroots = g->nroots, nedges = g->nedges;
    const uint32_t *succ_off = g->succ_off, *succ = g->succ, *roots = g->roots;
    uint32_t *anc = g->anc, *pre = g->pre;
    uint32_t *vert = g->label, *cur = g->ps, *npred = g->dom;
    uint32_t m = 1, u = 0;
    uint64_t total = 0;
    vert[0] = n;
    anc[0] = 0;
    cur[0] = 0;
    npred[0] = 0;
    for (;;) {
        uint32_t s;
        if (u == 0) {
            if (cur[0] == nroots)
                break;
            s = roots[cur[0]++];
        } else {
            if (cur[u] == succ_off[vert[u] + 1]) {
                u = anc[u];
                continue;
            }
            s = succ[cur[u]++];
        }
        if (s >= n)
            return err_fail(SCRY_E_BAD_SNAPSHOT, "%s of node %u names node %u of %u",
                            u ? "an edge" : "a root", u ? vert[u] : 0, s, n);
        uint32_t t = pre[s];
        if (t != NONE) {
            if (anc[t] != u) {
                npred[t]++;
                total++;
            }
            continue;
        }
        uint32_t lo = succ_off[s], hi = succ_off[s + 1];
        if (lo > hi || hi > nedges)
            return err_fail(SCRY_E_BAD_SNAPSHOT, "edges of node %u at [%u, %u) of %u", s, lo, hi,
                            nedges);
        pre[s] = m;
        vert[m] = s;
        anc[m] = u;
        cur[m] = lo;
        npred[m] = 0;
        u = m++;
        if ((m & (PROGRESS_EVERY - 1)) == 0)
            report(g->progress, g->ctx, n, 0, m, n); /* the reachable ones: n at most */
    }
    g->m = m;
    g->total = total;
    return 0;
}

/* 2. Predecessor lists in DFS numbers, without tree edges: prefix sums of the counts, then
 * a fill in DFS order (a node's successors tend to have nearby DFS numbers, so the writes stay
 * local even when the indices are scattered). */
static int lt_predecessors(struct lt *g)
{
    const uint32_t n = g->n, m = g->m, nroots = g->nroots;
    const uint32_t *succ_off = g->succ_off, *succ = g->succ, *roots = g->roots;
    uint32_t *anc = g->anc, *pre = g->pre, *ps = g->ps;
    const uint32_t *vert = g->label, *npred = g->dom;
    uint64_t total = g->total;
    if (total > UINT32_MAX)
        return err_fail(SCRY_E_BAD_SNAPSHOT, "%llu edges: at most %u supported",
                        (unsigned long long)total, UINT32_MAX);
    uint32_t *pred = g->pred = malloc((total ? total : 1) * sizeof(*pred));
    if (!pred)
        return err_fail(SCRY_E_NO_MEMORY, "dominators: %llu predecessors",
                        (unsigned long long)total);
    ps[0] = 0;
    for (uint32_t t = 0; t < m; t++) /* ps[t] = start of t's list for now */
        ps[t + 1] = ps[t] + npred[t];
    for (uint32_t i = 0; i < nroots; i++) {
        uint32_t t = pre[roots[i]];
        if (anc[t] != 0)
            pred[ps[t]++] = 0;
    }
    for (uint32_t i = 1; i < m; i++) {
        uint32_t v = vert[i];
        if ((i & (PROGRESS_EVERY - 1)) == 0)
            report(g->progress, g->ctx, n, 1, i, m);
        if (i + 2 * AHEAD < m)
            PREFETCH(&succ_off[vert[i + 2 * AHEAD]]);
        if (i + AHEAD < m) {
            uint32_t a = vert[i + AHEAD];
            for (uint32_t e = succ_off[a], end = succ_off[a + 1]; e < end && e < succ_off[a] + 8;
                 e++)
                PREFETCH(&pre[succ[e]]);
        }
        for (uint32_t e = succ_off[v], end = succ_off[v + 1]; e < end; e++) {
            uint32_t t = pre[succ[e]];
            if (anc[t] != i)
                pred[ps[t]++] = i;
        }
    }
    for (uint32_t t = m; t > 0; t--) /* each ps[t] now ends t's list: shift back to starts */
        ps[t] = ps[t - 1];
    ps[0] = 0;
    return 0;
}

/* 3. Semi-dominators and, through the buckets, immediate dominators or their stand-ins; then
 * the immediate dominators (in DFS numbers, in dom). */
static void lt_dominators(struct lt *g)
{
    const uint32_t n = g->n, m = g->m;
    uint32_t *anc = g->anc, *label = g->label, *ps = g->ps, *dom = g->dom;
    const uint32_t *pred = g->pred;
    for (uint32_t i = 0; i < m; i++)
        label[i] = NONE; /* empty buckets */
    uint32_t *semi = ps + 1; /* semi[w] replaces ps[w + 1], the end of w's list, once w is done */
    for (uint32_t w = m - 1; w > 0; w--) {
        if ((w & (PROGRESS_EVERY - 1)) == 0)
            report(g->progress, g->ctx, n, 2, m - w, m);
        uint32_t start = ps[w], end = ps[w + 1], p = anc[w];
        uint32_t s = p;
        for (uint32_t k = start; k < end; k++) {
            uint32_t x = lt_eval(pred[k], w + 1, anc, label, semi);
            uint32_t sx = x > w ? semi[x] : x;
            if (sx < s)
                s = sx;
        }
        semi[w] = s;
        dom[w] = label[s]; /* into bucket(s) */
        label[s] = w;
        label[w] = w; /* w's own bucket was emptied by its children; w is linked now */
        uint32_t v = label[p];
        label[p] = NONE;
        while (v != NONE) {
            uint32_t next = dom[v];
            uint32_t x = lt_eval(v, w, anc, label, semi);
            dom[v] = semi[x] < semi[v] ? x : p;
            v = next;
        }
    }
    dom[0] = 0;
    for (uint32_t w = 1; w < m; w++)
        if (dom[w] != semi[w])
            dom[w] = dom[dom[w]];
}

int dom_compute_progress(uint32_t n, const uint32_t *succ_off, const uint32_t *succ,
                         const uint32_t *roots, uint32_t nroots, uint32_t *idom,
                         void (*progress)(void *ctx, uint64_t done, uint64_t total), void *ctx)
{
    if (n > DOM_MAX_NODES)
        return err_fail(SCRY_E_BAD_SNAPSHOT, "graph of %u nodes: at most %u supported", n,
                        DOM_MAX_NODES);
    int ret = 0;
    size_t cap = (size_t)n + 2;
    struct lt g = {.n = n, .nroots = nroots, .succ_off = succ_off, .succ = succ, .roots = roots,
                   .pre = idom, .progress = progress, .ctx = ctx};
    g.anc = malloc(cap * sizeof(*g.anc));
    g.label = malloc(cap * sizeof(*g.label));
    g.ps = malloc(cap * sizeof(*g.ps));
    g.dom = malloc(cap * sizeof(*g.dom));
    if (!g.anc || !g.label || !g.ps || !g.dom) {
        ret = err_fail(SCRY_E_NO_MEMORY, "dominators of %u nodes", n);
        goto out;
    }
    memset(g.pre, 0xff, (size_t)n * sizeof(*g.pre));
    g.nedges = succ_off[n];
    if ((ret = lt_search(&g)) != 0 || (ret = lt_predecessors(&g)) != 0)
        goto out;
    lt_dominators(&g);
    free(g.pred);
    g.pred = NULL;

    /* 4. Back to vertex indices, in place over the vertex -> DFS number map. */
    uint32_t *label = g.label, *pre = g.pre;
    label[0] = n;
    for (uint32_t v = 0; v < n; v++)
        if (pre[v] != NONE)
            label[pre[v]] = v;
    for (uint32_t v = 0; v < n; v++)
        if (pre[v] != NONE)
            idom[v] = label[g.dom[pre[v]]];
out:
    if (ret < 0 && n <= DOM_MAX_NODES)
        memset(idom, 0xff, (size_t)n * sizeof(*idom));
    free(g.anc);
    free(g.label);
    free(g.ps);
    free(g.dom);
    free(g.pred);
    return ret;
}

int dom_retained(uint32_t n, const uint32_t *idom, const uint64_t *shallow, uint64_t *retained)
{
    /* pending[v]: children of v not finished yet; NONE once v is finished. */
    uint32_t *pending = calloc(n ? n : 1, sizeof(*pending));
    if (!pending)
        return err_fail(SCRY_E_NO_MEMORY, "retained sizes of %u nodes", n);
    int ret = 0;
    uint32_t reachable = 0, finished = 0;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t d = idom[v];
        if (v + AHEAD < n && idom[v + AHEAD] < n)
            PREFETCH(&pending[idom[v + AHEAD]]);
        retained[v] = d == NONE ? 0 : shallow[v];
        if (d == NONE)
            continue;
        reachable++;
        if (d < n) {
            pending[d]++;
        } else if (d != n) {
            ret = err_fail(SCRY_E_BAD_SNAPSHOT, "dominator of node %u is %u of %u", v, d, n);
            goto out;
        }
    }
    /* A leaf is finished at once; finishing a node's last child finishes it, so walk up. */
    for (uint32_t v = 0; v < n; v++) {
        if (idom[v] == NONE || pending[v] != 0)
            continue;
        for (uint32_t x = v;;) {
            pending[x] = NONE;
            finished++;
            uint32_t d = idom[x];
            if (d >= n)
                break;
            retained[d] += retained[x];
            if (--pending[d] != 0)
                break;
            x = d;
        }
    }
    if (finished != reachable) /* a cycle, or a child of an unreachable node */
        ret = err_fail(SCRY_E_BAD_SNAPSHOT, "dominators do not form a tree (%u of %u nodes)",
                       finished, reachable);
out:
    free(pending);
    return ret;
}

uint64_t dom_root_retained(uint32_t n, const uint32_t *idom, const uint64_t *retained)
{
    uint64_t sum = 0;
    for (uint32_t v = 0; v < n; v++)
        if (idom[v] == n)
            sum += retained[v];
    return sum;
}

int dom_children_build(uint32_t n, const uint32_t *idom, struct dom_children *out)
{
    memset(out, 0, sizeof(*out));
    if (n > DOM_MAX_NODES)
        return err_fail(SCRY_E_BAD_SNAPSHOT, "graph of %u nodes: at most %u supported", n,
                        DOM_MAX_NODES);
    uint32_t *off = calloc((size_t)n + 2, sizeof(*off));
    if (!off)
        return err_fail(SCRY_E_NO_MEMORY, "dominator tree of %u nodes", n);
    uint32_t count = 0;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t d = idom[v];
        if (d == NONE)
            continue;
        if (d > n) {
            free(off);
            return err_fail(SCRY_E_BAD_SNAPSHOT, "dominator of node %u is %u of %u", v, d, n);
        }
        off[d + 1]++;
        count++;
    }
    uint32_t *child = malloc((count ? count : 1) * sizeof(*child));
    if (!child) {
        free(off);
        return err_fail(SCRY_E_NO_MEMORY, "dominator tree of %u nodes", n);
    }
    for (uint32_t t = 1; t <= n + 1; t++)
        off[t] += off[t - 1];
    for (uint32_t v = 0; v < n; v++)
        if (idom[v] != NONE)
            child[off[idom[v]]++] = v;
    for (uint32_t t = n + 1; t > 0; t--)
        off[t] = off[t - 1];
    off[0] = 0;
    out->n = n;
    out->off = off;
    out->child = child;
    return 0;
}

void dom_children_free(struct dom_children *c)
{
    free(c->off);
    free(c->child);
    memset(c, 0, sizeof(*c));
}

struct top_entry {
    uint64_t key;
    uint32_t node;
};

/* a ranks below b: a smaller key, or the same key and a larger index. */
static inline int top_worse(const struct top_entry *a, const struct top_entry *b)
{
    return a->key < b->key || (a->key == b->key && a->node > b->node);
}

/* Restores the heap (worst entry on top) below slot i. */
static void top_sift_down(struct top_entry *h, uint32_t size, uint32_t i)
{
    struct top_entry e = h[i];
    for (;;) {
        uint64_t c = 2 * (uint64_t)i + 1;
        if (c >= size)
            break;
        if (c + 1 < size && top_worse(&h[c + 1], &h[c]))
            c++;
        if (!top_worse(&h[c], &e))
            break;
        h[i] = h[c];
        i = (uint32_t)c;
    }
    h[i] = e;
}

int dom_top(const uint64_t *key, const uint32_t *nodes, uint32_t count, const uint32_t *idom,
            uint32_t k, uint32_t *out, uint32_t *nout)
{
    *nout = 0;
    if (k > count)
        k = count;
    if (k == 0)
        return 0;
    struct top_entry *h = malloc((size_t)k * sizeof(*h));
    if (!h)
        return err_fail(SCRY_E_NO_MEMORY, "top %u of %u nodes", k, count);
    uint32_t size = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t v = nodes ? nodes[i] : i;
        if (idom && idom[v] == NONE)
            continue;
        struct top_entry e = {key[v], v};
        if (size < k) {
            /* sift up */
            uint32_t j = size++;
            while (j > 0 && top_worse(&e, &h[(j - 1) / 2])) {
                h[j] = h[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            h[j] = e;
        } else if (top_worse(&h[0], &e)) {
            h[0] = e;
            top_sift_down(h, size, 0);
        }
    }
    *nout = size;
    while (size > 0) { /* pop the worst into the last free slot: best first */
        out[size - 1] = h[0].node;
        h[0] = h[--size];
        top_sift_down(h, size, 0);
    }
    free(h);
    return 0;
}
