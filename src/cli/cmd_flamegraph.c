/* `scry flamegraph`: the CPU flame graph of a profile recorded with `scry run --stacks`, as an
 * interactive SVG or folded stacks, plain or differential (two profiles); heap snapshots are
 * handed to heap_flamegraph.c. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stacks.h"
#include "cli/cli.h"
#include "common/error.h"
#include "render/flamegraph_svg.h"
#include "render/speedscope.h"
#include "snapshot/format.h"

const char cmd_flamegraph_usage[] =
    "usage: scry flamegraph [options] profile.json\n"
    "       scry flamegraph --diff before.json after.json [options]\n"
    "\n"
    "Draws the CPU flame graph of a profile recorded with 'scry run --stacks' as one\n"
    "self-contained interactive SVG: each frame's width is its share of the samples; click a\n"
    "frame to zoom, Ctrl-F (or Search) to highlight frames matching a regular expression.\n"
    "Given heap snapshots (scry dump), draws their retention flame graph instead: each frame\n"
    "one hop of a retaining path, its width the bytes it retains (defaults for snapshots:\n"
    "--min-pct 0.01 --max-depth 32; objects are matched between snapshots by path).\n"
    "\n"
    "  -o, --output FILE   write to FILE (default: standard output)\n"
    "      --memory        the memory flame graph: widths are the MB each call stack\n"
    "                      allocated (a profile recorded with --stacks, memory on)\n"
    "      --folded        write folded stacks ('frame;frame;frame COUNT', outermost frame\n"
    "                      first, one line per stack) instead of the SVG\n"
    "      --diff A B      differential graph of profile A (before) and B (after): width is\n"
    "                      after, red frames grew, blue shrank; with --folded the lines read\n"
    "                      'stack BEFORE AFTER'\n"
    "      --min-pct P     fold frames narrower than P% of the total into one [other] frame\n"
    "                      per parent (default 0: none); the other frames keep their widths\n"
    "      --max-depth N   fold frames deeper than N into [other] (default: no limit)\n"
    "      --min-bytes N   for heap snapshots: fold frames retaining fewer than N bytes\n"
    "      --allocations   for a heap snapshot of a program under scry run: the retained\n"
    "                      bytes by the Python stack that allocated them (docs/allocations.md)\n"
    "      --title TEXT    the graph's title\n"
    "      --colors MODE   kind (Python warm, native blue; the default) or hash (one colour\n"
    "                      per name)\n"
    "      --width PX      image width (default 1200)\n";

int cmd_flamegraph(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"outfile", required_argument, NULL, 'o'},
        {"folded", no_argument, NULL, 'F'},
        {"memory", no_argument, NULL, 'M'},
        {"allocations", no_argument, NULL, 'A'},
        {"diff", no_argument, NULL, 'D'},
        {"min-pct", required_argument, NULL, 'p'},
        {"min-bytes", required_argument, NULL, 'b'},
        {"max-depth", required_argument, NULL, 'd'},
        {"title", required_argument, NULL, 'T'},
        {"colors", required_argument, NULL, 'c'},
        {"width", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *outfile = NULL, *title = NULL;
    bool folded = false, diff = false, min_bytes_given = false, pct_given = false;
    bool memory = false; /* the memory flame graph (memory_stacks, MB allocated) */
    bool allocations = false; /* a snapshot's retained bytes by allocating stack */
    struct stk_cut cut = {0};
    struct fg_opts fo = {.unit = "samples", .palette = FG_PALETTE_KIND};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            outfile = optarg;
            break;
        case 'F':
            folded = true;
            break;
        case 'A':
            allocations = true;
            break;
        case 'M':
            memory = true;
            break;
        case 'D':
            diff = true;
            break;
        case 'p':
            if (!cli_parse_percent(optarg, &cut.min_pct))
                return cli_usage("--min-pct needs a percentage from 0 to 100, not '%s'",
                                 optarg);
            pct_given = true;
            break;
        case 'b':
            if (!cli_parse_amount(optarg, &cut.min_weight))
                return cli_usage("--min-bytes needs a number of bytes, not '%s'",
                                 optarg);
            min_bytes_given = true;
            break;
        case 'd': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > 100000)
                return cli_usage("--max-depth needs a depth from 1 to 100000, not '%s'",
                                 optarg);
            cut.max_depth = (uint32_t)v;
            break;
        }
        case 'T':
            title = optarg;
            break;
        case 'c':
            if (strcmp(optarg, "kind") == 0)
                fo.palette = FG_PALETTE_KIND;
            else if (strcmp(optarg, "hash") == 0)
                fo.palette = FG_PALETTE_HASH;
            else
                return cli_usage("--colors takes kind or hash, not '%s'", optarg);
            break;
        case 'w': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 100 || v > 100000)
                return cli_usage("--width needs a width in pixels from 100 to "
                                 "100000, not '%s'",
                                 optarg);
            fo.width = (unsigned)v;
            break;
        }
        case 'h':
            return cli_help();
        default:
            return cli_option_error(c, argv);
        }
    }
    int nin = argc - optind;
    if (diff && nin != 2)
        return cli_usage("--diff takes two profiles: before.json after.json");
    if (!diff && nin != 1)
        return cli_usage(nin == 0 ? "give the profile to draw "
                         "(scry flamegraph scry-profile.json -o cpu.svg)"
                         : "give one profile (or --diff BEFORE AFTER)");
    if (cli_is_snapshot(argv[optind])) {
        if (memory)
            return cli_usage("--memory draws a profile's memory flame graph; a heap "
                             "snapshot's graph is always by retained bytes");
        if (allocations && diff)
            return cli_usage("--allocations draws one snapshot, not a difference");
        if (!folded && !outfile && isatty(1))
            return cli_usage("give -o FILE.svg for the SVG (or --folded to print the "
                             "folded stacks)");
        struct cli_heap_graph hg = {.inputs = argv + optind, .diff = diff, .folded = folded,
                                    .allocations = allocations,
                                    .title = title, .min_pct = pct_given ? cut.min_pct : -1,
                                    .min_bytes = cut.min_weight, .max_depth = cut.max_depth,
                                    .width = fo.width};
        struct strbuf hout = STRBUF_INIT;
        int hstatus = cli_heap_flamegraph(&hg, &hout) == 0 && cli_write_output(outfile, &hout) == 0
                          ? CLI_EXIT_OK
                          : cli_report_error(false);
        sb_release(&hout);
        return hstatus;
    }
    if (allocations)
        return cli_usage("--allocations applies to heap snapshots (scry dump of a program "
                         "under scry run, or scry run --heap-at-exit)");
    if (min_bytes_given)
        return cli_usage("--min-bytes applies to heap snapshots; a CPU profile's "
                         "weights are samples: use --min-pct");
    if (!folded && !outfile && isatty(1))
        return cli_usage("give -o FILE.svg for the SVG (or --folded to print the "
                         "folded stacks)");

    struct stk_tree t, cutt;
    stk_init(&t, diff);
    memset(&cutt, 0, sizeof(cutt));
    bool have_cut = false;
    struct strbuf out = STRBUF_INIT, sub = STRBUF_INIT;
    json_t *doc = NULL;
    int status = CLI_EXIT_OK;
    if (diff) {
        if (cli_load_profile_stacks(argv[optind], &t, true, memory, NULL) != 0 ||
            cli_load_profile_stacks(argv[optind + 1], &t, false, memory, &doc) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else if (cli_load_profile_stacks(argv[optind], &t, false, memory, &doc) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (stk_finish(&t) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    const struct stk_tree *draw = &t;
    if (cut.min_pct > 0 || cut.min_weight > 0 || cut.max_depth > 0) {
        have_cut = true;
        if (stk_cut(&t, &cut, &cutt) != 0) {
            status = cli_report_error(false);
            goto out;
        }
        draw = &cutt;
    }
    if (folded) {
        if (stk_write_folded(draw, &out) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else {
        const char *program = cli_profile_program(doc);
        const struct stk_node *root = &draw->nodes[STK_ROOT];
        if (diff) {
            sb_addf(&sub, "%s -> %s: ", argv[optind], argv[optind + 1]);
            stk_format_weight(&sub, root->total_before);
            sb_adds(&sub, " -> ");
            stk_format_weight(&sub, root->total);
            sb_adds(&sub, memory ? " MB allocated" : " samples");
        } else {
            if (program)
                sb_addf(&sub, "%s: ", program);
            stk_format_weight(&sub, root->total);
            sb_adds(&sub, memory ? " MB allocated" : " samples");
        }
        if (cut.min_pct > 0)
            sb_addf(&sub, "; frames under %g%% folded into [other]", cut.min_pct);
        if (cut.max_depth > 0)
            sb_addf(&sub, "; deeper than %u folded", cut.max_depth);
        if (memory)
            fo.unit = "MB";
        fo.title = title     ? title
                   : memory ? (diff ? "Differential memory flame graph" : "Memory flame graph")
                   : diff   ? "Differential CPU flame graph"
                            : "CPU flame graph";
        fo.subtitle = sb_str(&sub);
        fg_write_svg(draw, &fo, &out);
    }
    if (cli_write_output(outfile, &out) != 0)
        status = cli_report_error(false);
out:
    json_decref(doc);
    sb_release(&out);
    sb_release(&sub);
    stk_free(&t);
    if (have_cut)
        stk_free(&cutt);
    return status;
}
