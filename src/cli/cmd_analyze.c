/* `scry analyze app.heap`: what the heap retains and who holds it: the top retainers (retained,
 * shallow, type, root path), the type histogram, and how much of the process's RSS the Python
 * object graph accounts for. Reads only the snapshot: no privileges needed. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap_analysis.h"
#include "cli/cli.h"
#include "cli/reports.h"
#include "common/error.h"
#include "render/heap_report.h"

const char cmd_analyze_usage[] =
    "usage: scry analyze [--top N] [--json] app.heap\n"
    "\n"
    "Computes the dominator tree of a heap snapshot (scry dump) and prints the objects that\n"
    "retain the most memory, with their retained and shallow sizes, type and the path from a\n"
    "root that holds them; then sizes by type, and how much of the process's RSS at dump time\n"
    "the Python objects account for.\n"
    "\n"
    "      --top N    how many retainers and types to list (default 20)\n"
    "      --json     one JSON document on stdout (docs/json-schema.md)\n";

int cli_analyze_report(const char *path, size_t limit, bool json, struct strbuf *out)
{
    struct snap s;
    struct heap_analysis a;
    struct ha_type *types = NULL;
    size_t ntypes = 0;
    uint32_t *top = calloc(limit ? limit : 1, sizeof(*top));
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    int err = top ? snap_open(path, &s) : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (!err)
        err = ha_build(&s, &a);
    if (!err)
        err = ha_types(&a, &types, &ntypes);
    if (!err) {
        size_t ntop = ha_top_retainers(&a, limit, top);
        struct heap_analyze_report r = {.path = path, .a = &a, .top = top, .ntop = ntop,
                                        .types = types, .ntypes = ntypes, .limit = limit};
        if (json)
            heap_analyze_json(&r, out);
        else
            heap_analyze_text(&r, out);
    }
    free(types);
    free(top);
    ha_free(&a);
    snap_close(&s);
    return err;
}

int cmd_analyze(int argc, char **argv)
{
    bool json, help;
    long limit = 20;
    int parsed = cli_parse_report_options(argc, argv, &limit, &json, &help);
    if (parsed || help)
        return parsed ? parsed : cli_help();
    if (argc - optind != 1)
        return cli_usage("give one snapshot file (scry analyze app.heap)");
    struct strbuf out = STRBUF_INIT;
    return cli_finish_report(cli_analyze_report(argv[optind], (size_t)limit, json, &out), &out,
                             json);
}
