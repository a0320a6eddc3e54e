/* `scry check app.heap [--json]`: validates a heap snapshot completely (the reader's checks,
 * docs/snapshot-format.md) and says what it holds, or why it is damaged (bad_snapshot, with the
 * byte offset). The JSON document is described in docs/json-schema.md. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/fmt.h"
#include "common/sanitize.h"
#include "render/json_writer.h"
#include "snapshot/snap_reader.h"

const char cmd_check_usage[] =
    "usage: scry check [--json] app.heap\n"
    "\n"
    "Validates a heap snapshot written by `scry dump` (every checksum, index and offset) and\n"
    "prints what it holds: format version, objects, references, roots, strings, size, and the\n"
    "process it was taken from (pid, Python version, RSS, time of the dump). A damaged or\n"
    "truncated file gives the error bad_snapshot with the byte offset of the damage (exit 1).\n"
    "\n";

/* "2024-05-01T12:00:00.123Z", or "" when the time is unknown (0) or out of range. */
static void iso_time(char *buf, size_t n, int64_t us)
{
    buf[0] = 0;
    if (us == 0)
        return;
    time_t secs = (time_t)(us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000));
    long ms = (long)((us - (int64_t)secs * 1000000) / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return;
    char date[40];
    if (strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return;
    snprintf(buf, n, "%s.%03ldZ", date, ms);
}

static void chunk_type(char out[5], uint32_t type)
{
    for (int i = 0; i < 4; i++) {
        char ch = (char)((type >> (8 * i)) & 0xff);
        out[i] = (ch >= 0x21 && ch <= 0x7e) ? ch : '?';
    }
    out[4] = 0;
}

static void render_json(const struct snap *s, const char *path, struct strbuf *out)
{
    const struct snap_meta_info *m = snap_meta(s);
    struct json_writer w;
    char buf[64];
    jw_init(&w, out, true);
    jw_obj_begin(&w);
    jw_key(&w, "file");
    jw_str(&w, path);
    jw_key(&w, "valid");
    jw_bool(&w, true);
    snprintf(buf, sizeof(buf), "%u.%u", s->major, s->minor);
    jw_key(&w, "format_version");
    jw_str(&w, buf);
    jw_key(&w, "bytes");
    jw_uint(&w, s->size);
    jw_key(&w, "objects");
    jw_uint(&w, s->nobjects);
    jw_key(&w, "edges");
    jw_uint(&w, s->nedges);
    jw_key(&w, "inferred_edges");
    jw_uint(&w, s->ninferred);
    jw_key(&w, "roots");
    jw_uint(&w, s->nroots);
    jw_key(&w, "locations");
    jw_uint(&w, s->nlocations);
    jw_key(&w, "contents");
    jw_uint(&w, s->ncontents);
    jw_key(&w, "allocation_samples"); /* null: no ALOC chunk */
    if (s->has_allocations)
        jw_uint(&w, s->nalloc_samples);
    else
        jw_null(&w);
    jw_key(&w, "owned_buffers"); /* BUFS (1.3): 0 when absent */
    jw_uint(&w, s->nbuffers);
    jw_key(&w, "arenas"); /* ARNA (1.4): 0 when absent */
    jw_uint(&w, s->narenas);
    jw_key(&w, "strings");
    jw_uint(&w, s->nstrings);
    jw_key(&w, "shallow_bytes");
    jw_uint(&w, s->shallow_total);
    jw_key(&w, "dropped_edges");
    jw_uint(&w, m->dropped_edges);
    jw_key(&w, "duplicate_objects");
    jw_uint(&w, m->duplicate_objects);
    jw_key(&w, "dropped_roots");
    jw_uint(&w, m->dropped_roots);
    jw_key(&w, "dropped_locations");
    jw_uint(&w, m->dropped_locations);
    jw_key(&w, "pid");
    jw_uint(&w, m->pid);
    jw_key(&w, "python_version");
    jw_str(&w, m->python_version);
    jw_key(&w, "rss_bytes");
    jw_uint(&w, m->rss_bytes);
    iso_time(buf, sizeof(buf), m->dump_time_us);
    jw_key(&w, "dump_time");
    if (buf[0])
        jw_str(&w, buf);
    else
        jw_null(&w);
    jw_key(&w, "dump_unix_time");
    jw_double(&w, (double)m->dump_time_us / 1e6);
    jw_key(&w, "pause_ms");
    jw_double(&w, (double)m->pause_us / 1e3);
    jw_key(&w, "capture_contents");
    jw_bool(&w, m->capture_contents);
    jw_key(&w, "max_str");
    jw_uint(&w, m->max_str);
    jw_key(&w, "tool_version");
    jw_str(&w, m->tool_version);
    jw_key(&w, "chunks");
    jw_arr_begin(&w);
    for (uint32_t i = 0; i < s->nchunks; i++) {
        const struct snap_chunk_info *c = &s->chunks[i];
        char t[5];
        chunk_type(t, c->type);
        jw_obj_begin(&w);
        jw_key(&w, "type");
        jw_str(&w, t);
        jw_key(&w, "offset");
        jw_uint(&w, c->offset);
        jw_key(&w, "length");
        jw_uint(&w, c->length);
        snprintf(buf, sizeof(buf), "%08x", c->crc);
        jw_key(&w, "crc32");
        jw_str(&w, buf);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}

static void render_text(const struct snap *s, const char *path, struct strbuf *out)
{
    const struct snap_meta_info *m = snap_meta(s);
    char a[64], b[64];
    fmt_bytes(s->size, a, sizeof(a));
    sb_addf(out, "%s: a valid scry heap snapshot (format %u.%u, %s)\n", san_str(path), s->major,
            s->minor, a);
    fmt_bytes(s->shallow_total, a, sizeof(a));
    sb_addf(out, "  objects     %u (%s shallow)", s->nobjects, a);
    if (m->duplicate_objects)
        sb_addf(out, "; %" PRIu64 " reported twice", m->duplicate_objects);
    sb_addf(out, "\n  edges       %u", s->nedges);
    if (m->dropped_edges)
        sb_addf(out, " (%" PRIu64 " more pointed outside the snapshot and were dropped)",
                m->dropped_edges);
    if (s->ninferred)
        sb_addf(out, "; %u inferred by a conservative scan", s->ninferred);
    sb_addf(out, "\n  roots       %u\n  locations   %u\n  strings     %u\n", s->nroots,
            s->nlocations, s->nstrings);
    if (m->capture_contents)
        sb_addf(out, "  contents    %u captured (at most %u bytes each)\n", s->ncontents,
                m->max_str);
    else
        sb_adds(out, "  contents    not captured\n");
    if (s->has_allocations)
        sb_addf(out, "  allocations %u live samples (window %llu bytes), %u stacks\n",
                s->nalloc_samples, (unsigned long long)s->alloc_window, s->nalloc_stacks);
    if (s->nbuffers)
        sb_addf(out, "  buffers     %u native blocks owned by objects\n", s->nbuffers);
    if (s->narenas)
        sb_addf(out, "  arenas      %u of Python's small objects, with the stacks that made them\n",
                s->narenas);
    sb_addf(out, "  pid         %u\n  python      %s\n", m->pid,
            m->python_version[0] ? san_str(m->python_version) : "(unknown)");
    if (m->rss_bytes) {
        fmt_bytes(m->rss_bytes, a, sizeof(a));
        sb_addf(out, "  rss         %s (the objects' shallow sizes are %.0f%% of it)\n", a,
                100.0 * (double)s->shallow_total / (double)m->rss_bytes);
    } else {
        sb_adds(out, "  rss         (unknown)\n");
    }
    iso_time(b, sizeof(b), m->dump_time_us);
    sb_addf(out, "  dumped      %s (target paused %.1f ms)\n", b[0] ? b : "(unknown)",
            (double)m->pause_us / 1e3);
    sb_addf(out, "  written by  %s\n", m->tool_version[0] ? san_str(m->tool_version) : "(unknown)");
}

int cmd_check(int argc, char **argv)
{
    bool json = cli_wants_json(argc, argv);
    struct opt_parser p;
    opt_begin(&p, OC_CHECK, argc, argv, OP_STOP_AT_OPERAND);
    int c;
    while ((c = opt_next(&p)) > 0) {
        if (c == OPT_JSON)
            json = true;
        else if (c == OPT_HELP)
            return cli_help();
    }
    if (c < 0)
        return c;
    if (optind >= argc)
        return cli_usage("give the snapshot to check: scry check app.heap");
    if (argc - optind > 1)
        return cli_usage("unexpected argument '%s' (give one snapshot)",
                         argv[optind + 1]);
    const char *path = argv[optind];

    struct snap s;
    if (snap_open(path, &s) != 0)
        return cli_report_error(json);
    struct strbuf out = STRBUF_INIT;
    if (json)
        render_json(&s, path, &out);
    else
        render_text(&s, path, &out);
    snap_close(&s);
    int status = CLI_EXIT_OK;
    cli_print(&out);
    sb_release(&out);
    return status;
}
