/* `scry top --pid PID`: a live view of a running Python process, in the manner of py-spy top,
 * with scry's split of the time: each function's own time (at the first profiled frame of the
 * stack) and total time (anywhere on it, once per sample), as python, native and system, per
 * thread for the filter, with the GIL's holder and the process's RSS. The samples are
 * record/sampling.c's, the same as `scry record --pid` takes (docs/top.md). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/sanitize.h"
#include "common/strbuf.h"
#include "platform/proc_info.h"
#include "record/sampling.h"

const char cmd_top_usage[] =
    "usage: scry top --pid PID [options]\n"
    "\n"
    "A live view of a running Python process, like top: the functions that take its time, with\n"
    "each one's own time (where the program is) and total time (with what it calls) split into\n"
    "python, native and system, the GIL's holder, the threads, and the process's RSS and its\n"
    "growth. It samples from outside as scry record does (nothing is loaded into the process).\n"
    "In a terminal it redraws every --interval and takes keys (docs/top.md):\n"
    "  1-8, left, right  sort by that column      l  functions or lines\n"
    "  t                 the next thread          r  reset the counts\n"
    "  space, p          pause or resume          q  quit\n"
    "When standard output is not a terminal it prints a screen every interval, without colour\n"
    "or escapes, separated by a blank line.\n"
    "\n";

#define ONCE_SECONDS 2.5
#define MIN_FUNC_WIDTH 16 /* columns are dropped before the function gets narrower */
#define HEADER_LINES 5    /* the header and the blank line under it, before the table */
#define HEADER_MAX_WIDTH 4096 /* a header line on a pipe of no known width (a long argv) */

/* The table's columns, in screen order; the keys 1-8 sort by the n-th. */
enum { C_OWN, C_TOTAL, C_PY, C_NAT, C_SYS, C_OWNTIME, C_TOTALTIME, C_NAME, C__COUNT };
static const struct {
    const char *title, *key; /* the heading; --sort's name */
    int width;               /* with its leading space; the name takes the rest */
    int drop;                /* dropped in this order when the terminal is narrow (0: never) */
} cols[C__COUNT] = {
    {"%Own", "own", 6, 0},       {"%Total", "total", 7, 3},      {"Py%", "python", 5, 6},
    {"Nat%", "native", 5, 5},    {"Sys%", "system", 5, 4},       {"OwnTime", "owntime", 9, 2},
    {"TotalTime", "totaltime", 10, 1}, {"Function (file:line)", "name", 0, 0},
};

struct top_opts {
    int pid;
    struct smp_opts s;
    double interval;
    bool once, lines, no_color;
    int sort;
    const char *thread;
};

/* One thread of one of the processes: its time, for the denominators and the filter. */
struct top_thread {
    struct smp_proc *pr;
    int64_t tid;
    double time, mark; /* seconds counted (sampled time, by the totals' rule); at the last screen */
    double win;        /* between the last two screens (not paused) */
    uint64_t gil;      /* samples in which it held the GIL */
};

/* One function (line -1) or line of one thread. */
struct top_row {
    size_t thread;
    uint32_t func;
    int32_t line;
    double own[3], total;
    double own_mark, total_mark; /* own and total at the last screen */
    double own_win, total_win;   /* between the last two screens (not paused) */
    uint64_t seen;               /* the sample that last counted it in total (once per sample) */
};

/* A row of the screen: the rows of the selected threads with one function (or line). */
struct top_disp {
    struct smp_proc *pr;
    uint32_t func;
    int32_t line;
    double own[3], own_sum, total, own_win, total_win;
};

struct top {
    const struct top_opts *o;
    struct smp_set *set;
    const struct smp_program *pg;
    struct top_thread *threads;
    size_t nthreads, cap_threads;
    json_t *row_idx; /* "thread:func:line" -> index */
    struct top_row *rows;
    size_t nrows, cap_rows;
    uint64_t samples, rounds, last_ticks;
    uint64_t start_ns, active_ns, last_tick_ns, last_screen_ns;
    double rss0, rss_last, rss_last_t; /* bytes; at the start (or reset) and the last screen */
    double rss, rss_rate, rss_rate_all, rss_dt; /* bytes, bytes/s, bytes/s, s */
    bool have_rss;
    /* The view. */
    int sort;
    bool lines, paused, quit, dirty, term, color;
    uint64_t frames;
    long thread_sel; /* -1: all, else an index in threads */
    int width, height, header_width; /* header_width: 0, or HEADER_MAX_WIDTH on a pipe */
    struct strbuf screen;
};

static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
    (void)sig;
    winch = 1;
}

/* ---- options ---- */

static int parse(int argc, char **argv, struct top_opts *o, bool *help)
{
    memset(o, 0, sizeof(*o));
    smp_opts_init(&o->s);
    o->interval = 1;
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_TOP, argc, argv, OP_STOP_AT_OPERAND);
    int c;
    while ((c = opt_next(&p)) > 0) {
        if (smp_parse_option(c, &p, &o->s, &o->pid))
            continue;
        switch (c) {
        case OPT_ONCE:
            o->once = true;
            break;
        case OPT_INTERVAL:
            o->interval = p.num;
            break;
        case OPT_SORT:
            o->sort = -1;
            for (int k = 0; k < C__COUNT; k++)
                if (!strcmp(p.arg, cols[k].key))
                    o->sort = k;
            if (o->sort < 0)
                return opt_bad_value(&p);
            break;
        case OPT_LINES:
            o->lines = true;
            break;
        case OPT_THREAD:
            o->thread = p.arg;
            break;
        case OPT_NO_COLOR:
            o->no_color = true;
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
    if (!o->pid)
        return cli_usage("scry top needs --pid PID");
    if (o->once && o->s.duration == 0)
        o->s.duration = ONCE_SECONDS;
    return 0;
}

/* ---- counting ---- */

static struct top_thread *thread_of(struct top *t, struct smp_proc *pr, int64_t tid, size_t *at)
{
    for (size_t i = 0; i < t->nthreads; i++)
        if (t->threads[i].pr == pr && t->threads[i].tid == tid) {
            *at = i;
            return &t->threads[i];
        }
    if (grow_array(&t->threads, &t->cap_threads, t->nthreads + 1, sizeof(*t->threads)))
        return NULL;
    *at = t->nthreads;
    t->threads[t->nthreads] = (struct top_thread){.pr = pr, .tid = tid};
    return &t->threads[t->nthreads++];
}

static struct top_row *row_of(struct top *t, size_t thread, uint32_t func, int32_t line)
{
    char key[64];
    snprintf(key, sizeof(key), "%zu:%u:%d", thread, func, line);
    json_t *v = json_object_get(t->row_idx, key);
    if (v)
        return &t->rows[json_integer_value(v)];
    if (grow_array(&t->rows, &t->cap_rows, t->nrows + 1, sizeof(*t->rows)) ||
        json_object_set_new(t->row_idx, key, json_integer((json_int_t)t->nrows)))
        return NULL;
    t->rows[t->nrows] = (struct top_row){.thread = thread, .func = func, .line = line};
    return &t->rows[t->nrows++];
}

/* Own time at the first profiled frame (its function, and its line); total time once per
 * sample for each function and each line on the stack. */
static int top_sample(void *ctx, struct smp_proc *pr, const struct smp_sample *s)
{
    struct top *t = ctx;
    if (t->paused)
        return 0;
    size_t ti;
    struct top_thread *th = thread_of(t, pr, s->thread->tid, &ti);
    if (!th)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    t->samples++;
    if (s->thread->holds_gil)
        th->gil++;
    double sec = s->cpu + s->off;
    /* The totals' rule (scry record's): off-CPU time with none of your code only with --idle. */
    th->time += s->nprof || t->o->s.idle ? sec : s->cpu;
    if (s->nprof == 0)
        return 0;
    for (int per_line = 0; per_line < 2; per_line++) {
        int32_t line = per_line ? (int32_t)s->fr[0][2] : -1;
        struct top_row *r = row_of(t, ti, s->fr[0][1], line);
        if (!r)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        r->own[s->cpu_cat] += s->cpu;
        r->own[SMP_SYS] += s->off;
        for (size_t k = 0; k < s->nprof; k++) {
            line = per_line ? (int32_t)s->fr[k][2] : -1;
            if (!(r = row_of(t, ti, s->fr[k][1], line)))
                return err_fail(SCRY_E_NO_MEMORY, "out of memory");
            if (r->seen != t->samples) { /* recursion: once per sample */
                r->seen = t->samples;
                r->total += sec;
            }
        }
    }
    return 0;
}

/* r: the counts start again; the thread filter stays. */
static void reset(struct top *t)
{
    json_object_clear(t->row_idx);
    t->nrows = 0;
    if (t->thread_sel >= 0) {
        struct top_thread keep = t->threads[t->thread_sel];
        t->threads[0] = (struct top_thread){.pr = keep.pr, .tid = keep.tid};
        t->nthreads = 1;
        t->thread_sel = 0;
    } else {
        t->nthreads = 0;
    }
    t->samples = t->rounds = 0;
    t->active_ns = 0;
    t->have_rss = false;
}

/* ---- the process's memory ---- */

/* The RSS of every process still sampled, and its growth since the last screen and since the
 * start (or the last reset). */
static void read_rss(struct top *t, uint64_t now)
{
    double rss = 0;
    bool any = false;
    for (size_t i = 0; i < t->set->n; i++) {
        if (t->set->procs[i]->ended)
            continue;
        double r = pf_process_rss(t->set->procs[i]->pid);
        if (r >= 0) {
            rss += r;
            any = true;
        }
    }
    if (!any)
        return;
    double sec = (double)now / 1e9;
    if (!t->have_rss) {
        t->rss0 = t->rss_last = rss;
        t->rss_last_t = sec;
        t->have_rss = true;
        t->rss_rate = t->rss_rate_all = t->rss_dt = 0;
    } else {
        double dt = sec - t->rss_last_t;
        double all = sec - (double)t->start_ns / 1e9;
        if (dt > 0) {
            t->rss_rate = (rss - t->rss_last) / dt;
            t->rss_dt = dt;
        }
        if (all > 0)
            t->rss_rate_all = (rss - t->rss0) / all;
        t->rss_last = rss;
        t->rss_last_t = sec;
    }
    t->rss = rss;
}

/* ---- the screen ---- */

/* Appends s cleaned (common/sanitize.h), at most width columns (one per character): a longer
 * text ends in "~". Returns the columns taken. */
static int add_fit(struct strbuf *sb, const char *s, int width)
{
    int cols_used = 0;
    size_t n = strlen(s);
    size_t total = 0;
    for (size_t i = 0; i < n;) {
        const char *repl;
        i += san_next(s + i, n - i, &repl);
        total++;
    }
    for (size_t i = 0; i < n && cols_used < width;) {
        const char *repl;
        size_t k = san_next(s + i, n - i, &repl);
        if ((int)total > width && cols_used == width - 1) {
            sb_addch(sb, '~');
            return width;
        }
        if (repl)
            sb_adds(sb, repl);
        else
            sb_add(sb, s + i, k);
        i += k;
        cols_used++;
    }
    return cols_used;
}

/* One line of the screen: text fitted to the width, then the end of the line. */
static void screen_line(struct top *t, const char *text, const char *style)
{
    if (style && t->color)
        sb_adds(&t->screen, style);
    add_fit(&t->screen, text, t->width);
    if (style && t->color)
        sb_adds(&t->screen, "\x1b[0m");
    sb_adds(&t->screen, t->term ? "\x1b[K\r\n" : "\n");
}

static bool thread_selected(const struct top *t, size_t i)
{
    return t->thread_sel < 0 || (size_t)t->thread_sel == i;
}

static const char *thread_name(const struct top_thread *th)
{
    for (size_t i = 0; i < th->pr->nthreads; i++)
        if (th->pr->threads[i].tid == th->tid)
            return th->pr->threads[i].name;
    return "";
}

static double disp_value(const struct top_disp *d, int col, bool window)
{
    switch (col) {
    case C_OWN:
        return window ? d->own_win : d->own_sum;
    case C_TOTAL:
        return window ? d->total_win : d->total;
    case C_PY:
        return d->own[SMP_PYTHON];
    case C_NAT:
        return d->own[SMP_NATIVE];
    case C_SYS:
        return d->own[SMP_SYS];
    case C_OWNTIME:
        return d->own_sum;
    default:
        return d->total;
    }
}

static const char *func_name(const struct smp_proc *pr, uint32_t func)
{
    return json_string_value(json_array_get(json_array_get(pr->funcs, func), 0));
}

static int sort_col;

static int cmp_disp(const void *a, const void *b)
{
    const struct top_disp *x = a, *y = b;
    if (sort_col == C_NAME) {
        int c = strcmp(func_name(x->pr, x->func), func_name(y->pr, y->func));
        if (c)
            return c;
        return (x->line > y->line) - (x->line < y->line);
    }
    double u = disp_value(x, sort_col, true), v = disp_value(y, sort_col, true);
    if (u != v)
        return (u < v) - (u > v);
    u = x->own_sum;
    v = y->own_sum;
    if (u != v)
        return (u < v) - (u > v);
    return (x->total < y->total) - (x->total > y->total);
}

/* The rows of the selected threads merged per function (or line) of each process. */
static int gather(struct top *t, struct top_disp **out, size_t *n)
{
    json_t *idx = json_object();
    struct top_disp *d = NULL;
    size_t nd = 0, cap = 0;
    int err = 0;
    if (!idx)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < t->nrows; i++) {
        struct top_row *r = &t->rows[i];
        if ((r->line >= 0) != t->lines || !thread_selected(t, r->thread))
            continue;
        struct smp_proc *pr = t->threads[r->thread].pr;
        char key[96];
        snprintf(key, sizeof(key), "%p:%u:%d", (void *)pr, r->func, r->line);
        json_t *v = json_object_get(idx, key);
        size_t k;
        if (v) {
            k = (size_t)json_integer_value(v);
        } else {
            if (grow_array(&d, &cap, nd + 1, sizeof(*d)) ||
                json_object_set_new(idx, key, json_integer((json_int_t)nd))) {
                err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
                break;
            }
            k = nd++;
            d[k] = (struct top_disp){.pr = pr, .func = r->func, .line = r->line};
        }
        double own = r->own[0] + r->own[1] + r->own[2];
        for (int c = 0; c < 3; c++)
            d[k].own[c] += r->own[c];
        d[k].own_sum += own;
        d[k].total += r->total;
        d[k].own_win += r->own_win;
        d[k].total_win += r->total_win;
    }
    json_decref(idx);
    if (err) {
        free(d);
        return err;
    }
    sort_col = t->sort;
    if (nd > 1)
        qsort(d, nd, sizeof(*d), cmp_disp);
    *out = d;
    *n = nd;
    return 0;
}

static void fmt_bytes(char *buf, size_t size, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double a = fabs(b);
    while (a >= 1024 && u < 4) {
        a /= 1024;
        b /= 1024;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void header(struct top *t)
{
    struct smp_proc *p0 = t->set->procs[0];
    struct strbuf line = STRBUF_INIT;
    int width = t->width; /* on a pipe of no known width, the header whole (holder, program) */
    t->width = t->header_width ? t->header_width : width;
    /* Line 1: the process. */
    sb_addf(&line, "scry top - process %d (Python %s", p0->pid, p0->rt.version_str);
    if (p0->rt.layout.free_threaded)
        sb_adds(&line, ", free-threaded");
    sb_adds(&line, ")");
    if (t->set->n > 1)
        sb_addf(&line, " and %zu child process%s", t->set->n - 1, t->set->n > 2 ? "es" : "");
    sb_adds(&line, ":");
    if (t->pg->program[0]) { /* the script (or module) and its arguments */
        sb_addf(&line, " %s", t->pg->program);
        for (size_t i = 0; i < t->pg->nargs; i++)
            sb_addf(&line, " %s", t->pg->args[i]);
    } else {
        for (size_t i = 0; i < json_array_size(p0->argv); i++)
            sb_addf(&line, " %s", json_string_value(json_array_get(p0->argv, i)));
    }
    screen_line(t, sb_str(&line), "\x1b[1m");
    sb_reset(&line);
    /* Line 2: samples, threads, the GIL. */
    size_t active = 0, total = 0;
    const char *holder = NULL;
    for (size_t i = 0; i < t->set->n; i++) {
        const struct smp_proc *pr = t->set->procs[i];
        for (size_t k = 0; !pr->ended && k < pr->nthreads; k++) {
            const struct smp_thread *th = &pr->threads[k];
            if (!th->seen)
                continue;
            total++;
            active += th->running;
            if (th->holds_gil && !holder)
                holder = th->name[0] ? th->name : "(unnamed)";
        }
    }
    uint64_t gil = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        if (thread_selected(t, i))
            gil += t->threads[i].gil;
    sb_addf(&line, "Samples: %llu  Duration: %.1f s  Threads: %zu active / %zu  ",
            (unsigned long long)t->samples, (double)t->active_ns / 1e9, active, total);
    if (p0->rt.layout.free_threaded)
        sb_adds(&line, "GIL: none (free-threaded)");
    else
        sb_addf(&line, "GIL held: %.0f%%  holder: %s",
                t->rounds ? 100.0 * (double)gil / (double)t->rounds : 0.0,
                holder ? holder : "none");
    screen_line(t, sb_str(&line), NULL);
    sb_reset(&line);
    /* Line 3: memory. */
    char a[32], b[32], c[32];
    if (t->have_rss) {
        fmt_bytes(a, sizeof(a), t->rss);
        fmt_bytes(b, sizeof(b), t->rss_rate);
        fmt_bytes(c, sizeof(c), t->rss_rate_all);
        sb_addf(&line, "RSS: %s  growth: %s%s/s over %.1f s, %s%s/s since the start", a,
                t->rss_rate >= 0 ? "+" : "", b, t->rss_dt, t->rss_rate_all >= 0 ? "+" : "", c);
    } else {
        sb_adds(&line, "RSS: unknown");
    }
    screen_line(t, sb_str(&line), NULL);
    sb_reset(&line);
    /* Line 4: the view. */
    sb_addf(&line, "Sort: %s  View: %s  Thread: ", cols[t->sort].title,
            t->lines ? "lines" : "functions");
    if (t->thread_sel < 0) {
        sb_adds(&line, "all");
    } else {
        const struct top_thread *th = &t->threads[t->thread_sel];
        sb_addf(&line, "%lld %s", (long long)th->tid, thread_name(th));
    }
    if (t->paused)
        sb_adds(&line, "  [paused]");
    if (t->term)
        sb_adds(&line, "  (1-8 sort, l lines, t thread, r reset, p pause, q quit)");
    screen_line(t, sb_str(&line), t->paused ? "\x1b[33m" : NULL);
    screen_line(t, "", NULL);
    sb_release(&line);
    t->width = width;
}

/* The columns that fit: the name's at least MIN_FUNC_WIDTH, narrow terminals drop the others
 * in their drop order. */
static void fit_columns(const struct top *t, bool *shown)
{
    int used = 0;
    for (int c = 0; c < C_NAME; c++) {
        shown[c] = true;
        used += cols[c].width;
    }
    shown[C_NAME] = true;
    for (int drop = 1; drop <= 6 && used + 2 + MIN_FUNC_WIDTH > t->width; drop++)
        for (int c = 0; c < C_NAME; c++)
            if (cols[c].drop == drop) {
                shown[c] = false;
                used -= cols[c].width;
            }
}

static void cell_pct(struct strbuf *sb, int width, int decimals, double part, double whole)
{
    if (whole > 0)
        sb_addf(sb, "%*.*f", width, decimals, 100.0 * part / whole);
    else
        sb_addf(sb, "%*s", width, "-");
}

static void cell_time(struct strbuf *sb, int width, double sec)
{
    if (sec < 1000)
        sb_addf(sb, "%*.2fs", width - 1, sec);
    else
        sb_addf(sb, "%*.0fs", width - 1, sec);
}

/* The percentages' window: since the last screen; a paused view keeps the last one. */
static void advance_window(struct top *t)
{
    for (size_t i = 0; i < t->nrows; i++) {
        struct top_row *r = &t->rows[i];
        double own = r->own[0] + r->own[1] + r->own[2];
        r->own_win = own - r->own_mark;
        r->total_win = r->total - r->total_mark;
        r->own_mark = own;
        r->total_mark = r->total;
    }
    for (size_t i = 0; i < t->nthreads; i++) {
        struct top_thread *th = &t->threads[i];
        th->win = th->time - th->mark;
        th->mark = th->time;
    }
}

static int render(struct top *t, uint64_t now)
{
    if (!t->paused)
        advance_window(t);
    struct top_disp *d = NULL;
    size_t nd = 0;
    int err = gather(t, &d, &nd);
    if (err)
        return err;
    sb_reset(&t->screen);
    if (t->term)
        sb_adds(&t->screen, "\x1b[H");
    header(t);
    /* The denominators: the selected threads' time in the window (the percentages) and in
     * all (the split). */
    double win = 0;
    for (size_t i = 0; i < t->nthreads; i++)
        if (thread_selected(t, i))
            win += t->threads[i].win;
    bool shown[C__COUNT];
    fit_columns(t, shown);
    struct strbuf line = STRBUF_INIT;
    int used = 0;
    for (int c = 0; c < C_NAME; c++)
        if (shown[c]) {
            sb_addf(&line, "%*s", cols[c].width, cols[c].title);
            used += cols[c].width;
        }
    sb_addf(&line, "  %s", cols[C_NAME].title);
    screen_line(t, sb_str(&line), "\x1b[7m");
    /* The heading and the rows leave the last line empty: a line feed there would scroll. */
    int room = t->height - HEADER_LINES - 2;
    int name_width = t->width - used - 2;
    for (size_t i = 0; i < nd && (int)i < room; i++) {
        const struct top_disp *r = &d[i];
        sb_reset(&line);
        for (int c = 0; c < C_NAME; c++) {
            if (!shown[c])
                continue;
            int w = cols[c].width;
            if (c == C_OWN)
                cell_pct(&line, w, 1, r->own_win, win);
            else if (c == C_TOTAL)
                cell_pct(&line, w, 1, r->total_win, win);
            else if (c <= C_SYS)
                cell_pct(&line, w, 0, disp_value(r, c, false), r->own_sum);
            else
                cell_time(&line, w, disp_value(r, c, false));
        }
        sb_adds(&line, "  ");
        json_t *fn = json_array_get(r->pr->funcs, r->func);
        const char *file = json_string_value(
            json_array_get(r->pr->files, (size_t)json_integer_value(json_array_get(fn, 1))));
        const char *base = file ? strrchr(file, '/') : NULL;
        char where[PATH_MAX + 64];
        snprintf(where, sizeof(where), "%s (%s:%lld)", json_string_value(json_array_get(fn, 0)),
                 base ? base + 1 : file ? file : "?",
                 (long long)(r->line >= 0 ? r->line : json_integer_value(json_array_get(fn, 2))));
        struct strbuf cell = STRBUF_INIT;
        add_fit(&cell, where, name_width > 0 ? name_width : 0);
        sb_adds(&line, sb_str(&cell)); /* already clean */
        sb_release(&cell);
        /* The line is clean (numbers and a cleaned name): fitted again only for the width. */
        add_fit(&t->screen, sb_str(&line), t->width);
        sb_adds(&t->screen, t->term ? "\x1b[K\r\n" : "\n");
    }
    if (nd == 0)
        screen_line(t, t->samples ? "(no function of your code in the samples: see --idle, "
                                    "--profile-all)"
                                  : "(no samples yet)",
                    NULL);
    if (t->term)
        sb_adds(&t->screen, "\x1b[J");
    sb_release(&line);
    free(d);
    if (!t->paused)
        t->last_screen_ns = now;
    return 0;
}

static void show(struct top *t)
{
    if (!t->term && t->frames++) /* screens on a pipe: a blank line between two */
        fputs("\n", stdout);
    fwrite(sb_str(&t->screen), 1, t->screen.len, stdout);
    fflush(stdout);
}

/* ---- the terminal ---- */

static struct termios saved_tio;
static bool tio_saved, alt_screen;

static void term_restore(void)
{
    if (alt_screen) {
        fputs("\x1b[?25h\x1b[?1049l", stdout);
        fflush(stdout);
        alt_screen = false;
    }
    if (tio_saved) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
        tio_saved = false;
    }
}

/* Keys without Enter or echo (signals kept: Ctrl-C ends top; Ctrl-Z is off, so that the
 * terminal is never left raw by a stopped top), the alternate screen, no cursor. */
static void term_enter(void)
{
    if (tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
        struct termios raw = saved_tio;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
#ifdef VSUSP
        raw.c_cc[VSUSP] = _POSIX_VDISABLE;
#endif
        if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0)
            tio_saved = true;
    }
    atexit(term_restore);
    fputs("\x1b[?1049h\x1b[?25l\x1b[H\x1b[J", stdout);
    fflush(stdout);
    alt_screen = true;
}

static void term_size(struct top *t)
{
    struct winsize ws;
    t->header_width = 0;
    t->width = 80;
    t->height = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        t->width = ws.ws_col;
        t->height = ws.ws_row > 0 ? ws.ws_row : 24;
    } else {
        const char *c = getenv("COLUMNS"), *l = getenv("LINES");
        long v;
        if (c && (v = strtol(c, NULL, 10)) > 0 && v < 10000)
            t->width = (int)v;
        else
            t->header_width = HEADER_MAX_WIDTH; /* no width known: the header is not cut */
        if (l && (v = strtol(l, NULL, 10)) > 0 && v < 10000)
            t->height = (int)v;
    }
    if (t->width < 20)
        t->width = 20;
    if (t->height < HEADER_LINES + 2)
        t->height = HEADER_LINES + 2;
}

static void next_thread(struct top *t)
{
    if (t->nthreads == 0)
        t->thread_sel = -1;
    else if (t->thread_sel + 1 >= (long)t->nthreads)
        t->thread_sel = -1;
    else
        t->thread_sel++;
}

/* The keys (docs/top.md). */
static void top_input(void *ctx)
{
    struct top *t = ctx;
    unsigned char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; i++) {
        unsigned char k = buf[i];
        if (k == 0x1b && i + 2 < n && buf[i + 1] == '[') {
            if (buf[i + 2] == 'C')
                t->sort = (t->sort + 1) % C__COUNT;
            else if (buf[i + 2] == 'D')
                t->sort = (t->sort + C__COUNT - 1) % C__COUNT;
            i += 2;
        } else if (k >= '1' && k <= '0' + C__COUNT) {
            t->sort = k - '1';
        } else if (k == 'q' || k == 'Q') {
            t->quit = true;
        } else if (k == ' ' || k == 'p' || k == 'P') {
            t->paused = !t->paused;
        } else if (k == 'r' || k == 'R') {
            reset(t);
            t->start_ns = t->last_screen_ns = smp_mono_ns();
        } else if (k == 'l' || k == 'L') {
            t->lines = !t->lines;
        } else if (k == 't' || k == 'T') {
            next_thread(t);
        } else {
            continue;
        }
        t->dirty = true;
    }
    if (n == 0) /* the terminal went away */
        t->quit = true;
}

/* --thread: the first thread with that native id or name, once it has been seen. */
static void match_thread(struct top *t)
{
    const char *want = t->o->thread;
    if (!want || t->thread_sel >= 0)
        return;
    char *end;
    long long tid = strtoll(want, &end, 10);
    bool numeric = *end == 0;
    for (size_t i = 0; i < t->nthreads; i++)
        if ((numeric && t->threads[i].tid == tid) || !strcmp(thread_name(&t->threads[i]), want)) {
            t->thread_sel = (long)i;
            return;
        }
}

/* After each round: the time, the GIL's rounds, and a screen when one is due. */
static int top_tick(void *ctx, const char **why)
{
    struct top *t = ctx;
    uint64_t now = smp_mono_ns();
    uint64_t ticks = 0;
    for (size_t i = 0; i < t->set->n; i++)
        ticks += t->set->procs[i]->ticks;
    if (!t->paused) {
        t->rounds += ticks - t->last_ticks;
        t->active_ns += now - t->last_tick_ns;
    }
    t->last_ticks = ticks;
    t->last_tick_ns = now;
    match_thread(t);
    if (t->quit) {
        *why = "quit";
        return 1;
    }
    if (winch) {
        winch = 0;
        term_size(t);
        t->dirty = true;
    }
    if (t->o->once)
        return 0;
    bool due = now - t->last_screen_ns >= (uint64_t)(t->o->interval * 1e9);
    if (t->dirty || (due && !t->paused)) {
        if (!t->paused || !t->have_rss)
            read_rss(t, now);
        int err = render(t, now);
        if (err)
            return err;
        show(t);
        t->dirty = false;
    }
    return 0;
}

int cmd_top(int argc, char **argv)
{
    struct top_opts o;
    bool help;
    int parsed = parse(argc, argv, &o, &help);
    if (parsed != 0)
        return parsed;
    if (help)
        return cli_help();
    char ppath[PATH_MAX];
    int perr = smp_resolve_program_path(&o.s, ppath);
    if (perr)
        return perr;
    struct top t = {.o = &o, .sort = o.sort, .lines = o.lines, .thread_sel = -1};
    bool tty_out = isatty(STDOUT_FILENO);
    t.term = tty_out && !o.once;
    t.color = cli_color_stdout() && !o.no_color;
    struct smp_hooks hooks = {
        .ctx = &t,
        .sample = top_sample,
        .tick = top_tick,
        .input_fd = t.term && isatty(STDIN_FILENO) ? STDIN_FILENO : -1,
        .input = top_input,
    };
    struct smp_set set = {.o = &o.s, .h = &hooks};
    struct smp_program pg = {0};
    t.set = &set;
    t.pg = &pg;
    t.row_idx = json_object();
    if (!t.row_idx)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (smp_set_open(&set, o.pid, &pg) != 0) {
        json_decref(t.row_idx);
        return cli_report_error(false);
    }
    struct smp_proc *first = set.procs[0];

    smp_install_stop_handlers();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_winch;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGWINCH, &sa, NULL);
    term_size(&t);
    if (t.term) {
        term_enter();
        t.dirty = true; /* the first screen at once */
    } else if (o.once && isatty(STDERR_FILENO))
        fprintf(stderr, "scry: sampling process %d (Python %s) for %.1f s\n", o.pid,
                san_str(first->rt.version_str), o.s.duration);
    t.start_ns = t.last_tick_ns = t.last_screen_ns = smp_mono_ns();
    read_rss(&t, t.start_ns);
    const char *why = "the duration ended";
    int err = smp_loop(&set, &why);
    bool exited = set.procs[0]->ended && !pf_process_alive(o.pid);
    if (t.term)
        term_restore();
    int status = CLI_EXIT_OK;
    /* The last screen, on the normal screen and over the whole time: after --once, at the end
     * of screens on a pipe, or when the process exited (not after q or Ctrl-C in a terminal:
     * the terminal keeps what it had). */
    if (!err && (o.once || !t.term || exited)) {
        uint64_t now = smp_mono_ns();
        t.term = false;
        t.color = t.color && tty_out;
        read_rss(&t, now);
        for (size_t i = 0; i < t.nrows; i++)
            t.rows[i].own_mark = t.rows[i].total_mark = 0;
        for (size_t i = 0; i < t.nthreads; i++)
            t.threads[i].mark = 0;
        t.last_screen_ns = 0;
        t.paused = false;
        if (!(err = render(&t, now)))
            show(&t);
    }
    if (!err && exited)
        err = err_fail_hint(SCRY_E_NO_SUCH_PROCESS,
                            "the screen above is what was sampled until it exited",
                            "process %d exited while scry top watched it", o.pid);
    if (err)
        status = cli_report_error(false);
    smp_set_free(&set);
    free(pg.args);
    free(t.threads);
    free(t.rows);
    json_decref(t.row_idx);
    sb_release(&t.screen);
    return status;
}
