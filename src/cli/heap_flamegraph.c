/* `scry flamegraph app.heap` and `scry flamegraph --diff before.heap after.heap`: the retention
 * flame graph of heap snapshots (analysis/retention.h), as SVG or folded stacks, plain or
 * differential. cmd_flamegraph.c parses the options and hands snapshots over to this file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analysis/alloc_join.h"
#include "analysis/heap_analysis.h"
#include "analysis/heap_diff.h"
#include "analysis/retention.h"
#include "analysis/stacks.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/fmt.h"
#include "platform/infile.h"
#include "render/flamegraph_svg.h"
#include "snapshot/format.h"

bool cli_is_snapshot(const char *path)
{
    char magic[sizeof(SNAP_MAGIC)];
    size_t want = strlen(SNAP_MAGIC);
    int fd;
    uint64_t size;
    if (infile_open(path, "file", 0, &fd, &size) != 0) {
        err_clear();
        return false;
    }
    bool yes = read(fd, magic, want) == (ssize_t)want && memcmp(magic, SNAP_MAGIC, want) == 0;
    close(fd);
    return yes;
}

/* One snapshot opened and analysed; both freed by close_one. */
struct loaded {
    struct snap s;
    struct heap_analysis a;
};

static int load_one(const char *path, struct loaded *l)
{
    memset(l, 0, sizeof(*l));
    int err = snap_open(path, &l->s);
    if (!err)
        err = ha_build(&l->s, &l->a);
    return err;
}

static void close_one(struct loaded *l)
{
    ha_free(&l->a);
    snap_close(&l->s);
}

static void describe(struct strbuf *sub, const char *path, const struct loaded *l)
{
    char b[32];
    fmt_bytes(l->a.reachable_bytes, b, sizeof(b));
    sb_addf(sub, "%s (pid %u, Python %s): %s reachable", path, l->s.meta.pid,
            l->s.meta.python_version, b);
}

int cli_heap_flamegraph(const struct cli_heap_graph *g, struct strbuf *out)
{
    struct loaded before, after;
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    struct stk_tree t, cutt;
    stk_init(&t, g->diff);
    memset(&cutt, 0, sizeof(cutt));
    bool have_cut = false;
    struct strbuf sub = STRBUF_INIT;
    struct stk_cut cut = {
        .min_pct = g->min_pct < 0 ? RET_DEFAULT_MIN_PCT : g->min_pct,
        .min_weight = g->min_bytes,
        .max_depth = g->max_depth > 0 ? (uint32_t)g->max_depth : RET_DEFAULT_MAX_DEPTH,
    };
    int err = 0;
    if (g->diff) {
        err = load_one(g->inputs[0], &before);
        if (!err)
            err = ret_add_snapshot(&t, &before.a, true, NULL);
        /* The first snapshot's arrays are no longer needed: keep one analysis in memory. */
        close_one(&before);
        if (!err)
            err = load_one(g->inputs[1], &after);
        if (!err)
            err = ret_add_snapshot(&t, &after.a, false, NULL);
    } else if (g->allocations) {
        struct aj_join join = {0};
        err = load_one(g->inputs[0], &after);
        if (!err && !(err = aj_build(&after.a, &join)))
            err = aj_add_stacks(&join, &t);
        aj_free(&join);
    } else {
        err = load_one(g->inputs[0], &after);
        if (!err)
            err = ret_add_snapshot(&t, &after.a, false, NULL);
    }
    if (!err)
        err = stk_finish(&t);
    if (err)
        goto out;
    const struct stk_tree *draw = &t;
    if (cut.min_pct > 0 || cut.min_weight > 0 || cut.max_depth > 0) {
        have_cut = true;
        if ((err = stk_cut(&t, &cut, &cutt)) != 0)
            goto out;
        draw = &cutt;
    }
    if (g->folded) {
        err = stk_write_folded(draw, out);
        goto out;
    }
    const struct stk_node *root = &draw->nodes[STK_ROOT];
    char b1[32], b2[32];
    if (g->diff) {
        fmt_bytes((uint64_t)root->total_before, b1, sizeof(b1));
        fmt_bytes((uint64_t)root->total, b2, sizeof(b2));
        sb_addf(&sub, "%s -> %s: %s -> %s reachable; red grew, blue shrank, width after. ",
                g->inputs[0], g->inputs[1], b1, b2);
        sb_adds(&sub, HD_MATCHING_NOTE);
    } else {
        describe(&sub, g->inputs[0], &after);
    }
    if (cut.min_pct > 0)
        sb_addf(&sub, "; frames under %g%% folded into [other]", cut.min_pct);
    if (cut.min_weight > 0) {
        fmt_bytes((uint64_t)cut.min_weight, b1, sizeof(b1));
        sb_addf(&sub, "; frames under %s folded", b1);
    }
    if (cut.max_depth > 0)
        sb_addf(&sub, "; deeper than %u folded", cut.max_depth);
    struct fg_opts fo = {
        .title = g->title          ? g->title
                 : g->diff         ? "Differential retention flame graph"
                 : g->allocations ? "Retained bytes by allocating stack"
                                   : "Retention flame graph",
        .subtitle = sb_str(&sub),
        .unit = "bytes",
        .bytes = true,
        .palette = FG_PALETTE_MEM,
        .width = g->width,
    };
    fg_write_svg(draw, &fo, out);
out:
    close_one(&after);
    sb_release(&sub);
    stk_free(&t);
    if (have_cut)
        stk_free(&cutt);
    return err;
}
