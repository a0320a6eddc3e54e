/* The check of a part file (docs/agent-protocol.md, "Part file") before anything of it is merged
 * into a profile: every field's type and range, every index below the length of what it indexes,
 * so that the merge (profile.c) trusts what it reads, and a damaged part is skipped whole. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analysis/profile_internal.h"
#include "common/error.h"

/* Line numbers beyond this are refused: no Python source is that long, and the writer must
 * never be led into reporting absurd ranges. */
#define PROF_MAX_LINE 100000000

static int bad(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(const char *what, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_fail(SCRY_E_BAD_PROFILE, "bad profile part %s: %s", what, msg);
}

static bool is_count(const json_t *v, int64_t max)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max;
}

static bool is_seconds(const json_t *v)
{
    if (!json_is_number(v))
        return false;
    double d = json_number_value(v);
    return isfinite(d) && d >= 0 && d < 1e15;
}

/* Optional numeric field: absent is fine, anything but a finite non-negative number is not. */
static int opt_seconds(const json_t *o, const char *key, const char *what, double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!is_seconds(v))
        return bad(what, "\"%s\" is not a non-negative number of seconds", key);
    *out = json_number_value(v);
    return 0;
}

/* [[item, ...], hits] with 1..PROF_MAX_DEPTH items. */
static bool is_chain(const json_t *c)
{
    const json_t *items = json_array_get(c, 0);
    return json_is_array(c) && json_array_size(c) == 2 && json_is_array(items) &&
           json_array_size(items) > 0 && json_array_size(items) <= PROF_MAX_DEPTH &&
           is_count(json_array_get(c, 1), INT64_MAX);
}

/* native_frames, native_stacks, combined_stacks (all optional). */
static int check_native(const json_t *part, const char *what, size_t nfiles, size_t nfuncs)
{
    const json_t *frames = json_object_get(part, "native_frames");
    const json_t *nst = json_object_get(part, "native_stacks");
    const json_t *cst = json_object_get(part, "combined_stacks");
    if ((frames && !json_is_array(frames)) || (nst && !json_is_array(nst)) ||
        (cst && !json_is_array(cst)))
        return bad(what, "native_frames, native_stacks or combined_stacks is not an array");
    size_t nn = json_array_size(frames);
    for (size_t i = 0; i < nn; i++) {
        const json_t *f = json_array_get(frames, i);
        if (!json_is_array(f) || json_array_size(f) != 4 ||
            !json_is_string(json_array_get(f, 0)) || !json_is_string(json_array_get(f, 1)) ||
            !is_count(json_array_get(f, 2), INT64_MAX) ||
            !is_count(json_array_get(f, 3), INT64_MAX))
            return bad(what, "native_frames[%zu] is not [module, symbol, ip, offset]", i);
    }
    for (size_t i = 0; i < json_array_size(nst); i++) {
        const json_t *c = json_array_get(nst, i);
        bool ok = is_chain(c);
        for (size_t k = 0; ok && k < json_array_size(json_array_get(c, 0)); k++)
            ok = is_count(json_array_get(json_array_get(c, 0), k), (int64_t)nn - 1);
        if (!ok)
            return bad(what, "native_stacks[%zu] is not [[native frame index, ...], hits]", i);
    }
    for (size_t i = 0; i < json_array_size(cst); i++) {
        const json_t *c = json_array_get(cst, i);
        bool ok = is_chain(c);
        for (size_t k = 0; ok && k < json_array_size(json_array_get(c, 0)); k++) {
            const json_t *x = json_array_get(json_array_get(c, 0), k);
            ok = json_is_array(x) &&
                 ((json_array_size(x) == 1 && is_count(json_array_get(x, 0), (int64_t)nn - 1)) ||
                  (json_array_size(x) == 3 &&
                   is_count(json_array_get(x, 0), (int64_t)nfiles - 1) &&
                   is_count(json_array_get(x, 1), (int64_t)nfuncs - 1) &&
                   is_count(json_array_get(x, 2), PROF_MAX_LINE)));
        }
        if (!ok)
            return bad(what,
                       "combined_stacks[%zu] is not [[[native frame index] or [file index, "
                       "function index, line], ...], hits]",
                       i);
    }
    static const char *const counts[] = {"native_stacks_overflow", "combined_stacks_overflow"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *v = json_object_get(part, counts[i]);
        if (v && !is_count(v, INT64_MAX))
            return bad(what, "\"%s\" is not a count", counts[i]);
    }
    return 0;
}

/* Points of one timeline in a part at most: the agent keeps PROF_MAX_POINTS, the rest is room
 * for a future agent; beyond it the part is damaged. */
#define PROF_MAX_PART_POINTS (100 * PROF_MAX_POINTS)
/* [[ns, bytes], ...]. */
static bool is_timeline(const json_t *tl)
{
    if (!json_is_array(tl) || json_array_size(tl) > PROF_MAX_PART_POINTS)
        return false;
    for (size_t i = 0; i < json_array_size(tl); i++) {
        const json_t *pt = json_array_get(tl, i);
        if (!json_is_array(pt) || json_array_size(pt) != 2 ||
            !is_count(json_array_get(pt, 0), PROF_MAX_NS) ||
            !is_count(json_array_get(pt, 1), INT64_MAX))
            return false;
    }
    return true;
}

/* The byte and sample counters of `memory`, each optional (absent reads 0). */
static const char *const mem_counts[] = {
    "window",       "copy_window",         "alloc_samples",        "copy_samples",
    "malloc_bytes", "free_bytes",          "python_bytes",         "copy_bytes",
    "native_malloc_bytes", "startup_malloc_bytes", "max_footprint_bytes", "final_footprint_bytes",
};

/* `memory` and `memory_lines` (docs/agent-protocol.md, "Memory"): both absent when memory
 * profiling was off; memory_lines never without memory. */
static int check_memory(const json_t *part, const char *what, size_t nfiles, size_t nfuncs)
{
    const json_t *m = json_object_get(part, "memory");
    const json_t *ml = json_object_get(part, "memory_lines");
    if (!m) {
        if (ml)
            return bad(what, "\"memory_lines\" without a \"memory\" object");
        return 0;
    }
    if (!json_is_object(m))
        return bad(what, "\"memory\" is not an object");
    for (size_t i = 0; i < sizeof(mem_counts) / sizeof(mem_counts[0]); i++) {
        const json_t *v = json_object_get(m, mem_counts[i]);
        if (v && !is_count(v, INT64_MAX))
            return bad(what, "memory.%s is not a count", mem_counts[i]);
    }
    const json_t *v = json_object_get(m, "leak_detector");
    if (v && !json_is_boolean(v))
        return bad(what, "memory.leak_detector is not true or false");
    v = json_object_get(m, "max_footprint_python_fraction");
    if (v && (!is_seconds(v) || json_number_value(v) > 1))
        return bad(what, "memory.max_footprint_python_fraction is not a number from 0 to 1");
    v = json_object_get(m, "max_footprint_at");
    if (v && !json_is_null(v) &&
        (!json_is_array(v) || json_array_size(v) != 2 ||
         !is_count(json_array_get(v, 0), (int64_t)nfiles - 1) ||
         !is_count(json_array_get(v, 1), PROF_MAX_LINE)))
        return bad(what, "memory.max_footprint_at is not null or [file index, line]");
    v = json_object_get(m, "timeline");
    if (v && !is_timeline(v))
        return bad(what, "memory.timeline is not [[ns, bytes], ...]");
    if (ml && !json_is_array(ml))
        return bad(what, "\"memory_lines\" is not an array");
    for (size_t i = 0; i < json_array_size(ml); i++) {
        const json_t *l = json_array_get(ml, i);
        size_t n = json_array_size(l);
        bool ok = json_is_array(l) && n >= 15 && n <= 17 &&
                  is_count(json_array_get(l, 0), (int64_t)nfiles - 1) &&
                  is_count(json_array_get(l, 1), PROF_MAX_LINE) &&
                  is_count(json_array_get(l, 2), (int64_t)nfuncs - 1) &&
                  is_timeline(json_array_get(l, 13));
        for (size_t k = 3; ok && k < n; k++)
            ok = k == 13 || is_count(json_array_get(l, k), INT64_MAX);
        /* Laplace's rule needs frees <= mallocs (a free counts only a counted malloc). */
        if (ok && json_integer_value(json_array_get(l, 12)) >
                      json_integer_value(json_array_get(l, 11)))
            ok = false;
        if (!ok)
            return bad(what,
                       "memory_lines[%zu] is not [file index, line, function index, "
                       "malloc_bytes, python_bytes, malloc_samples, free_bytes, peak_bytes, "
                       "hw_sum_bytes, execs, copy_bytes, leak_mallocs, leak_frees <= "
                       "leak_mallocs, [[ns, bytes], ...], live_bytes(, growth_rises(, "
                       "max_live_bytes))] with indexes in range",
                       i);
    }
    return 0;
}

/* `gpu` and `gpu_lines` (docs/agent-protocol.md, "GPU"): gpu_lines only with a gpu object that
 * names its device. */
static int check_gpu(const json_t *part, const char *what, size_t nfiles, size_t nfuncs)
{
    const json_t *g = json_object_get(part, "gpu");
    const json_t *gl = json_object_get(part, "gpu_lines");
    if (g && !json_is_object(g))
        return bad(what, "\"gpu\" is not an object");
    static const char *const strs[] = {"device", "utilization_source", "memory_source", "note"};
    for (size_t i = 0; g && i < sizeof(strs) / sizeof(strs[0]); i++) {
        const json_t *v = json_object_get(g, strs[i]);
        if (v && !json_is_string(v))
            return bad(what, "gpu.%s is not a string", strs[i]);
    }
    static const char *const secs[] = {"sampler_cpu_sec", "interval_sec", "stopped_at_sec"};
    for (size_t i = 0; g && i < sizeof(secs) / sizeof(secs[0]); i++) {
        const json_t *v = json_object_get(g, secs[i]);
        if (v && !is_seconds(v))
            return bad(what, "gpu.%s is not a number of seconds", secs[i]);
    }
    if (!gl)
        return 0;
    if (!json_is_string(json_object_get(g, "device")))
        return bad(what, "\"gpu_lines\" without a \"gpu\" object naming its device");
    if (!json_is_array(gl))
        return bad(what, "\"gpu_lines\" is not an array");
    for (size_t i = 0; i < json_array_size(gl); i++) {
        const json_t *l = json_array_get(gl, i);
        bool ok = json_is_array(l) && json_array_size(l) == 7 &&
                  is_count(json_array_get(l, 0), (int64_t)nfiles - 1) &&
                  is_count(json_array_get(l, 1), PROF_MAX_LINE) &&
                  is_count(json_array_get(l, 2), (int64_t)nfuncs - 1);
        for (size_t k = 3; ok && k < 7; k++)
            ok = is_seconds(json_array_get(l, k));
        /* The load is at most 1: its weighted seconds are at most the seconds. */
        if (ok && json_number_value(json_array_get(l, 4)) >
                      json_number_value(json_array_get(l, 3)) * (1 + 1e-9))
            ok = false;
        if (!ok)
            return bad(what,
                       "gpu_lines[%zu] is not [file index, line, function index, seconds, "
                       "load-weighted seconds <= seconds, MiB-weighted seconds, peak MiB]",
                       i);
    }
    return 0;
}

/* The part's own fields: format, version, process, times, run queue. */
static int check_header(const json_t *part, const char *what)
{
    const char *fmt = json_string_value(json_object_get(part, "format"));
    if (!fmt || strcmp(fmt, "scry-part") != 0)
        return bad(what, "\"format\" is not \"scry-part\"");
    const json_t *ver = json_object_get(part, "format_version");
    if (!json_is_integer(ver))
        return bad(what, "no integer \"format_version\"");
    if (json_integer_value(ver) != 1)
        return bad(what, "format_version %lld is not 1, the version this scry reads",
                   (long long)json_integer_value(ver));
    if (!is_count(json_object_get(part, "pid"), INT32_MAX) ||
        json_integer_value(json_object_get(part, "pid")) == 0)
        return bad(what, "\"pid\" is not a process id");
    const json_t *v = json_object_get(part, "python_version");
    if (v && !json_is_string(v))
        return bad(what, "\"python_version\" is not a string");
    v = json_object_get(part, "argv");
    if (v) {
        if (!json_is_array(v))
            return bad(what, "\"argv\" is not an array");
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!json_is_string(json_array_get(v, i)))
                return bad(what, "argv[%zu] is not a string", i);
    }
    double d;
    int err;
    if ((err = opt_seconds(part, "start_time_absolute", what, &d)) ||
        (err = opt_seconds(part, "elapsed_sec", what, &d)) ||
        (err = opt_seconds(part, "sampling_rate_sec", what, &d)))
        return err;
    v = json_object_get(part, "main_thread_id");
    if (v && !is_count(v, INT64_MAX))
        return bad(what, "\"main_thread_id\" is not a thread id");
    v = json_object_get(part, "virtual_time");
    if (v && !json_is_boolean(v))
        return bad(what, "\"virtual_time\" is not true or false");
    v = json_object_get(part, "memory_unsupported");
    if (v && !json_is_boolean(v))
        return bad(what, "\"memory_unsupported\" is not true or false");

    v = json_object_get(part, "run_queue");
    if (v && (!json_is_object(v) || !is_seconds(json_object_get(v, "delay_sec")) ||
              !is_seconds(json_object_get(v, "cpu_sec"))))
        return bad(what, "\"run_queue\" is not {\"delay_sec\", \"cpu_sec\"} in seconds");
    return 0;
}

static int check_totals(const json_t *part, const char *what)
{
    const json_t *totals = json_object_get(part, "totals");
    if (!json_is_object(totals))
        return bad(what, "no \"totals\" object");
    static const char *const secs[] = {"python_sec", "native_sec", "sys_sec"};
    for (size_t i = 0; i < 3; i++)
        if (!is_seconds(json_object_get(totals, secs[i])))
            return bad(what, "totals.%s is not a non-negative number of seconds", secs[i]);
    if (!is_count(json_object_get(totals, "samples"), INT64_MAX))
        return bad(what, "totals.samples is not a count");
    const json_t *v = json_object_get(totals, "dropped");
    if (v && !is_count(v, INT64_MAX))
        return bad(what, "totals.dropped is not a count");
    return 0;
}

/* The files and functions that the rest indexes: their numbers in *nfiles and *nfuncs. */
static int check_names(const json_t *part, const char *what, size_t *nfiles, size_t *nfuncs)
{
    const json_t *files = json_object_get(part, "files");
    if (!json_is_array(files))
        return bad(what, "no \"files\" array");
    *nfiles = json_array_size(files);
    for (size_t i = 0; i < *nfiles; i++)
        if (!json_is_string(json_array_get(files, i)))
            return bad(what, "files[%zu] is not a string", i);

    const json_t *funcs = json_object_get(part, "functions");
    if (!json_is_array(funcs))
        return bad(what, "no \"functions\" array");
    *nfuncs = json_array_size(funcs);
    for (size_t i = 0; i < *nfuncs; i++) {
        const json_t *f = json_array_get(funcs, i);
        if (!json_is_array(f) || json_array_size(f) != 3 ||
            !json_is_string(json_array_get(f, 0)) ||
            !is_count(json_array_get(f, 1), (int64_t)*nfiles - 1) ||
            !is_count(json_array_get(f, 2), PROF_MAX_LINE))
            return bad(what,
                       "functions[%zu] is not [qualname, file index, first line] with a file "
                       "index below %zu",
                       i, *nfiles);
    }
    return 0;
}

static int check_lines(const json_t *part, const char *what, size_t nfiles, size_t nfuncs)
{
    const json_t *lines = json_object_get(part, "lines");
    if (!json_is_array(lines))
        return bad(what, "no \"lines\" array");
    for (size_t i = 0; i < json_array_size(lines); i++) {
        const json_t *l = json_array_get(lines, i);
        if (!json_is_array(l) || json_array_size(l) != 7 ||
            !is_count(json_array_get(l, 0), (int64_t)nfiles - 1) ||
            !is_count(json_array_get(l, 1), PROF_MAX_LINE) ||
            !is_count(json_array_get(l, 2), (int64_t)nfuncs - 1) ||
            !is_seconds(json_array_get(l, 3)) || !is_seconds(json_array_get(l, 4)) ||
            !is_seconds(json_array_get(l, 5)) || !is_count(json_array_get(l, 6), INT64_MAX))
            return bad(what,
                       "lines[%zu] is not [file index, line, function index, python_sec, "
                       "native_sec, sys_sec, samples] with indexes in range",
                       i);
    }
    return 0;
}

/* With --stacks (optional). */
static int check_stacks(const json_t *stacks, const char *what, size_t nfiles, size_t nfuncs)
{
    if (!stacks)
        return 0;
    if (!json_is_array(stacks))
        return bad(what, "\"stacks\" is not an array");
    for (size_t i = 0; i < json_array_size(stacks); i++) {
        const json_t *st = json_array_get(stacks, i);
        const json_t *fr = json_array_get(st, 0);
        /* A sixth entry, with memory on: the bytes of the memory samples of this stack. */
        size_t n = json_is_array(st) ? json_array_size(st) : 0;
        bool ok = (n == 5 || n == 6) && json_is_array(fr) && json_array_size(fr) > 0 &&
                  json_array_size(fr) <= PROF_MAX_DEPTH &&
                  is_count(json_array_get(st, 1), INT64_MAX) &&
                  is_seconds(json_array_get(st, 2)) && is_seconds(json_array_get(st, 3)) &&
                  is_seconds(json_array_get(st, 4)) &&
                  (n == 5 || is_count(json_array_get(st, 5), INT64_MAX));
        for (size_t f = 0; ok && f < json_array_size(fr); f++) {
            const json_t *x = json_array_get(fr, f);
            ok = json_is_array(x) && json_array_size(x) == 3 &&
                 is_count(json_array_get(x, 0), (int64_t)nfiles - 1) &&
                 is_count(json_array_get(x, 1), (int64_t)nfuncs - 1) &&
                 is_count(json_array_get(x, 2), PROF_MAX_LINE);
        }
        if (!ok)
            return bad(what,
                       "stacks[%zu] is not [[[file index, function index, line], ...], "
                       "samples, python_sec, native_sec, sys_sec(, malloc_bytes)]",
                       i);
    }
    return 0;
}

/* The files filtered out and the threads (both optional). */
static int check_excluded_threads(const json_t *part, const char *what)
{
    const json_t *excl = json_object_get(part, "excluded");
    if (excl) {
        if (!json_is_array(excl))
            return bad(what, "\"excluded\" is not an array");
        for (size_t i = 0; i < json_array_size(excl); i++) {
            const json_t *e = json_array_get(excl, i);
            if (!json_is_array(e) || json_array_size(e) != 3 ||
                !json_is_string(json_array_get(e, 0)) || !json_is_string(json_array_get(e, 1)) ||
                !is_seconds(json_array_get(e, 2)))
                return bad(what, "excluded[%zu] is not [file, rule, seconds]", i);
        }
    }
    const json_t *threads = json_object_get(part, "threads");
    if (threads) {
        if (!json_is_array(threads))
            return bad(what, "\"threads\" is not an array");
        for (size_t i = 0; i < json_array_size(threads); i++) {
            const json_t *t = json_array_get(threads, i);
            const json_t *samples = json_object_get(t, "samples");
            const json_t *gil = json_object_get(t, "gil_samples");
            if (!is_count(json_object_get(t, "native_id"), INT32_MAX) ||
                !is_count(json_object_get(t, "thread_id"), INT64_MAX) ||
                !json_is_string(json_object_get(t, "name")) || !is_count(samples, INT64_MAX) ||
                !is_count(gil, INT64_MAX) || json_integer_value(gil) > json_integer_value(samples))
                return bad(what, "threads[%zu] is not {native_id, thread_id, name, samples, "
                                 "gil_samples <= samples}", i);
        }
    }
    return 0;
}

int prof_part_check(const json_t *part, const char *what)
{
    if (!json_is_object(part))
        return bad(what, "not a JSON object");
    size_t nfiles = 0, nfuncs = 0;
    const json_t *stacks = json_object_get(part, "stacks");
    int err;
    if ((err = check_header(part, what)) || (err = check_totals(part, what)) ||
        (err = check_names(part, what, &nfiles, &nfuncs)) ||
        (err = check_lines(part, what, nfiles, nfuncs)) ||
        (err = check_stacks(stacks, what, nfiles, nfuncs)) ||
        (err = check_native(part, what, nfiles, nfuncs)) ||
        (err = check_memory(part, what, nfiles, nfuncs)) ||
        (err = check_gpu(part, what, nfiles, nfuncs)))
        return err;
    char ssmsg[200];
    if (prof_ss_check(part, nfiles, nfuncs, json_array_size(stacks), ssmsg, sizeof(ssmsg)))
        return bad(what, "%s", ssmsg);
    return check_excluded_threads(part, what);
}

/* A part's text parsed: NULL, with the error recorded, when it is not JSON. */
json_t *prof_part_parse(const char *text, size_t len, const char *what)
{
    json_error_t jerr;
    json_t *part = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!part)
        bad(what, "not JSON (line %d, column %d: %s)", jerr.line, jerr.column, jerr.text);
    return part;
}
