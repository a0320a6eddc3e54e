/* `scry diff before.heap after.heap`: what grew between two heap snapshots of a process, by
 * retaining site (the frames of the retention flame graph) and by type, with the totals and RSS
 * of both. Objects are matched approximately (by type and retaining path), and every output says
 * so. Reads only the snapshots: no privileges needed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap_analysis.h"
#include "analysis/heap_diff.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/error.h"
#include "common/progress.h"
#include "render/heap_report.h"

const char cmd_diff_usage[] =
    "usage: scry diff [--top N] [--json] [--quiet] before.heap after.heap\n"
    "\n"
    "Compares two heap snapshots (scry dump) of a process: the retaining sites whose retained\n"
    "size grew the most (merged retaining paths, as the frames of 'scry flamegraph'), the types\n"
    "whose instances grew, and the reachable bytes and RSS of both. Objects are matched\n"
    "approximately, by type and by retaining path, since addresses change between dumps.\n"
    "'scry flamegraph --diff before.heap after.heap -o diff.svg' draws the same comparison.\n"
    "\n";

/* What each side is, for the totals. */
struct side {
    const char *path;
    struct snap s;
    struct heap_analysis a;
};

int cli_diff_report(const char *before, const char *after, size_t limit, bool json,
                    struct strbuf *out)
{
    struct side b, a;
    struct heap_diff d;
    memset(&b, 0, sizeof(b));
    memset(&a, 0, sizeof(a));
    memset(&d, 0, sizeof(d));
    b.path = before;
    a.path = after;
    /* the progress line (common/progress.h: only where the command asked for it) */
    int shown_b = 0, shown_a = 0;
    prog_phase("reading the first snapshot", PROG_NONE, 0, NULL, NULL);
    int err = snap_open(b.path, &b.s);
    if (!err)
        err = ha_build_progress(&b.s, &b.a, cli_heap_progress, &shown_b);
    prog_phase("reading the second snapshot", PROG_NONE, 0, NULL, NULL);
    if (!err)
        err = snap_open(a.path, &a.s);
    if (!err)
        err = ha_build_progress(&a.s, &a.a, cli_heap_progress, &shown_a);
    prog_phase("matching objects", PROG_NONE, 0, NULL, NULL);
    if (!err)
        err = hd_build(&b.a, &a.a, &d);
    prog_done();
    if (!err) {
        struct heap_diff_report r = {.before = {b.path, &b.a}, .after = {a.path, &a.a}, .d = &d,
                                     .limit = limit};
        if (json)
            heap_diff_json(&r, out);
        else
            heap_diff_text(&r, out);
    }
    hd_free(&d);
    ha_free(&a.a);
    ha_free(&b.a);
    snap_close(&a.s);
    snap_close(&b.s);
    return err;
}

int cmd_diff(int argc, char **argv)
{
    bool json, help, quiet;
    long limit = 20;
    int parsed = cli_parse_report_options(OC_DIFF, argc, argv, &limit, &json, &help, NULL, &quiet);
    if (parsed || help)
        return parsed ? parsed : cli_help();
    if (argc - optind != 2)
        return cli_usage("give two snapshot files (scry diff before.heap after.heap)");
    prog_init(json || quiet);
    struct strbuf out = STRBUF_INIT;
    return cli_finish_report(
        cli_diff_report(argv[optind], argv[optind + 1], (size_t)limit, json, &out), &out, json);
}
