/* Reading a profile document back into flat tables (see profile_doc.h): the one set of checks
 * of a profile's fields and their messages. Percentages also become seconds of
 * `sampled_time_sec` (the denominator of every percentage), MB also bytes. */
#include "analysis/profile_doc.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define MB 1048576.0

static int bad(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "WHAT is not a profile: " and the field's path with what is wrong with it. */
static int bad(const char *what, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_fail(SCRY_E_BAD_PROFILE, "%s is not a profile: %s", what, msg);
}

/* A number field of the object at path ctx ("" for the document); absent or null gives 0
 * (Scalene's older files lack some), another type an error. */
static int num(const json_t *o, const char *key, double *out, const char *what, const char *ctx)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = 0;
        return 0;
    }
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return bad(what, "%s%s%s is not a number", ctx, *ctx ? "." : "", key);
    *out = json_number_value(v);
    return 0;
}

/* A string field: absent or null gives NULL, another type an error. */
static int str(const json_t *o, const char *key, const char **out, const char *what,
               const char *ctx)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return bad(what, "%s%s%s is not a string", ctx, *ctx ? "." : "", key);
    *out = json_string_value(v);
    return 0;
}

/* [[ns, MB], ...]: absent or null is none. */
static int points(const json_t *v, const char *what, const char *ctx, const char *key)
{
    bool ok = !v || json_is_null(v) || json_is_array(v);
    for (size_t i = 0; ok && i < json_array_size(v); i++) {
        const json_t *p = json_array_get(v, i);
        ok = json_is_array(p) && json_is_number(json_array_get(p, 0)) &&
             json_is_number(json_array_get(p, 1));
    }
    if (!ok)
        return bad(what, "%s%s%s is not [[ns, MB], ...]", ctx, *ctx ? "." : "", key);
    return 0;
}

/* An entry of files[file].lines or .functions at path ctx. */
static int read_entry(const json_t *e, const char *file, double total, struct pdoc_entry *out,
                      const char *what, const char *ctx)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(e))
        return bad(what, "%s is not an object", ctx);
    const json_t *lineno = json_object_get(e, "lineno");
    if (!json_is_integer(lineno) || json_integer_value(lineno) < 0 ||
        json_integer_value(lineno) > UINT32_MAX)
        return bad(what, "%s.lineno is not a line number", ctx);
    out->file = file;
    out->line = (uint32_t)json_integer_value(lineno);
    int err;
    if ((err = str(e, "line", &out->text, what, ctx)))
        return err;
    double py, nat, sys, held;
    if ((err = num(e, "n_cpu_percent_python", &py, what, ctx)) ||
        (err = num(e, "n_cpu_percent_c", &nat, what, ctx)) ||
        (err = num(e, "n_sys_percent", &sys, what, ctx)) ||
        (err = num(e, "n_samples", &out->samples, what, ctx)) ||
        (err = num(e, "n_malloc_mb", &out->malloc_mb, what, ctx)) ||
        (err = num(e, "n_growth_mb", &out->growth_mb, what, ctx)) ||
        (err = num(e, "n_python_fraction", &out->python_fraction, what, ctx)) ||
        (err = num(e, "n_peak_mb", &out->peak_mb, what, ctx)) ||
        (err = num(e, "n_usage_fraction", &out->usage_fraction, what, ctx)) ||
        (err = num(e, "n_copy_mb_s", &out->copy_mb_s, what, ctx)) ||
        (err = num(e, "n_gpu_percent", &out->gpu_percent, what, ctx)) ||
        (err = num(e, "n_gpu_peak_memory_mb", &out->gpu_peak_mb, what, ctx)) ||
        (err = num(e, "n_max_held_mb", &held, what, ctx)))
        return err;
    const json_t *ms = json_object_get(e, "memory_samples");
    if ((err = points(ms, what, ctx, "memory_samples")))
        return err;
    out->memory_samples = json_array_size(ms) ? ms : NULL;
    const json_t *fl = json_object_get(e, "start_function_line");
    if (json_is_integer(fl) && json_integer_value(fl) > 0 && json_integer_value(fl) <= UINT32_MAX)
        out->func_line = (uint32_t)json_integer_value(fl);
    out->python_pct = py;
    out->native_pct = nat;
    out->sys_pct = sys;
    out->python_sec = py / 100.0 * total;
    out->native_sec = nat / 100.0 * total;
    out->sys_sec = sys / 100.0 * total;
    out->malloc_bytes = out->malloc_mb * MB;
    out->kept_bytes = out->growth_mb * MB;
    out->held_bytes = -1;
    const json_t *h = json_object_get(e, "n_max_held_mb");
    if (h && !json_is_null(h)) {
        out->held_mb = held;
        out->held_bytes = held * MB;
    }
    return 0;
}

static int cmp_leak(const void *a, const void *b)
{
    const struct pdoc_leak *x = a, *y = b;
    if (x->likelihood != y->likelihood)
        return x->likelihood > y->likelihood ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* files[NAME].leaks: {"LINENO": {"likelihood", "velocity_mb_s"}}, most likely first. */
static int read_leaks(const json_t *leaks, const char *what, const char *ctx, struct pdoc_file *f)
{
    if (!leaks || json_is_null(leaks))
        return 0;
    if (!json_is_object(leaks))
        return bad(what, "%s.leaks is not an object", ctx);
    f->leaks = calloc(json_object_size(leaks) + 1, sizeof(*f->leaks));
    if (!f->leaks)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    const char *key;
    const json_t *v;
    char sub[700];
    json_object_foreach((json_t *)leaks, key, v) {
        snprintf(sub, sizeof(sub), "%s.leaks[\"%.20s\"]", ctx, key);
        char *end;
        long lineno = strtol(key, &end, 10);
        if (*end || end == key || lineno < 0 || lineno > (long)UINT32_MAX || !json_is_object(v))
            return bad(what, "%s is not a line's leak", sub);
        struct pdoc_leak *l = &f->leaks[f->nleaks++];
        l->line = (uint32_t)lineno;
        int err;
        if ((err = num(v, "likelihood", &l->likelihood, what, sub)) ||
            (err = num(v, "velocity_mb_s", &l->velocity_mb_s, what, sub)))
            return err;
    }
    if (f->nleaks > 1)
        qsort(f->leaks, f->nleaks, sizeof(*f->leaks), cmp_leak);
    return 0;
}

static int cmp_func_pos(const void *a, const void *b)
{
    const struct pdoc_entry *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c)
        return c;
    return (x->first_line > y->first_line) - (x->first_line < y->first_line);
}

/* The function of `line` in `file` among funcs sorted by (file, first line): the one starting
 * at the line's start_function_line (scry's profiles: the function that ran the line longest),
 * else, without it (Scalene's profiles, older scry ones), the last one starting at or above the
 * line (a lambda or nested def above the line then takes it: no end lines to tell). */
static void enclosing(const struct pdoc *d, struct pdoc_entry *l)
{
    l->func = "<module>";
    l->first_line = 1;
    for (size_t i = 0; i < d->nfuncs; i++) {
        const struct pdoc_entry *f = &d->funcs[i];
        if (l->func_line && strcmp(f->file, l->file) == 0 && f->first_line == l->func_line) {
            l->func = f->func;
            l->first_line = f->first_line;
            return;
        }
    }
    for (size_t i = 0; i < d->nfuncs; i++) {
        const struct pdoc_entry *f = &d->funcs[i];
        if (strcmp(f->file, l->file) == 0 && f->first_line <= l->line) {
            l->func = f->func;
            l->first_line = f->first_line;
        }
    }
}

/* "FILE QUALNAME:LINE;" (Scalene's stacks): the line after the last ':', the qualname after
 * the last space before it (file names may hold spaces, qualnames do not, except a
 * pseudo-function's "<...>"). */
static bool split_frame(const char *s, size_t n, struct pdoc_frame *f)
{
    if (n > 0 && s[n - 1] == ';')
        n--;
    size_t colon = n;
    while (colon > 0 && s[colon - 1] >= '0' && s[colon - 1] <= '9')
        colon--;
    if (colon == n || colon == 0 || s[colon - 1] != ':' || n - colon > 9)
        return false;
    f->line = (uint32_t)strtoul(s + colon, NULL, 10);
    colon--;
    size_t sp = colon;
    if (sp > 0 && s[sp - 1] == '>') {
        /* A pseudo-function such as "<interpreter shutdown>" may hold a space: it starts at
         * its '<'. */
        while (sp > 0 && s[sp - 1] != '<')
            sp--;
        if (sp > 0)
            sp--;
        if (sp > 0 && s[sp - 1] != ' ')
            sp = colon; /* not "FILE <...>": the usual rule */
    }
    if (sp == colon || (sp > 0 && s[sp - 1] != ' '))
        while (sp > 0 && s[sp - 1] != ' ')
            sp--;
    if (sp == 0)
        return false; /* no space: not "FILE QUALNAME" (either may be empty: the writer's) */
    f->file = s;
    f->file_len = sp - 1;
    f->func = s + sp;
    f->func_len = colon - sp;
    return true;
}

static int read_stacks(struct pdoc *d, const json_t *stacks, const char *what)
{
    size_t n = json_array_size(stacks), nfr = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(stacks, i);
        if (!json_is_array(e) || json_array_size(e) != 2)
            return bad(what, "stacks[%zu] is not a [frames, weight] pair", i);
        if (!json_is_array(json_array_get(e, 0)))
            return bad(what, "stacks[%zu] has no list of frames", i);
        nfr += json_array_size(json_array_get(e, 0));
    }
    d->stacks = calloc(n ? n : 1, sizeof(*d->stacks));
    d->frames = calloc(nfr ? nfr : 1, sizeof(*d->frames));
    if (!d->stacks || !d->frames)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(stacks, i);
        const json_t *frames = json_array_get(e, 0), *c = json_array_get(e, 1);
        struct pdoc_stack *s = &d->stacks[d->nstacks];
        memset(s, 0, sizeof(*s));
        char ctx[64];
        snprintf(ctx, sizeof(ctx), "stacks[%zu]", i);
        if (json_is_object(c)) {
            double py, nat, sys;
            if (num(c, "count", &s->samples, what, ctx) ||
                num(c, "python_time", &py, what, ctx) || num(c, "c_time", &nat, what, ctx) ||
                num(c, "sys_time", &sys, what, ctx))
                return -SCRY_E_BAD_PROFILE;
            s->python_sec = py * d->sampled_sec;
            s->native_sec = nat * d->sampled_sec;
            s->sys_sec = sys * d->sampled_sec;
        } else if (json_is_number(c)) {
            s->samples = json_number_value(c); /* a bare count */
        } else {
            s->samples = -1;
        }
        if (!(s->samples >= 0) || !isfinite(s->samples))
            return bad(what, "stacks[%zu] has no weight (a number, not negative)", i);
        s->off = (uint32_t)d->nframes;
        for (size_t j = 0; j < json_array_size(frames); j++) {
            const json_t *f = json_array_get(frames, j);
            struct pdoc_frame *fr = &d->frames[d->nframes];
            if (!json_is_string(f) ||
                !split_frame(json_string_value(f), json_string_length(f), fr))
                return bad(what, "stacks[%zu] has a frame that is not \"FILE QUALNAME:LINE;\"",
                           i);
            fr->text = json_string_value(f);
            fr->text_len = json_string_length(f);
            d->nframes++;
        }
        s->depth = (uint32_t)(d->nframes - s->off);
        if (s->depth)
            d->nstacks++;
    }
    return 0;
}

/* "memory_stacks": [[[{"display_name", "filename_or_module", "line"?, ...}, ...], MB], ...]. */
static int read_mstacks(struct pdoc *d, const json_t *stacks, const char *what)
{
    if (stacks && !json_is_null(stacks) && !json_is_array(stacks))
        return bad(what, "memory_stacks is not an array");
    size_t n = json_array_size(stacks), nfr = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(stacks, i);
        if (!json_is_array(e) || json_array_size(e) != 2)
            return bad(what, "memory_stacks[%zu] is not a [frames, weight] pair", i);
        if (!json_is_array(json_array_get(e, 0)))
            return bad(what, "memory_stacks[%zu] has no list of frames", i);
        const json_t *w = json_array_get(e, 1);
        if (!json_is_number(w) || !isfinite(json_number_value(w)) || json_number_value(w) < 0)
            return bad(what, "memory_stacks[%zu] has no weight (a number, not negative)", i);
        nfr += json_array_size(json_array_get(e, 0));
    }
    d->mstacks = calloc(n ? n : 1, sizeof(*d->mstacks));
    d->mframes = calloc(nfr ? nfr : 1, sizeof(*d->mframes));
    if (!d->mstacks || !d->mframes)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(stacks, i), *frames = json_array_get(e, 0);
        struct pdoc_mstack *s = &d->mstacks[d->nmstacks];
        s->off = (uint32_t)d->nmframes;
        s->mb = json_number_value(json_array_get(e, 1));
        for (size_t j = 0; j < json_array_size(frames); j++) {
            const json_t *f = json_array_get(frames, j);
            const json_t *name = json_object_get(f, "display_name");
            const json_t *file = json_object_get(f, "filename_or_module");
            const json_t *line = json_object_get(f, "line");
            if (!json_is_string(name) || !json_is_string(file))
                return bad(what, "memory_stacks[%zu] has a frame that is not a frame", i);
            d->mframes[d->nmframes++] =
                (struct pdoc_mframe){json_string_value(name), json_string_value(file),
                                     json_is_integer(line), json_integer_value(line)};
        }
        s->depth = (uint32_t)(d->nmframes - s->off);
        if (s->depth)
            d->nmstacks++;
    }
    return 0;
}

static bool is_index(const json_t *v, size_t n)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 && (size_t)json_integer_value(v) < n;
}

static bool is_nonneg(const json_t *v)
{
    return json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) < 1e18;
}

/* "sample_stream" (docs/json-schema.md), every index checked. */
static int read_stream(struct pdoc *d, const json_t *ss, const char *what)
{
    const json_t *threads = json_object_get(ss, "threads"), *stacks = json_object_get(ss, "stacks");
    const json_t *samples = json_object_get(ss, "samples");
    if (!json_is_object(ss) || !json_is_array(threads) || !json_is_array(stacks) ||
        !json_is_array(samples))
        return bad(what, "sample_stream is not {threads, stacks, samples}");
    size_t nt = json_array_size(threads), nst = json_array_size(stacks), nfr = 0;
    for (size_t i = 0; i < nst; i++) {
        const json_t *st = json_array_get(stacks, i);
        if (!json_is_array(st) || json_array_size(st) == 0)
            return bad(what, "sample_stream.stacks[%zu] is not a non-empty array of frames", i);
        nfr += json_array_size(st);
    }
    size_t ns = json_array_size(samples);
    d->ss_threads = calloc(nt ? nt : 1, sizeof(*d->ss_threads));
    d->ss_stacks = calloc(nst ? nst : 1, sizeof(*d->ss_stacks));
    d->ss_frames = calloc(nfr ? nfr : 1, sizeof(*d->ss_frames));
    d->ss_samples = calloc(ns ? ns : 1, sizeof(*d->ss_samples));
    if (!d->ss_threads || !d->ss_stacks || !d->ss_frames || !d->ss_samples)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    for (size_t i = 0; i < nt; i++) {
        const json_t *t = json_array_get(threads, i), *name = json_object_get(t, "name");
        if (!json_is_integer(json_object_get(t, "pid")) ||
            !json_is_integer(json_object_get(t, "tid")) || !json_is_string(name))
            return bad(what, "sample_stream.threads[%zu] is not {pid, tid, name}", i);
        d->ss_threads[i] = (struct pdoc_sthread){json_integer_value(json_object_get(t, "pid")),
                                                 json_integer_value(json_object_get(t, "tid")),
                                                 json_string_value(name)};
    }
    d->nss_threads = nt;
    for (size_t i = 0; i < nst; i++) {
        const json_t *st = json_array_get(stacks, i);
        d->ss_stacks[i] = (struct pdoc_stack){.off = (uint32_t)d->nss_frames,
                                              .depth = (uint32_t)json_array_size(st)};
        for (size_t j = 0; j < json_array_size(st); j++) {
            const json_t *f = json_array_get(st, j);
            const json_t *file = json_array_get(f, 0), *func = json_array_get(f, 1);
            const json_t *line = json_array_get(f, 3);
            if (!json_is_array(f) || json_array_size(f) != 4 || !json_is_string(file) ||
                !json_is_string(func) || !is_index(line, UINT32_MAX))
                return bad(what, "sample_stream.stacks[%zu][%zu] is not [file, qualname, first line, line]", i, j);
            d->ss_frames[d->nss_frames++] = (struct pdoc_frame){
                json_string_value(file), json_string_length(file), json_string_value(func),
                json_string_length(func), (uint32_t)json_integer_value(line), NULL, 0};
        }
    }
    d->nss_stacks = nst;
    for (size_t i = 0; i < ns; i++) {
        const json_t *x = json_array_get(samples, i);
        if (!json_is_array(x) || json_array_size(x) != 5 || !is_nonneg(json_array_get(x, 0)) ||
            !is_index(json_array_get(x, 1), nt) || !is_index(json_array_get(x, 2), 3) ||
            !is_nonneg(json_array_get(x, 3)) || !is_index(json_array_get(x, 4), nst))
            return bad(what,
                       "sample_stream.samples[%zu] is not [us, thread index, kind 0-2, weight us, "
                       "stack index]",
                       i);
        d->ss_samples[i] = (struct pdoc_ssample){
            json_number_value(json_array_get(x, 0)), json_number_value(json_array_get(x, 3)),
            (uint32_t)json_integer_value(json_array_get(x, 1)),
            (uint32_t)json_integer_value(json_array_get(x, 4)),
            (uint32_t)json_integer_value(json_array_get(x, 2))};
    }
    d->nss_samples = ns;
    d->have_stream = true;
    return 0;
}

/* The document's own fields (everything but "files", the stacks and the stream). */
static int read_top(struct pdoc *d, const json_t *root, const char *what)
{
    int err;
    if ((err = num(root, "elapsed_time_sec", &d->elapsed_sec, what, "")) ||
        (err = num(root, "sampled_time_sec", &d->sampled_sec, what, "")) ||
        (err = num(root, "profiled_time_sec", &d->profiled_sec, what, "")) ||
        (err = num(root, "cpu_sampling_rate", &d->sampling_rate_sec, what, "")) ||
        (err = num(root, "start_time_absolute", &d->start_time_absolute, what, "")) ||
        (err = num(root, "n_samples", &d->n_samples, what, "")) ||
        (err = num(root, "processes", &d->processes, what, "")) ||
        (err = num(root, "memory_sampling_window", &d->mem_window, what, "")) ||
        (err = num(root, "profiling_off_sec", &d->profiling_off_sec, what, "")) ||
        (err = num(root, "run_queue_delay_sec", &d->run_queue_delay_sec, what, "")) ||
        (err = num(root, "run_queue_cpu_sec", &d->run_queue_cpu_sec, what, "")) ||
        (err = num(root, "max_footprint_mb", &d->max_footprint_mb, what, "")) ||
        (err = num(root, "growth_rate", &d->growth_rate, what, "")) ||
        (err = num(root, "native_allocations_mb", &d->native_allocations_mb, what, "")) ||
        (err = str(root, "python_version", &d->python_version, what, "")) ||
        (err = str(root, "note", &d->note, what, "")) ||
        (err = str(root, "gpu_note", &d->gpu_note, what, "")) ||
        (err = str(root, "first_file", &d->first_file, what, "")) ||
        (err = str(root, "gpu_device", &d->gpu_device, what, "")) ||
        (err = str(root, "gpu_utilization_source", &d->gpu_utilization_source, what, "")) ||
        (err = str(root, "gpu_memory_source", &d->gpu_memory_source, what, "")))
        return err;
    const json_t *program = json_object_get(root, "program");
    d->program = json_is_string(program) ? json_string_value(program) : "";
    d->has_n_samples = json_object_get(root, "n_samples") != NULL;
    d->has_processes = json_object_get(root, "processes") != NULL;
    d->has_profiled = json_object_get(root, "profiled_time_sec") != NULL;
    d->virtual_time = json_is_true(json_object_get(root, "use_virtual_time"));
    d->memory = json_is_true(json_object_get(root, "memory"));
    d->gpu = json_is_true(json_object_get(root, "gpu"));
    d->oversubscribed = json_is_true(json_object_get(root, "oversubscribed"));
    d->sampled_given_sec = d->sampled_sec;
    d->sampling_rate_given_sec = d->sampling_rate_sec;
    if (d->sampled_sec <= 0) {
        /* Scalene's files lack it: percentages are then of the elapsed time. */
        d->sampled_sec = d->elapsed_sec;
    }
    if (d->mem_window <= 0)
        d->mem_window = MB;
    if (d->sampling_rate_sec <= 0)
        d->sampling_rate_sec = 0.01;
    const json_t *args = json_object_get(root, "args");
    d->args = calloc(json_array_size(args) + 1, sizeof(*d->args));
    if (!d->args)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    for (size_t i = 0; i < json_array_size(args); i++)
        if (json_is_string(json_array_get(args, i)))
            d->args[d->nargs++] = json_string_value(json_array_get(args, i));
    return 0;
}

/* "files" (NULL: none): per file its share, leaks, lines and functions (functions then sorted
 * by file and first line, each file's lines and functions a stretch of the tables). */
static int read_files(struct pdoc *d, const json_t *files, const char *what)
{
    if (files && !json_is_object(files))
        return bad(what, "\"files\" is not an object");
    size_t nl = 0, nf = 0;
    const char *fname;
    const json_t *fobj;
    char ctx[600], sub[700];
    json_object_foreach((json_t *)files, fname, fobj) {
        const json_t *lines = json_object_get(fobj, "lines");
        const json_t *funcs = json_object_get(fobj, "functions");
        snprintf(ctx, sizeof(ctx), "files[\"%.400s\"]", fname);
        if (!json_is_object(fobj))
            return bad(what, "%s is not an object", ctx);
        if (lines && !json_is_null(lines) && !json_is_array(lines))
            return bad(what, "%s.lines is not an array", ctx);
        if (funcs && !json_is_null(funcs) && !json_is_array(funcs))
            return bad(what, "%s.functions is not an array", ctx);
        nl += json_array_size(lines);
        nf += json_array_size(funcs);
    }
    d->files = calloc(json_object_size(files) + 1, sizeof(*d->files));
    d->lines = calloc(nl ? nl : 1, sizeof(*d->lines));
    d->funcs = calloc(nf ? nf : 1, sizeof(*d->funcs));
    if (!d->files || !d->lines || !d->funcs)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
    int err;
    json_object_foreach((json_t *)files, fname, fobj) {
        const json_t *lines = json_object_get(fobj, "lines");
        const json_t *funcs = json_object_get(fobj, "functions");
        struct pdoc_file *f = &d->files[d->nfiles++];
        f->name = fname;
        f->first = d->first_file && strcmp(d->first_file, fname) == 0;
        snprintf(ctx, sizeof(ctx), "files[\"%.400s\"]", fname);
        if ((err = num(fobj, "percent_cpu_time", &f->percent, what, ctx)))
            return err;
        for (size_t i = 0; i < json_array_size(lines); i++) {
            snprintf(sub, sizeof(sub), "%s.lines[%zu]", ctx, i);
            if ((err = read_entry(json_array_get(lines, i), fname, d->sampled_sec,
                                  &d->lines[d->nlines], what, sub)))
                return err;
            d->lines[d->nlines++].order = (uint32_t)i;
        }
        for (size_t i = 0; i < json_array_size(funcs); i++) {
            struct pdoc_entry *e = &d->funcs[d->nfuncs];
            snprintf(sub, sizeof(sub), "%s.functions[%zu]", ctx, i);
            if ((err = read_entry(json_array_get(funcs, i), fname, d->sampled_sec, e, what, sub)))
                return err;
            if (!e->text)
                return bad(what, "%s.line is not a string (the function's name)", sub);
            e->func = e->text;
            e->order = (uint32_t)i;
            e->first_line = e->line;
            d->nfuncs++;
        }
        if ((err = read_leaks(json_object_get(fobj, "leaks"), what, ctx, f)))
            return err;
    }
    qsort(d->funcs, d->nfuncs, sizeof(*d->funcs), cmp_func_pos);
    for (size_t i = 0; i < d->nlines; i++)
        enclosing(d, &d->lines[i]);
    /* Each file's stretches: its entries' file is the file's own key string. */
    for (size_t k = 0, l = 0; k < d->nfiles; k++) {
        struct pdoc_file *f = &d->files[k];
        f->lines = &d->lines[l];
        while (l < d->nlines && d->lines[l].file == f->name)
            l++, f->nlines++;
    }
    for (size_t i = 0; i < d->nfuncs;) {
        struct pdoc_file *f = NULL;
        for (size_t k = 0; k < d->nfiles && !f; k++)
            if (d->files[k].name == d->funcs[i].file)
                f = &d->files[k];
        f->funcs = &d->funcs[i];
        while (i < d->nfuncs && d->funcs[i].file == f->name)
            i++, f->nfuncs++;
    }
    for (size_t k = 0; k < d->nfiles; k++)
        if (!d->files[k].funcs)
            d->files[k].funcs = d->funcs;
    return 0;
}

int pdoc_load(struct pdoc *d, json_t *root, const char *what)
{
    memset(d, 0, sizeof(*d));
    if (!json_is_object(root))
        return bad(what, "it is not a JSON object");
    d->root = json_incref(root);
    int err;
    if ((err = read_top(d, root, what)))
        goto fail;
    const json_t *files = json_object_get(root, "files");
    if (!files && json_object_size(root) == 0) {
        /* Scalene writes {} for an empty profile: no files. */
        err = read_files(d, NULL, what);
    } else if (!files) {
        err = bad(what, "\"files\" is missing (not a scry or Scalene profile)");
    } else {
        err = read_files(d, files, what);
    }
    if (err)
        goto fail;

    const json_t *stacks = json_object_get(root, "stacks");
    if (stacks && !json_is_null(stacks) && !json_is_array(stacks)) {
        err = bad(what, "stacks is not an array");
        goto fail;
    }
    if ((err = read_stacks(d, stacks, what)) ||
        (err = read_mstacks(d, json_object_get(root, "memory_stacks"), what)))
        goto fail;

    const json_t *stream = json_object_get(root, "sample_stream");
    if (stream && !json_is_null(stream) && (err = read_stream(d, stream, what)))
        goto fail;

    const json_t *samples = json_object_get(root, "samples");
    if ((err = points(samples, what, "", "samples")))
        goto fail;
    size_t ns = json_array_size(samples);
    d->footprint = calloc(ns ? ns : 1, sizeof(*d->footprint));
    if (!d->footprint) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", what);
        goto fail;
    }
    for (size_t i = 0; i < ns; i++) {
        const json_t *p = json_array_get(samples, i);
        d->footprint[i][0] = json_number_value(json_array_get(p, 0));
        d->footprint[i][1] = json_number_value(json_array_get(p, 1));
    }
    d->nfootprint = ns;
    return 0;
fail:
    pdoc_free(d);
    return err;
}

/* What was wrong with text that is not JSON, without a word of the text: jansson's own message
 * quotes the token it stopped at, and the file may be anything its reader may read (a shadow
 * file, a key), named by someone else (an MCP client) and shown to them. */
static const char *json_problem(const json_error_t *e)
{
    switch (json_error_code(e)) {
    case json_error_out_of_memory:
        return "out of memory";
    case json_error_stack_overflow:
        return "nested too deeply";
    case json_error_invalid_utf8:
        return "invalid UTF-8";
    case json_error_premature_end_of_input:
        return "the text ends before the JSON document does";
    case json_error_end_of_input_expected:
        return "more text after the JSON document";
    case json_error_null_character:
    case json_error_null_byte_in_key:
        return "a NUL byte";
    case json_error_duplicate_key:
        return "a key given twice";
    case json_error_numeric_overflow:
        return "a number out of range";
    default:
        return "a JSON document expected";
    }
}

int pdoc_load_bytes(struct pdoc *d, const char *text, size_t len, const char *what)
{
    memset(d, 0, sizeof(*d));
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return err_fail(SCRY_E_BAD_PROFILE,
                        "%s is not a profile: not JSON (line %d, column %d, byte %d: %s)", what,
                        jerr.line, jerr.column, jerr.position, json_problem(&jerr));
    int err = pdoc_load(d, root, what);
    json_decref(root);
    return err;
}

void pdoc_free(struct pdoc *d)
{
    free(d->lines);
    free(d->funcs);
    free(d->frames);
    free(d->stacks);
    free(d->mframes);
    free(d->mstacks);
    free(d->footprint);
    free(d->ss_threads);
    free(d->ss_frames);
    free(d->ss_stacks);
    free(d->ss_samples);
    for (size_t i = 0; d->files && i < d->nfiles; i++)
        free(d->files[i].leaks);
    free(d->files);
    free(d->args);
    json_decref(d->root);
    memset(d, 0, sizeof(*d));
}

void pdoc_thread_label(const struct pdoc_sthread *t, struct strbuf *out)
{
    if (t->tid == t->pid)
        sb_addf(out, "MainThread (%lld)", (long long)t->tid);
    else if (t->name[0])
        sb_addf(out, "%s (%lld)", t->name, (long long)t->tid);
    else
        sb_addf(out, "Thread %lld", (long long)t->tid);
}

uint32_t pdoc_first_line(const struct pdoc *d, const char *file, size_t file_len,
                         const char *func, size_t func_len)
{
    for (size_t i = 0; i < d->nfuncs; i++) {
        const struct pdoc_entry *f = &d->funcs[i];
        if (strlen(f->file) == file_len && memcmp(f->file, file, file_len) == 0 &&
            strlen(f->func) == func_len && memcmp(f->func, func, func_len) == 0)
            return f->first_line;
    }
    return 0;
}
