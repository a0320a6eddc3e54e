/* `scry analyze app.heap`: what the heap retains and who holds it: the top retainers (retained,
 * shallow, type, root path), the type histogram, and how much of the process's RSS the Python
 * object graph accounts for. Reads only the snapshot: no privileges needed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/alloc_join.h"
#include "analysis/heap_analysis.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/error.h"
#include "common/progress.h"
#include "render/heap_report.h"

const char cmd_analyze_usage[] =
    "usage: scry analyze [--top N] [--allocations] [--json] [--quiet] app.heap\n"
    "\n"
    "Computes the dominator tree of a heap snapshot (scry dump) and prints the objects that\n"
    "retain the most memory, with their retained and shallow sizes, type and the path from a\n"
    "root that holds them; then sizes by type, and how much of the process's RSS at dump time\n"
    "the Python objects account for.\n"
    "\n";

/* The report, with each retainer's allocating lines when allocations (docs/allocations.md). */
static int analyze_report(const char *path, size_t limit, bool allocations, bool json,
                          struct strbuf *out)
{
    struct snap s;
    struct heap_analysis a;
    struct ha_type *types = NULL;
    size_t ntypes = 0, ntop = 0;
    struct aj_join join = {0};
    struct aj_line **alines = NULL;
    size_t *nalines = NULL;
    uint32_t *top = calloc(limit ? limit : 1, sizeof(*top));
    /* Which retainer lies inside which, and the order that shows it (ha_nest_retainers). */
    size_t *outer = calloc(limit ? limit : 1, sizeof(*outer));
    size_t *order = calloc(limit ? limit : 1, sizeof(*order));
    size_t *depth = calloc(limit ? limit : 1, sizeof(*depth));
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    /* the progress line (common/progress.h: only where the command asked for it) */
    int shown = 0;
    prog_phase("reading the snapshot", PROG_NONE, 0, NULL, NULL);
    int err = top && outer && order && depth ? snap_open(path, &s)
                                             : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (!err)
        err = ha_build_progress(&s, &a, cli_heap_progress, &shown);
    if (!err)
        err = ha_types(&a, &types, &ntypes);
    if (!err)
        ntop = ha_top_retainers(&a, limit, top);
    if (!err)
        err = ha_nest_retainers(&a, top, ntop, outer);
    if (!err)
        err = ha_nest_order(outer, ntop, order, depth);
    if (!err && allocations) {
        prog_phase("joining the allocation samples", PROG_NONE, 0, NULL, NULL);
        err = aj_build(&a, &join);
        alines = calloc(ntop + 1, sizeof(*alines));
        nalines = calloc(ntop + 1, sizeof(*nalines));
        if (!err && (!alines || !nalines))
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        for (size_t i = 0; i < ntop && !err; i++)
            err = aj_lines_retained_by(&join, top[i], &alines[i], &nalines[i]);
    }
    prog_done();
    if (!err) {
        struct heap_analyze_report r = {.path = path, .a = &a, .top = top, .ntop = ntop,
                                        .order = order, .depth = depth,
                                        .listed_total = ha_retainers_total(&a, top, outer, ntop),
                                        .types = types, .ntypes = ntypes, .limit = limit,
                                        .join = allocations ? &join : NULL, .alines = alines,
                                        .nalines = nalines};
        if (json)
            heap_analyze_json(&r, out);
        else
            heap_analyze_text(&r, out);
    }
    for (size_t i = 0; alines && i < ntop; i++)
        free(alines[i]);
    free(alines);
    free(nalines);
    aj_free(&join);
    free(types);
    free(top);
    free(outer);
    free(order);
    free(depth);
    ha_free(&a);
    snap_close(&s);
    return err;
}

int cli_analyze_report(const char *path, size_t limit, bool json, struct strbuf *out)
{
    return analyze_report(path, limit, false, json, out);
}

int cmd_analyze(int argc, char **argv)
{
    bool json, help, allocations, quiet;
    long limit = 20;
    int parsed =
        cli_parse_report_options(OC_ANALYZE, argc, argv, &limit, &json, &help, &allocations, &quiet);
    if (parsed || help)
        return parsed ? parsed : cli_help();
    if (argc - optind != 1)
        return cli_usage("give one snapshot file (scry analyze app.heap)");
    prog_init(json || quiet);
    struct strbuf out = STRBUF_INIT;
    return cli_finish_report(analyze_report(argv[optind], (size_t)limit, allocations, json, &out),
                             &out, json);
}
