/* Text and JSON of the heap reports (heap_report.h): analyze, query (--type, --retaining-path,
 * --locate) and diff. Every text shown on the terminal is cleaned (san_str / san_addn). */
#include "render/heap_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/fmt.h"
#include "common/sanitize.h"
#include "render/json_writer.h"

static void addr_str(uint64_t addr, char *out, size_t size)
{
    snprintf(out, size, "0x%" PRIx64, addr);
}

/* An object's address (hex string), type, shallow and retained sizes and root path, as keys of
 * the JSON object the caller has opened; scratch is a work buffer. */
static void object_fields(struct json_writer *w, const struct heap_analysis *a, uint32_t v,
                          struct strbuf *scratch)
{
    const struct snap_object *o = &a->s->objects[v];
    char addr[32];
    snprintf(addr, sizeof(addr), "0x%" PRIx64, o->addr);
    sb_reset(scratch);
    ha_path_inline(a, v, scratch);
    jw_key(w, "address");
    jw_str(w, addr);
    jw_key(w, "type");
    jw_str(w, snap_string(a->s, o->type));
    jw_key(w, "shallow");
    jw_uint(w, o->size);
    jw_key(w, "retained");
    jw_uint(w, a->retained[v]);
    jw_key(w, "path");
    jw_str(w, sb_str(scratch));
}

/* ---- allocating lines (--allocations, docs/allocations.md) ---------------------------------- */

/* Under a retainer (or a type): each allocating line's bytes, their share of total, and the
 * sampling error. */
static void alloc_lines_text(const struct aj_join *j, const struct aj_line *l, size_t n,
                             uint64_t total, size_t limit, struct strbuf *out)
{
    const struct snap *s = j->a->s;
    char b1[32], b2[32], b3[32];
    for (size_t i = 0; i < n && i < limit; i++) {
        fmt_bytes(l[i].bytes, b1, sizeof(b1));
        fmt_bytes(l[i].error, b2, sizeof(b2));
        sb_addf(out, "%11s %5.1f%%  +-%-9s allocated at ", b1,
                total ? 100.0 * (double)l[i].bytes / (double)total : 0.0, b2);
        if (l[i].file == 0 && l[i].line == 0)
            sb_adds(out, "<no profiled Python frame>");
        else
            sb_addf(out, "%s:%u (%s)", san_str(snap_string(s, l[i].file)), l[i].line,
                    san_str(snap_string(s, l[i].func)));
        if (l[i].arena_bytes) {
            fmt_bytes(l[i].arena_bytes, b3, sizeof(b3));
            sb_addf(out, ", ~%s of it by arena", b3);
        }
        sb_addch(out, '\n');
    }
    if (n > limit)
        sb_addf(out, "%11s (%zu more lines)\n", "", n - limit);
}

static void alloc_lines_json(struct json_writer *w, const char *key, const struct aj_join *j,
                             const struct aj_line *l, size_t n)
{
    const struct snap *s = j->a->s;
    jw_key(w, key);
    jw_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        jw_obj_begin(w);
        jw_key(w, "file");
        if (l[i].file == 0 && l[i].line == 0)
            jw_null(w);
        else
            jw_str(w, snap_string(s, l[i].file));
        jw_key(w, "line");
        jw_uint(w, l[i].line);
        jw_key(w, "function");
        jw_str(w, snap_string(s, l[i].func));
        jw_key(w, "bytes");
        jw_uint(w, l[i].bytes);
        jw_key(w, "samples");
        jw_uint(w, l[i].samples);
        jw_key(w, "error_bytes");
        jw_uint(w, l[i].error);
        jw_key(w, "arena_bytes");
        jw_uint(w, l[i].arena_bytes);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

/* The join's totals: what was sampled and what could be placed. */
static void alloc_summary_text(const struct aj_join *j, struct strbuf *out)
{
    const struct snap *s = j->a->s;
    char b1[32], b2[32], b3[32], b4[32];
    fmt_bytes(s->alloc_window, b1, sizeof(b1));
    fmt_bytes(j->matched_bytes, b2, sizeof(b2));
    fmt_bytes(j->in_buffers_bytes, b3, sizeof(b3));
    fmt_bytes(j->unmatched_bytes, b4, sizeof(b4));
    sb_addf(out, "\nAllocation samples (window %s): %" PRIu64 " live, %" PRIu64
                 " in objects (%s; %" PRIu64 " of them in an object's own buffer, %s), %" PRIu64
                 " in no object of the snapshot (%s: native memory no object is known to own, "
                 "or reused addresses), %" PRIu64 " left out at the dump\n",
            b1, j->samples, j->matched, b2, j->in_buffers, b3, j->unmatched, b4,
            s->alloc_dropped);
    if (s->meta.c_samples_only && s->narenas) {
        char b5[32];
        fmt_bytes(j->arena_bytes, b5, sizeof(b5));
        sb_addf(out,
                "  Recorded from outside (eBPF): only the C allocator's blocks were sampled. "
                "Python's small objects (512 bytes or less) carry no sample: those that lie in "
                "one of the %u arenas made while recording, %" PRIu64 " objects (%s), are "
                "credited to the line that made their arena (\"by arena\": approximate, an "
                "arena's free blocks serve any line later); the others have no line. "
                "`scry record --pid PID --memory` samples every allocation.\n",
                s->narenas, j->arena_objects, b5);
    } else if (s->meta.c_samples_only) {
        sb_adds(out, "  Recorded from outside (eBPF): only the C allocator's blocks were sampled. "
                     "Python's small objects (512 bytes or less) carry no sample, so a "
                     "retainer of many small objects shows only its containers' own blocks. "
                     "`scry record --pid PID --memory` samples every allocation.\n");
    }
    if (j->nunmatched_lines) {
        sb_adds(out, "  In no object, by allocating line (share of those bytes):\n");
        alloc_lines_text(j, j->unmatched_lines, j->nunmatched_lines, j->unmatched_bytes, 5, out);
    }
}

static void alloc_summary_json(struct json_writer *w, const struct aj_join *j)
{
    const struct snap *s = j->a->s;
    jw_key(w, "allocation_samples");
    jw_obj_begin(w);
    jw_key(w, "window");
    jw_uint(w, s->alloc_window);
    jw_key(w, "samples");
    jw_uint(w, j->samples);
    jw_key(w, "matched");
    jw_uint(w, j->matched);
    jw_key(w, "matched_bytes");
    jw_uint(w, j->matched_bytes);
    jw_key(w, "in_buffers");
    jw_uint(w, j->in_buffers);
    jw_key(w, "in_buffers_bytes");
    jw_uint(w, j->in_buffers_bytes);
    jw_key(w, "unmatched");
    jw_uint(w, j->unmatched);
    jw_key(w, "unmatched_bytes");
    jw_uint(w, j->unmatched_bytes);
    jw_key(w, "left_out_at_dump");
    jw_uint(w, s->alloc_dropped);
    jw_key(w, "small_objects_sampled");
    jw_bool(w, !s->meta.c_samples_only);
    jw_key(w, "arenas");
    jw_uint(w, s->narenas);
    jw_key(w, "arena_objects");
    jw_uint(w, j->arena_objects);
    jw_key(w, "arena_bytes");
    jw_uint(w, j->arena_bytes);
    alloc_lines_json(w, "unmatched_lines", j, j->unmatched_lines, j->nunmatched_lines);
    jw_obj_end(w);
}

/* ---- analyze ------------------------------------------------------------------------------- */

/* A retainer's type, as many columns wide as width: one inside another listed one is indented
 * under it, two columns a level, behind a corner. Columns are characters, not bytes (the corner
 * is three bytes; a cleaned name may hold U+FFFD). */
static void type_cell(struct strbuf *out, const char *type, size_t depth, size_t width)
{
    size_t cols = 0;
    for (size_t d = 1; d < depth; d++, cols += 2)
        sb_adds(out, "  ");
    if (depth) {
        sb_adds(out, "\u2514 ");
        cols += 2;
    }
    sb_adds(out, type);
    for (const char *c = type; *c; c++)
        cols += ((unsigned char)*c & 0xC0) != 0x80;
    for (; cols < width; cols++)
        sb_addch(out, ' ');
}

void heap_analyze_text(const struct heap_analyze_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    const struct snap *s = a->s;
    const uint32_t *top = r->top;
    const struct ha_type *types = r->types;
    size_t ntop = r->ntop, ntypes = r->ntypes, limit = r->limit;
    char b1[32], b2[32], b3[32];
    struct strbuf path = STRBUF_INIT; /* a root path, cleaned before it is shown */
    fmt_bytes(s->shallow_total, b1, sizeof(b1));
    fmt_bytes(a->reachable_bytes, b2, sizeof(b2));
    sb_addf(out, "Heap of pid %u, Python %s: %u objects, %u references, %s; %" PRIu64
                 " objects (%s) reachable from %u roots\n",
            s->meta.pid, san_str(s->meta.python_version), s->nobjects, s->nedges, b1,
            a->reachable_objects, b2, s->nroots);
    sb_adds(out, "\nTop retainers by retained size (one inside another is shown under it)\n");
    sb_addf(out, "%11s %11s  %-32s %s\n", "retained", "shallow", "type", "root path");
    for (size_t k = 0; k < ntop; k++) {
        size_t i = r->order ? r->order[k] : k, depth = r->depth ? r->depth[k] : 0;
        uint32_t v = top[i];
        fmt_bytes(a->retained[v], b1, sizeof(b1));
        fmt_bytes(s->objects[v].size, b2, sizeof(b2));
        sb_addf(out, "%11s %11s  ", b1, b2);
        type_cell(out, san_str(snap_string(s, s->objects[v].type)), depth, 32);
        sb_addch(out, ' ');
        sb_reset(&path);
        ha_path_inline(a, v, &path);
        san_addn(out, path.buf, path.len);
        sb_addch(out, '\n');
        if (r->join)
            alloc_lines_text(r->join, r->alines[i], r->nalines[i], a->retained[v], 5, out);
    }
    sb_release(&path);
    if (ntop == 0)
        sb_adds(out, "  (none)\n");
    else {
        fmt_bytes(r->listed_total, b1, sizeof(b1));
        sb_addf(out, "%11s held by these retainers together (%.1f%% of the reachable bytes; each "
                     "byte counted once, in the outermost retainer that holds it)\n",
                b1, a->reachable_bytes
                        ? 100.0 * (double)r->listed_total / (double)a->reachable_bytes : 0.0);
    }
    if (r->join)
        alloc_summary_text(r->join, out);
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

void heap_analyze_json(const struct heap_analyze_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    const struct snap *s = a->s;
    const char *path = r->path;
    const uint32_t *top = r->top;
    const struct ha_type *types = r->types;
    size_t ntop = r->ntop, ntypes = r->ntypes, limit = r->limit;
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
    /* In the order shown: an entry stays open (its "dominates" array too) while the ones inside
     * it are written into that array. */
    size_t open = 0;
    for (size_t k = 0; k < ntop; k++) {
        size_t i = r->order ? r->order[k] : k, depth = r->depth ? r->depth[k] : 0;
        for (; open > depth; open--) {
            jw_arr_end(&w);
            jw_obj_end(&w);
        }
        jw_obj_begin(&w);
        object_fields(&w, a, top[i], &p);
        if (r->join)
            alloc_lines_json(&w, "allocations", r->join, r->alines[i], r->nalines[i]);
        jw_key(&w, "dominates");
        jw_arr_begin(&w);
        open++;
    }
    for (; open > 0; open--) {
        jw_arr_end(&w);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    if (r->join)
        alloc_summary_json(&w, r->join);
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
    jw_key(&w, "top_retainers_bytes");
    jw_uint(&w, r->listed_total);
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

/* ---- query --type -------------------------------------------------------------------------- */

void heap_type_text(const struct heap_type_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    const struct snap *s = a->s;
    char b1[32], b2[32], ad[32];
    struct strbuf path = STRBUF_INIT;
    fmt_bytes(r->shallow, b1, sizeof(b1));
    fmt_bytes(r->retained, b2, sizeof(b2));
    sb_addf(out, "%u instances of %s: %s shallow, %s retained\n\nlargest by retained size\n",
            r->count, san_str(r->type), b1, b2);
    sb_addf(out, "%11s %11s  %-18s  %-28s %s\n", "retained", "shallow", "address", "type", "path");
    for (size_t i = 0; i < r->nlargest; i++) {
        uint32_t v = r->largest[i];
        sb_reset(&path);
        ha_path_inline(a, v, &path);
        addr_str(s->objects[v].addr, ad, sizeof(ad));
        fmt_bytes(a->retained[v], b1, sizeof(b1));
        fmt_bytes(s->objects[v].size, b2, sizeof(b2));
        sb_addf(out, "%11s %11s  %-18s  %-28s %s\n", b1, b2, ad,
                san_str(snap_string(s, s->objects[v].type)), san_str(sb_str(&path)));
    }
    sb_release(&path);
    if (r->join) {
        sb_adds(out, "\nAllocated at (sampled bytes of the instances, share of their shallow size)\n");
        alloc_lines_text(r->join, r->alines, r->nalines, r->shallow, 20, out);
        if (r->nalines == 0)
            sb_adds(out, "  (no allocation sample falls in these instances)\n");
        alloc_summary_text(r->join, out);
    }
}

void heap_type_json(const struct heap_type_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    struct strbuf path = STRBUF_INIT, holder = STRBUF_INIT;
    struct json_writer w;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "type");
    jw_str(&w, r->type);
    jw_key(&w, "count");
    jw_uint(&w, r->count);
    jw_key(&w, "shallow");
    jw_uint(&w, r->shallow);
    jw_key(&w, "retained");
    jw_uint(&w, r->retained);
    jw_key(&w, "largest");
    jw_arr_begin(&w);
    for (size_t i = 0; i < r->nlargest; i++) {
        uint32_t v = r->largest[i];
        uint32_t d = a->idom[v];
        jw_obj_begin(&w);
        object_fields(&w, a, v, &path);
        jw_key(&w, "held_by");
        if (d < a->n) {
            sb_reset(&holder);
            ha_path_inline(a, d, &holder);
            jw_str(&w, sb_str(&holder));
        } else {
            jw_null(&w);
        }
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    if (r->join) {
        alloc_lines_json(&w, "allocations", r->join, r->alines, r->nalines);
        alloc_summary_json(&w, r->join);
    }
    jw_obj_end(&w);
    sb_addch(out, '\n');
    sb_release(&path);
    sb_release(&holder);
}

/* ---- query --retaining-path ---------------------------------------------------------------- */

void heap_path_text(const struct heap_path_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    const struct snap *s = a->s;
    const struct ha_hop *hops = r->hops;
    size_t n = r->nhops;
    char b1[32], b2[32];
    if (n == 0) {
        sb_addf(out, "0x%" PRIx64 " (%s) is not reachable from any root: it is garbage, or held "
                     "only by native code or weak references\n",
                r->addr, san_str(snap_string(s, s->objects[r->object].type)));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct snap_object *o = &s->objects[hops[i].object];
        const char *type = san_str(snap_string(s, o->type));
        const char *label = san_str(hops[i].label);
        if (i == 0) {
            sb_addf(out, "%-30s %s\n", label, type);
        } else if (i + 1 < n) {
            sb_addf(out, "  %-28s %s\n", label, type);
        } else {
            fmt_bytes(o->size, b1, sizeof(b1));
            fmt_bytes(a->retained[hops[i].object], b2, sizeof(b2));
            sb_addf(out, "  %-28s %s  (%s, retains %s)\n", label, type, b1, b2);
        }
    }
    if (n == 1) { /* the object is a root itself */
        fmt_bytes(a->retained[r->object], b2, sizeof(b2));
        sb_addf(out, "  (a root; retains %s)\n", b2);
    }
}

void heap_path_json(const struct heap_path_report *r, struct strbuf *out)
{
    const struct heap_analysis *a = r->a;
    const struct snap *s = a->s;
    const struct ha_hop *hops = r->hops;
    char ad[32];
    struct json_writer w;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    addr_str(r->addr, ad, sizeof(ad));
    jw_key(&w, "address");
    jw_str(&w, ad);
    jw_key(&w, "reachable");
    jw_bool(&w, r->nhops > 0);
    jw_key(&w, "path");
    jw_arr_begin(&w);
    for (size_t i = 0; i < r->nhops; i++) {
        const struct snap_object *o = &s->objects[hops[i].object];
        addr_str(o->addr, ad, sizeof(ad));
        jw_obj_begin(&w);
        jw_key(&w, i == 0 ? "root" : "label");
        jw_str(&w, hops[i].label);
        if (hops[i].inferred) {
            jw_key(&w, "inferred");
            jw_bool(&w, true);
        }
        jw_key(&w, "type");
        jw_str(&w, snap_string(s, o->type));
        jw_key(&w, "address");
        jw_str(&w, ad);
        jw_key(&w, "shallow");
        jw_uint(&w, o->size);
        jw_key(&w, "retained");
        jw_uint(&w, a->retained[hops[i].object]);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}

/* ---- query --locate ------------------------------------------------------------------------ */

void heap_locate_text(const struct heap_locate_report *r, struct strbuf *out)
{
    const struct snap *s = r->a->s;
    for (size_t i = 0; i < r->nfound; i++) {
        const struct heap_location *l = &r->found[i];
        sb_addf(out, "%s  %s  %s:%s%u\n", san_str(l->name),
                san_str(snap_string(s, s->objects[l->object].type)), san_str(l->file),
                l->approximate ? "~" : "", l->line);
    }
}

void heap_locate_json(const struct heap_locate_report *r, struct strbuf *out)
{
    const struct snap *s = r->a->s;
    struct json_writer w;
    char ad[32];
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "name");
    jw_str(&w, r->name);
    jw_key(&w, "matches");
    jw_arr_begin(&w);
    for (size_t i = 0; i < r->nfound; i++) {
        const struct heap_location *l = &r->found[i];
        const struct snap_object *o = &s->objects[l->object];
        addr_str(o->addr, ad, sizeof(ad));
        jw_obj_begin(&w);
        jw_key(&w, "name");
        jw_str(&w, l->name);
        jw_key(&w, "type");
        jw_str(&w, snap_string(s, o->type));
        jw_key(&w, "address");
        jw_str(&w, ad);
        jw_key(&w, "file");
        jw_str(&w, l->file);
        jw_key(&w, "line");
        jw_uint(&w, l->line);
        jw_key(&w, "approximate");
        jw_bool(&w, l->approximate);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}

/* ---- diff ---------------------------------------------------------------------------------- */

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

void heap_diff_text(const struct heap_diff_report *r, struct strbuf *out)
{
    const struct heap_diff_side *b = &r->before, *a = &r->after;
    const struct heap_diff *d = r->d;
    size_t limit = r->limit;
    char x[32], y[32], z[32];
    struct strbuf path = STRBUF_INIT;
    sb_addf(out, "Heap growth from %s (pid %u, Python %s) to %s (pid %u, Python %s)\n",
            san_str(b->path), b->a->s->meta.pid, san_str(b->a->s->meta.python_version), san_str(a->path),
            a->a->s->meta.pid, san_str(a->a->s->meta.python_version));
    fmt_bytes(b->a->reachable_bytes, x, sizeof(x));
    fmt_bytes(a->a->reachable_bytes, y, sizeof(y));
    fmt_delta(delta(b->a->reachable_bytes, a->a->reachable_bytes), z, sizeof(z));
    sb_addf(out, "  reachable Python objects: %s -> %s (%s), %" PRIu64 " -> %" PRIu64 " objects\n",
            x, y, z, b->a->reachable_objects, a->a->reachable_objects);
    if (b->a->s->meta.rss_bytes && a->a->s->meta.rss_bytes) {
        fmt_bytes(b->a->s->meta.rss_bytes, x, sizeof(x));
        fmt_bytes(a->a->s->meta.rss_bytes, y, sizeof(y));
        fmt_delta(delta(b->a->s->meta.rss_bytes, a->a->s->meta.rss_bytes), z, sizeof(z));
        sb_addf(out, "  RSS: %s -> %s (%s)\n", x, y, z);
    } else {
        sb_adds(out, "  RSS: unknown (a snapshot taken from a core has none)\n");
    }
    if (b->a->s->meta.pid != a->a->s->meta.pid)
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

static void json_side(struct json_writer *w, const struct heap_diff_side *s)
{
    jw_obj_begin(w);
    jw_key(w, "snapshot");
    jw_str(w, s->path);
    jw_key(w, "pid");
    jw_uint(w, s->a->s->meta.pid);
    jw_key(w, "python_version");
    jw_str(w, s->a->s->meta.python_version);
    jw_key(w, "objects");
    jw_uint(w, s->a->s->nobjects);
    jw_key(w, "shallow_bytes");
    jw_uint(w, s->a->s->shallow_total);
    jw_key(w, "reachable_objects");
    jw_uint(w, s->a->reachable_objects);
    jw_key(w, "reachable_bytes");
    jw_uint(w, s->a->reachable_bytes);
    jw_key(w, "rss_bytes");
    if (s->a->s->meta.rss_bytes)
        jw_uint(w, s->a->s->meta.rss_bytes);
    else
        jw_null(w);
    jw_obj_end(w);
}

void heap_diff_json(const struct heap_diff_report *r, struct strbuf *out)
{
    const struct heap_diff_side *b = &r->before, *a = &r->after;
    const struct heap_diff *d = r->d;
    size_t limit = r->limit;
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
    jw_int(&w, delta(b->a->reachable_bytes, a->a->reachable_bytes));
    jw_key(&w, "reachable_objects_delta");
    jw_int(&w, delta(b->a->reachable_objects, a->a->reachable_objects));
    jw_key(&w, "shallow_bytes_delta");
    jw_int(&w, delta(b->a->s->shallow_total, a->a->s->shallow_total));
    jw_key(&w, "rss_delta");
    if (b->a->s->meta.rss_bytes && a->a->s->meta.rss_bytes)
        jw_int(&w, delta(b->a->s->meta.rss_bytes, a->a->s->meta.rss_bytes));
    else
        jw_null(&w);
    jw_key(&w, "same_process");
    jw_bool(&w, b->a->s->meta.pid == a->a->s->meta.pid);
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
