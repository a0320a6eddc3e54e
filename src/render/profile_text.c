/* The annotated-source view of a profile. The document is first read into small tables (checking
 * every type the view relies on), then printed: per file a header, the source lines at or above
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

struct trow {
    long lineno;
    const char *text;
    double py, nat, sys;
    double gpu_pct, gpu_peak_mb; /* read only when the profile has GPU data */
    /* Memory (read only when the profile has memory): MB, fractions, MB/s. */
    double malloc_mb, pyfrac, growth_mb, peak_mb, usage, copy_mb_s;
    bool has_held;  /* n_max_held_mb is there (profiles of older agents lack it) */
    double held_mb; /* the most its lines held at once */
    const json_t *samples; /* memory_samples, [[ns, MB], ...] */
};

struct tleak {
    long lineno;
    double likelihood, velocity;
};

struct tfile {
    const char *name;
    double pct;
    bool first; /* the document's "first_file" (a notebook cell's own): shown first */
    struct trow *lines, *funcs;
    size_t nlines, nfuncs;
    struct tleak *leaks;
    size_t nleaks;
};

struct tprof {
    struct tfile *files;
    size_t nfiles;
    bool memory;
    bool held; /* some row has n_max_held_mb: the "most held" column */
    bool gpu;
    double malloc_min_mb; /* profile_text_opts.malloc_threshold_mb */
    double max_footprint_mb, growth_rate, native_mb;
    const json_t *samples;
};

static int bad(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(const char *what, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_fail(SCRY_E_BAD_PROFILE, "%s is not a profile: %s", what, msg);
}

/* A number field; absent or null reads as 0. */
static int get_num(const json_t *o, const char *key, double *out, const char *ctx)
{
    const json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return bad("the document", "%s.%s is not a number", ctx, key);
    *out = json_number_value(v);
    if (!isfinite(*out))
        *out = 0;
    return 0;
}

/* memory_samples: absent, null or [[ns, MB], ...]. */
static int get_samples(const json_t *o, const char *key, const json_t **out, const char *ctx)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    bool ok = json_is_array(v);
    for (size_t i = 0; ok && i < json_array_size(v); i++) {
        const json_t *pt = json_array_get(v, i);
        ok = json_is_array(pt) && json_array_size(pt) >= 2 &&
             json_is_number(json_array_get(pt, 1));
    }
    if (!ok)
        return bad("the document", "%s.%s is not [[ns, MB], ...]", ctx, key);
    *out = v;
    return 0;
}

static int read_memory(const json_t *r, struct trow *row, const char *ctx)
{
    int err;
    if ((err = get_num(r, "n_malloc_mb", &row->malloc_mb, ctx)) ||
        (err = get_num(r, "n_python_fraction", &row->pyfrac, ctx)) ||
        (err = get_num(r, "n_growth_mb", &row->growth_mb, ctx)) ||
        (err = get_num(r, "n_peak_mb", &row->peak_mb, ctx)) ||
        (err = get_num(r, "n_usage_fraction", &row->usage, ctx)) ||
        (err = get_num(r, "n_copy_mb_s", &row->copy_mb_s, ctx)))
        return err;
    const json_t *held = json_object_get(r, "n_max_held_mb");
    if (held && !json_is_null(held)) {
        if ((err = get_num(r, "n_max_held_mb", &row->held_mb, ctx)))
            return err;
        row->has_held = true;
    }
    return get_samples(r, "memory_samples", &row->samples, ctx);
}

static int read_rows(const json_t *arr, const char *ctx, const struct tprof *tp, struct trow **out,
                     size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!arr || json_is_null(arr))
        return 0;
    if (!json_is_array(arr))
        return bad("the document", "%s is not an array", ctx);
    size_t cnt = json_array_size(arr);
    struct trow *rows = calloc(cnt + 1, sizeof(*rows));
    if (!rows)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    int err = 0;
    char sub[600];
    for (size_t i = 0; i < cnt && !err; i++) {
        const json_t *r = json_array_get(arr, i);
        snprintf(sub, sizeof(sub), "%s[%zu]", ctx, i);
        if (!json_is_object(r)) {
            err = bad("the document", "%s is not an object", sub);
            break;
        }
        const json_t *ln = json_object_get(r, "lineno");
        if (!json_is_integer(ln) || json_integer_value(ln) < 0) {
            err = bad("the document", "%s.lineno is not a line number", sub);
            break;
        }
        rows[i].lineno = (long)json_integer_value(ln);
        const json_t *t = json_object_get(r, "line");
        if (t && !json_is_string(t) && !json_is_null(t)) {
            err = bad("the document", "%s.line is not a string", sub);
            break;
        }
        rows[i].text = json_is_string(t) ? json_string_value(t) : "";
        if ((err = get_num(r, "n_cpu_percent_python", &rows[i].py, sub)) ||
            (err = get_num(r, "n_cpu_percent_c", &rows[i].nat, sub)) ||
            (err = get_num(r, "n_sys_percent", &rows[i].sys, sub)) ||
            (tp->gpu && (err = get_num(r, "n_gpu_percent", &rows[i].gpu_pct, sub))) ||
            (tp->gpu && (err = get_num(r, "n_gpu_peak_memory_mb", &rows[i].gpu_peak_mb, sub))) ||
            (tp->memory && (err = read_memory(r, &rows[i], sub))))
            break;
    }
    if (err) {
        free(rows);
        return err;
    }
    *out = rows;
    *n = cnt;
    return 0;
}

static int cmp_leak(const void *a, const void *b)
{
    const struct tleak *x = a, *y = b;
    if (x->likelihood != y->likelihood)
        return x->likelihood > y->likelihood ? -1 : 1;
    return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

/* "leaks": {"<lineno>": {"likelihood", "velocity_mb_s"}}, most likely first. */
static int read_leaks(const json_t *leaks, const char *ctx, struct tfile *tf)
{
    if (!leaks || json_is_null(leaks))
        return 0;
    if (!json_is_object(leaks))
        return bad("the document", "%s.leaks is not an object", ctx);
    tf->leaks = calloc(json_object_size(leaks) + 1, sizeof(*tf->leaks));
    if (!tf->leaks)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    const char *key;
    const json_t *v;
    char sub[700];
    json_object_foreach((json_t *)leaks, key, v)
    {
        snprintf(sub, sizeof(sub), "%s.leaks[\"%.20s\"]", ctx, key);
        char *end;
        long lineno = strtol(key, &end, 10);
        if (*end || end == key || lineno < 0 || !json_is_object(v))
            return bad("the document", "%s is not a line's leak", sub);
        struct tleak *l = &tf->leaks[tf->nleaks++];
        l->lineno = lineno;
        int err;
        if ((err = get_num(v, "likelihood", &l->likelihood, sub)) ||
            (err = get_num(v, "velocity_mb_s", &l->velocity, sub)))
            return err;
    }
    if (tf->nleaks > 1)
        qsort(tf->leaks, tf->nleaks, sizeof(*tf->leaks), cmp_leak);
    return 0;
}

static void free_tprof(struct tprof *tp)
{
    for (size_t i = 0; i < tp->nfiles; i++) {
        free(tp->files[i].lines);
        free(tp->files[i].funcs);
        free(tp->files[i].leaks);
    }
    free(tp->files);
}

static int cmp_row_lineno(const void *a, const void *b)
{
    const struct trow *x = a, *y = b;
    return x->lineno < y->lineno ? -1 : x->lineno > y->lineno;
}

static double row_total(const struct trow *r)
{
    return r->py + r->nat + r->sys;
}

static int cmp_row_total(const void *a, const void *b)
{
    const struct trow *x = a, *y = b;
    double tx = row_total(x), ty = row_total(y);
    if (tx != ty)
        return tx > ty ? -1 : 1;
    return cmp_row_lineno(a, b);
}

static int cmp_file(const void *a, const void *b)
{
    const struct tfile *x = a, *y = b;
    if (x->first != y->first)
        return x->first ? -1 : 1;
    if (x->pct != y->pct)
        return x->pct > y->pct ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int load(const json_t *root, struct tprof *tp)
{
    memset(tp, 0, sizeof(*tp));
    if (!json_is_object(root))
        return bad("the document", "it is not a JSON object");
    tp->memory = json_is_true(json_object_get(root, "memory"));
    tp->gpu = json_is_true(json_object_get(root, "gpu"));
    int err;
    if (tp->memory &&
        ((err = get_num(root, "max_footprint_mb", &tp->max_footprint_mb, "the document")) ||
         (err = get_num(root, "growth_rate", &tp->growth_rate, "the document")) ||
         (err = get_num(root, "native_allocations_mb", &tp->native_mb, "the document")) ||
         (err = get_samples(root, "samples", &tp->samples, "the document"))))
        return err;
    const json_t *files = json_object_get(root, "files");
    if (!files || json_is_null(files))
        return 0;
    if (!json_is_object(files))
        return bad("the document", "\"files\" is not an object");
    tp->files = calloc(json_object_size(files) + 1, sizeof(*tp->files));
    if (!tp->files)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    const char *name;
    const json_t *f;
    char ctx[600];
    json_object_foreach((json_t *)files, name, f)
    {
        snprintf(ctx, sizeof(ctx), "files[\"%.400s\"]", name);
        if (!json_is_object(f))
            return bad("the document", "%s is not an object", ctx);
        struct tfile *tf = &tp->files[tp->nfiles++];
        tf->name = name;
        err = get_num(f, "percent_cpu_time", &tf->pct, ctx);
        char sub[700];
        snprintf(sub, sizeof(sub), "%s.lines", ctx);
        if (!err)
            err = read_rows(json_object_get(f, "lines"), sub, tp, &tf->lines,
                            &tf->nlines);
        snprintf(sub, sizeof(sub), "%s.functions", ctx);
        if (!err)
            err = read_rows(json_object_get(f, "functions"), sub, tp, &tf->funcs,
                            &tf->nfuncs);
        for (size_t i = 0; !err && i < tf->nlines; i++)
            tp->held |= tf->lines[i].has_held;
        if (!err && tp->memory)
            err = read_leaks(json_object_get(f, "leaks"), ctx, tf);
        if (err)
            return err;
        if (tf->nlines > 1)
            qsort(tf->lines, tf->nlines, sizeof(*tf->lines), cmp_row_lineno);
        if (tf->nfuncs > 1)
            qsort(tf->funcs, tf->nfuncs, sizeof(*tf->funcs), cmp_row_total);
    }
    const char *first = json_string_value(json_object_get(root, "first_file"));
    for (size_t i = 0; first && i < tp->nfiles; i++)
        tp->files[i].first = strcmp(tp->files[i].name, first) == 0;
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

/* Up to `points` bars (▁ to █) of the footprints of a [[ns, MB], ...] timeline, scaled to
 * [0, max]; longer timelines are cut into `points` runs, each shown by its largest value (a
 * peak never disappears). Returns the number of bars written. */
static size_t add_spark(struct strbuf *sb, const json_t *samples, size_t points, double max)
{
    static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    size_t n = json_array_size(samples), k = n < points ? n : points;
    for (size_t i = 0; i < k; i++) {
        double v = 0;
        for (size_t j = i * n / k; j < (i + 1) * n / k; j++) {
            double x = json_number_value(json_array_get(json_array_get(samples, j), 1));
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
 * left, then what it kept until the end. A timeline whose times are not numbers (not scry's)
 * falls back to bars by point. Returns the number of bars written. */
static size_t add_spark_time(struct strbuf *sb, const json_t *samples, size_t points, double max,
                             double t_end)
{
    static const char *const bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    size_t n = json_array_size(samples);
    for (size_t j = 0; j < n; j++) {
        const json_t *t = json_array_get(json_array_get(samples, j), 0);
        if (!json_is_number(t))
            return add_spark(sb, samples, points, max);
        if (json_number_value(t) > t_end)
            t_end = json_number_value(t);
    }
    if (n == 0 || !(t_end > 0))
        return add_spark(sb, samples, points, max);
    size_t j = 0;
    double held = 0; /* the value at the start of the current bar */
    for (size_t i = 0; i < points; i++) {
        double hi = t_end * (double)(i + 1) / (double)points, v = held;
        /* Points inside the bar (the last bar takes the points at t_end too). */
        for (; j < n; j++) {
            const json_t *pt = json_array_get(samples, j);
            double t = json_number_value(json_array_get(pt, 0));
            if (t >= hi && i + 1 < points)
                break;
            held = json_number_value(json_array_get(pt, 1));
            if (held > v)
                v = held;
        }
        int level = max > 0 ? (int)(v / max * 7 + 0.5) : 0;
        sb_adds(sb, bars[level < 0 ? 0 : level > 7 ? 7 : level]);
    }
    return points;
}

static void add_memory_cells(struct strbuf *sb, const struct tprof *tp, const struct trow *r)
{
    char py[16] = "", net[16], peak[16], use[16], copy[16] = "";
    if (r->malloc_mb > 0)
        snprintf(py, sizeof(py), "%.0f%%", r->pyfrac * 100);
    size_cell(net, sizeof(net), r->growth_mb);
    size_cell(peak, sizeof(peak), r->peak_mb);
    pct_cell(use, sizeof(use), r->usage * 100);
    if (r->copy_mb_s >= 0.5)
        snprintf(copy, sizeof(copy), "%.0f", r->copy_mb_s);
    sb_addf(sb, " %6s │ %6s │ %6s │ ", py, net, peak);
    if (tp->held) {
        char held[16] = "";
        if (r->has_held)
            size_cell(held, sizeof(held), r->held_mb);
        sb_addf(sb, "%6s │ ", held);
    }
    /* The bars are 3 bytes each but one column wide: pad by hand. */
    size_t bars = add_spark(sb, r->samples, SPARK_ROW, tp->max_footprint_mb);
    sb_addf(sb, "%*s %4s │ %6s │", (int)(SPARK_ROW - bars), "", use, copy);
}

static bool hot(const struct tprof *tp, const struct trow *r)
{
    return row_total(r) >= PROFILE_TEXT_HOT_PERCENT ||
           (tp->memory && r->usage >= HOT_USAGE_FRACTION);
}

static void add_row(struct strbuf *sb, const struct profile_text_opts *o, const struct tprof *tp,
                    const char *label, const struct trow *r)
{
    char py[16], nat[16], sys[16];
    pct_cell(py, sizeof(py), r->py);
    pct_cell(nat, sizeof(nat), r->nat);
    pct_cell(sys, sizeof(sys), r->sys);
    bool is_hot = o->color && hot(tp, r);
    if (is_hot)
        sb_adds(sb, HOT);
    sb_addf(sb, "%6s │ %6s │ %6s │ %6s │", label, py, nat, sys);
    if (tp->gpu) {
        char gpu[16], gmem[16];
        pct_cell(gpu, sizeof(gpu), r->gpu_pct);
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
static bool shown(const struct tprof *tp, const struct trow *r, double threshold)
{
    return row_total(r) >= threshold || (tp->gpu && r->gpu_pct >= threshold) ||
           (tp->memory && ((r->usage > 0 && r->usage * 100 >= threshold &&
                            r->malloc_mb >= tp->malloc_min_mb) ||
                           r->copy_mb_s >= 0.5));
}

static bool file_shown(const struct tprof *tp, const struct tfile *f, double threshold)
{
    if (f->pct >= threshold)
        return true;
    for (size_t i = 0; tp->memory && i < f->nlines; i++)
        if (shown(tp, &f->lines[i], threshold))
            return true;
    return false;
}

static void add_file(struct strbuf *sb, const struct profile_text_opts *o, const struct tprof *tp,
                     const struct tfile *f, double sampled_sec)
{
    if (o->color)
        sb_adds(sb, BOLD);
    add_display(sb, f->name);
    sb_addf(sb, ": %.1f%% of the time", f->pct);
    if (sampled_sec > 0)
        sb_addf(sb, " (%.3f s of %.3f s sampled)", f->pct * sampled_sec / 100, sampled_sec);
    if (o->color)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');

    size_t nshown = 0;
    for (size_t i = 0; i < f->nlines; i++)
        nshown += shown(tp, &f->lines[i], o->threshold);
    if (nshown == 0) {
        sb_addf(sb, "(no line reaches %g%% of the time)\n", o->threshold);
    } else {
        add_header(sb, o, tp, "source");
        long prev = 0; /* last line number printed */
        bool printed = false;
        for (size_t i = 0; i < f->nlines; i++) {
            const struct trow *r = &f->lines[i];
            if (!shown(tp, r, o->threshold))
                continue;
            if ((printed && r->lineno > prev + 1) || (!printed && r->lineno > 1))
                add_gap(sb, o, tp);
            char label[24];
            snprintf(label, sizeof(label), "%ld", r->lineno);
            add_row(sb, o, tp, label, r);
            prev = r->lineno;
            printed = true;
        }
        if (f->nlines && f->lines[f->nlines - 1].lineno > prev)
            add_gap(sb, o, tp);
    }
    for (size_t i = 0; i < f->nleaks; i++)
        sb_addf(sb, "Possible memory leak at line %ld (likelihood %.0f%%, velocity %.2f MB/s)\n",
                f->leaks[i].lineno, f->leaks[i].likelihood * 100, f->leaks[i].velocity);

    size_t nf = 0;
    for (size_t i = 0; i < f->nfuncs; i++)
        nf += shown(tp, &f->funcs[i], o->threshold);
    if (nf) {
        sb_addch(sb, '\n');
        sb_adds(sb, "function summary for ");
        add_display(sb, f->name);
        sb_addch(sb, '\n');
        add_header(sb, o, tp, "function");
        for (size_t i = 0; i < f->nfuncs; i++) {
            if (!shown(tp, &f->funcs[i], o->threshold))
                continue;
            char label[24];
            snprintf(label, sizeof(label), "%ld", f->funcs[i].lineno);
            add_row(sb, o, tp, label, &f->funcs[i]);
        }
    }
    sb_addch(sb, '\n');
}

/* Scalene's title line: the whole program's footprint over the run. */
static void add_memory_usage(struct strbuf *sb, const struct tprof *tp, double elapsed_sec)
{
    sb_adds(sb, "Memory usage: ");
    if (add_spark_time(sb, tp->samples, SPARK_PROGRAM, tp->max_footprint_mb, elapsed_sec * 1e9))
        sb_addch(sb, ' ');
    sb_addf(sb, "(max: %.2f MB, growth rate: %.0f%%", tp->max_footprint_mb, tp->growth_rate);
    if (tp->native_mb > 0)
        sb_addf(sb, ", %.2f MB from native threads", tp->native_mb);
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

int profile_text_render(const json_t *root, const struct profile_text_opts *o, struct strbuf *out)
{
    struct tprof tp;
    int err = load(root, &tp);
    if (err) {
        free_tprof(&tp);
        return err;
    }
    tp.malloc_min_mb = o->malloc_threshold_mb;
    double elapsed, sampled, profiled, rate, n_samples, processes;
    if ((err = get_num(root, "elapsed_time_sec", &elapsed, "the document")) ||
        (err = get_num(root, "sampled_time_sec", &sampled, "the document")) ||
        (err = get_num(root, "profiled_time_sec", &profiled, "the document")) ||
        (err = get_num(root, "cpu_sampling_rate", &rate, "the document")) ||
        (err = get_num(root, "n_samples", &n_samples, "the document")) ||
        (err = get_num(root, "processes", &processes, "the document"))) {
        free_tprof(&tp);
        return err;
    }
    const json_t *note = json_object_get(root, "note");
    const char *program = json_string_value(json_object_get(root, "program"));

    if (program && *program) {
        sb_adds(out, "profile of ");
        add_display(out, program);
        const json_t *args = json_object_get(root, "args");
        for (size_t i = 0; json_is_array(args) && i < json_array_size(args); i++) {
            const char *a = json_string_value(json_array_get(args, i));
            if (a) {
                sb_addch(out, ' ');
                add_display(out, a);
            }
        }
        const char *ver = json_string_value(json_object_get(root, "python_version"));
        if (ver) {
            sb_adds(out, " (Python ");
            add_display(out, ver);
            sb_addch(out, ')');
        }
        sb_adds(out, "\n\n");
    }

    if (tp.nfiles > 0 && sampled > 0) {
        /* What every share below is of: a share of a total that left time out would mislead. */
        const json_t *vt = json_object_get(root, "use_virtual_time");
        sb_addf(out, "shares of the time are of %.3f s sampled (every thread of every process, %s)",
                sampled, json_is_true(vt) ? "CPU time only" : "on and off the CPU");
        if (elapsed > 0)
            sb_addf(out, "; the program ran %.3f s", elapsed);
        /* Profiled only part of the time (--off, scry.stop(), scry control, optional key). */
        double off = json_number_value(json_object_get(root, "profiling_off_sec"));
        if (off > 0)
            sb_addf(out, ", %.3f s of it with profiling off", off);
        sb_adds(out, "\n\n");
    }
    if (json_is_true(json_object_get(root, "oversubscribed"))) {
        double delay, ran;
        if ((err = get_num(root, "run_queue_delay_sec", &delay, "the document")) ||
            (err = get_num(root, "run_queue_cpu_sec", &ran, "the document"))) {
            free_tprof(&tp);
            return err;
        }
        if (o->color)
            sb_adds(out, BOLD);
        sb_adds(out, "warning: ");
        profile_text_oversubscribed(out, delay, ran);
        sb_adds(out, "\n\n");
        if (o->color)
            sb_adds(out, RESET);
    }
    if (tp.gpu) {
        /* The device, and where the figures come from (docs/gpu.md). */
        const char *dev = json_string_value(json_object_get(root, "gpu_device"));
        const char *us = json_string_value(json_object_get(root, "gpu_utilization_source"));
        const char *ms = json_string_value(json_object_get(root, "gpu_memory_source"));
        sb_adds(out, "GPU: ");
        add_display(out, dev && *dev ? dev : "GPU");
        sb_addf(out, "; utilisation %s, memory %s\n\n",
                us && !strcmp(us, "process") ? "of this program's processes"
                                             : "of the whole device (other programs included)",
                ms && !strcmp(ms, "process") ? "of this program's processes"
                                             : "the device's growth since the start");
    }
    if (tp.memory)
        add_memory_usage(out, &tp, elapsed);
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
    if (json_object_get(root, "n_samples"))
        sb_addf(out, ", %.0f samples", n_samples);
    if (json_object_get(root, "processes"))
        sb_addf(out, ", %.0f process%s", processes, processes == 1 ? "" : "es");
    if (rate > 0) {
        const json_t *vt = json_object_get(root, "use_virtual_time");
        sb_addf(out, "; sampled every %g s on average (%s)", rate,
                json_is_true(vt) ? "CPU time only" : "wall clock");
    }
    sb_addch(out, '\n');
    if (sampled > 0 && json_object_get(root, "profiled_time_sec") && tp.nfiles > 0 &&
        profiled < sampled * 0.99)
        sb_addf(out,
                "the profiled files took %.1f%% of the sampled time; the rest went to other "
                "files (\"excluded\" in the JSON; --profile-all profiles every file)\n",
                100 * profiled / sampled);
    if (tp.nfiles > 0 && json_object_get(root, "n_samples") && n_samples < 30)
        sb_addf(out,
                "only %.0f samples: the shares are rough; run the program longer or lower "
                "--cpu-sampling-rate\n",
                n_samples);
    if (json_is_string(note)) {
        if (o->color)
            sb_adds(out, BOLD);
        sb_adds(out, "note: ");
        add_display(out, json_string_value(note));
        if (o->color)
            sb_adds(out, RESET);
        sb_addch(out, '\n');
    } else if (tp.nfiles == 0) {
        sb_adds(out, "note: the profile holds no files: nothing was recorded\n");
    }
    const json_t *gnote = json_object_get(root, "gpu_note");
    if (json_is_string(gnote)) {
        sb_adds(out, "note: ");
        add_display(out, json_string_value(gnote));
        sb_addch(out, '\n');
    }
    free_tprof(&tp);
    return 0;
}

int profile_text_render_bytes(const char *text, size_t len, const char *what,
                              const struct profile_text_opts *o, struct strbuf *out)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root)
        return err_fail(SCRY_E_BAD_PROFILE, "%s is not a profile: not JSON (line %d, column %d: %s)",
                        what, jerr.line, jerr.column, jerr.text);
    int err = profile_text_render(root, o, out);
    json_decref(root);
    const char *msg = err_last_message();
    if (err == -SCRY_E_BAD_PROFILE && strncmp(msg, "the document ", 13) == 0) {
        /* Name the file rather than "the document". */
        char copy[1024];
        snprintf(copy, sizeof(copy), "%s", msg + 13);
        err = err_fail(SCRY_E_BAD_PROFILE, "%s %s", what, copy);
    }
    return err;
}
