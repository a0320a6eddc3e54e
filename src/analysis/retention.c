/* Retention stacks (see retention.h): a depth-first walk of the dominator tree from the
 * super-root that keeps, per level, the stk node its object landed in, so an object's frame goes
 * under the frame its dominator merged into. The entry edge of every object is found in one pass
 * over the edges: looking it up per object would scan a million-entry dict once per entry. */
#include "analysis/retention.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/dominators.h"
#include "common/error.h"
#include "common/grow.h"

static int oom(void)
{
    return err_fail(SCRY_E_NO_MEMORY, "out of memory building the retention flame graph");
}

uint32_t *ret_entry_edges(const struct heap_analysis *a)
{
    const struct snap *s = a->s;
    uint32_t *entry = malloc((a->n ? a->n : 1) * sizeof(*entry));
    if (!entry)
        return NULL;
    for (uint32_t v = 0; v < a->n; v++)
        entry[v] = SNAP_NONE;
    for (uint32_t v = 0; v < a->n; v++) {
        for (uint32_t e = s->edge_first[v]; e < s->edge_first[v + 1]; e++) {
            uint32_t w = s->edge_target[e];
            if (a->parent[w] == v && entry[w] == SNAP_NONE && s->edge_kind[e] != SNAP_EDGE_WEAK)
                entry[w] = e;
        }
    }
    return entry;
}

static uint32_t find_entry(const struct heap_analysis *a, uint32_t obj)
{
    const struct snap *s = a->s;
    uint32_t p = a->parent[obj];
    if (p == SNAP_NONE)
        return SNAP_NONE;
    for (uint32_t e = s->edge_first[p]; e < s->edge_first[p + 1]; e++)
        if (s->edge_target[e] == obj && s->edge_kind[e] != SNAP_EDGE_WEAK)
            return e;
    return SNAP_NONE;
}

/* "[123]": an item index, which merges as "[<index>]". */
static bool is_index_label(const char *l)
{
    if (l[0] != '[' || l[1] == ']')
        return false;
    size_t i = 1;
    while (l[i] >= '0' && l[i] <= '9')
        i++;
    return l[i] == ']' && l[i + 1] == '\0';
}

static uint32_t entry_of(const struct heap_analysis *a, const uint32_t *entry_edge, uint32_t v)
{
    return entry_edge ? entry_edge[v] : find_entry(a, v);
}

/* The breadth-first path root first, as ha_path_inline writes it, from the entry edges. */
static void path_inline(const struct heap_analysis *a, const uint32_t *entry_edge, uint32_t obj,
                        struct strbuf *out)
{
    const struct snap *s = a->s;
    uint32_t hops[256];
    size_t n = 0;
    uint32_t v = obj;
    while (a->root_label[v] == SNAP_NONE && a->parent[v] != SNAP_NONE && n < 256) {
        hops[n++] = v;
        v = a->parent[v];
    }
    if (a->root_label[v] == SNAP_NONE)
        sb_adds(out, "...");
    else
        sb_adds(out, snap_string(s, a->root_label[v]));
    while (n > 0) {
        uint32_t e = entry_of(a, entry_edge, hops[--n]);
        const char *l = e == SNAP_NONE ? "?" : snap_string(s, snap_edge_label(s, e));
        if (l[0] != '.' && l[0] != '[')
            sb_addch(out, '.');
        sb_adds(out, l);
    }
}

void ret_frame_text(const struct heap_analysis *a, const uint32_t *entry_edge, uint32_t obj,
                    struct strbuf *out)
{
    const struct snap *s = a->s;
    if (a->root_label[obj] != SNAP_NONE) {
        sb_adds(out, snap_string(s, a->root_label[obj]));
        return;
    }
    uint32_t e = entry_of(a, entry_edge, obj);
    /* Entered from somewhere other than its dominator: through objects the dominator owns (or,
     * for objects only the super-root dominates, from one of the roots sharing it). */
    if (a->parent[obj] != a->idom[obj])
        sb_adds(out, "...");
    if (a->idom[obj] == a->n && a->parent[obj] != SNAP_NONE) {
        /* A top-level frame shared by several roots: its whole breadth-first path, so that the
         * namespaces of different modules (each module's __dict__ is shared by its functions'
         * __globals__) stay apart instead of merging as "....__dict__ dict". */
        path_inline(a, entry_edge, obj, out);
    } else if (e == SNAP_NONE) {
        sb_adds(out, "?");
    } else {
        const char *label = snap_string(s, snap_edge_label(s, e));
        if (snap_edge_kind(s, e) == SNAP_EDGE_INDEX && is_index_label(label))
            sb_adds(out, "[<index>]");
        else
            sb_adds(out, *label ? label : "?");
    }
    sb_addch(out, ' ');
    const char *type = snap_type_name(s, obj);
    if (strncmp(type, "builtins.", 9) == 0 && type[9])
        type += 9;
    sb_adds(out, type);
}

static int grow_nodes(struct ret_nodes *nodes, size_t need)
{
    if (need <= nodes->cap)
        return 0;
    /* Parallel arrays: each grows from the same capacity to the same new one. */
    size_t old = nodes->cap, cap = old, cap_ob = old, cap_st = old;
    if (grow_array(&nodes->objects, &cap, need, sizeof(*nodes->objects)) ||
        grow_array(&nodes->objects_before, &cap_ob, need, sizeof(*nodes->objects_before)) ||
        grow_array(&nodes->structural, &cap_st, need, sizeof(*nodes->structural)))
        return oom();
    uint64_t *o = nodes->objects, *ob = nodes->objects_before;
    bool *st = nodes->structural;
    memset(o + old, 0, (cap - old) * sizeof(*o));
    memset(ob + old, 0, (cap - old) * sizeof(*ob));
    memset(st + old, 0, (cap - old) * sizeof(*st));
    nodes->cap = cap;
    return 0;
}

void ret_nodes_free(struct ret_nodes *n)
{
    free(n->objects);
    free(n->objects_before);
    free(n->structural);
    memset(n, 0, sizeof(*n));
}

int ret_add_snapshot(struct stk_tree *t, const struct heap_analysis *a, bool before,
                     struct ret_nodes *nodes)
{
    uint32_t n = a->n;
    struct dom_children tree;
    memset(&tree, 0, sizeof(tree));
    uint32_t *entry = NULL, *obj = NULL, *node = NULL, *next = NULL;
    struct strbuf text = STRBUF_INIT;
    int err = dom_children_build(n, a->idom, &tree);
    if (err)
        return err;
    entry = ret_entry_edges(a);
    obj = malloc(((size_t)n + 1) * sizeof(*obj));
    node = malloc(((size_t)n + 1) * sizeof(*node));
    next = malloc(((size_t)n + 1) * sizeof(*next));
    if (!entry || !obj || !node || !next) {
        err = oom();
        goto out;
    }
    /* Level d of the walk: object obj[d] (n: the super-root), merged into stk node node[d],
     * whose next dominator-tree child to visit is next[d]. */
    size_t depth = 1;
    obj[0] = n;
    node[0] = STK_ROOT;
    next[0] = 0;
    while (depth > 0 && !err) {
        uint32_t v = obj[depth - 1];
        if (next[depth - 1] >= dom_children_count(&tree, v)) {
            depth--;
            continue;
        }
        uint32_t c = dom_children_of(&tree, v)[next[depth - 1]++];
        if (depth > n) {
            err = err_fail(SCRY_E_BAD_SNAPSHOT, "the dominator tree has a cycle");
            break;
        }
        sb_reset(&text);
        ret_frame_text(a, entry, c, &text);
        uint32_t f, id = 0;
        double w = (double)a->s->objects[c].size;
        err = stk_frame(t, sb_str(&text), text.len, &f);
        if (!err)
            err = stk_child(t, node[depth - 1], f, &id);
        if (!err)
            err = stk_add(t, id, before ? 0 : w, before ? w : 0);
        if (!err && nodes && (err = grow_nodes(nodes, t->nnodes)) == 0) {
            if (before)
                nodes->objects_before[id]++;
            else
                nodes->objects[id]++;
            if (!nodes->structural[id] && ha_is_structural(a, c))
                nodes->structural[id] = true;
        }
        obj[depth] = c;
        node[depth] = id;
        next[depth] = 0;
        depth++;
    }
out:
    sb_release(&text);
    free(entry);
    free(obj);
    free(node);
    free(next);
    dom_children_free(&tree);
    return err;
}
