/* `scry dump`: a heap snapshot of a live Python process (stopped only while its heap is walked)
 * or of a core file. The heap walker (cpython/heap_walk.h) feeds the snapshot writer
 * (snapshot/snap_writer.h) directly; the snapshot is written after the target is resumed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/alloc_join.h"
#include "attach/run_link.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/error.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "cpython/heap_walk.h"
#include "cpython/memcache.h"
#include "cpython/runtime.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"
#include "reader/reader.h"
#include "render/json_writer.h"
#include "snapshot/format.h"
#include "snapshot/snap_writer.h"

/* The walker's kinds and flags are stored as they are: they must equal the on-disk numbers. */
_Static_assert((int)HW_EDGE_ATTR == (int)SNAP_EDGE_ATTR, "HW_EDGE_ATTR differs from the snapshot's SNAP_EDGE_ATTR");
_Static_assert((int)HW_EDGE_DICT_KEY == (int)SNAP_EDGE_DICT_KEY, "HW_EDGE_DICT_KEY differs from the snapshot's SNAP_EDGE_DICT_KEY");
_Static_assert((int)HW_EDGE_DICT_VALUE == (int)SNAP_EDGE_DICT_VALUE, "HW_EDGE_DICT_VALUE differs from the snapshot's SNAP_EDGE_DICT_VALUE");
_Static_assert((int)HW_EDGE_INDEX == (int)SNAP_EDGE_INDEX, "HW_EDGE_INDEX differs from the snapshot's SNAP_EDGE_INDEX");
_Static_assert((int)HW_EDGE_CELL == (int)SNAP_EDGE_CELL, "HW_EDGE_CELL differs from the snapshot's SNAP_EDGE_CELL");
_Static_assert((int)HW_EDGE_LOCAL == (int)SNAP_EDGE_LOCAL, "HW_EDGE_LOCAL differs from the snapshot's SNAP_EDGE_LOCAL");
_Static_assert((int)HW_EDGE_INTERNAL == (int)SNAP_EDGE_INTERNAL, "HW_EDGE_INTERNAL differs from the snapshot's SNAP_EDGE_INTERNAL");
_Static_assert(HW_EDGE_INFERRED == SNAP_EDGE_INFERRED, "HW_EDGE_INFERRED differs from SNAP_EDGE_INFERRED");
_Static_assert((int)HW_EDGE_WEAK == (int)SNAP_EDGE_WEAK, "HW_EDGE_WEAK differs from the snapshot's SNAP_EDGE_WEAK");
_Static_assert((int)HW_OBJ_GC_TRACKED == (int)SNAP_OBJ_GC_TRACKED, "HW_OBJ_GC_TRACKED differs from the snapshot's SNAP_OBJ_GC_TRACKED");
_Static_assert((int)HW_OBJ_IMMORTAL == (int)SNAP_OBJ_IMMORTAL, "HW_OBJ_IMMORTAL differs from the snapshot's SNAP_OBJ_IMMORTAL");
_Static_assert((int)HW_OBJ_TYPE == (int)SNAP_OBJ_TYPE, "HW_OBJ_TYPE differs from the snapshot's SNAP_OBJ_TYPE");

#define DEFAULT_MAX_STR 128
#define MAX_MAX_STR (1u << 20)
#define GC_RETRIES 50

const char cmd_dump_usage[] =
    "usage: scry dump --pid PID -o FILE [--capture-contents [--max-str N]] [--allocations F]\n"
    "                 [--json] [--quiet]\n"
    "       scry dump --core FILE [--exe PYTHON] -o FILE [--capture-contents [--max-str N]]\n"
    "                 [--json] [--quiet]\n"
    "       scry dump --minidump FILE -o FILE [--capture-contents [--max-str N]] [--json]\n"
    "                 [--quiet]\n"
    "\n"
    "Writes a heap snapshot: every object of every interpreter reachable from the garbage\n"
    "collector's lists and from the roots (sys.modules, the sys and builtins dicts, each\n"
    "thread's frame locals), with its type, size (as sys.getsizeof) and labelled references.\n"
    "A live process is stopped while its heap is read, then resumed. Read the snapshot with\n"
    "'scry analyze', 'scry query', 'scry diff' or 'scry flamegraph'. A program under\n"
    "'scry run' (memory profiled), or one that 'scry record --memory' is recording, also\n"
    "gives its live allocation samples, for 'scry analyze --allocations'\n"
    "(docs/allocations.md); so does --allocations F.\n"
    "\n";

struct dump_opts {
    int pid;
    const char *core, *exe, *output, *graph, *alloc_file, *minidump;
    bool json, capture, quiet;
    size_t max_str;
    /* the live allocation samples from elsewhere than a run's agent (record --allocations) */
    int (*ask)(void *ctx, struct alloc_table *t);
    void *ask_ctx;
};

static int parse(int argc, char **argv, struct dump_opts *o, bool *help)
{
    bool max_str_given = false;
    memset(o, 0, sizeof(*o));
    o->json = cli_wants_json(argc, argv);
    o->max_str = DEFAULT_MAX_STR;
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_DUMP, argc, argv, OP_STOP_AT_OPERAND);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_PID:
            o->pid = (int)p.ival;
            break;
        case OPT_CORE:
            o->core = p.arg;
            break;
        case OPT_MINIDUMP:
            o->minidump = p.arg;
            break;
        case OPT_EXE:
            o->exe = p.arg;
            break;
        case OPT_OUTPUT:
            o->output = p.arg;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_QUIET:
            o->quiet = true;
            break;
        case OPT_CAPTURE_CONTENTS:
            o->capture = true;
            break;
        case OPT_MAX_STR:
            o->max_str = (size_t)p.ival;
            max_str_given = true;
            break;
        case OPT_GRAPH:
            o->graph = p.arg;
            break;
        case OPT_ALLOCATIONS_FILE:
            o->alloc_file = p.arg;
            break;
        case OPT_HELP:
            *help = true;
            return 0;
        }
    }
    if (c < 0)
        return c;
    if (opt_operand(&p) < argc)
        return cli_usage("unexpected argument '%s'", argv[opt_operand(&p)]);
    int err = cli_check_target(o->pid, o->core, o->exe, o->minidump);
    if (err)
        return err;
    if (!o->output)
        return cli_usage("give the snapshot to write with -o FILE (e.g. -o app.heap)");
    if (max_str_given && !o->capture)
        return cli_usage("--max-str only applies with --capture-contents");
    if (o->alloc_file && !o->pid)
        return cli_usage("--allocations F applies to a live process (--pid): the one F was "
                         "recorded from");
    return 0;
}

/* ---- the sink: snapshot writer, and optionally a JSON-lines trace of the graph ------------- */

struct dump_sink {
    struct snap_writer *w;
    struct hashmap sampled;   /* the blocks of the allocation samples, by address */
    bool graph;               /* graph_out is open */
    struct outfile graph_out; /* mode 0600: it holds what the snapshot holds */
    struct strbuf line;       /* lines not yet written */
};

static int graph_flush(struct dump_sink *d)
{
    int err = outfile_write(&d->graph_out, d->line.buf, d->line.len);
    sb_reset(&d->line);
    return err;
}

static int graph_line(struct dump_sink *d)
{
    sb_addch(&d->line, '\n');
    return d->line.len >= 65536 ? graph_flush(d) : 0;
}

static int sink_object(void *ctx, uint64_t addr, const char *type_name, uint64_t size,
                       uint32_t flags, const char *content, size_t content_len)
{
    struct dump_sink *d = ctx;
    int err = snap_add_object(d->w, addr, type_name, size, flags, content, content_len);
    if (err || !d->graph)
        return err;
    sb_addf(&d->line, "{\"o\":%llu,\"t\":", (unsigned long long)addr);
    sb_add_json_str(&d->line, type_name, strlen(type_name));
    sb_addf(&d->line, ",\"s\":%llu,\"f\":%u", (unsigned long long)size, flags);
    if (content) {
        sb_adds(&d->line, ",\"c\":");
        sb_add_json_str(&d->line, content, content_len);
    }
    sb_addch(&d->line, '}');
    return graph_line(d);
}

/* Without a graph trace, which wants the texts, type names and labels go to the writer as ids. */
static int sink_intern(void *ctx, const char *s, uint32_t *id)
{
    return snap_intern(((struct dump_sink *)ctx)->w, s, id);
}

static int sink_object_id(void *ctx, uint64_t addr, uint32_t type, uint64_t size, uint32_t flags,
                          const char *content, size_t content_len)
{
    return snap_add_object_id(((struct dump_sink *)ctx)->w, addr, type, size, flags, content,
                              content_len);
}

static int sink_edge_id(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind,
                        uint32_t label)
{
    return snap_add_edge_id(((struct dump_sink *)ctx)->w, from, to, (unsigned)kind, label);
}

static int sink_edge(void *ctx, uint64_t from, uint64_t to, enum hw_edge_kind kind,
                     const char *label)
{
    struct dump_sink *d = ctx;
    int err = snap_add_edge(d->w, from, to, (unsigned)kind, label);
    if (err || !d->graph)
        return err;
    sb_addf(&d->line, "{\"e\":%llu,\"to\":%llu,\"k\":%d,%s\"l\":", (unsigned long long)from,
            (unsigned long long)to, (int)kind & ~HW_EDGE_INFERRED,
            (kind & HW_EDGE_INFERRED) ? "\"inferred\":true," : "");
    sb_add_json_str(&d->line, label ? label : "", label ? strlen(label) : 0);
    sb_addch(&d->line, '}');
    return graph_line(d);
}

static int sink_root(void *ctx, uint64_t addr, const char *label)
{
    struct dump_sink *d = ctx;
    int err = snap_add_root(d->w, addr, label);
    if (err || !d->graph)
        return err;
    sb_addf(&d->line, "{\"r\":%llu,\"l\":", (unsigned long long)addr);
    sb_add_json_str(&d->line, label, strlen(label));
    sb_addch(&d->line, '}');
    return graph_line(d);
}

static int sink_location(void *ctx, uint64_t addr, const char *file, int line)
{
    struct dump_sink *d = ctx;
    int err = snap_add_location(d->w, addr, file, line);
    if (err || !d->graph)
        return err;
    sb_addf(&d->line, "{\"loc\":%llu,\"file\":", (unsigned long long)addr);
    sb_add_json_str(&d->line, file, strlen(file));
    sb_addf(&d->line, ",\"line\":%d}", line);
    return graph_line(d);
}

/* Objects' own native blocks, for the join with the allocation samples: only those where a
 * sampled block starts (at the buffer, or up to AJ_MAX_HEADER bytes before it, as the join
 * matches them). All of them would cost 24 bytes per container: 7 MB in a 40 MB snapshot of
 * 300,000 lists and dicts. */
static int sink_buffer(void *ctx, uint64_t owner, uint64_t addr, uint64_t size)
{
    struct dump_sink *d = ctx;
    for (uint64_t back = 0; back <= AJ_MAX_HEADER && back < addr; back += 8)
        if (hm_has(&d->sampled, addr - back))
            return snap_add_buffer(d->w, owner, addr, size);
    return 0;
}

/* ---- the command -------------------------------------------------------------------------- */

/* This thread's CPU time (user + system), in ms. */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* VmRSS of a live process in bytes, 0 when unknown. */
static uint64_t live_rss(int pid)
{
    double rss = pf_process_rss(pid);
    return rss > 0 ? (uint64_t)rss : 0;
}

struct dump_result {
    bool allocations;             /* the snapshot holds allocation samples */
    uint64_t alloc_kept, alloc_dropped;
    uint64_t arenas_kept;          /* Python's arenas stored (ARNA) */
    struct hw_stats hs;
    struct snap_write_stats ws;
    double pause_ms, walk_ms;
    double walk_cpu_ms; /* this thread's CPU time over walk_ms: what load does not stretch */
    int attempts;
    uint64_t rss;
    int64_t time_us;
};

struct resume_ctx {
    struct rd_reader *rd;
    double t0, pause_ms;
};

static void resume_target(void *p)
{
    struct resume_ctx *c = p;
    rd_resume(c->rd);
    c->pause_ms = mono_ms() - c->t0;
}

/* Half of MemAvailable: how much of the target's writable memory may be copied so that it can
 * run again before the walk (0 when unknown: then it stays stopped during the walk). */
static uint64_t copy_budget(void)
{
    return pf_memory_available() / 2;
}

/* The walker's progress on the terminal (common/progress.h: drawn only where the command asked
 * for it), a new line for each phase. */
static void walk_progress(void *ctx, enum hw_progress_phase phase, uint64_t done, uint64_t total)
{
    int *shown = ctx;
    if (*shown != (int)phase + 1) {
        *shown = (int)phase + 1;
        if (phase == HW_PROGRESS_COPY)
            prog_phase("copying the target's memory", PROG_BYTES, total, NULL, NULL);
        else
            prog_phase("walking objects", PROG_COUNT, 0, "objects", NULL);
    }
    prog_update(done);
}

/* Stops the target, walks its heap into the writer and resumes it, on every path. The walker
 * copies the writable memory and lets the target go before it walks, when memory allows. A
 * collection in progress (its lists are rearranged) is waited out: resume, sleep, try again. */
static int walk(struct rd_reader *rd, struct py_runtime *rt, const struct dump_opts *o,
                const struct hw_sink *sink, struct dump_result *res)
{
    int shown = 0;
    struct hw_options hopt = {.capture_contents = o->capture, .max_str = o->max_str,
                              .progress = walk_progress, .progress_ctx = &shown};
    uint64_t budget = copy_budget();
    int err = 0;
    /* The copy's memory is mapped and faulted in while the target still runs: the stop only
     * copies. */
    struct mc_pool pool = {0};
    if (rd_kind(rd) == RD_PID) {
        double t0 = mono_ms();
        mc_pool_prepare(&pool, rd, budget);
        hopt.copy_pool = &pool;
        log_debug("heap walk: %zu blocks prepared for the copy in %.1f ms", pool.slots,
                  mono_ms() - t0);
    }
    for (res->attempts = 1; res->attempts <= GC_RETRIES; res->attempts++) {
        struct resume_ctx rc = {rd, mono_ms(), 0};
        err = rd_pause(rd);
        if (err) {
            rd_resume(rd);
            return err;
        }
        double t1 = mono_ms(), c1 = thread_cpu_ms();
        if (rd_kind(rd) == RD_PID) {
            err = hw_walk_resuming(rt, &hopt, sink, &res->hs, budget, resume_target, &rc);
        } else {
            err = hw_walk(rt, &hopt, sink, &res->hs);
            rc.pause_ms = 0;
        }
        res->walk_ms = mono_ms() - t1;
        res->walk_cpu_ms = thread_cpu_ms() - c1;
        res->pause_ms = rc.pause_ms;
        if (!(err && res->hs.gc_running && rd_kind(rd) == RD_PID))
            break;
        log_info("a garbage collection was running; trying again");
        usleep(20000);
    }
    mc_pool_free(&pool);
    /* The walk is scry's peak (docs/PERFORMANCE.md): VmHWM, which, unlike a parent's wait4,
     * does not count what the process held before its exec. */
    double peak = pf_process_peak_rss(0);
    log_debug("dump: scry's peak resident memory so far %llu KiB (VmHWM)",
              (unsigned long long)(peak > 0 ? peak / 1024 : 0));
    return err;
}

/* ---- allocation samples of a program under scry run (docs/allocations.md) ------------------ */

#define ALLOC_ANSWER_S 10.0

/* Asks the agent of a program under scry run for its live allocation samples (false: it is not
 * one, or it does not profile memory; a warning when it should have answered and did not). */
static bool alloc_ask(const struct dump_opts *o, const char *dir, struct alloc_table *t)
{
    int pid = o->pid;
    if (o->ask)
        return o->ask(o->ask_ctx, t) == 0;
    if (!dir[0])
        return false;
    if (run_link_allocations(pid, dir, ALLOC_ANSWER_S, t) != 0) {
        log_warn("no allocation samples: %s", san_str(err_last_message()));
        err_clear();
        return false;
    }
    if (!t->memory) {
        alloc_table_free(t);
        return false;
    }
    return true;
}

/* Stores the samples of after that were in before too (at the same address): allocations live
 * from before the walk to after it, so live while it read the heap. */
static int alloc_store(struct snap_writer *w, const struct alloc_table *before,
                       const struct alloc_table *after, struct dump_result *res)
{
    struct hashmap seen = {0};
    int err = 0;
    for (size_t i = 0; i < before->nlive && !err; i++)
        if (hm_put(&seen, before->live[i].seq + 1, before->live[i].ptr) != 0)
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
    size_t nst = json_array_size(after->stacks);
    uint32_t first = 0;
    for (size_t i = 0; i < nst && !err; i++) {
        const json_t *s = json_array_get(after->stacks, i), *f;
        size_t k;
        json_array_foreach(s, k, f)
        {
            if (!err)
                err = snap_add_alloc_frame(w, json_string_value(json_array_get(f, 0)),
                                           json_string_value(json_array_get(f, 1)),
                                           (int)json_integer_value(json_array_get(f, 2)));
        }
        if (!err)
            err = snap_add_alloc_stack(w, first, (uint32_t)json_array_size(s));
        first += (uint32_t)json_array_size(s);
    }
    for (size_t i = 0; i < after->nlive && !err; i++) {
        const struct alloc_live *l = &after->live[i];
        uint64_t ptr;
        if (!hm_get(&seen, l->seq + 1, &ptr) || ptr != l->ptr)
            continue; /* made while the heap was read */
        uint32_t stack = l->stack < 0 ? UINT32_MAX : (uint32_t)l->stack;
        if (l->arena) {
            err = snap_add_arena(w, l->ptr, l->size, stack);
            res->arenas_kept++;
            continue;
        }
        err = snap_add_alloc_sample(w, l->ptr, l->size, l->weight, stack);
        res->alloc_kept++;
    }
    /* Left out: the samples of before or after not kept (freed or made while the heap was
     * read); arenas are not samples. */
    size_t samples_before = 0, samples_after = 0;
    for (size_t i = 0; i < before->nlive; i++)
        samples_before += !before->live[i].arena;
    for (size_t i = 0; i < after->nlive; i++)
        samples_after += !after->live[i].arena;
    res->alloc_dropped = (samples_before - res->alloc_kept) + (samples_after - res->alloc_kept);
    hm_free(&seen);
    if (!err) {
        snap_set_alloc_info(w, after->window, res->alloc_dropped);
        res->allocations = true;
    }
    return err;
}

static void print_text(const struct dump_opts *o, const struct py_runtime *rt, int pid,
                       const struct dump_result *r, struct strbuf *out)
{
    double mib = 1024.0 * 1024.0;
    double rate = r->walk_ms > 0 ? (double)r->hs.objects / (r->walk_ms / 1e3) : 0;
    sb_addf(out, "wrote %s: %llu objects, %llu references, %llu roots, %.1f MiB of objects\n",
            san_str(o->output), (unsigned long long)r->hs.objects,
            (unsigned long long)r->hs.edges, (unsigned long long)r->hs.roots,
            (double)r->hs.bytes / mib);
    sb_addf(out, "Python %s, %s %d", san_str(rt->version_str),
            o->minidump ? "minidump of pid" : o->core ? "core of pid" : "pid", pid);
    if (r->rss)
        sb_addf(out, ", RSS %.1f MiB", (double)r->rss / mib);
    sb_addf(out, "; %llu objects tracked by the GC (%llu frozen)\n",
            (unsigned long long)r->hs.gc_tracked, (unsigned long long)r->hs.permanent);
    if (o->pid)
        sb_addf(out, "the process was stopped for %.1f ms; walk %.1f ms (%.2fM objects/s)\n",
                r->pause_ms, r->walk_ms, rate / 1e6);
    else
        sb_addf(out, "walk %.1f ms (%.2fM objects/s)\n", r->walk_ms, rate / 1e6);
    sb_addf(out, "snapshot: %.1f MiB%s\n", (double)r->ws.file_bytes / mib,
            o->capture ? ", with contents (capped, secrets redacted)" : "");
    if (r->hs.unreadable)
        sb_addf(out, "note: %llu references could not be followed (unreadable or not objects)\n",
                (unsigned long long)r->hs.unreadable);
    if (r->allocations)
        sb_addf(out, "allocation samples: %llu live through the dump (%llu left out: freed or "
                     "made while it ran)\n",
                (unsigned long long)r->alloc_kept, (unsigned long long)r->alloc_dropped);
    if (r->arenas_kept)
        sb_addf(out, "arenas of Python's small objects made while recording: %llu, with their "
                     "stacks\n",
                (unsigned long long)r->arenas_kept);
}

static void print_json(const struct dump_opts *o, const struct py_runtime *rt, int pid,
                       const struct dump_result *r, struct strbuf *out)
{
    struct json_writer j;
    jw_init(&j, out, true);
    jw_obj_begin(&j);
    jw_key(&j, "output");
    jw_str(&j, o->output);
    jw_key(&j, "source");
    jw_str(&j, o->minidump ? "minidump" : o->core ? "core" : "pid");
    jw_key(&j, "core");
    jw_str(&j, o->core);
    if (o->minidump) {
        jw_key(&j, "minidump");
        jw_str(&j, o->minidump);
    }
    jw_key(&j, "pid");
    jw_int(&j, pid);
    jw_key(&j, "python_version");
    jw_str(&j, rt->version_str);
    jw_key(&j, "objects");
    jw_uint(&j, r->hs.objects);
    jw_key(&j, "edges");
    jw_uint(&j, r->hs.edges);
    jw_key(&j, "roots");
    jw_uint(&j, r->hs.roots);
    jw_key(&j, "bytes");
    jw_uint(&j, r->hs.bytes);
    jw_key(&j, "gc_tracked");
    jw_uint(&j, r->hs.gc_tracked);
    jw_key(&j, "permanent");
    jw_uint(&j, r->hs.permanent);
    jw_key(&j, "unreadable");
    jw_uint(&j, r->hs.unreadable);
    jw_key(&j, "pause_ms");
    if (o->pid)
        jw_double(&j, r->pause_ms);
    else
        jw_null(&j);
    jw_key(&j, "walk_ms");
    jw_double(&j, r->walk_ms);
    jw_key(&j, "walk_cpu_ms");
    jw_double(&j, r->walk_cpu_ms);
    jw_key(&j, "objects_per_second");
    jw_double(&j, r->walk_ms > 0 ? (double)r->hs.objects / (r->walk_ms / 1e3) : 0);
    jw_key(&j, "rss_bytes");
    jw_uint(&j, r->rss);
    jw_key(&j, "dump_unix_time");
    jw_double(&j, (double)r->time_us / 1e6);
    jw_key(&j, "output_bytes");
    jw_uint(&j, r->ws.file_bytes);
    jw_key(&j, "capture_contents");
    jw_bool(&j, o->capture);
    jw_key(&j, "max_str");
    if (o->capture)
        jw_uint(&j, o->max_str);
    else
        jw_null(&j);
    jw_key(&j, "allocation_samples");
    if (r->allocations)
        jw_uint(&j, r->alloc_kept);
    else
        jw_null(&j);
    jw_key(&j, "allocation_samples_left_out");
    jw_uint(&j, r->alloc_dropped);
    jw_key(&j, "arenas");
    jw_uint(&j, r->arenas_kept);
    jw_obj_end(&j);
    sb_addch(out, '\n');
}

/* Writes the snapshot o asks for and reports it into out (text or JSON); 0 or a recorded
 * error. */
static int dump_report(const struct dump_opts *o, struct strbuf *out)
{
    struct rd_reader *rd = NULL;
    struct py_runtime rt;
    struct dump_sink ds = {.graph_out = {.fd = -1}, .line = STRBUF_INIT};
    struct dump_result res;
    int err;
    char run_dir[4096] = "";
    bool in_run = false;
    struct alloc_table before = {0}, after = {0};

    memset(&res, 0, sizeof(res));
    err = cli_open_target(o->pid, o->core, o->exe, o->minidump, &rd);
    if (!err)
        err = py_runtime_open(rd, &rt);
    if (!err)
        err = snap_writer_open(o->output, &ds.w);
    if (!err && o->graph && (err = outfile_open(&ds.graph_out, o->graph, OUTFILE_PRIVATE)) == 0)
        ds.graph = true;
    if (err)
        goto fail;

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    res.time_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    if (o->pid)
        res.rss = live_rss(o->pid); /* before stopping it: the same number a user would see */
    if (o->pid && run_link_dir(o->pid, run_dir, sizeof(run_dir), &in_run) != 0)
        err_clear(); /* not readable: then not a run's program that we could ask */
    if (!in_run)
        run_dir[0] = 0;
    /* an allocations file: its samples, checked to be of this process; all of them kept */
    if (o->alloc_file && (err = alloc_table_load(o->alloc_file, o->pid, &before)) != 0)
        goto fail;
    bool alloc = o->alloc_file || alloc_ask(o, run_dir, &before);
    for (size_t i = 0; alloc && i < before.nlive; i++)
        if (!before.live[i].arena && hm_put(&ds.sampled, before.live[i].ptr, 1) != 0) {
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            goto fail;
        }
    struct hw_sink sink = {.ctx = &ds, .object = sink_object, .edge = sink_edge,
                           .root = sink_root, .location = sink_location,
                           .buffer = alloc ? sink_buffer : NULL};
    if (!ds.graph) {
        sink.intern = sink_intern;
        sink.object_id = sink_object_id;
        sink.edge_id = sink_edge_id;
    }
    err = walk(rd, &rt, o, &sink, &res);
    if (err)
        goto fail;
    if (o->alloc_file && (err = alloc_store(ds.w, &before, &before, &res)))
        goto fail;
    if (!o->alloc_file && alloc && alloc_ask(o, run_dir, &after) &&
        (err = alloc_store(ds.w, &before, &after, &res)))
        goto fail;
    if (ds.graph) {
        ds.graph = false;
        err = graph_flush(&ds);
        if (err) {
            outfile_abort(&ds.graph_out);
            goto fail;
        }
        if ((err = outfile_commit(&ds.graph_out)) != 0)
            goto fail;
    }
    struct snap_meta meta = {
        .pid = (uint32_t)rd_pid(rd),
        .python_version = rt.version_str,
        .rss_bytes = res.rss,
        .dump_time_us = res.time_us,
        .pause_us = o->pid ? (uint64_t)(res.pause_ms * 1e3) : 0,
        .capture_contents = o->capture,
        .max_str = o->capture ? (uint32_t)o->max_str : 0,
        .tool_version = SCRY_VERSION,
        /* from the eBPF recorder (its file, or record --allocations --dump): malloc's blocks */
        .c_samples_only = res.allocations && (o->alloc_file || o->ask),
    };
    snap_set_meta(ds.w, &meta);
    struct snap_writer *w = ds.w;
    ds.w = NULL;
    prog_phase("writing the snapshot", PROG_NONE, 0, NULL, NULL);
    err = snap_writer_close(w, &res.ws);
    prog_done();
    if (err)
        goto fail;
    if (res.ws.dropped_edges)
        log_warn("%llu references pointed outside the snapshot",
                 (unsigned long long)res.ws.dropped_edges);

    if (o->json)
        print_json(o, &rt, rd_pid(rd), &res, out);
    else
        print_text(o, &rt, rd_pid(rd), &res, out);
    goto out;
fail:
    prog_done();
    cli_target_error(o->pid);
    snap_writer_abort(ds.w);
    if (ds.graph)
        outfile_abort(&ds.graph_out);
out:
    alloc_table_free(&before);
    alloc_table_free(&after);
    hm_free(&ds.sampled);
    sb_release(&ds.line);
    if (rd)
        rd_close(rd);
    return err;
}

int cli_dump_report(int pid, const char *output, bool json, struct strbuf *out)
{
    struct dump_opts o = {.pid = pid, .output = output, .json = json,
                          .max_str = DEFAULT_MAX_STR};
    return dump_report(&o, out);
}

int cli_dump_report_samples(int pid, const char *output, bool json,
                            int (*ask)(void *ctx, struct alloc_table *t), void *ctx,
                            struct strbuf *out)
{
    struct dump_opts o = {.pid = pid, .output = output, .json = json,
                          .max_str = DEFAULT_MAX_STR, .ask = ask, .ask_ctx = ctx};
    return dump_report(&o, out);
}

int cmd_dump(int argc, char **argv)
{
    struct dump_opts o;
    bool help;
    struct strbuf out = STRBUF_INIT;

    int parsed = parse(argc, argv, &o, &help);
    if (parsed || help) /* a usage error is reported by the dispatcher */
        return parsed ? parsed : cli_help();
    prog_init(o.json || o.quiet);
    return cli_finish_report(dump_report(&o, &out), &out, o.json);
}
