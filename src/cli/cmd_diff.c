/* `scry diff before.heap after.heap`: what grew between two heap snapshots of a process, by
 * retaining site (the frames of the retention flame graph) and by type, with the totals and RSS
 * of both. Objects are matched approximately (by type and retaining path), and every output says
 * so. Reads only the snapshots: no privileges needed. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap_analysis.h"
#include "analysis/heap_diff.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/fmt.h"
#include "common/sanitize.h"
#include "render/json_writer.h"

const char cmd_diff_usage[] =
    "usage: scry diff [--top N] [--json] before.heap after.heap\n"
    "\n"
    "Compares two heap snapshots (scry dump) of a process: the retaining sites whose retained\n"
    "size grew the most (merged retaining paths, as the frames of 'scry flamegraph'), the types\n"
    "whose instances grew, and the reachable bytes and RSS of both. Objects are matched\n"
    "approximately, by type and by retaining path, since addresses change between dumps.\n"
    "'scry flamegraph --diff before.heap after.heap -o diff.svg' draws the same comparison.\n"
    "\n"
    "      --top N    how many sites and types to list (default 20)\n"
    "      --json     one JSON document on stdout (docs/json-schema.md)\n";

/* What each side is, for the totals. */
struct side {
    const char *path;
    struct snap s;
    struct heap_analysis a;
};

static int64_t delta(uint64_t before, uint64_t after)
{
    return (int64_t)after - (int64_t)before;
}

/* "+1.5 MiB", "-512 B", "0 B". */
static void fmt_delta(int64_t d, char *out, size_t size)
{
    size_t k = 0;
    if (d != 0 && size > 1)
        out[k++] = d > 0 ? '+' : '-';
    fmt_bytes((uint64_t)(d < 0 ? -d : d), out + k, size - k);
}

static void render_text(const struct side *b, const struct side *a, const struct heap_diff *d,
                        size_t limit, struct strbuf *out)
{
    char x[32], y[32], z[32];
    struct strbuf path = STRBUF_INIT;
    sb_addf(out, "Heap growth from %s (pid %u, Python %s) to %s (pid %u, Python %s)\n",
            san_str(b->path), b->s.meta.pid, san_str(b->s.meta.python_version), san_str(a->path),
            a->s.meta.pid, san_str(a->s.meta.python_version));
    fmt_bytes(b->a.reachable_bytes, x, sizeof(x));
    fmt_bytes(a->a.reachable_bytes, y, sizeof(y));
    fmt_delta(delta(b->a.reachable_bytes, a->a.reachable_bytes), z, sizeof(z));
    sb_addf(out, "  reachable Python objects: %s -> %s (%s), %" PRIu64 " -> %" PRIu64 " objects\n",
            x, y, z, b->a.reachable_objects, a->a.reachable_objects);
    if (b->s.meta.rss_bytes && a->s.meta.rss_bytes) {
        fmt_bytes(b->s.meta.rss_bytes, x, sizeof(x));
        fmt_bytes(a->s.meta.rss_bytes, y, sizeof(y));
        fmt_delta(delta(b->s.meta.rss_bytes, a->s.meta.rss_bytes), z, sizeof(z));
        sb_addf(out, "  RSS: %s -> %s (%s)\n", x, y, z);
    } else {
        sb_adds(out, "  RSS: unknown (a snapshot taken from a core has none)\n");
    }
    if (b->s.meta.pid != a->s.meta.pid)
        sb_adds(out, "  The snapshots come from different processes.\n");
    sb_addf(out, "%s\n", HD_MATCHING_NOTE);

    sb_adds(out, "\nGrowth by retaining site (retained bytes)\n");
    sb_addf(out, "%11s %11s %11s %9s  %s\n", "before", "after", "change", "objects", "site");
    size_t shown = 0;
    for (size_t i = 0; i < d->nsites && shown < limit; i++, shown++) {
        const struct hd_site *s = &d->sites[i];
        fmt_bytes(s->retained_before, x, sizeof(x));
        fmt_bytes(s->retained_after, y, sizeof(y));
        fmt_delta(delta(s->retained_before, s->retained_after), z, sizeof(z));
        sb_reset(&path);
        hd_node_path(&d->tree, s->node, &path);
        sb_addf(out, "%11s %11s %11s %+9" PRId64 "  %s\n", x, y, z,
                delta(s->objects_before, s->objects_after), san_str(sb_str(&path)));
    }
    if (shown == 0)
        sb_adds(out, "  (no retaining site changed)\n");

    sb_adds(out, "\nGrowth by type (shallow bytes)\n");
    sb_addf(out, "%11s %11s %11s %9s  %s\n", "before", "after", "change", "count", "type");
    shown = 0;
    for (size_t i = 0; i < d->ntypes && shown < limit; i++) {
        const struct hd_type *t = &d->types[i];
        if (t->shallow_before == t->shallow_after && t->count_before == t->count_after)
            continue;
        fmt_bytes(t->shallow_before, x, sizeof(x));
        fmt_bytes(t->shallow_after, y, sizeof(y));
        fmt_delta(delta(t->shallow_before, t->shallow_after), z, sizeof(z));
        sb_addf(out, "%11s %11s %11s %+9" PRId64 "  %s\n", x, y, z,
                delta(t->count_before, t->count_after), san_str(t->type));
        shown++;
    }
    if (shown == 0)
        sb_adds(out, "  (no type changed)\n");
    sb_release(&path);
}

static void json_side(struct json_writer *w, const struct side *s)
{
    jw_obj_begin(w);
    jw_key(w, "snapshot");
    jw_str(w, s->path);
    jw_key(w, "pid");
    jw_uint(w, s->s.meta.pid);
    jw_key(w, "python_version");
    jw_str(w, s->s.meta.python_version);
    jw_key(w, "objects");
    jw_uint(w, s->s.nobjects);
    jw_key(w, "shallow_bytes");
    jw_uint(w, s->s.shallow_total);
    jw_key(w, "reachable_objects");
    jw_uint(w, s->a.reachable_objects);
    jw_key(w, "reachable_bytes");
    jw_uint(w, s->a.reachable_bytes);
    jw_key(w, "rss_bytes");
    if (s->s.meta.rss_bytes)
        jw_uint(w, s->s.meta.rss_bytes);
    else
        jw_null(w);
    jw_obj_end(w);
}

static void render_json(const struct side *b, const struct side *a, const struct heap_diff *d,
                        size_t limit, struct strbuf *out)
{
    struct json_writer w;
    struct strbuf path = STRBUF_INIT;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "before");
    json_side(&w, b);
    jw_key(&w, "after");
    json_side(&w, a);
    jw_key(&w, "matching");
    jw_str(&w, "approximate");
    jw_key(&w, "note");
    jw_str(&w, HD_MATCHING_NOTE);
    jw_key(&w, "totals");
    jw_obj_begin(&w);
    jw_key(&w, "reachable_bytes_delta");
    jw_int(&w, delta(b->a.reachable_bytes, a->a.reachable_bytes));
    jw_key(&w, "reachable_objects_delta");
    jw_int(&w, delta(b->a.reachable_objects, a->a.reachable_objects));
    jw_key(&w, "shallow_bytes_delta");
    jw_int(&w, delta(b->s.shallow_total, a->s.shallow_total));
    jw_key(&w, "rss_delta");
    if (b->s.meta.rss_bytes && a->s.meta.rss_bytes)
        jw_int(&w, delta(b->s.meta.rss_bytes, a->s.meta.rss_bytes));
    else
        jw_null(&w);
    jw_key(&w, "same_process");
    jw_bool(&w, b->s.meta.pid == a->s.meta.pid);
    jw_obj_end(&w);

    jw_key(&w, "sites");
    jw_arr_begin(&w);
    for (size_t i = 0; i < d->nsites && i < limit; i++) {
        const struct hd_site *s = &d->sites[i];
        const struct stk_node *n = &d->tree.nodes[s->node];
        sb_reset(&path);
        hd_node_path(&d->tree, s->node, &path);
        jw_obj_begin(&w);
        jw_key(&w, "stack");
        jw_str(&w, sb_str(&path));
        jw_key(&w, "frame");
        jw_str(&w, d->tree.frames[n->frame]);
        jw_key(&w, "depth");
        jw_uint(&w, n->depth);
        jw_key(&w, "retained_before");
        jw_uint(&w, s->retained_before);
        jw_key(&w, "retained_after");
        jw_uint(&w, s->retained_after);
        jw_key(&w, "retained_delta");
        jw_int(&w, delta(s->retained_before, s->retained_after));
        jw_key(&w, "objects_before");
        jw_uint(&w, s->objects_before);
        jw_key(&w, "objects_after");
        jw_uint(&w, s->objects_after);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);

    jw_key(&w, "types");
    jw_arr_begin(&w);
    size_t shown = 0;
    for (size_t i = 0; i < d->ntypes && shown < limit; i++) {
        const struct hd_type *t = &d->types[i];
        if (t->shallow_before == t->shallow_after && t->count_before == t->count_after)
            continue;
        jw_obj_begin(&w);
        jw_key(&w, "type");
        jw_str(&w, t->type);
        jw_key(&w, "count_before");
        jw_uint(&w, t->count_before);
        jw_key(&w, "count_after");
        jw_uint(&w, t->count_after);
        jw_key(&w, "count_delta");
        jw_int(&w, delta(t->count_before, t->count_after));
        jw_key(&w, "shallow_before");
        jw_uint(&w, t->shallow_before);
        jw_key(&w, "shallow_after");
        jw_uint(&w, t->shallow_after);
        jw_key(&w, "shallow_delta");
        jw_int(&w, delta(t->shallow_before, t->shallow_after));
        jw_obj_end(&w);
        shown++;
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
    sb_release(&path);
}

int cmd_diff(int argc, char **argv)
{
    bool json;
    long limit = 20;
    int parsed = cli_parse_report_options(argc, argv, &limit, &json);
    if (parsed >= 0)
        return parsed;
    if (argc - optind != 2)
        return cli_usage("give two snapshot files (scry diff before.heap after.heap)");

    struct side b, a;
    struct heap_diff d;
    memset(&b, 0, sizeof(b));
    memset(&a, 0, sizeof(a));
    memset(&d, 0, sizeof(d));
    b.path = argv[optind];
    a.path = argv[optind + 1];
    struct strbuf out = STRBUF_INIT;
    int status = CLI_EXIT_OK;
    int err = snap_open(b.path, &b.s);
    if (!err)
        err = ha_build(&b.s, &b.a);
    if (!err)
        err = snap_open(a.path, &a.s);
    if (!err)
        err = ha_build(&a.s, &a.a);
    if (!err)
        err = hd_build(&b.a, &a.a, &d);
    if (err) {
        status = cli_report_error(json);
        goto out;
    }
    if (json)
        render_json(&b, &a, &d, (size_t)limit, &out);
    else
        render_text(&b, &a, &d, (size_t)limit, &out);
    cli_print(&out);
out:
    sb_release(&out);
    hd_free(&d);
    ha_free(&a.a);
    ha_free(&b.a);
    snap_close(&a.s);
    snap_close(&b.s);
    return status;
}
