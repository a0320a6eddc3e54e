/* The annotated-source view of a profile. The document is first read into small tables (checking
 * every type the view relies on), then printed: per file a header, the source lines at or above
 * the threshold with `...` for the hidden stretches, a function summary, and the totals. Text
 * from the file (source, names, the note) is printed with control characters replaced, so a
 * profile cannot drive the terminal. */
#include "render/profile_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define BOLD "\033[1m"
#define HOT "\033[1;31m"
#define DIM "\033[2m"
#define RESET "\033[0m"

struct trow {
    long lineno;
    const char *text;
    double py, nat, sys;
};

struct tfile {
    const char *name;
    double pct;
    struct trow *lines, *funcs;
    size_t nlines, nfuncs;
};

struct tprof {
    struct tfile *files;
    size_t nfiles;
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

static int read_rows(const json_t *arr, const char *ctx, struct trow **out, size_t *n)
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
            (err = get_num(r, "n_sys_percent", &rows[i].sys, sub)))
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

static void free_tprof(struct tprof *tp)
{
    for (size_t i = 0; i < tp->nfiles; i++) {
        free(tp->files[i].lines);
        free(tp->files[i].funcs);
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
    if (x->pct != y->pct)
        return x->pct > y->pct ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int load(const json_t *root, struct tprof *tp)
{
    memset(tp, 0, sizeof(*tp));
    if (!json_is_object(root))
        return bad("the document", "it is not a JSON object");
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
        int err = get_num(f, "percent_cpu_time", &tf->pct, ctx);
        char sub[700];
        snprintf(sub, sizeof(sub), "%s.lines", ctx);
        if (!err)
            err = read_rows(json_object_get(f, "lines"), sub, &tf->lines, &tf->nlines);
        snprintf(sub, sizeof(sub), "%s.functions", ctx);
        if (!err)
            err = read_rows(json_object_get(f, "functions"), sub, &tf->funcs, &tf->nfuncs);
        if (err)
            return err;
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
 * tabs expanded, other control characters shown as '?'. */
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
        } else if (c < 0x20 || c == 0x7f) {
            sb_addch(sb, '?');
            col++;
        } else {
            sb_addch(sb, (char)c);
            if ((c & 0xc0) != 0x80)
                col++;
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

static void add_row(struct strbuf *sb, const struct profile_text_opts *o, const char *label,
                    const struct trow *r)
{
    char py[16], nat[16], sys[16];
    pct_cell(py, sizeof(py), r->py);
    pct_cell(nat, sizeof(nat), r->nat);
    pct_cell(sys, sizeof(sys), r->sys);
    bool hot = o->color && row_total(r) >= PROFILE_TEXT_HOT_PERCENT;
    if (hot)
        sb_adds(sb, HOT);
    sb_addf(sb, "%6s │ %6s │ %6s │ %6s │", label, py, nat, sys);
    struct strbuf text = STRBUF_INIT;
    add_display(&text, r->text ? r->text : "");
    if (text.len) {
        sb_addch(sb, ' ');
        sb_add(sb, text.buf, text.len);
    }
    sb_release(&text);
    if (hot)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');
}

static void add_header(struct strbuf *sb, const struct profile_text_opts *o, const char *last)
{
    if (o->color)
        sb_adds(sb, BOLD);
    sb_adds(sb, "       │   Time │        │        │\n");
    sb_addf(sb, "  Line │ Python │ native │ system │ %s\n", last);
    if (o->color)
        sb_adds(sb, RESET);
    sb_adds(sb, "───────┼────────┼────────┼────────┼────────────────────────────────────────\n");
}

static void add_gap(struct strbuf *sb, const struct profile_text_opts *o)
{
    if (o->color)
        sb_adds(sb, DIM);
    sb_adds(sb, "   ... │        │        │        │");
    if (o->color)
        sb_adds(sb, RESET);
    sb_addch(sb, '\n');
}

static bool shown(const struct trow *r, double threshold)
{
    return row_total(r) >= threshold;
}

static void add_file(struct strbuf *sb, const struct profile_text_opts *o, const struct tfile *f,
                     double sampled_sec)
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
        nshown += shown(&f->lines[i], o->threshold);
    if (nshown == 0) {
        sb_addf(sb, "(no line reaches %g%% of the time)\n", o->threshold);
    } else {
        add_header(sb, o, "source");
        long prev = 0; /* last line number printed */
        bool printed = false;
        for (size_t i = 0; i < f->nlines; i++) {
            const struct trow *r = &f->lines[i];
            if (!shown(r, o->threshold))
                continue;
            if ((printed && r->lineno > prev + 1) || (!printed && r->lineno > 1))
                add_gap(sb, o);
            char label[24];
            snprintf(label, sizeof(label), "%ld", r->lineno);
            add_row(sb, o, label, r);
            prev = r->lineno;
            printed = true;
        }
        if (f->nlines && f->lines[f->nlines - 1].lineno > prev)
            add_gap(sb, o);
    }

    size_t nf = 0;
    for (size_t i = 0; i < f->nfuncs; i++)
        nf += shown(&f->funcs[i], o->threshold);
    if (nf) {
        sb_addch(sb, '\n');
        sb_adds(sb, "function summary for ");
        add_display(sb, f->name);
        sb_addch(sb, '\n');
        add_header(sb, o, "function");
        for (size_t i = 0; i < f->nfuncs; i++) {
            if (!shown(&f->funcs[i], o->threshold))
                continue;
            char label[24];
            snprintf(label, sizeof(label), "%ld", f->funcs[i].lineno);
            add_row(sb, o, label, &f->funcs[i]);
        }
    }
    sb_addch(sb, '\n');
}

int profile_text_render(const json_t *root, const struct profile_text_opts *o, struct strbuf *out)
{
    struct tprof tp;
    int err = load(root, &tp);
    if (err) {
        free_tprof(&tp);
        return err;
    }
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

    size_t hidden = 0;
    for (size_t i = 0; i < tp.nfiles; i++) {
        if (tp.files[i].pct < o->threshold) {
            hidden++;
            continue;
        }
        add_file(out, o, &tp.files[i], sampled);
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
