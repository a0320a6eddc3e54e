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
#include "cli/heap_common.h"
#include "common/error.h"
#include "common/fmt.h"
#include "common/sanitize.h"
#include "render/json_writer.h"

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

static void render_text(const struct heap_analysis *a, const uint32_t *top, size_t ntop,
                        const struct ha_type *types, size_t ntypes, size_t limit,
                        struct strbuf *out)
{
    const struct snap *s = a->s;
    char b1[32], b2[32], b3[32];
    struct strbuf path = STRBUF_INIT; /* a root path, cleaned before it is shown */
    fmt_bytes(s->shallow_total, b1, sizeof(b1));
    fmt_bytes(a->reachable_bytes, b2, sizeof(b2));
    sb_addf(out, "Heap of pid %u, Python %s: %u objects, %u references, %s; %" PRIu64
                 " objects (%s) reachable from %u roots\n",
            s->meta.pid, san_str(s->meta.python_version), s->nobjects, s->nedges, b1,
            a->reachable_objects, b2, s->nroots);
    sb_adds(out, "\nTop retainers by retained size\n");
    sb_addf(out, "%11s %11s  %-32s %s\n", "retained", "shallow", "type", "root path");
    for (size_t i = 0; i < ntop; i++) {
        uint32_t v = top[i];
        fmt_bytes(a->retained[v], b1, sizeof(b1));
        fmt_bytes(s->objects[v].size, b2, sizeof(b2));
        sb_addf(out, "%11s %11s  %-32s ", b1, b2, san_str(snap_string(s, s->objects[v].type)));
        sb_reset(&path);
        ha_path_inline(a, v, &path);
        san_addn(out, path.buf, path.len);
        sb_addch(out, '\n');
    }
    sb_release(&path);
    if (ntop == 0)
        sb_adds(out, "  (none)\n");
    sb_adds(out, "\nTypes by retained size\n");
    sb_addf(out, "%11s %11s %11s  %s\n", "count", "shallow", "retained", "type");
    for (size_t i = 0; i < ntypes && i < limit; i++) {
        fmt_bytes(types[i].shallow, b1, sizeof(b1));
        fmt_bytes(types[i].retained, b2, sizeof(b2));
        sb_addf(out, "%11" PRIu64 " %11s %11s  %s\n", types[i].count, b1, b2,
                san_str(snap_string(s, types[i].type)));
    }
    fmt_bytes(a->reachable_bytes, b1, sizeof(b1));
    if (s->meta.rss_bytes) {
        fmt_bytes(s->meta.rss_bytes, b3, sizeof(b3));
        sb_addf(out,
                "\nPython graph accounts for %s of %s RSS (%.1f%%). The rest is outside the object "
                "graph (native allocations, C extensions, untracked objects, the interpreter).\n",
                b1, b3, 100.0 * (double)a->reachable_bytes / (double)s->meta.rss_bytes);
    } else {
        sb_addf(out, "\nPython graph: %s (the process's RSS at dump time is unknown).\n", b1);
    }
}

static void render_json(const struct heap_analysis *a, const char *path, const uint32_t *top,
                        size_t ntop, const struct ha_type *types, size_t ntypes, size_t limit,
                        struct strbuf *out)
{
    const struct snap *s = a->s;
    struct json_writer w;
    struct strbuf p = STRBUF_INIT;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "snapshot");
    jw_str(&w, path);
    jw_key(&w, "pid");
    jw_uint(&w, s->meta.pid);
    jw_key(&w, "python_version");
    jw_str(&w, s->meta.python_version);
    jw_key(&w, "top_retainers");
    jw_arr_begin(&w);
    for (size_t i = 0; i < ntop; i++) {
        jw_obj_begin(&w);
        cli_heap_object_fields(&w, a, top[i], &p);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "types");
    jw_arr_begin(&w);
    for (size_t i = 0; i < ntypes && i < limit; i++) {
        jw_obj_begin(&w);
        jw_key(&w, "type");
        jw_str(&w, snap_string(s, types[i].type));
        jw_key(&w, "count");
        jw_uint(&w, types[i].count);
        jw_key(&w, "shallow");
        jw_uint(&w, types[i].shallow);
        jw_key(&w, "retained");
        jw_uint(&w, types[i].retained);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "totals");
    jw_obj_begin(&w);
    jw_key(&w, "objects");
    jw_uint(&w, s->nobjects);
    jw_key(&w, "references");
    jw_uint(&w, s->nedges);
    jw_key(&w, "weak_references");
    jw_uint(&w, a->weak_edges);
    jw_key(&w, "roots");
    jw_uint(&w, s->nroots);
    jw_key(&w, "shallow_bytes");
    jw_uint(&w, s->shallow_total);
    jw_key(&w, "reachable_objects");
    jw_uint(&w, a->reachable_objects);
    jw_key(&w, "reachable_bytes");
    jw_uint(&w, a->reachable_bytes);
    jw_key(&w, "rss_bytes");
    if (s->meta.rss_bytes)
        jw_uint(&w, s->meta.rss_bytes);
    else
        jw_null(&w);
    jw_key(&w, "graph_fraction_of_rss");
    if (s->meta.rss_bytes)
        jw_double(&w, (double)a->reachable_bytes / (double)s->meta.rss_bytes);
    else
        jw_null(&w);
    jw_obj_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
    sb_release(&p);
}

int cmd_analyze(int argc, char **argv)
{
    bool json;
    long limit = 20;
    int parsed = cli_parse_report_options(argc, argv, &limit, &json);
    if (parsed >= 0)
        return parsed;
    if (argc - optind != 1)
        return cli_usage("give one snapshot file (scry analyze app.heap)");
    const char *path = argv[optind];

    struct snap s;
    struct heap_analysis a;
    struct strbuf out = STRBUF_INIT;
    struct ha_type *types = NULL;
    size_t ntypes = 0;
    uint32_t *top = calloc((size_t)limit, sizeof(*top));
    int status = CLI_EXIT_OK;
    memset(&s, 0, sizeof(s));
    memset(&a, 0, sizeof(a));
    int err = top ? snap_open(path, &s) : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (!err)
        err = ha_build(&s, &a);
    if (!err)
        err = ha_types(&a, &types, &ntypes);
    if (err) {
        status = cli_report_error(json);
        goto out;
    }
    size_t ntop = ha_top_retainers(&a, (size_t)limit, top);
    if (json)
        render_json(&a, path, top, ntop, types, ntypes, (size_t)limit, &out);
    else
        render_text(&a, top, ntop, types, ntypes, (size_t)limit, &out);
    cli_print(&out);
out:
    sb_release(&out);
    free(types);
    free(top);
    ha_free(&a);
    snap_close(&s);
    return status;
}
