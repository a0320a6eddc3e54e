/* The heap analysis: strong graph -> dominators -> retained sizes, a breadth-first tree for
 * retaining paths, and the selections `analyze` and `query` print. Memory per object: idom 4,
 * root label 4, retained 8 (the shallow sizes first), parent 4, and for a while a queue 4, plus the
 * dominator computation's working set (dominators.h), allocated so that they do not all coexist,
 * and, only when the snapshot holds weak references, a strong-only copy of the edges. */
#include "analysis/heap_analysis.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "common/error.h"
#include "common/hashmap.h"

#define PASS_THROUGH 0.95 /* a holder passing on this much to one object is not the holder */

static void *xcalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* The strong references as CSR: the snapshot's own arrays when it has no weak ones. */
static int strong_graph(const struct snap *s, uint32_t **off_own, uint32_t **succ_own,
                        const uint32_t **off, const uint32_t **succ, uint64_t *weak)
{
    *weak = 0;
    for (uint32_t e = 0; e < s->nedges; e++)
        *weak += s->edge_kind[e] == SNAP_EDGE_WEAK;
    *off_own = *succ_own = NULL;
    if (*weak == 0) {
        *off = s->edge_first;
        *succ = s->edge_target;
        return 0;
    }
    uint32_t *o = xcalloc((size_t)s->nobjects + 1, sizeof(*o));
    uint32_t *t = xcalloc(s->nedges - *weak, sizeof(*t));
    if (!o || !t) {
        free(o);
        free(t);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory analysing the snapshot");
    }
    uint32_t k = 0;
    for (uint32_t v = 0; v < s->nobjects; v++) {
        o[v] = k;
        for (uint32_t e = s->edge_first[v]; e < s->edge_first[v + 1]; e++)
            if (s->edge_kind[e] != SNAP_EDGE_WEAK)
                t[k++] = s->edge_target[e];
    }
    o[s->nobjects] = k;
    *off = *off_own = o;
    *succ = *succ_own = t;
    return 0;
}

int ha_build(const struct snap *s, struct heap_analysis *a)
{
    return ha_build_progress(s, a, NULL, NULL);
}

struct dom_progress {
    void (*fn)(void *ctx, enum ha_step step, uint64_t done, uint64_t total);
    void *ctx;
};

static void dom_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct dom_progress *p = ctx;
    p->fn(p->ctx, HA_STEP_DOMINATORS, done, total);
}

int ha_build_progress(const struct snap *s, struct heap_analysis *a,
                      void (*progress)(void *ctx, enum ha_step step, uint64_t done,
                                       uint64_t total),
                      void *ctx)
{
    struct dom_progress dp = {progress, ctx};
    memset(a, 0, sizeof(*a));
    a->s = s;
    a->n = s->nobjects;
    uint32_t n = a->n;
    uint32_t *off_own = NULL, *succ_own = NULL, *roots = NULL, *queue = NULL;
    const uint32_t *off = NULL, *succ = NULL;
    if (progress)
        progress(ctx, HA_STEP_GRAPH, 0, 0);
    int err = strong_graph(s, &off_own, &succ_own, &off, &succ, &a->weak_edges);
    if (err)
        return err;
    /* Allocated in the order they are needed, so that the dominator computation's working set
     * (dominators.h) never coexists with arrays that come after it: the peak is the snapshot's
     * mapped pages + idom + root labels + that working set. */
    a->idom = xcalloc(n, sizeof(*a->idom));
    a->root_label = xcalloc(n, sizeof(*a->root_label));
    roots = xcalloc(s->nroots, sizeof(*roots));
    if (!a->idom || !a->root_label || !roots) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory analysing the snapshot");
        goto out;
    }
    for (uint32_t v = 0; v < n; v++)
        a->root_label[v] = SNAP_NONE;
    uint32_t nroots = 0;
    for (uint32_t r = 0; r < s->nroots; r++) {
        uint32_t o = s->roots[r].object;
        if (a->root_label[o] != SNAP_NONE)
            continue; /* an object named by several roots keeps the first label */
        a->root_label[o] = s->roots[r].label;
        roots[nroots++] = o;
    }
    if (progress)
        progress(ctx, HA_STEP_DOMINATORS, 0, 3 * (uint64_t)n);
    err = dom_compute_progress(n, off, succ, roots, nroots, a->idom,
                               progress ? dom_progress : NULL, &dp);
    if (err)
        goto out;
    if (progress)
        progress(ctx, HA_STEP_RETAINED, 0, 0);
    /* Each step below touches one part of the mapped snapshot (the object records, then the
     * edges): the pages of the step before go back first (snap_release_pages), so that the peak
     * holds one part, not the whole file. */
    snap_release_pages(s);
    /* The shallow sizes go where the retained sizes will be (dom_retained works in place): a
     * second array of 8 bytes per object was the largest part of analyze's peak. */
    a->retained = xcalloc(n, sizeof(*a->retained));
    if (!a->retained) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory analysing the snapshot");
        goto out;
    }
    for (uint32_t v = 0; v < n; v++)
        a->retained[v] = s->objects[v].size;
    err = dom_retained(n, a->idom, a->retained, a->retained);
    if (err)
        goto out;
    a->reachable_bytes = dom_root_retained(n, a->idom, a->retained); /* every reachable byte */
    snap_release_pages(s);
    a->parent = xcalloc(n, sizeof(*a->parent));
    queue = xcalloc(n, sizeof(*queue));
    if (!a->parent || !queue) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory analysing the snapshot");
        goto out;
    }
    for (uint32_t v = 0; v < n; v++)
        a->parent[v] = SNAP_NONE;

    /* Breadth-first from every root at once: the shortest retaining path of each object. */
    size_t head = 0, tail = 0;
    for (uint32_t i = 0; i < nroots; i++)
        queue[tail++] = roots[i];
    while (head < tail) {
        uint32_t v = queue[head++];
        a->reachable_objects++;
        for (uint32_t e = off[v]; e < off[v + 1]; e++) {
            uint32_t w = succ[e];
            if (a->root_label[w] != SNAP_NONE || a->parent[w] != SNAP_NONE)
                continue;
            a->parent[w] = v;
            queue[tail++] = w;
        }
    }
out:
    free(off_own);
    free(succ_own);
    free(roots);
    free(queue);
    if (err)
        ha_free(a);
    return err;
}

void ha_free(struct heap_analysis *a)
{
    free(a->retained);
    free(a->idom);
    free(a->parent);
    free(a->root_label);
    memset(a, 0, sizeof(*a));
}

/* The first strong reference from `from` to `to`, or SNAP_NONE. */
static uint32_t strong_edge(const struct snap *s, uint32_t from, uint32_t to)
{
    for (uint32_t e = s->edge_first[from]; e < s->edge_first[from + 1]; e++)
        if (s->edge_target[e] == to && s->edge_kind[e] != SNAP_EDGE_WEAK)
            return e;
    return SNAP_NONE;
}

/* The label of the first strong reference from `from` to `to`. */
static const char *edge_label(const struct snap *s, uint32_t from, uint32_t to)
{
    uint32_t e = strong_edge(s, from, to);
    return e == SNAP_NONE ? "?" : snap_string(s, s->edge_label[e]);
}

size_t ha_path(const struct heap_analysis *a, uint32_t obj, struct ha_hop *hops, size_t max)
{
    /* Walk up to the root, then reverse. */
    size_t n = 0;
    uint32_t v = obj;
    while (n < max) {
        if (a->root_label[v] != SNAP_NONE) {
            hops[n++] = (struct ha_hop){snap_string(a->s, a->root_label[v]), v, false};
            break;
        }
        uint32_t p = a->parent[v];
        if (p == SNAP_NONE)
            return 0; /* unreachable */
        uint32_t e = strong_edge(a->s, p, v);
        hops[n++] = (struct ha_hop){e == SNAP_NONE ? "?" : snap_string(a->s, a->s->edge_label[e]), v,
                                    e != SNAP_NONE && snap_edge_inferred(a->s, e)};
        v = p;
    }
    if (n == max && a->root_label[v] == SNAP_NONE)
        return 0;
    for (size_t i = 0; i < n / 2; i++) {
        struct ha_hop t = hops[i];
        hops[i] = hops[n - 1 - i];
        hops[n - 1 - i] = t;
    }
    return n;
}

void ha_path_inline(const struct heap_analysis *a, uint32_t obj, struct strbuf *out)
{
    struct ha_hop hops[512];
    size_t n = ha_path(a, obj, hops, sizeof(hops) / sizeof(hops[0]));
    if (n == 0) {
        sb_adds(out, "<unreachable>");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *l = hops[i].label;
        if (i > 0 && l[0] != '.' && l[0] != '[')
            sb_addch(out, '.');
        sb_adds(out, l);
    }
}

static bool type_is(const struct heap_analysis *a, uint32_t obj, const char *name)
{
    return strcmp(snap_string(a->s, a->s->objects[obj].type), name) == 0;
}

bool ha_is_structural(const struct heap_analysis *a, uint32_t obj)
{
    static const char *const kinds[] = {"builtins.module", "builtins.type", "builtins.function",
                                        "builtins.code", "builtins.frame", "builtins.method"};
    if (a->root_label[obj] != SNAP_NONE || (a->s->objects[obj].flags & SNAP_OBJ_TYPE))
        return true;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (type_is(a, obj, kinds[i]))
            return true;
    uint32_t p = a->parent[obj];
    if (p != SNAP_NONE && type_is(a, obj, "builtins.dict") &&
        (type_is(a, p, "builtins.module") || (a->s->objects[p].flags & SNAP_OBJ_TYPE)) &&
        strcmp(edge_label(a->s, p, obj), ".__dict__") == 0)
        return true;
    return false;
}

/* A private name (`._mgr`, `['_cache']`, `.__x`), not a dunder one (`.__wrapped__`): the
 * identifier after the label's `.` or `['`. */
static bool private_label(const char *l)
{
    size_t skip = l[0] == '.' ? 1 : strncmp(l, "['", 2) == 0 ? 2 : 0;
    if (!skip || l[skip] != '_')
        return false;
    const char *id = l + skip;
    size_t n = 0;
    while (id[n] == '_' || (id[n] >= 'a' && id[n] <= 'z') || (id[n] >= 'A' && id[n] <= 'Z') ||
           (id[n] >= '0' && id[n] <= '9'))
        n++;
    return !(n > 4 && id[1] == '_' && id[n - 1] == '_' && id[n - 2] == '_');
}

/* Whether every strong reference from `from` to `to` is the holder's own storage rather than a
 * reference to something it holds: an instance's `.__dict__`, a private attribute or key
 * (`._mgr`, `['_mgr']`), an internal field (a C type's buffer object), or a reference inferred
 * by the walker's conservative scan of an extension object's C body. */
static bool own_storage(const struct snap *s, uint32_t from, uint32_t to)
{
    bool any = false;
    for (uint32_t e = s->edge_first[from]; e < s->edge_first[from + 1]; e++) {
        if (s->edge_target[e] != to || s->edge_kind[e] == SNAP_EDGE_WEAK)
            continue;
        const char *l = snap_string(s, s->edge_label[e]);
        if (!(s->edge_kind[e] == SNAP_EDGE_INTERNAL || snap_edge_inferred(s, e) ||
              strcmp(l, ".__dict__") == 0 || private_label(l)))
            return false;
        any = true;
    }
    return any;
}

size_t ha_top_retainers(const struct heap_analysis *a, size_t k, uint32_t *out)
{
    uint32_t n = a->n;
    /* Each object's dominator-tree child that retains the most. */
    uint32_t *best = malloc((n ? n : 1) * sizeof(*best));
    uint8_t *own = xcalloc(n, 1); /* 1: passes on to best through its own storage */
    uint32_t *cand = xcalloc(n, sizeof(*cand));
    size_t got = 0;
    if (!best || !own || !cand)
        goto out;
    for (uint32_t v = 0; v < n; v++)
        best[v] = SNAP_NONE;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t d = a->idom[v];
        if (d < n && d != v && (best[d] == SNAP_NONE || a->retained[v] > a->retained[best[d]]))
            best[d] = v;
    }
#define PASSES(v)                                                                                  \
    (best[v] != SNAP_NONE && a->retained[best[v]] > 0 &&                                         \
     (double)a->retained[best[v]] >= PASS_THROUGH * (double)a->retained[v])
    for (uint32_t v = 0; v < n; v++)
        if (PASSES(v) && own_storage(a->s, v, best[v]))
            own[v] = 1;
    uint32_t ncand = 0;
    for (uint32_t v = 0; v < n; v++) {
        if (a->idom[v] == DOM_UNREACHABLE || ha_is_structural(a, v))
            continue;
        /* A part of its holder's own storage that the holder passes on to: the holder names it. */
        uint32_t d = a->idom[v];
        if (d < n && own[d] && best[d] == v && !ha_is_structural(a, d))
            continue;
        /* Passing on to one object: through own storage, look further down the parts. */
        uint32_t w = v;
        for (int depth = 0; own[w] && depth < 64; depth++)
            w = best[w];
        if (!own[w] && PASSES(w))
            continue;
        cand[ncand++] = v;
    }
#undef PASSES
    uint32_t nout = 0;
    if (dom_top(a->retained, cand, ncand, NULL, (uint32_t)k, out, &nout) == 0)
        got = nout;
out:
    free(best);
    free(own);
    free(cand);
    return got;
}

int ha_nest_retainers(const struct heap_analysis *a, const uint32_t *top, size_t ntop,
                      size_t *outer)
{
    struct hashmap at = HASHMAP_INIT; /* object + 1 -> its position in top */
    int err = 0;
    for (size_t i = 0; i < ntop && !err; i++) {
        outer[i] = HA_NOT_NESTED;
        if (hm_put(&at, (uint64_t)top[i] + 1, i) != 0)
            err = err_fail(SCRY_E_NO_MEMORY, "nesting %zu retainers", ntop);
    }
    for (size_t i = 0; i < ntop && !err; i++) {
        /* Up the dominator tree to the super-root (n); a tree has no cycle (dom_retained checked
         * it), and the walk is bounded by n anyway. */
        uint32_t d = top[i] < a->n ? a->idom[top[i]] : DOM_UNREACHABLE;
        uint64_t pos;
        for (uint32_t steps = 0; d < a->n && steps < a->n; steps++, d = a->idom[d]) {
            if (d != top[i] && hm_get(&at, (uint64_t)d + 1, &pos)) {
                outer[i] = (size_t)pos;
                break;
            }
        }
    }
    hm_free(&at);
    return err;
}

int ha_nest_order(const size_t *outer, size_t ntop, size_t *order, size_t *depth)
{
    /* Children lists in list order (built backwards), then a depth-first walk with a stack. */
    size_t *first = malloc((ntop ? ntop : 1) * sizeof(*first));
    size_t *next = malloc((ntop ? ntop : 1) * sizeof(*next));
    size_t *stack = malloc((ntop ? ntop : 1) * sizeof(*stack));
    size_t *level = malloc((ntop ? ntop : 1) * sizeof(*level));
    int err = 0;
    if (!first || !next || !stack || !level) {
        err = err_fail(SCRY_E_NO_MEMORY, "ordering %zu retainers", ntop);
        goto out;
    }
    for (size_t i = 0; i < ntop; i++)
        first[i] = HA_NOT_NESTED;
    size_t top_first = HA_NOT_NESTED;
    for (size_t i = ntop; i-- > 0;) {
        size_t *head = outer[i] < ntop ? &first[outer[i]] : &top_first;
        next[i] = *head;
        *head = i;
    }
    size_t sp = 0, k = 0;
    for (size_t i = top_first; i != HA_NOT_NESTED; i = next[i]) {
        stack[sp] = i;
        level[sp++] = 0;
        while (sp > 0 && k < ntop) {
            size_t v = stack[--sp], d = level[sp];
            order[k] = v;
            depth[k++] = d;
            /* The children pushed, then their stretch of the stack reversed: the first child
             * comes out first. Each retainer is pushed once, so the stack holds at most ntop. */
            size_t base = sp;
            for (size_t c = first[v]; c != HA_NOT_NESTED; c = next[c]) {
                stack[sp] = c;
                level[sp++] = d + 1;
            }
            for (size_t lo = base, hi = sp; hi > lo + 1; lo++, hi--) {
                size_t t = stack[lo];
                stack[lo] = stack[hi - 1];
                stack[hi - 1] = t;
            }
        }
    }
    if (k < ntop) {
        /* outer was not a forest (it never is from ha_nest_retainers): the rest unnested. */
        for (size_t i = 0; i < ntop; i++)
            first[i] = 0;
        for (size_t j = 0; j < k; j++)
            first[order[j]] = 1;
        for (size_t i = 0; i < ntop; i++)
            if (!first[i]) {
                order[k] = i;
                depth[k++] = 0;
            }
    }
out:
    free(first);
    free(next);
    free(stack);
    free(level);
    return err;
}

uint64_t ha_retainers_total(const struct heap_analysis *a, const uint32_t *top,
                            const size_t *outer, size_t ntop)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < ntop; i++)
        if (!outer || outer[i] == HA_NOT_NESTED)
            sum += a->retained[top[i]];
    return sum;
}

static int cmp_type(const void *x, const void *y)
{
    const struct ha_type *a = x, *b = y;
    if (a->retained != b->retained)
        return a->retained < b->retained ? 1 : -1;
    return a->type < b->type ? -1 : a->type > b->type;
}

int ha_types(const struct heap_analysis *a, struct ha_type **out, size_t *ntypes)
{
    const struct snap *s = a->s;
    uint32_t n = a->n;
    struct dom_children tree;
    *out = NULL;
    *ntypes = 0;
    int err = dom_children_build(n, a->idom, &tree);
    if (err)
        return err;
    struct ha_type *byid = xcalloc(s->nstrings, sizeof(*byid));
    uint32_t *open = xcalloc(s->nstrings, sizeof(*open));
    uint32_t *stack = xcalloc((size_t)n + 1, sizeof(*stack));
    uint32_t *next = xcalloc((size_t)n + 1, sizeof(*next));
    if (!byid || !open || !stack || !next) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory analysing the snapshot");
        goto out;
    }
    for (uint32_t v = 0; v < n; v++) {
        struct ha_type *t = &byid[s->objects[v].type];
        t->type = s->objects[v].type;
        t->count++;
        t->shallow += s->objects[v].size;
    }
    /* Depth-first over the dominator tree: an instance counts its retained size unless an
     * instance of the same type dominates it (that one already counts it). */
    size_t depth = 0;
    stack[depth] = n;
    next[depth] = 0;
    depth++;
    while (depth > 0) {
        uint32_t v = stack[depth - 1];
        if (next[depth - 1] < dom_children_count(&tree, v)) {
            uint32_t c = dom_children_of(&tree, v)[next[depth - 1]++];
            uint32_t t = s->objects[c].type;
            if (open[t]++ == 0)
                byid[t].retained += a->retained[c];
            stack[depth] = c;
            next[depth] = 0;
            depth++;
        } else {
            if (v < n)
                open[s->objects[v].type]--;
            depth--;
        }
    }
    size_t m = 0;
    for (uint32_t t = 0; t < s->nstrings; t++)
        if (byid[t].count)
            byid[m++] = byid[t];
    qsort(byid, m, sizeof(*byid), cmp_type);
    *out = byid;
    *ntypes = m;
    byid = NULL;
out:
    free(byid);
    free(open);
    free(stack);
    free(next);
    dom_children_free(&tree);
    return err;
}
