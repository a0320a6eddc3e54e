/* `scry flamegraph`: the CPU flame graph of a profile recorded with `scry run --stacks`, as an
 * interactive SVG or folded stacks, plain or differential (two profiles); heap snapshots are
 * handed to heap_flamegraph.c. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stacks.h"
#include "cli/cli.h"
#include "options/options.h"
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
    "\n";

/* What the command line asks for. */
struct flame_args {
    const char *outfile, *title;
    bool folded, diff, min_bytes_given, pct_given;
    bool memory;      /* the memory flame graph (memory_stacks, MB allocated) */
    bool allocations; /* a snapshot's retained bytes by allocating stack */
    struct stk_cut cut;
    struct fg_opts fo;
};

/* The options into a: 0 (*help set for --help), or a usage error. */
static int parse_options(int argc, char **argv, struct flame_args *a, bool *help)
{
    struct opt_parser p;
    opt_begin(&p, OC_FLAMEGRAPH, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_OUTPUT:
        case OPT_OUTFILE:
            a->outfile = p.arg;
            break;
        case OPT_FOLDED:
            a->folded = true;
            break;
        case OPT_ALLOCATIONS_FLAG:
            a->allocations = true;
            break;
        case OPT_MEMORY:
            a->memory = true;
            break;
        case OPT_DIFF:
            a->diff = true;
            break;
        case OPT_MIN_PCT:
            a->cut.min_pct = p.num;
            a->pct_given = true;
            break;
        case OPT_MIN_BYTES:
            a->cut.min_weight = p.num;
            a->min_bytes_given = true;
            break;
        case OPT_MAX_DEPTH:
            a->cut.max_depth = (uint32_t)p.ival;
            break;
        case OPT_TITLE:
            a->title = p.arg;
            break;
        case OPT_COLORS:
            if (strcmp(p.arg, "kind") == 0)
                a->fo.palette = FG_PALETTE_KIND;
            else if (strcmp(p.arg, "hash") == 0)
                a->fo.palette = FG_PALETTE_HASH;
            else
                return cli_usage("--colors takes kind or hash, not '%s'", p.arg);
            break;
        case OPT_WIDTH:
            a->fo.width = (unsigned)p.ival;
            break;
        case OPT_HELP:
            *help = true;
            return 0;
        }
    }
    return c < 0 ? c : 0;
}

/* Heap snapshots: their retention flame graph (heap_flamegraph.c). */
static int draw_snapshots(const struct flame_args *a, char **inputs)
{
    if (a->memory)
        return cli_usage("--memory draws a profile's memory flame graph; a heap "
                         "snapshot's graph is always by retained bytes");
    if (a->allocations && a->diff)
        return cli_usage("--allocations draws one snapshot, not a difference");
    if (!a->folded && !a->outfile && isatty(1))
        return cli_usage("give -o FILE.svg for the SVG (or --folded to print the "
                         "folded stacks)");
    struct cli_heap_graph hg = {.inputs = inputs, .diff = a->diff, .folded = a->folded,
                                .allocations = a->allocations,
                                .title = a->title, .min_pct = a->pct_given ? a->cut.min_pct : -1,
                                .min_bytes = a->cut.min_weight, .max_depth = a->cut.max_depth,
                                .width = a->fo.width};
    struct strbuf hout = STRBUF_INIT;
    int hstatus = cli_heap_flamegraph(&hg, &hout) == 0 && cli_write_output(a->outfile, &hout) == 0
                      ? CLI_EXIT_OK
                      : cli_report_error(false);
    sb_release(&hout);
    return hstatus;
}

/* The SVG of the (cut) tree draw, with its title and the subtitle that says what it shows. */
static void write_svg(struct flame_args *a, const struct stk_tree *draw, char **inputs,
                      const struct pdoc *doc, struct strbuf *out)
{
    struct strbuf sub = STRBUF_INIT;
    const char *program = cli_profile_program(doc);
    const struct stk_node *root = &draw->nodes[STK_ROOT];
    if (a->diff) {
        sb_addf(&sub, "%s -> %s: ", inputs[0], inputs[1]);
        stk_format_weight(&sub, root->total_before);
        sb_adds(&sub, " -> ");
        stk_format_weight(&sub, root->total);
        sb_adds(&sub, a->memory ? " MB allocated" : " samples");
    } else {
        if (program)
            sb_addf(&sub, "%s: ", program);
        stk_format_weight(&sub, root->total);
        sb_adds(&sub, a->memory ? " MB allocated" : " samples");
    }
    if (a->cut.min_pct > 0)
        sb_addf(&sub, "; frames under %g%% folded into [other]", a->cut.min_pct);
    if (a->cut.max_depth > 0)
        sb_addf(&sub, "; deeper than %u folded", a->cut.max_depth);
    if (a->memory)
        a->fo.unit = "MB";
    a->fo.title = a->title     ? a->title
                  : a->memory ? (a->diff ? "Differential memory flame graph" : "Memory flame graph")
                  : a->diff   ? "Differential CPU flame graph"
                              : "CPU flame graph";
    a->fo.subtitle = sb_str(&sub);
    fg_write_svg(draw, &a->fo, out);
    sb_release(&sub);
}

/* Profiles: their CPU (or memory) flame graph, or folded stacks. */
static int draw_profiles(struct flame_args *a, char **inputs)
{
    struct stk_tree t, cutt;
    stk_init(&t, a->diff);
    memset(&cutt, 0, sizeof(cutt));
    bool have_cut = false;
    struct strbuf out = STRBUF_INIT;
    struct pdoc doc = {0};
    int status = CLI_EXIT_OK;
    if (a->diff) {
        if (cli_load_profile_stacks(inputs[0], &t, true, a->memory, NULL) != 0 ||
            cli_load_profile_stacks(inputs[1], &t, false, a->memory, &doc) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else if (cli_load_profile_stacks(inputs[0], &t, false, a->memory, &doc) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (stk_finish(&t) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    const struct stk_tree *draw = &t;
    if (a->cut.min_pct > 0 || a->cut.min_weight > 0 || a->cut.max_depth > 0) {
        have_cut = true;
        if (stk_cut(&t, &a->cut, &cutt) != 0) {
            status = cli_report_error(false);
            goto out;
        }
        draw = &cutt;
    }
    if (a->folded) {
        if (stk_write_folded(draw, &out) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else {
        write_svg(a, draw, inputs, &doc, &out);
    }
    if (cli_write_output(a->outfile, &out) != 0)
        status = cli_report_error(false);
out:
    pdoc_free(&doc);
    sb_release(&out);
    stk_free(&t);
    if (have_cut)
        stk_free(&cutt);
    return status;
}

int cmd_flamegraph(int argc, char **argv)
{
    struct flame_args a = {.fo = {.unit = "samples", .palette = FG_PALETTE_KIND}};
    bool help = false;
    int err = parse_options(argc, argv, &a, &help);
    if (err || help)
        return help ? cli_help() : err;
    int nin = argc - optind;
    if (a.diff && nin != 2)
        return cli_usage("--diff takes two profiles: before.json after.json");
    if (!a.diff && nin != 1)
        return cli_usage(nin == 0 ? "give the profile to draw "
                         "(scry flamegraph scry-profile.json -o cpu.svg)"
                         : "give one profile (or --diff BEFORE AFTER)");
    if (cli_is_snapshot(argv[optind]))
        return draw_snapshots(&a, argv + optind);
    if (a.allocations)
        return cli_usage("--allocations applies to heap snapshots (scry dump of a program "
                         "under scry run, or scry run --heap-at-exit)");
    if (a.min_bytes_given)
        return cli_usage("--min-bytes applies to heap snapshots; a CPU profile's "
                         "weights are samples: use --min-pct");
    if (!a.folded && !a.outfile && isatty(1))
        return cli_usage("give -o FILE.svg for the SVG (or --folded to print the "
                         "folded stacks)");
    return draw_profiles(&a, argv + optind);
}
