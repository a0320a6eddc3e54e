/* The Scalene-compatible profile writer. Every percentage is of the total sampled time (python +
 * native + sys seconds of every sample of every process, charged to a profiled line or not), so
 * files, lines and functions compare directly; a file whose lines add up to more than 100% (only
 * through rounding) is scaled back to 100 as Scalene does. Memory numbers are in Scalene's units
 * (MB = 1048576 bytes) and only written when some process profiled memory: a CPU-only profile
 * keeps the zero placeholders it always had. */
#include "render/profile_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/json_writer.h"

#define MIB 1048576.0
/* Leaks are reported at or above this likelihood (Scalene's 1 - 0.05)... */
#define LEAK_LIKELIHOOD 0.95
/* ...and only when the program's footprint grew by at least this % of what it allocated... */
#define LEAK_GROWTH_PERCENT 1.0
/* ...and the line still allocated or freed (had a memory sample) after this share of the run:
 * growth that stopped long before the end (a table built early and kept) is no leak. */
#define LEAK_LATE_FRACTION 0.5

/* One reported row: a source line (summed over the functions charged on it) or a function. */
struct row {
    uint32_t lineno;
    /* lines: the first line of the function that ran it longest (the first seen on a tie) */
    uint32_t func_line;
    double func_sec;
    double py, nat, sys; /* seconds */
    uint64_t samples;
    /* Memory summed over the lines it covers (peak: the largest); tl owned by the row. */
    uint64_t malloc_bytes, python_bytes, malloc_samples, free_bytes, peak_bytes, hw_sum_bytes,
        execs, copy_bytes, leak_mallocs, leak_frees;
    uint64_t kept_bytes; /* the sum of its lines' line_kept() */
    bool growth_known;      /* some line's part judged its own growth (agent-protocol.md) */
    uint64_t growth_rises;  /* the most of its lines' */
    bool held_known;        /* some line's part wrote the most it held at once */
    uint64_t max_held_bytes; /* the most of its lines' (a function: a lower bound) */
    double gpu_sec, gpu_load_sec, gpu_mem_mb_sec, gpu_peak_mb; /* peak: the largest */
    struct prof_timeline tl;
};

/* What every row's numbers are relative to. */
struct wctx {
    const struct profile *p;
    const struct profile_json_opts *o;
    double pct;     /* seconds -> percent of the total, scaled for the file */
    unsigned ncpus; /* at least 1 */
    /* Memory: the whole profile's malloc bytes and net growth (malloc - free, at least 0). */
    double total_malloc;
    int64_t program_growth;
};

/* What a line allocated and did not free itself (malloc - free), and no more than its samples'
 * allocations still live at the end (live_bytes, which also sees frees by other lines: a line
 * whose allocations another line frees does not grow). */
static uint64_t line_kept(const struct prof_line *l)
{
    uint64_t net = l->malloc_bytes > l->free_bytes ? l->malloc_bytes - l->free_bytes : 0;
    return net < l->live_bytes ? net : l->live_bytes;
}

static void row_add(struct row *r, const struct prof_line *l)
{
    r->py += l->python_sec;
    r->nat += l->native_sec;
    r->sys += l->sys_sec;
    r->samples += l->samples;
    r->malloc_bytes += l->malloc_bytes;
    r->python_bytes += l->python_bytes;
    r->malloc_samples += l->malloc_samples;
    r->free_bytes += l->free_bytes;
    if (l->peak_bytes > r->peak_bytes)
        r->peak_bytes = l->peak_bytes;
    r->hw_sum_bytes += l->hw_sum_bytes;
    r->execs += l->execs;
    r->copy_bytes += l->copy_bytes;
    r->leak_mallocs += l->leak_mallocs;
    r->leak_frees += l->leak_frees;
    r->kept_bytes += line_kept(l);
    r->growth_known |= l->growth_known;
    if (l->growth_rises > r->growth_rises)
        r->growth_rises = l->growth_rises;
    r->held_known |= l->held_known;
    if (l->max_held_bytes > r->max_held_bytes)
        r->max_held_bytes = l->max_held_bytes;
    r->gpu_sec += l->gpu_sec;
    r->gpu_load_sec += l->gpu_load_sec;
    r->gpu_mem_mb_sec += l->gpu_mem_mb_sec;
    if (l->gpu_peak_mb > r->gpu_peak_mb)
        r->gpu_peak_mb = l->gpu_peak_mb;
    if (prof_timeline_append(&r->tl, l->timeline.pts, l->timeline.n) != 0)
        abort(); /* as the strbuf does: scry cannot go on without memory */
}

/* The row's net growth in bytes: what its lines kept, never more than the whole program grew
 * (a line cannot have kept more than the program did). */
static double row_growth(const struct row *r, const struct wctx *c)
{
    int64_t net = (int64_t)r->kept_bytes;
    if (net > c->program_growth)
        net = c->program_growth;
    return net > 0 ? (double)net : 0;
}

void profile_json_scalene_line(struct strbuf *sb, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            sb_adds(sb, "\\u0026");
        else if (*s == '<')
            sb_adds(sb, "\\u003c");
        else if (*s == '>')
            sb_adds(sb, "\\u003e");
        else
            sb_addch(sb, *s);
    }
}

/* Scalene's GPU fields of a row: the mean load while its lines ran (time-weighted, as
 * Scalene's gpu_samples / n_gpu_samples), the mean and the largest memory reading then (MiB);
 * 0 where no reading was charged (docs/gpu.md). */
static void gpu_fields(struct json_writer *w, const struct row *r)
{
    bool any = r->gpu_sec > 0;
    jw_key(w, "n_gpu_percent");
    jw_double(w, any ? 100.0 * r->gpu_load_sec / r->gpu_sec : 0);
    jw_key(w, "n_gpu_avg_memory_mb");
    jw_double(w, any ? r->gpu_mem_mb_sec / r->gpu_sec : 0);
    jw_key(w, "n_gpu_peak_memory_mb");
    jw_double(w, r->gpu_peak_mb);
}

static void zero_fields(struct json_writer *w)
{
    static const char *const zeros[] = {
        "n_malloc_mb", "n_mallocs",         "n_avg_mb",         "n_peak_mb",
        "n_growth_mb", "n_python_fraction", "n_usage_fraction", "n_copy_mb_s",
    };
    for (size_t i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
        jw_key(w, zeros[i]);
        jw_int(w, 0);
    }
    jw_key(w, "memory_samples");
    jw_arr_begin(w);
    jw_arr_end(w);
}

static void write_timeline(struct json_writer *w, const struct prof_timeline *tl)
{
    jw_arr_begin(w);
    for (size_t i = 0; i < tl->n; i++) {
        jw_arr_begin(w);
        jw_int(w, tl->pts[i].t);
        jw_double(w, (double)tl->pts[i].bytes / MIB);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

/* Scalene's memory fields of a row (docs/json-schema.md, "Line and function entries"), in the
 * order of the placeholders, plus scry's n_free_mb. */
static void memory_fields(struct json_writer *w, struct row *r, const struct wctx *c)
{
    double malloc_b = (double)r->malloc_bytes, peak = (double)r->peak_bytes;
    double avg = r->execs ? (double)r->hw_sum_bytes / (double)r->execs : 0;
    double elapsed = c->p->elapsed_sec;
    double pyfrac = malloc_b > 0 ? (double)r->python_bytes / malloc_b : 0;
    double usage = c->total_malloc > 0 ? malloc_b / c->total_malloc : 0;
    jw_key(w, "n_malloc_mb");
    jw_double(w, malloc_b / MIB);
    jw_key(w, "n_mallocs");
    jw_uint(w, r->malloc_samples);
    jw_key(w, "n_avg_mb");
    jw_double(w, (avg < peak ? avg : peak) / MIB);
    jw_key(w, "n_peak_mb");
    jw_double(w, peak / MIB);
    jw_key(w, "n_growth_mb");
    jw_double(w, row_growth(r, c) / MIB);
    jw_key(w, "n_python_fraction"); /* a sample's Python bytes can exceed its net bytes */
    jw_double(w, pyfrac < 1 ? pyfrac : 1);
    jw_key(w, "n_usage_fraction");
    jw_double(w, usage < 1 ? usage : 1);
    jw_key(w, "n_copy_mb_s");
    jw_double(w, elapsed > 0 ? (double)r->copy_bytes / MIB / elapsed : 0);
    jw_key(w, "n_free_mb");
    jw_double(w, (double)r->free_bytes / MIB);
    if (r->held_known) { /* absent from profiles of older agents */
        jw_key(w, "n_max_held_mb");
        jw_double(w, (double)r->max_held_bytes / MIB);
    }
    prof_timeline_reduce(&r->tl, PROF_MAX_POINTS);
    jw_key(w, "memory_samples");
    write_timeline(w, &r->tl);
}

static void write_row(struct json_writer *w, const char *text, bool scalene_escape,
                      struct row *r, const struct wctx *c, bool is_line)
{
    double pct = c->pct;
    unsigned ncpus = c->ncpus;
    struct strbuf sb = STRBUF_INIT;
    jw_obj_begin(w);
    jw_key(w, "line");
    if (scalene_escape) {
        profile_json_scalene_line(&sb, text);
        jw_strn(w, sb_str(&sb), sb.len);
    } else {
        jw_str(w, text);
    }
    jw_key(w, "lineno");
    jw_uint(w, r->lineno);
    jw_key(w, "n_cpu_percent_python");
    jw_double(w, r->py * pct);
    jw_key(w, "n_cpu_percent_c");
    jw_double(w, r->nat * pct);
    jw_key(w, "n_sys_percent");
    jw_double(w, r->sys * pct);
    double all = r->py + r->nat + r->sys;
    jw_key(w, "n_core_utilization");
    jw_double(w, all > 0 ? (r->py + r->nat) / all / (ncpus ? ncpus : 1) : 0);
    jw_key(w, "n_samples");
    jw_uint(w, r->samples);
    jw_key(w, "cpu_samples_list");
    jw_arr_begin(w);
    jw_arr_end(w);
    gpu_fields(w, r);
    if (c->p->mem.on)
        memory_fields(w, r, c);
    else
        zero_fields(w);
    if (is_line) {
        /* Not computed yet (Scalene derives them from the AST): the line itself, 0 for none.
         * The function's first line is known from the samples (its code object's); its last
         * line is not. */
        jw_key(w, "start_region_line");
        jw_uint(w, r->lineno);
        jw_key(w, "end_region_line");
        jw_uint(w, r->lineno);
        static const char *const none[] = {"start_outermost_loop", "end_outermost_loop"};
        for (size_t i = 0; i < 2; i++) {
            jw_key(w, none[i]);
            jw_int(w, 0);
        }
        jw_key(w, "start_function_line");
        jw_uint(w, r->func_line);
        jw_key(w, "end_function_line");
        jw_int(w, 0);
    }
    jw_obj_end(w);
    sb_release(&sb);
}

/* Memory that makes a row worth keeping in a reduced profile whatever its time: bytes allocated
 * or copied, at least malloc_threshold_mb MB of either. */
static bool memory_kept(uint64_t malloc_bytes, uint64_t copy_bytes,
                        const struct profile_json_opts *o)
{
    double min = o->malloc_threshold_mb * 1048576.0;
    return (malloc_bytes > 0 && (double)malloc_bytes >= min) ||
           (copy_bytes > 0 && (double)copy_bytes >= min);
}

static bool keep(const struct row *r, const struct wctx *c)
{
    if (!c->o->reduced || memory_kept(r->malloc_bytes, r->copy_bytes, c->o))
        return true;
    double total = (r->py + r->nat + r->sys) * c->pct;
    return r->samples > 0 && total > 0 && total >= c->o->cpu_percent_threshold;
}

/* Per file: [first, end) of p->lines, its rows by line number and its functions. */
struct file_view {
    uint32_t file;
    size_t first, end;
    double sec;
    bool memory; /* some line allocated or copied */
};

static int cmp_fileview(const void *a, const void *b)
{
    const struct file_view *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec > y->sec ? -1 : 1;
    return x->file < y->file ? -1 : x->file > y->file;
}

struct func_row {
    uint32_t func;
    struct row r;
};

/* Functions by first line, then name. */
static int cmp_funcrow(const void *a, const void *b, void *prof)
{
    const struct func_row *x = a, *y = b;
    const struct profile *p = prof;
    const struct prof_func *fx = &p->funcs[x->func], *fy = &p->funcs[y->func];
    if (fx->first_line != fy->first_line)
        return fx->first_line < fy->first_line ? -1 : 1;
    return strcmp(fx->qualname, fy->qualname);
}

/* Laplace's rule of succession (docs/json-schema.md, "leaks"): over the samples that raised the
 * line's own live bytes until the end, none reclaimed (they are still held); from parts that do
 * not judge a line's growth, over its allocations that set a new peak of the process, each one
 * freed later a success. */
static double leak_likelihood(const struct row *r)
{
    if (r->growth_known)
        return 1.0 - 1.0 / (double)(r->growth_rises + 2);
    return 1.0 - (double)(r->leak_frees + 1) / (double)(r->leak_mallocs - r->leak_frees + 2);
}

/* Whether the row's memory samples went on into the last part of the run (after
 * LEAK_LATE_FRACTION of elapsed_sec). A row without any timeline point cannot tell: it keeps
 * Scalene's rule alone. */
static bool grew_late(const struct row *r, double elapsed_sec)
{
    if (r->tl.n == 0 || !(elapsed_sec > 0))
        return true;
    int64_t last = 0;
    for (size_t i = 0; i < r->tl.n; i++)
        if (r->tl.pts[i].t > last)
            last = r->tl.pts[i].t;
    return (double)last >= LEAK_LATE_FRACTION * elapsed_sec * 1e9;
}

static bool leak_reported(const struct row *r, double growth_rate, double elapsed_sec)
{
    if (growth_rate < LEAK_GROWTH_PERCENT)
        return false;
    /* Its own growth, whatever the process's peak: a steady leak beside a cache that sets the
     * peaks is one, the cache trimmed back is not. 18 rises: exactly 0.95, in integers. */
    if (r->growth_known)
        return 20 <= r->growth_rises + 2;
    /* In integers, so that exactly 0.95 (18 unfreed of 18) is in: 1 - (f+1)/(m-f+2) >= 0.95. */
    return r->leak_mallocs > 0 &&
           20 * (r->leak_frees + 1) <= r->leak_mallocs - r->leak_frees + 2 &&
           grew_late(r, elapsed_sec);
}

static int cmp_leak(const void *a, const void *b)
{
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    double lx = leak_likelihood(x), ly = leak_likelihood(y);
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

/* The program's footprint growth as a % of what it allocated (Scalene's growth_rate). */
static double growth_rate(const struct profile *p)
{
    const struct prof_memory *m = &p->mem;
    if (m->malloc_bytes == 0 || m->free_bytes >= m->malloc_bytes)
        return 0;
    return 100.0 * (double)(m->malloc_bytes - m->free_bytes) / (double)m->malloc_bytes;
}

/* "leaks": {"<lineno>": {"likelihood", "velocity_mb_s"}} by likelihood, largest first. */
static void write_leaks(struct json_writer *w, struct row *rows, size_t nrows,
                        const struct wctx *c)
{
    const struct row **leaks = calloc(nrows + 1, sizeof(*leaks));
    if (!leaks)
        abort();
    size_t n = 0;
    double rate = growth_rate(c->p), elapsed = c->p->elapsed_sec;
    for (size_t i = 0; i < nrows && c->p->mem.on; i++)
        if (leak_reported(&rows[i], rate, elapsed))
            leaks[n++] = &rows[i];
    if (n > 1)
        qsort(leaks, n, sizeof(*leaks), cmp_leak);
    jw_key(w, "leaks");
    jw_obj_begin(w);
    for (size_t i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof(key), "%u", leaks[i]->lineno);
        jw_key(w, key);
        jw_obj_begin(w);
        jw_key(w, "likelihood");
        jw_double(w, leak_likelihood(leaks[i]));
        jw_key(w, "velocity_mb_s");
        jw_double(w, elapsed > 0 ? row_growth(leaks[i], c) / MIB / elapsed : 0);
        jw_obj_end(w);
    }
    jw_obj_end(w);
    free(leaks);
}

static void write_file(struct json_writer *w, struct wctx *c, const struct file_view *fv,
                       double total)
{
    const struct profile *p = c->p;
    const struct prof_file *f = &p->files[fv->file];
    /* Rows by line number: lines are sorted by (file, line, func), so equal lines are adjacent. */
    size_t nrows = 0;
    struct row *rows = calloc(fv->end - fv->first + 1, sizeof(*rows));
    struct func_row *frows = calloc(fv->end - fv->first + 1, sizeof(*frows));
    size_t nfrows = 0;
    if (!rows || !frows)
        abort(); /* as the strbuf does: scry cannot go on without memory */
    double pct_sum = 0;
    for (size_t i = fv->first; i < fv->end; i++) {
        const struct prof_line *l = &p->lines[i];
        if (nrows == 0 || rows[nrows - 1].lineno != l->line)
            rows[nrows++] = (struct row){.lineno = l->line,
                                         .func_line = p->funcs[l->func].first_line,
                                         .func_sec = -1};
        struct row *r = &rows[nrows - 1];
        double sec = l->python_sec + l->native_sec + l->sys_sec;
        if (sec > r->func_sec) {
            r->func_line = p->funcs[l->func].first_line;
            r->func_sec = sec;
        }
        row_add(r, l);
        pct_sum += l->python_sec + l->native_sec + l->sys_sec;
        size_t k = 0;
        while (k < nfrows && frows[k].func != l->func)
            k++;
        if (k == nfrows)
            frows[nfrows++] = (struct func_row){.func = l->func,
                                                .r.lineno = p->funcs[l->func].first_line};
        row_add(&frows[k].r, l);
    }
    c->pct = total > 0 ? 100.0 / total : 0;
    if (pct_sum * c->pct > 100)
        c->pct = 100.0 / pct_sum;

    jw_key(w, f->name);
    jw_obj_begin(w);
    jw_key(w, "percent_cpu_time");
    jw_double(w, fv->sec * c->pct);
    jw_key(w, "n_samples");
    uint64_t fsamples = 0;
    for (size_t i = 0; i < nrows; i++)
        fsamples += rows[i].samples;
    jw_uint(w, fsamples);
    jw_key(w, "lines");
    jw_arr_begin(w);
    size_t next = 0; /* next sampled row */
    if (f->src_read) {
        for (size_t n = 1; n <= f->nsrc; n++) {
            struct row zero = {.lineno = (uint32_t)n};
            struct row *r = &zero;
            while (next < nrows && rows[next].lineno < n)
                next++; /* line 0 (no line) has no source text: reported below */
            if (next < nrows && rows[next].lineno == n)
                r = &rows[next++];
            if (keep(r, c))
                write_row(w, f->src[n - 1], true, r, c, true);
        }
    }
    /* Sampled lines without source: the file was unreadable (or <native>), shorter than the
     * line, or line 0. */
    for (size_t i = 0; i < nrows; i++)
        if ((!f->src_read || rows[i].lineno == 0 || rows[i].lineno > f->nsrc) &&
            keep(&rows[i], c))
            write_row(w, "", false, &rows[i], c, true);
    jw_arr_end(w);

    jw_key(w, "functions");
    jw_arr_begin(w);
    if (nfrows > 1)
        qsort_r(frows, nfrows, sizeof(*frows), cmp_funcrow, (void *)p);
    for (size_t i = 0; i < nfrows; i++)
        if (keep(&frows[i].r, c))
            write_row(w, p->funcs[frows[i].func].qualname, false, &frows[i].r, c, false);
    jw_arr_end(w);
    write_leaks(w, rows, nrows, c);
    jw_key(w, "imports");
    jw_arr_begin(w);
    jw_arr_end(w);
    jw_obj_end(w);
    for (size_t i = 0; i < nrows; i++)
        prof_timeline_free(&rows[i].tl);
    for (size_t i = 0; i < nfrows; i++)
        prof_timeline_free(&frows[i].r.tl);
    free(rows);
    free(frows);
}

static void write_files(struct json_writer *w, const struct profile *p,
                        const struct profile_json_opts *o)
{
    double total = prof_total_sec(p);
    const struct prof_memory *m = &p->mem;
    struct wctx c = {
        .p = p,
        .o = o,
        .ncpus = o->ncpus ? o->ncpus : 1,
        .total_malloc = (double)m->malloc_bytes,
        .program_growth =
            m->malloc_bytes > m->free_bytes ? (int64_t)(m->malloc_bytes - m->free_bytes) : 0,
    };
    struct file_view *fvs = calloc(p->nfiles + 1, sizeof(*fvs));
    if (!fvs)
        abort();
    size_t nfv = 0;
    for (size_t i = 0; i < p->nlines;) {
        struct file_view *fv = &fvs[nfv++];
        fv->file = p->lines[i].file;
        fv->first = i;
        while (i < p->nlines && p->lines[i].file == fv->file) {
            const struct prof_line *l = &p->lines[i];
            fv->sec += l->python_sec + l->native_sec + l->sys_sec;
            fv->memory |= memory_kept(l->malloc_bytes, l->copy_bytes, o);
            i++;
        }
        fv->end = i;
    }
    if (nfv > 1)
        qsort(fvs, nfv, sizeof(*fvs), cmp_fileview);
    jw_key(w, "files");
    jw_obj_begin(w);
    for (size_t i = 0; i < nfv; i++) {
        double share = total > 0 ? fvs[i].sec * 100.0 / total : 0;
        if (o->reduced && !fvs[i].memory && (share <= 0 || share < o->cpu_percent_threshold))
            continue;
        write_file(w, &c, &fvs[i], total);
    }
    jw_obj_end(w);
    free(fvs);
}

static void zero_key(struct json_writer *w, const char *key)
{
    jw_key(w, key);
    jw_int(w, 0);
}

/* Scalene's "stacks": [[["FILE QUALNAME:LINE;", ...outermost first], {"count", "python_time",
 * "c_time", "cpu_samples", "sys_time"}], ...], times as fractions of the total sampled time. */
static void write_stacks(struct json_writer *w, const struct profile *p)
{
    double total = prof_total_sec(p);
    struct strbuf frame = STRBUF_INIT;
    jw_key(w, "stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct prof_stack *st = &p->stacks[i];
        if (!st->samples)
            continue; /* a stack only memory samples had (memory_stacks) */
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t f = 0; f < st->depth; f++) {
            const struct prof_sframe *fr = &p->sframes[st->off + f];
            sb_reset(&frame);
            sb_addf(&frame, "%s %s:%u;", p->files[fr->file].name, p->funcs[fr->func].qualname,
                    fr->line);
            jw_strn(w, sb_str(&frame), frame.len);
        }
        jw_arr_end(w);
        double all = st->python_sec + st->native_sec + st->sys_sec;
        jw_obj_begin(w);
        jw_key(w, "count");
        jw_uint(w, st->samples);
        jw_key(w, "python_time");
        jw_double(w, total > 0 ? st->python_sec / total : 0);
        jw_key(w, "c_time");
        jw_double(w, total > 0 ? st->native_sec / total : 0);
        jw_key(w, "sys_time");
        jw_double(w, total > 0 ? st->sys_sec / total : 0);
        jw_key(w, "cpu_samples");
        jw_double(w, total > 0 ? all / total : 0);
        jw_obj_end(w);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    sb_release(&frame);
}

/* A row of the sample stream on one line of the pretty document (a sample per line, not a
 * number per line: a third of the size). */
static void row_begin(struct json_writer *w)
{
    jw_arr_begin(w);
    w->pretty = false;
}

static void row_end(struct json_writer *w, bool pretty)
{
    jw_arr_end(w);
    w->pretty = pretty;
}

/* "sample_stream" (scry run --timeline; docs/json-schema.md): threads, distinct stacks, and the
 * samples in time order as [us since the start, thread, kind, weight us, stack]. */
static void write_sample_stream(struct json_writer *w, const struct profile *p)
{
    const struct prof_sstream *ss = &p->ss;
    bool pretty = w->pretty;
    jw_key(w, "sample_stream");
    jw_obj_begin(w);
    jw_key(w, "threads");
    jw_arr_begin(w);
    for (size_t i = 0; i < ss->nthreads; i++) {
        const struct prof_ssthread *t = &ss->threads[i];
        jw_obj_begin(w);
        jw_key(w, "pid");
        jw_int(w, t->pid);
        jw_key(w, "tid");
        jw_int(w, t->tid);
        jw_key(w, "name");
        jw_str(w, t->name);
        jw_key(w, "stride");
        jw_uint(w, t->stride);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < ss->nstacks; i++) {
        row_begin(w);
        for (uint32_t f = 0; f < ss->stacks[i].depth; f++) {
            const struct prof_sframe *fr = &ss->frames[ss->stacks[i].off + f];
            jw_arr_begin(w);
            jw_str(w, p->files[fr->file].name);
            jw_str(w, p->funcs[fr->func].qualname);
            jw_uint(w, p->funcs[fr->func].first_line);
            jw_uint(w, fr->line);
            jw_arr_end(w);
        }
        row_end(w, pretty);
    }
    jw_arr_end(w);
    jw_key(w, "samples");
    jw_arr_begin(w);
    for (size_t i = 0; i < ss->nsamples; i++) {
        const struct prof_sssample *x = &ss->samples[i];
        row_begin(w);
        jw_int(w, x->t / 1000);
        jw_uint(w, x->thread);
        jw_uint(w, x->kind);
        jw_uint(w, x->weight_ns / 1000);
        jw_uint(w, x->stack);
        row_end(w, pretty);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}

/* The fields after "kind" of a Python frame in Scalene's CombinedStackFrame. */
static void py_frame_fields(struct json_writer *w, const struct profile *p, uint32_t file,
                            uint32_t func, uint32_t line)
{
    jw_key(w, "display_name");
    jw_str(w, p->funcs[func].qualname);
    jw_key(w, "filename_or_module");
    jw_str(w, p->files[file].name);
    jw_key(w, "line");
    jw_uint(w, line);
    jw_key(w, "ip");
    jw_null(w);
    jw_key(w, "offset");
    jw_null(w);
}

/* Scalene's "memory_stacks": [[[{"kind": "py", "display_name", "filename_or_module", "line",
 * "ip": null, "offset": null}, ...outermost first], MB], ...]: the MB of the malloc samples of
 * each call stack (recorded with --stacks and memory on). */
static void write_memory_stacks(struct json_writer *w, const struct profile *p)
{
    jw_key(w, "memory_stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < p->nstacks; i++) {
        const struct prof_stack *st = &p->stacks[i];
        if (!st->malloc_bytes)
            continue;
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t f = 0; f < st->depth; f++) {
            const struct prof_sframe *fr = &p->sframes[st->off + f];
            jw_obj_begin(w);
            jw_key(w, "kind");
            jw_str(w, "py");
            py_frame_fields(w, p, fr->file, fr->func, fr->line);
            jw_obj_end(w);
        }
        jw_arr_end(w);
        jw_double(w, (double)st->malloc_bytes / MIB);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

/* A native frame's name: its symbol, or module+0xoffset when the address has none. */
static void native_name(struct strbuf *sb, const struct prof_nframe *f)
{
    sb_reset(sb);
    if (f->symbol[0]) {
        sb_adds(sb, f->symbol);
    } else {
        const char *base = strrchr(f->module, '/');
        sb_addf(sb, "%s+0x%llx", base ? base + 1 : f->module, (unsigned long long)f->offset);
    }
}

/* "native_stacks": [[[[module, symbol, ip, offset], ...outermost first], hits], ...] (the
 * format Scalene wrote before it dropped the field) and "combined_stacks": [[[{"kind": "py" |
 * "native", "display_name", "filename_or_module", "line", "ip", "offset"}, ...outermost
 * first], hits], ...] (Scalene's). Empty arrays when no native stacks were recorded. */
static void write_native_stacks(struct json_writer *w, const struct profile *p)
{
    struct strbuf name = STRBUF_INIT;
    jw_key(w, "native_stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < p->nnative_stacks; i++) {
        const struct prof_chain *c = &p->native_stacks[i];
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t k = 0; k < c->depth; k++) {
            const struct prof_nframe *f = &p->nframes[p->native_items[c->off + k]];
            jw_arr_begin(w);
            jw_str(w, f->module);
            jw_str(w, f->symbol);
            jw_uint(w, f->ip);
            jw_uint(w, f->offset);
            jw_arr_end(w);
        }
        jw_arr_end(w);
        jw_uint(w, c->hits);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "combined_stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < p->ncombined_stacks; i++) {
        const struct prof_chain *c = &p->combined_stacks[i];
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t k = 0; k < c->depth; k++) {
            const struct prof_citem *it = &p->combined_items[c->off + k];
            jw_obj_begin(w);
            jw_key(w, "kind");
            jw_str(w, it->native ? "native" : "py");
            if (it->native) {
                const struct prof_nframe *f = &p->nframes[it->nframe];
                native_name(&name, f);
                jw_key(w, "display_name");
                jw_strn(w, sb_str(&name), name.len);
                jw_key(w, "filename_or_module");
                jw_str(w, f->module);
                jw_key(w, "line");
                jw_null(w);
                jw_key(w, "ip");
                jw_uint(w, f->ip);
                jw_key(w, "offset");
                jw_uint(w, f->offset);
            } else {
                py_frame_fields(w, p, it->file, it->func, it->line);
            }
            jw_obj_end(w);
        }
        jw_arr_end(w);
        jw_uint(w, c->hits);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    sb_release(&name);
}

/* Scalene's whole-program memory keys. */
static void write_memory_globals(struct json_writer *w, const struct profile *p)
{
    const struct prof_memory *m = &p->mem;
    jw_key(w, "alloc_samples");
    jw_uint(w, m->alloc_samples);
    jw_key(w, "growth_rate");
    jw_double(w, growth_rate(p));
    jw_key(w, "max_footprint_mb");
    jw_double(w, (double)m->max_footprint / MIB);
    jw_key(w, "max_footprint_python_fraction");
    jw_double(w, m->max_footprint_python_fraction);
    jw_key(w, "max_footprint_fname");
    jw_str(w, m->have_at ? p->files[m->at_file].name : NULL);
    jw_key(w, "max_footprint_lineno");
    if (m->have_at)
        jw_uint(w, m->at_line);
    else
        jw_null(w);
    jw_key(w, "native_allocations_mb");
    jw_double(w, (double)m->native_malloc_bytes / MIB);
}

/* The run: the program, its times, its samples, the run queue and the note. */
static void write_run(struct json_writer *w, const struct profile *p,
                      const struct profile_json_opts *o)
{
    jw_key(w, "tool");
    jw_str(w, "scry");
    jw_key(w, "version");
    jw_str(w, o->version);
    jw_key(w, "program");
    jw_str(w, o->program ? o->program : "");
    jw_key(w, "entrypoint_dir");
    jw_str(w, o->entrypoint_dir ? o->entrypoint_dir : "");
    jw_key(w, "args");
    jw_arr_begin(w);
    if (o->args)
        for (size_t i = 0; i < o->nargs; i++)
            jw_str(w, o->args[i]);
    else
        for (size_t i = 1; i < p->argc; i++)
            jw_str(w, p->argv[i]);
    jw_arr_end(w);
    jw_key(w, "filename");
    jw_str(w, o->filename ? o->filename : "");
    jw_key(w, "python_version");
    jw_str(w, p->python_version);
    jw_key(w, "elapsed_time_sec");
    jw_double(w, p->elapsed_sec);
    jw_key(w, "start_time_absolute");
    jw_double(w, p->start_time_absolute);
    jw_key(w, "start_time_perf");
    jw_double(w, o->start_time_perf);
    jw_key(w, "main_thread_id");
    jw_uint(w, p->main_thread_id);
    jw_key(w, "cpu_sampling_rate");
    jw_double(w, p->sampling_rate_sec);
    jw_key(w, "use_virtual_time");
    jw_bool(w, p->virtual_time);
    jw_key(w, "processes");
    jw_uint(w, p->nparts);
    jw_key(w, "n_samples");
    jw_uint(w, p->samples);
    jw_key(w, "n_dropped_samples");
    jw_uint(w, p->dropped);
    jw_key(w, "sampled_time_sec");
    jw_double(w, prof_total_sec(p));
    jw_key(w, "profiled_time_sec");
    jw_double(w, prof_charged_sec(p));
    jw_key(w, "profiling_off_sec");
    jw_double(w, p->off_sec);
    /* The run-queue delay: null when no process could read it (docs/json-schema.md). */
    jw_key(w, "run_queue_delay_sec");
    if (p->have_run_queue)
        jw_double(w, p->run_queue_delay_sec);
    else
        jw_null(w);
    jw_key(w, "run_queue_cpu_sec");
    if (p->have_run_queue)
        jw_double(w, p->run_queue_cpu_sec);
    else
        jw_null(w);
    jw_key(w, "oversubscribed");
    jw_bool(w, prof_oversubscribed(p));
    if (p->note) {
        jw_key(w, "note");
        jw_str(w, p->note);
    }
}

/* The files left out with their time, and (scry record) the threads. */
static void write_excluded_threads(struct json_writer *w, const struct profile *p)
{
    jw_key(w, "excluded");
    jw_arr_begin(w);
    for (size_t i = 0; i < p->nexcluded; i++) {
        jw_obj_begin(w);
        jw_key(w, "file");
        jw_str(w, p->excluded[i].file);
        jw_key(w, "rule");
        jw_str(w, p->excluded[i].rule);
        jw_key(w, "seconds");
        jw_double(w, p->excluded[i].sec);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    /* scry record: which thread held the GIL, per thread (docs/json-schema.md). */
    if (p->have_threads) {
        jw_key(w, "threads");
        jw_arr_begin(w);
        for (size_t i = 0; i < p->nthreads; i++) {
            const struct prof_thread *t = &p->threads[i];
            jw_obj_begin(w);
            jw_key(w, "pid");
            jw_int(w, t->pid);
            jw_key(w, "native_id");
            jw_int(w, t->native_id);
            jw_key(w, "thread_id");
            jw_uint(w, t->thread_id);
            jw_key(w, "name");
            jw_str(w, t->name);
            jw_key(w, "samples");
            jw_uint(w, t->samples);
            jw_key(w, "gil_samples");
            jw_uint(w, t->gil_samples);
            jw_obj_end(w);
        }
        jw_arr_end(w);
    }
}

/* The memory totals (placeholders in Scalene's shape when memory is off) and the GPU's. */
static void write_memory_gpu(struct json_writer *w, const struct profile *p)
{
    if (p->mem.on) {
        write_memory_globals(w, p);
    } else {
        /* Memory off: the placeholders in Scalene's shape, as before memory profiling. */
        zero_key(w, "alloc_samples");
        zero_key(w, "growth_rate");
        zero_key(w, "max_footprint_mb");
        zero_key(w, "max_footprint_python_fraction");
        jw_key(w, "max_footprint_fname");
        jw_null(w);
        jw_key(w, "max_footprint_lineno");
        jw_null(w);
        zero_key(w, "native_allocations_mb");
    }
    jw_key(w, "gpu");
    jw_bool(w, p->gpu);
    jw_key(w, "gpu_device");
    jw_str(w, p->gpu && p->gpu_device ? p->gpu_device : "");
    if (p->gpu) {
        jw_key(w, "gpu_utilization_source");
        jw_str(w, p->gpu_util_source ? p->gpu_util_source : "device");
        jw_key(w, "gpu_memory_source");
        jw_str(w, p->gpu_mem_source ? p->gpu_mem_source : "device");
        jw_key(w, "gpu_sampler_cpu_sec");
        jw_double(w, p->gpu_sampler_cpu_sec);
    }
    if (p->gpu_note) {
        jw_key(w, "gpu_note");
        jw_str(w, p->gpu_note);
    }
}

void profile_json_write(const struct profile *p, const struct profile_json_opts *o,
                        struct strbuf *out)
{
    struct json_writer w;
    jw_init(&w, out, true);
    jw_obj_begin(&w);
    write_run(&w, p, o);
    write_excluded_threads(&w, p);
    write_memory_gpu(&w, p);
    jw_key(&w, "memory");
    jw_bool(&w, p->mem.on);
    jw_key(&w, "async_profile");
    jw_bool(&w, false);
    jw_key(&w, "samples");
    write_timeline(&w, &p->mem.footprint);
    if (p->mem.on) {
        jw_key(&w, "memory_sampling_window");
        jw_uint(&w, p->mem.window);
        jw_key(&w, "copy_mb");
        jw_double(&w, (double)p->mem.copy_bytes / MIB);
    }
    write_stacks(&w, p);
    if (p->mem.on)
        write_memory_stacks(&w, p);
    write_native_stacks(&w, p);
    if (p->ss.on)
        write_sample_stream(&w, p);

    write_files(&w, p, o);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}
