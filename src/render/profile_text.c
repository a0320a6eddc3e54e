/* The annotated-source view of a profile. The profile model (analysis/profile_doc.h, which
 * checks every field) is put in the view's order, then printed: per file a header, the source lines at or above
 * the threshold with `...` for the hidden stretches, a function summary, and the totals. When the
 * profile has memory ("memory": true) the memory columns of Scalene's terminal view follow the
 * CPU ones, with a footprint sparkline on top and possible leaks after each file; without it the
 * view is exactly the CPU one. When it has GPU data ("gpu": true) a GPU % and a GPU memory column
 * follow the time ones and the header names the device. Text
 * from the file (source, names, the note) is printed with control characters replaced, so a
 * profile cannot drive the terminal. */
#include "render/profile_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sanitize.h"

#define BOLD "\033[1m"
#define HOT "\033[1;31m"
#define DIM "\033[2m"
#define RESET "\033[0m"

/* Lines and functions using at least this share of all allocated bytes are highlighted. */
#define HOT_USAGE_FRACTION 0.33
/* Points of the sparklines: the whole program's footprint, and each row's. */
#define SPARK_PROGRAM 27
#define SPARK_ROW 9

/* A file as the view shows it: its lines by line number, its functions by time. */
struct tfile {
    const struct pdoc_file *f;
    const struct pdoc_entry **lines, **funcs;
    size_t nlines, nfuncs;
};

struct tprof {
    const struct pdoc *d;
    struct tfile *files; /* the notebook cell's own first, then by share, then by name */
    size_t nfiles;
    bool memory;
    bool held; /* some line has n_max_held_mb: the "most held" column */
    bool gpu;
    double malloc_min_mb; /* profile_text_opts.malloc_threshold_mb */
    double max_footprint_mb;
};

static void free_tprof(struct tprof *tp)
{
    for (size_t i = 0; tp->files && i < tp->nfiles; i++) {
        free(tp->files[i].lines);
        free(tp->files[i].funcs);
    }
    free(tp->files);
}

static int cmp_row_lineno(const void *a, const void *b)
{
    const struct pdoc_entry *x = *(const struct pdoc_entry *const *)a;
    const struct pdoc_entry *y = *(const struct pdoc_entry *const *)b;
    return x->line < y->line ? -1 : x->line > y->line;
}

static double row_total(const struct pdoc_entry *r)
{
    return r->python_pct + r->native_pct + r->sys_pct;
}

static int cmp_row_total(const void *a, const void *b)
{
    double tx = row_total(*(const struct pdoc_entry *const *)a);
    double ty = row_total(*(const struct pdoc_entry *const *)b);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return cmp_row_lineno(a, b);
}

static int cmp_file(const void *a, const void *b)
{
    const struct pdoc_file *x = ((const struct tfile *)a)->f, *y = ((const struct tfile *)b)->f;
    if (x->first != y->first)
        return x->first ? -1 : 1;
    if (x->percent != y->percent)
        return x->percent > y->percent ? -1 : 1;
    return strcmp(x->name, y->name);
}

static const struct pdoc_entry **entries(struct pdoc_entry *e, size_t n)
{
    const struct pdoc_entry **out = calloc(n + 1, sizeof(*out));
    for (size_t i = 0; out && i < n; i++)
        out[i] = &e[i];
    return out;
}

/* The view's order of the model's files and entries. */
static int arrange(const struct pdoc *d, struct tprof *tp)
{
    memset(tp, 0, sizeof(*tp));
    tp->d = d;
    tp->memory = d->memory;
    tp->gpu = d->gpu;
    tp->max_footprint_mb = d->memory ? d->max_footprint_mb : 0;
    tp->files = calloc(d->nfiles + 1, sizeof(*tp->files));
    if (!tp->files)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (size_t k = 0; k < d->nfiles; k++) {
        struct tfile *tf = &tp->files[tp->nfiles++];
        const struct pdoc_file *f = &d->files[k];
        tf->f = f;
        tf->lines = entries(f->lines, f->nlines);
        tf->funcs = entries(f->funcs, f->nfuncs);
        if (!tf->lines || !tf->funcs)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        tf->nlines = f->nlines;
        tf->nfuncs = f->nfuncs;
        for (size_t i = 0; tp->memory && i < f->nlines; i++)
            tp->held |= f->lines[i].held_bytes >= 0;
        if (tf->nlines > 1)
            qsort(tf->lines, tf->nlines, sizeof(*tf->lines), cmp_row_lineno);
        if (tf->nfuncs > 1)
            qsort(tf->funcs, tf->nfuncs, sizeof(*tf->funcs), cmp_row_total);
    }
    if (tp->nfiles > 1)
        qsort(tp->files, tp->nfiles, sizeof(*tp->files), cmp_file);
    return 0;
}

/* Text for the terminal: Scalene's \u0026 \u003c \u003e back to & < >, no trailing newline,
 * tabs expanded, everything else cleaned by common/sanitize.h. */
static void add_display(struct strbuf *sb, const char *s)
{
    size_t col = 0, len = strlen(s);
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        len--;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' && i + 6 <= len && s[i + 1] == 'u' && s[i + 2] == '0' && s[i + 3] == '0') {
            const char *esc = s + i + 4;
            char r = strncmp(esc, "26", 2) == 0   ? '&'
                     : strncmp(esc, "3c", 2) == 0 ? '<'
                     : strncmp(esc, "3e", 2) == 0 ? '>'
                                                  : 0;
            if (r) {
                sb_addch(sb, r);
                col++;
                i += 5;
                continue;
            }
        }
        if (c == '\t') {
            do {
                sb_addch(sb, ' ');
                col++;
            } while (col % 8);
        } else {
            const char *repl; /* the one rule for terminal text: common/sanitize.h */
            size_t n = san_next(s + i, len - i, &repl);
            if (repl)
                sb_adds(sb, repl);
            else
                sb_add(sb, s + i, n);
            col++;
            i += n - 1;
        }
    }
}

static void pct_cell(char *buf, size_t n, double v)
{
    if (!(v >= 0.005))
        buf[0] = 0;
    else if (v < 0.5)
        snprintf(buf, n, "<1%%");
    else
        snprintf(buf, n, "%.0f%%", v);
}

/* A size in Scalene's peak format: "123M", or "1.50G" from 1024 MB; blank under 0.5 MB. */
static void size_cell(char *buf, size_t n, double mb)
{
    if (!(mb >= 0.5))
        buf[0] = 0;
    else if (mb < 1024)
        snprintf(buf, n, "%.0fM", mb);
    else
        snprintf(buf, n, "%.2fG", mb / 1024);
}

/* A footprint timeline of the model: a row's memory_samples (checked [[ns, MB], ...]) or the
 * program's footprint pairs. */
struct series {
    const json_t *json;
    const double (*pairs)[2];
    size_t n;
};

static double series_at(const struct series *s, size_t j, int k)
{
    return s->pairs ? s->pairs[j][k] : json_number_value(json_array_get(json_array_get(s->json, j), k));
}

/* Up to `points` bars (▁ to █) of the footprints of a timeline, scaled to [0, max]; longer
 * timelines are cut into `points` runs, each shown by its largest value (a peak never
 * disappears). Returns the number of bars written. */
static size_t add_spark(struct strbuf *sb, const struct series *s, size_t points, double max)
{
    static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    size_t n = s->n, k = n < points ? n : points;
    for (size_t i = 0; i < k; i++) {
        double v = 0;
        for (size_t j = i * n / k; j < (i + 1) * n / k; j++) {
            double x = series_at(s, j, 1);
            if (x > v)
                v = x;
        }
        int level = max > 0 ? (int)(v / max * 7 + 0.5) : 0;
        sb_adds(sb, bars[level < 0 ? 0 : level > 7 ? 7 : level]);
    }
    return k;
}

/* The whole program's footprint as `points` bars over the run's time, from its start to t_end
 * (ns; the last point's time if later): the timeline is a step function (each point's value
 * holds until the next one, 0 before the first), and a bar shows the largest value it takes
 * in the bar's stretch of time. So a program that allocated only early shows its memory at the
 * left, then what it kept until the end. A timeline without times (all at 0) falls back to bars
 * by point. Returns the number of bars written. */
static size_t add_spark_time(struct strbuf *sb, const struct series *s, size_t points, double max,
                             double t_end)
{
    static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    size_t n = s->n;
    for (size_t j = 0; j < n; j++)
        if (series_at(s, j, 0) > t_end)
            t_end = series_at(s, j, 0);
    if (n == 0 || !(t_end > 0))
        return add_spark(sb, s, points, max);
    size_t j = 0;
    double held = 0; /* the value at the start of the current bar */
    for (size_t i = 0; i < points; i++) {
        double hi = t_end * (double)(i + 1) / (double)points, v = held;
        /* Points inside the bar (the last bar takes the points at t_end too). */
        for (; j < n; j++) {
            double t = series_at(s, j, 0);
            if (t >= hi && i + 1 < points)
                break;
            held = series_at(s, j, 1);
            if (held > v)
                v = held;
        }
        int level = max > 0 ? (int)(v / max * 7 + 0.5) : 0;
        sb_adds(sb, bars[level < 0 ? 0 : level > 7 ? 7 : level]);
    }
    return points;
}

static void add_memory_cells(struct strbuf *sb, const struct tprof *tp, const struct pdoc_entry *r)
{
    char py[16] = "", net[16], peak[16], use[16], copy[16] = "";
    if (r->malloc_mb > 0)
        snprintf(py, sizeof(py), "%.0f%%", r->python_fraction * 100);
    size_cell(net, sizeof(net), r->growth_mb);
    size_cell(peak, sizeof(peak), r->peak_mb);
    pct_cell(use, sizeof(use), r->usage_fraction * 100);
    if (r->copy_mb_s >= 0.5)
        snprintf(copy, sizeof(copy), "%.0f", r->copy_mb_s);
    sb_addf(sb, " %6s │ %6s │ %6s │ ", py, net, peak);
    if (tp->held) {
        char held[16] = "";
        if (r->held_bytes >= 0)
            size_cell(held, sizeof(held), r->held_mb);
        sb_addf(sb, "%6s │ ", held);
    }
    /* The bars are 3 bytes each but one column wide: pad by hand. */
    struct series ms = {r->memory_samples, NULL, json_array_size(r->memory_samples)};
    size_t bars = add_spark(sb, &ms, SPARK_ROW, tp->max_footprint_mb);
    sb_addf(sb, "%*s %4s │ %6s │", (int)(SPARK_ROW - bars), "", use, copy);
}

static bool hot(const struct tprof *tp, const struct pdoc_entry *r)
{
    return row_total(r) >= PROFILE_TEXT_HOT_PERCENT ||
           (tp->memory && r->usage_fraction >= HOT_USAGE_FRACTION);
}

static void add_row(struct strbuf *sb, const struct profile_text_opts *o, const struct tprof *tp,
                    const char *label, const struct pdoc_entry *r)
{
    char py[16], nat[16], sys[16];
    pct_cell(py, sizeof(py), r->python_pct);
    pct_cell(nat, sizeof(nat), r->native_pct);
    pct_cell(sys, sizeof(sys), r->sys_pct);
    bool is_hot = o->color && hot(tp, r);
    if (is_hot)
        sb_adds(sb, HOT);
    sb_addf(sb, "%6s │ %6s │ %6s │ %6s │", label, py, nat, sys);
    if (tp->gpu) {
        char gpu[16], gmem[16];
        pct_cell(gpu, sizeof(gpu), r->gpu_percent);
        size_cell(gmem, sizeof(gmem), r->gpu_peak_mb);
        sb_addf(sb, " %6s │ %6s │", gpu, gmem);
    }
    if (tp->memory)
        add_memory_cells(sb, tp, r);
    struct strbuf text = STRBUF_INIT;
    add_display(&text, r->text ? r->text : "");
    if (text.len) {
        sb_addch(sb, ' ');
        sb_add(sb, text.buf, text.len);
    }
    sb_release(&text);
    if (is_hot)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');
}

/* One row of the table's frame: the CPU columns' cells, then the GPU and the memory ones when the
 * profile has them. */
static void frame_row(struct strbuf *sb, const struct tprof *tp, const char *cpu, const char *gpu,
                      const char *memory, const char *held, const char *memory_rest)
{
    sb_adds(sb, cpu);
    if (tp->gpu)
        sb_adds(sb, gpu);
    if (!tp->memory)
        return;
    sb_adds(sb, memory);
    if (tp->held)
        sb_adds(sb, held);
    sb_adds(sb, memory_rest);
}

static void add_header(struct strbuf *sb, const struct profile_text_opts *o,
                       const struct tprof *tp, const char *last)
{
    if (o->color)
        sb_adds(sb, BOLD);
    frame_row(sb, tp, "       │   Time │        │        │", "    GPU │        │",
              " Memory │        │        │", "   most │", "                │   Copy │");
    frame_row(sb, tp, "\n  Line │ Python │ native │ system │", "   util │ memory │",
              " Python │ net MB │   peak │", "   held │", " timeline/%     │   MB/s │");
    sb_addf(sb, " %s\n", last);
    if (o->color)
        sb_adds(sb, RESET);
    frame_row(sb, tp, "───────┼────────┼────────┼────────┼", "────────┼────────┼",
              "────────┼────────┼────────┼", "────────┼", "────────────────┼────────┼");
    sb_adds(sb, "────────────────────────────────────────\n");
}

static void add_gap(struct strbuf *sb, const struct profile_text_opts *o, const struct tprof *tp)
{
    if (o->color)
        sb_adds(sb, DIM);
    frame_row(sb, tp, "   ... │        │        │        │", "        │        │",
              "        │        │        │", "        │", "                │        │");
    if (o->color)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');
}

/* At or above the threshold in time, or (with memory) in share of the allocated bytes (with at
 * least malloc_min_mb allocated), or copying at least 0.5 MB/s (the copy column's own
 * threshold). */
static bool shown(const struct tprof *tp, const struct pdoc_entry *r, double threshold)
{
    return row_total(r) >= threshold || (tp->gpu && r->gpu_percent >= threshold) ||
           (tp->memory && ((r->usage_fraction > 0 && r->usage_fraction * 100 >= threshold &&
                            r->malloc_mb >= tp->malloc_min_mb) ||
                           r->copy_mb_s >= 0.5));
}

static bool file_shown(const struct tprof *tp, const struct tfile *f, double threshold)
{
    if (f->f->percent >= threshold)
        return true;
    for (size_t i = 0; tp->memory && i < f->nlines; i++)
        if (shown(tp, f->lines[i], threshold))
            return true;
    return false;
}

static void add_file(struct strbuf *sb, const struct profile_text_opts *o, const struct tprof *tp,
                     const struct tfile *f, double sampled_sec)
{
    if (o->color)
        sb_adds(sb, BOLD);
    add_display(sb, f->f->name);
    sb_addf(sb, ": %.1f%% of the time", f->f->percent);
    if (sampled_sec > 0)
        sb_addf(sb, " (%.3f s of %.3f s sampled)", f->f->percent * sampled_sec / 100, sampled_sec);
    if (o->color)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');

    size_t nshown = 0;
    for (size_t i = 0; i < f->nlines; i++)
        nshown += shown(tp, f->lines[i], o->threshold);
    if (nshown == 0) {
        sb_addf(sb, "(no line reaches %g%% of the time)\n", o->threshold);
    } else {
        add_header(sb, o, tp, "source");
        long prev = 0; /* last line number printed */
        bool printed = false;
        for (size_t i = 0; i < f->nlines; i++) {
            const struct pdoc_entry *r = f->lines[i];
            if (!shown(tp, r, o->threshold))
                continue;
            if ((printed && r->line > prev + 1) || (!printed && r->line > 1))
                add_gap(sb, o, tp);
            char label[24];
            snprintf(label, sizeof(label), "%ld", (long)r->line);
            add_row(sb, o, tp, label, r);
            prev = r->line;
            printed = true;
        }
        if (f->nlines && f->lines[f->nlines - 1]->line > prev)
            add_gap(sb, o, tp);
    }
    for (size_t i = 0; tp->memory && i < f->f->nleaks; i++) {
        const struct pdoc_leak *l = &f->f->leaks[i];
        sb_addf(sb, "Possible memory leak at line %ld (likelihood %.0f%%, velocity %.2f MB/s)\n",
                (long)l->line, l->likelihood * 100, l->velocity_mb_s);
    }

    size_t nf = 0;
    for (size_t i = 0; i < f->nfuncs; i++)
        nf += shown(tp, f->funcs[i], o->threshold);
    if (nf) {
        sb_addch(sb, '\n');
        sb_adds(sb, "function summary for ");
        add_display(sb, f->f->name);
        sb_addch(sb, '\n');
        add_header(sb, o, tp, "function");
        for (size_t i = 0; i < f->nfuncs; i++) {
            if (!shown(tp, f->funcs[i], o->threshold))
                continue;
            char label[24];
            snprintf(label, sizeof(label), "%ld", (long)f->funcs[i]->line);
            add_row(sb, o, tp, label, f->funcs[i]);
        }
    }
    sb_addch(sb, '\n');
}

/* Scalene's title line: the whole program's footprint over the run. */
static void add_memory_usage(struct strbuf *sb, const struct tprof *tp)
{
    const struct pdoc *d = tp->d;
    struct series fp = {NULL, (const double(*)[2])d->footprint, d->nfootprint};
    sb_adds(sb, "Memory usage: ");
    if (add_spark_time(sb, &fp, SPARK_PROGRAM, d->max_footprint_mb, d->elapsed_sec * 1e9))
        sb_addch(sb, ' ');
    sb_addf(sb, "(max: %.2f MB, growth rate: %.0f%%", d->max_footprint_mb, d->growth_rate);
    if (d->native_allocations_mb > 0)
        sb_addf(sb, ", %.2f MB from native threads", d->native_allocations_mb);
    sb_adds(sb, ")\n\n");
}

void profile_text_oversubscribed(struct strbuf *out, double delay_sec, double cpu_sec)
{
    sb_addf(out, "the machine was oversubscribed: the program's threads waited %.3f s for a CPU",
            delay_sec);
    if (cpu_sec > 0)
        sb_addf(out, " (%.0f%% of the %.3f s they ran)", 100 * delay_sec / cpu_sec, cpu_sec);
    sb_adds(out, "; a thread waiting for a CPU is off it, so that wait counts as system "
                 "time: system shares may be no I/O or sleep at all");
}

int profile_text_render(const struct pdoc *d, const struct profile_text_opts *o,
                        struct strbuf *out)
{
    struct tprof tp;
    int err = arrange(d, &tp);
    if (err) {
        free_tprof(&tp);
        return err;
    }
    tp.malloc_min_mb = o->malloc_threshold_mb;
    double elapsed = d->elapsed_sec, sampled = d->sampled_given_sec;
    double rate = d->sampling_rate_given_sec;
    if (d->program[0]) {
        sb_adds(out, "profile of ");
        add_display(out, d->program);
        for (size_t i = 0; i < d->nargs; i++) {
            sb_addch(out, ' ');
            add_display(out, d->args[i]);
        }
        if (d->python_version) {
            sb_adds(out, " (Python ");
            add_display(out, d->python_version);
            sb_addch(out, ')');
        }
        sb_adds(out, "\n\n");
    }

    if (tp.nfiles > 0 && sampled > 0) {
        /* What every share below is of: a share of a total that left time out would mislead. */
        sb_addf(out, "shares of the time are of %.3f s sampled (every thread of every process, %s)",
                sampled, d->virtual_time ? "CPU time only" : "on and off the CPU");
        if (elapsed > 0)
            sb_addf(out, "; the program ran %.3f s", elapsed);
        /* Profiled only part of the time (--off, scry.stop(), scry control, optional key). */
        if (d->profiling_off_sec > 0)
            sb_addf(out, ", %.3f s of it with profiling off", d->profiling_off_sec);
        sb_adds(out, "\n\n");
    }
    if (d->oversubscribed) {
        if (o->color)
            sb_adds(out, BOLD);
        sb_adds(out, "warning: ");
        profile_text_oversubscribed(out, d->run_queue_delay_sec, d->run_queue_cpu_sec);
        sb_adds(out, "\n\n");
        if (o->color)
            sb_adds(out, RESET);
    }
    if (tp.gpu) {
        /* The device, and where the figures come from (docs/gpu.md). */
        const char *dev = d->gpu_device;
        const char *us = d->gpu_utilization_source, *ms = d->gpu_memory_source;
        sb_adds(out, "GPU: ");
        add_display(out, dev && *dev ? dev : "GPU");
        sb_addf(out, "; utilisation %s, memory %s\n\n",
                us && !strcmp(us, "process") ? "of this program's processes"
                                             : "of the whole device (other programs included)",
                ms && !strcmp(ms, "process") ? "of this program's processes"
                                             : "the device's growth since the start");
    }
    if (tp.memory)
        add_memory_usage(out, &tp);
    size_t hidden = 0;
    for (size_t i = 0; i < tp.nfiles; i++) {
        if (!file_shown(&tp, &tp.files[i], o->threshold)) {
            hidden++;
            continue;
        }
        add_file(out, o, &tp, &tp.files[i], sampled);
    }
    if (hidden)
        sb_addf(out, "%zu file%s under %g%% of the time not shown (--cpu-percent-threshold)\n",
                hidden, hidden == 1 ? "" : "s", o->threshold);

    sb_addf(out, "elapsed %.3f s", elapsed);
    if (d->has_n_samples)
        sb_addf(out, ", %.0f samples", d->n_samples);
    if (d->has_processes)
        sb_addf(out, ", %.0f process%s", d->processes, d->processes == 1 ? "" : "es");
    if (rate > 0)
        sb_addf(out, "; sampled every %g s on average (%s)", rate,
                d->virtual_time ? "CPU time only" : "wall clock");
    sb_addch(out, '\n');
    if (sampled > 0 && d->has_profiled && tp.nfiles > 0 && d->profiled_sec < sampled * 0.99)
        sb_addf(out,
                "the profiled files took %.1f%% of the sampled time; the rest went to other "
                "files (\"excluded\" in the JSON; --profile-all profiles every file)\n",
                100 * d->profiled_sec / sampled);
    if (tp.nfiles > 0 && d->has_n_samples && d->n_samples < 30)
        sb_addf(out,
                "only %.0f samples: the shares are rough; run the program longer or lower "
                "--cpu-sampling-rate\n",
                d->n_samples);
    if (d->note) {
        if (o->color)
            sb_adds(out, BOLD);
        sb_adds(out, "note: ");
        add_display(out, d->note);
        if (o->color)
            sb_adds(out, RESET);
        sb_addch(out, '\n');
    } else if (tp.nfiles == 0) {
        sb_adds(out, "note: the profile holds no files: nothing was recorded\n");
    }
    if (d->gpu_note) {
        sb_adds(out, "note: ");
        add_display(out, d->gpu_note);
        sb_addch(out, '\n');
    }
    free_tprof(&tp);
    return 0;
}

int profile_text_render_bytes(const char *text, size_t len, const char *what,
                              const struct profile_text_opts *o, struct strbuf *out)
{
    struct pdoc d;
    int err = pdoc_load_bytes(&d, text, len, what);
    if (err)
        return err;
    err = profile_text_render(&d, o, out);
    pdoc_free(&d);
    return err;
}
