/* Heap growth between two snapshots (see heap_diff.h): per-type totals merged by name, and the
 * differential retention tree read back as a ranked list of sites. */
#include "analysis/heap_diff.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define PASS_THROUGH 0.95 /* as heap_analysis: a frame passing on this much is not the site */

static int oom(void)
{
    return err_fail(SCRY_E_NO_MEMORY, "out of memory comparing the snapshots");
}

/* Per type name of one snapshot: its string id's totals, listed by name. */
struct type_total {
    const char *name;
    uint64_t count, shallow;
};

static int cmp_name(const void *x, const void *y)
{
    return strcmp(((const struct type_total *)x)->name, ((const struct type_total *)y)->name);
}

static int type_totals(const struct snap *s, struct type_total **out, size_t *nout)
{
    struct type_total *byid = calloc(s->nstrings ? s->nstrings : 1, sizeof(*byid));
    if (!byid)
        return oom();
    for (uint32_t v = 0; v < s->nobjects; v++) {
        struct type_total *t = &byid[s->objects[v].type];
        t->name = snap_string(s, s->objects[v].type);
        t->count++;
        t->shallow += s->objects[v].size;
    }
    size_t m = 0;
    for (uint32_t i = 0; i < s->nstrings; i++)
        if (byid[i].count)
            byid[m++] = byid[i];
    qsort(byid, m, sizeof(*byid), cmp_name);
    *out = byid;
    *nout = m;
    return 0;
}

static int64_t type_delta(const struct hd_type *t)
{
    return (int64_t)t->shallow_after - (int64_t)t->shallow_before;
}

static int cmp_type(const void *x, const void *y)
{
    const struct hd_type *a = x, *b = y;
    int64_t da = type_delta(a), db = type_delta(b);
    if (da != db)
        return da < db ? 1 : -1;
    return strcmp(a->type, b->type);
}

static int diff_types(const struct snap *sb, const struct snap *sa, struct heap_diff *d)
{
    struct type_total *tb = NULL, *ta = NULL;
    size_t nb = 0, na = 0;
    int err = type_totals(sb, &tb, &nb);
    if (!err)
        err = type_totals(sa, &ta, &na);
    if (!err && !(d->types = calloc(nb + na + 1, sizeof(*d->types))))
        err = oom();
    if (err)
        goto out;
    size_t i = 0, j = 0, m = 0;
    while (i < nb || j < na) {
        int c = i == nb ? 1 : j == na ? -1 : strcmp(tb[i].name, ta[j].name);
        struct hd_type *t = &d->types[m++];
        if (c <= 0) {
            t->type = tb[i].name;
            t->count_before = tb[i].count;
            t->shallow_before = tb[i].shallow;
            i++;
        }
        if (c >= 0) {
            t->type = ta[j].name;
            t->count_after = ta[j].count;
            t->shallow_after = ta[j].shallow;
            j++;
        }
    }
    qsort(d->types, m, sizeof(*d->types), cmp_type);
    d->ntypes = m;
out:
    free(tb);
    free(ta);
    return err;
}

static double site_delta(const struct stk_node *n)
{
    return n->total - n->total_before;
}

static double abs_d(double x)
{
    return x < 0 ? -x : x;
}

static int cmp_site(const void *x, const void *y)
{
    const struct hd_site *a = x, *b = y;
    int64_t da = (int64_t)a->retained_after - (int64_t)a->retained_before;
    int64_t db = (int64_t)b->retained_after - (int64_t)b->retained_before;
    if (da != db)
        return da < db ? 1 : -1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static int diff_sites(struct heap_diff *d)
{
    const struct stk_tree *t = &d->tree;
    const struct ret_nodes *rn = &d->nodes;
    d->sites = calloc(t->nnodes, sizeof(*d->sites));
    if (!d->sites)
        return oom();
    size_t m = 0;
    for (uint32_t i = 1; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        double delta = site_delta(n);
        if (delta == 0 || (i < rn->cap && rn->structural[i]))
            continue;
        bool passes = false;
        for (uint32_t c = n->first_child; c != STK_NONE && !passes; c = t->nodes[c].next_sibling) {
            bool single = c < rn->cap && rn->objects[c] <= 1 && rn->objects_before[c] <= 1;
            passes = single && abs_d(site_delta(&t->nodes[c])) >= PASS_THROUGH * abs_d(delta);
        }
        if (passes)
            continue;
        struct hd_site *s = &d->sites[m++];
        s->node = i;
        s->retained_before = (uint64_t)n->total_before;
        s->retained_after = (uint64_t)n->total;
        s->objects_before = i < rn->cap ? rn->objects_before[i] : 0;
        s->objects_after = i < rn->cap ? rn->objects[i] : 0;
    }
    qsort(d->sites, m, sizeof(*d->sites), cmp_site);
    d->nsites = m;
    return 0;
}

int hd_build(const struct heap_analysis *before, const struct heap_analysis *after,
             struct heap_diff *d)
{
    memset(d, 0, sizeof(*d));
    stk_init(&d->tree, true);
    int err = ret_add_snapshot(&d->tree, before, true, &d->nodes);
    if (!err)
        err = ret_add_snapshot(&d->tree, after, false, &d->nodes);
    if (!err)
        err = stk_finish(&d->tree);
    if (!err)
        err = diff_types(before->s, after->s, d);
    if (!err)
        err = diff_sites(d);
    if (err)
        hd_free(d);
    return err;
}

void hd_free(struct heap_diff *d)
{
    stk_free(&d->tree);
    ret_nodes_free(&d->nodes);
    free(d->types);
    free(d->sites);
    memset(d, 0, sizeof(*d));
}

void hd_node_path(const struct stk_tree *t, uint32_t node, struct strbuf *out)
{
    if (node == STK_ROOT || node >= t->nnodes)
        return;
    uint32_t depth = t->nodes[node].depth;
    uint32_t small[64];
    uint32_t *path = depth <= 64 ? small : malloc(depth * sizeof(*path));
    if (!path)
        return;
    for (uint32_t v = node, k = depth; v != STK_ROOT && k > 0; v = t->nodes[v].parent)
        path[--k] = v;
    for (uint32_t k = 0; k < depth; k++) {
        if (k)
            sb_addch(out, ';');
        sb_adds(out, t->frames[t->nodes[path[k]].frame]);
    }
    if (path != small)
        free(path);
}
