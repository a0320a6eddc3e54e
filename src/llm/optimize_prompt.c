/* Optimisation proposals (see optimize_prompt.h): the region, the prompt, the answer, the diff.
 * Everything the prompt holds comes from the profile (the model of analysis/profile_doc.h): the
 * source lines scry run stored in it and their figures; nothing is read from disk, so what is sent is what the profile
 * shows, less what the snapshot's redaction rule (cpython/redact.c) flags in it: a program's
 * source holds passwords and keys as often as its heap does. */
#include "llm/optimize_prompt.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"
#include "cpython/redact.h"
#include "llm/llm_providers.h"

const char opt_system_prompt[] =
    "You are an expert in the performance of Python programs. You are given a region of a "
    "Python source file together with the figures a profiler measured for each line: the share "
    "of the program's sampled time spent running Python bytecode, in native code (C extensions, "
    "builtins) and off the CPU (system: I/O, sleep, locks), the memory allocated and the peak, "
    "and the copy volume. Propose a replacement for the region that makes it faster or use "
    "less memory, with the same behaviour: the same results, output, side effects and "
    "exceptions. Keep the region's indentation and the names the code around it uses; use only "
    "the standard library and the modules the file already imports unless a well-known package "
    "makes a large difference (then say so).\n"
    "Answer with exactly one fenced code block (```python ... ```) holding the complete "
    "replacement for the region's lines and nothing else, then a short explanation (at most six "
    "sentences) of why it is faster or smaller, citing the profile's figures. If the region "
    "cannot be improved, return it unchanged and say why.";

int opt_parse_location(char *spec, struct opt_request *r)
{
    r->file = spec;
    r->first = r->last = 0;
    char *colon = strrchr(spec, ':');
    if (!colon || !isdigit((unsigned char)colon[1]))
        return *spec ? 0 : cli_usage("give the file to optimise: FILE[:LINE[-LINE]]");
    char *end;
    errno = 0;
    long a = strtol(colon + 1, &end, 10), b = a;
    if (*end == '-')
        b = strtol(end + 1, &end, 10);
    if (errno || *end || a < 1 || b < a || colon == spec)
        return cli_usage("'%s' is not FILE:LINE or FILE:FIRST-LAST (lines from 1, first <= last)",
                         spec);
    *colon = 0;
    r->first = a;
    r->last = b;
    return 0;
}

/* ---- the profile's file --------------------------------------------------------------------- */

struct src {
    const char *name;
    const struct pdoc_file *file;
    /* by line number, 1..n (NULL where the profile has no entry with source text) */
    const struct pdoc_entry **line;
    long n;
    const struct pdoc_entry **funcs; /* the file's functions in the document's order */
    size_t nfuncs;
    /* With redaction: by line number, the line as sent (NULL: unchanged) and what was taken
     * out of it; sent[no] once the prompt holds line no. */
    char **red, **what;
    bool *sent;
};

static bool suffix_of(const char *name, const char *tail)
{
    size_t a = strlen(name), b = strlen(tail);
    return b < a && strcmp(name + a - b, tail) == 0 && (tail[0] == '/' || name[a - b - 1] == '/');
}

static int by_order(const void *a, const void *b)
{
    uint32_t x = (*(const struct pdoc_entry *const *)a)->order;
    uint32_t y = (*(const struct pdoc_entry *const *)b)->order;
    return (x > y) - (x < y);
}

static int find_file(const struct pdoc *d, const char *want, struct src *s)
{
    char abs[PATH_MAX];
    const char *real = realpath(want, abs);
    const struct pdoc_file *hit = NULL;
    int nhits = 0;
    for (size_t k = 0; k < d->nfiles; k++) {
        const char *key = d->files[k].name;
        if (strcmp(key, want) == 0 || (real && strcmp(key, real) == 0)) {
            hit = &d->files[k];
            nhits = 1;
            break;
        }
        if (suffix_of(key, want)) {
            hit = &d->files[k];
            nhits++;
        }
    }
    if (nhits > 1)
        return cli_usage("'%s' names more than one file of the profile; give more of its path",
                         want);
    if (!hit)
        return cli_usage("the profile has no file '%s' (scry view --cli lists its files)", want);
    s->name = hit->name;
    s->file = hit;
    s->n = 0;
    for (size_t i = 0; i < hit->nlines; i++)
        if (hit->lines[i].line > s->n && hit->lines[i].line < 10000000)
            s->n = (long)hit->lines[i].line;
    s->line = calloc((size_t)s->n + 1, sizeof(*s->line));
    s->funcs = calloc(hit->nfuncs + 1, sizeof(*s->funcs));
    if (!s->line || !s->funcs)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < hit->nlines; i++) {
        const struct pdoc_entry *e = &hit->lines[i];
        if (e->line >= 1 && e->line <= s->n && e->text)
            s->line[e->line] = e;
    }
    for (size_t i = 0; i < hit->nfuncs; i++)
        s->funcs[i] = &hit->funcs[i];
    s->nfuncs = hit->nfuncs;
    qsort(s->funcs, s->nfuncs, sizeof(*s->funcs), by_order);
    return 0;
}

/* A figure as the prompt shows it: negative ones (none in scry's profiles) as 0. */
static double fig(double v)
{
    return v > 0 ? v : 0;
}

static double time_of(const struct pdoc_entry *e)
{
    return fig(e->python_pct) + fig(e->native_pct) + fig(e->sys_pct);
}

/* The line's source as the program has it: Scalene's \u0026 \u003c \u003e back to & < >, no
 * line end. */
static void add_source(struct strbuf *sb, const struct src *s, long no)
{
    const char *t = no >= 1 && no <= s->n && s->line[no] ? s->line[no]->text : "";
    size_t len = strlen(t);
    while (len && (t[len - 1] == '\n' || t[len - 1] == '\r'))
        len--;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '\\' && i + 6 <= len && strncmp(t + i + 1, "u00", 3) == 0) {
            char r = strncmp(t + i + 4, "26", 2) == 0   ? '&'
                     : strncmp(t + i + 4, "3c", 2) == 0 ? '<'
                     : strncmp(t + i + 4, "3e", 2) == 0 ? '>'
                                                        : 0;
            if (r) {
                sb_addch(sb, r);
                i += 5;
                continue;
            }
        }
        sb_addch(sb, t[i]);
    }
}

/* The line as the prompt shows it: redacted where redaction changed it. */
static void add_shown(struct strbuf *sb, const struct src *s, long no)
{
    if (s->sent && no >= 1 && no <= s->n)
        s->sent[no] = true;
    if (s->red && no >= 1 && no <= s->n && s->red[no])
        sb_adds(sb, s->red[no]);
    else
        add_source(sb, s, no);
}

static size_t indent_of(const struct src *s, long no, bool *blank)
{
    struct strbuf t = STRBUF_INIT;
    add_source(&t, s, no);
    size_t n = strspn(sb_str(&t), " \t");
    *blank = sb_str(&t)[n] == 0 || sb_str(&t)[n] == '#';
    sb_release(&t);
    return n;
}

/* The last line of the function whose entry is at line def: past its header (the first line,
 * after decorators, whose code ends with ':'), up to the last line before one that is not
 * blank and indented no deeper than the header. */
static long function_end(const struct src *s, long def)
{
    bool blank;
    size_t base = indent_of(s, def, &blank);
    long l = def, last = def;
    for (; l <= s->n; l++) {
        struct strbuf t = STRBUF_INIT;
        add_source(&t, s, l);
        const char *x = sb_str(&t);
        size_t n = strcspn(x, "#");
        while (n && isspace((unsigned char)x[n - 1]))
            n--;
        bool header_end = n && x[n - 1] == ':' && x[strspn(x, " \t")] != '@';
        sb_release(&t);
        if (header_end)
            break;
    }
    for (last = l++; l <= s->n; l++) {
        size_t ind = indent_of(s, l, &blank);
        if (blank)
            continue;
        if (ind <= base)
            break;
        last = l;
    }
    return last > s->n ? s->n : last;
}

/* The function entry of the file that encloses line no: the one with the largest first line at
 * or before it that ends at or after it (NULL when none: module level). */
static const struct pdoc_entry *enclosing(const struct src *s, long no, long *end)
{
    const struct pdoc_entry *best = NULL;
    long best_line = 0;
    for (size_t i = 0; i < s->nfuncs; i++) {
        const struct pdoc_entry *e = s->funcs[i];
        long fl = (long)e->line;
        if (fl < 1 || fl > no || fl <= best_line || fl > s->n)
            continue;
        long fe = function_end(s, fl);
        if (fe >= no) {
            best = e;
            best_line = fl;
            *end = fe;
        }
    }
    return best;
}

static bool name_matches(const char *have, const char *want)
{
    if (strcmp(have, want) == 0)
        return true;
    const char *dot = strrchr(have, '.');
    return dot && strcmp(dot + 1, want) == 0;
}

/* The first line that defines the function name (the part after its last '.'): "def NAME(" or
 * "async def NAME(" after the indentation; 0 if none. */
static long find_def(const struct src *s, const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *want = dot ? dot + 1 : name;
    size_t n = strlen(want);
    for (long l = 1; l <= s->n; l++) {
        struct strbuf t = STRBUF_INIT;
        add_source(&t, s, l);
        const char *x = sb_str(&t) + strspn(sb_str(&t), " \t");
        if (strncmp(x, "async ", 6) == 0)
            x += 6 + strspn(x + 6, " \t");
        const char *nm = strncmp(x, "def ", 4) == 0 ? x + 4 + strspn(x + 4, " ") : NULL;
        bool hit = nm && strncmp(nm, want, n) == 0 && nm[n] == '(';
        sb_release(&t);
        if (hit)
            return l;
    }
    return 0;
}

/* Sets res->first/last (and function) from the request. */
static int resolve(const struct src *s, const struct opt_request *req, struct opt_result *res)
{
    const struct pdoc_entry *fn = NULL;
    if (req->first) {
        if (req->last > s->n)
            return cli_usage("%s has %ld lines in the profile; line %ld is past its end",
                             s->name, s->n, req->last);
        res->first = req->first;
        res->last = req->last;
    } else if (req->function) {
        for (size_t i = 0; i < s->nfuncs && !fn; i++)
            if (name_matches(s->funcs[i]->func, req->function))
                fn = s->funcs[i];
        if (!fn) {
            /* A function with no samples has no entry: its def in the source, then. */
            long def = find_def(s, req->function);
            if (!def)
                return cli_usage("the profile has no function '%s' in %s", req->function,
                                 s->name);
            res->first = def;
            res->last = function_end(s, def);
        }
    } else {
        /* The hottest function of the file, else its hottest line. */
        double best = 0;
        for (size_t i = 0; i < s->nfuncs; i++) {
            const struct pdoc_entry *e = s->funcs[i];
            long fl = (long)e->line;
            if (time_of(e) > best && fl >= 1 && fl <= s->n) {
                best = time_of(e);
                fn = e;
            }
        }
        long hot = 0;
        best = 0;
        for (long l = 1; l <= s->n; l++)
            if (s->line[l] && time_of(s->line[l]) > best) {
                best = time_of(s->line[l]);
                hot = l;
            }
        if (!hot)
            return cli_usage("no line of %s has time in the profile; give FILE:LINE", s->name);
        if (fn && (long)fn->line > hot)
            fn = NULL;
        if (!fn || function_end(s, (long)fn->line) < hot)
            fn = NULL, res->first = res->last = hot;
    }
    if (fn) {
        long fl = (long)fn->line;
        if (fl < 1 || fl > s->n)
            return cli_usage("the function '%s' has no source lines in the profile", fn->func);
        res->first = fl;
        res->last = function_end(s, fl);
    }
    if (res->last - res->first + 1 > OPT_REGION_MAX)
        return cli_usage("the region %ld-%ld has %ld lines; give at most %d (FILE:FIRST-LAST)",
                         res->first, res->last, res->last - res->first + 1, OPT_REGION_MAX);
    long end = 0;
    const struct pdoc_entry *enc = enclosing(s, res->first, &end);
    const char *name = enc ? enc->func : NULL;
    if (!enc && req->function && !req->first)
        name = req->function; /* found by its def: no samples */
    res->function = strdup(name ? name : "");
    res->file = strdup(s->name);
    return res->function && res->file ? 0 : err_fail(SCRY_E_NO_MEMORY, "out of memory");
}

/* ---- redaction of what is sent -------------------------------------------------------------- */

/* The state opt_redact_line carries across lines: the quote of an open triple-quoted string in
 * the low byte, and whether that string is a secret name's value. */
#define RED_UNDER 0x100

static bool ident_char(unsigned char c)
{
    return isalnum(c) || c == '_' || c >= 0x80;
}

static void red_note(struct strbuf *what, const char *note)
{
    if (strstr(sb_str(what), note))
        return;
    if (what->len)
        sb_adds(what, "; ");
    sb_adds(what, note);
}

/* Whether a name ending at t[j] is assigned or keyed: `=` (not `==`), `:`, or an augmented
 * assignment (`+=`) follows. */
static bool assigned_at(const char *t, size_t len, size_t j)
{
    while (j < len && (t[j] == ' ' || t[j] == '\t'))
        j++;
    if (j < len && t[j] == ':')
        return true;
    if (j < len && strchr("+-*/%|&^@", t[j]) && t[j] != 0)
        j++;
    return j < len && t[j] == '=' && (j + 1 >= len || t[j + 1] != '=');
}

/* The end of a triple-quoted string's body starting at b (quote q): the index of its closing
 * quotes, len if it goes on past the line. */
static size_t triple_end(const char *t, size_t len, size_t b, char q)
{
    for (size_t e = b; e + 3 <= len; e++) {
        if (t[e] == '\\') {
            e++;
            continue;
        }
        if (t[e] == q && t[e + 1] == q && t[e + 2] == q)
            return e;
    }
    return len;
}

/* A string literal's body t[b..e): kept, or <redacted> when it looks secret or is the value of
 * a secret name (under: that name, for the note). */
static bool red_body(const char *t, size_t b, size_t e, const char *under, struct strbuf *out,
                     struct strbuf *what)
{
    char note[128];
    if (redact_text_is_secret(t + b, e - b)) {
        red_note(what, "a string that looks like a secret");
    } else if (under) {
        snprintf(note, sizeof(note), "the string assigned to %s", under);
        red_note(what, note);
    } else {
        sb_add(out, t + b, e - b);
        return false;
    }
    sb_adds(out, REDACTED);
    return true;
}

bool opt_redact_line(const char *t, size_t len, int *state, struct strbuf *out,
                     struct strbuf *what)
{
    bool changed = false, under = false;
    int depth = 0, under_depth = 0;
    char name[64] = "a secret-sounding name";
    size_t i = 0;
    if (*state & 0xff) { /* the body of a triple-quoted string opened on an earlier line */
        char q = (char)(*state & 0xff);
        size_t e = triple_end(t, len, 0, q);
        changed |= red_body(t, 0, e, *state & RED_UNDER ? name : NULL, out, what);
        if (e == len)
            return changed;
        sb_add(out, t + e, 3);
        i = e + 3;
        *state = 0;
    }
    while (i < len) {
        unsigned char c = (unsigned char)t[i];
        if (c == '#') {
            if (redact_text_is_secret(t + i + 1, len - i - 1)) {
                sb_adds(out, "# " REDACTED);
                red_note(what, "a comment that looks like a secret");
                changed = true;
            } else {
                sb_add(out, t + i, len - i);
            }
            break;
        }
        if (c == '"' || c == '\'') {
            bool triple = i + 2 < len && t[i + 1] == (char)c && t[i + 2] == (char)c;
            size_t b = i + (triple ? 3 : 1), e = b, close = triple ? 3 : 1;
            if (triple)
                e = triple_end(t, len, b, (char)c);
            else
                for (; e < len && t[e] != (char)c; e++)
                    e += t[e] == '\\' && e + 1 < len;
            sb_add(out, t + i, b - i);
            changed |= red_body(t, b, e, under ? name : NULL, out, what);
            if (e >= len) {
                if (triple)
                    *state = c | (under ? RED_UNDER : 0);
                break;
            }
            sb_add(out, t + e, close);
            i = e + close;
            /* "api_key": value, d["password"] = value */
            bool subscript = i < len && t[i] == ']';
            if (redact_name_is_sensitive(t + b, e - b) && !redact_text_is_secret(t + b, e - b) &&
                assigned_at(t, len, i + subscript)) {
                under = true;
                under_depth = depth - subscript; /* the value follows the ] */
                snprintf(name, sizeof(name), "%.*s", (int)(e - b < 48 ? e - b : 48), t + b);
            }
            continue;
        }
        if (ident_char(c)) {
            size_t e = i;
            while (e < len && ident_char((unsigned char)t[e]))
                e++;
            /* A string's prefix (r, b, f, rb, ...): kept, the literal follows. */
            if (e < len && (t[e] == '"' || t[e] == '\'') && e - i <= 2 &&
                strspn(t + i, "rRbBfFuU") >= e - i) {
                sb_add(out, t + i, e - i);
                i = e;
                continue;
            }
            if (redact_text_is_secret(t + i, e - i)) {
                sb_adds(out, REDACTED);
                red_note(what, "a name that looks like a secret");
                changed = true;
            } else {
                sb_add(out, t + i, e - i);
                if (!isdigit(c) && redact_name_is_sensitive(t + i, e - i) &&
                    assigned_at(t, len, e)) {
                    under = true;
                    under_depth = depth;
                    snprintf(name, sizeof(name), "%.*s", (int)(e - i < 48 ? e - i : 48), t + i);
                }
            }
            i = e;
            continue;
        }
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if (c == ')' || c == ']' || c == '}')
            under = under && --depth >= under_depth;
        else if ((c == ',' || c == ';') && depth == under_depth)
            under = false;
        sb_addch(out, (char)c);
        i++;
    }
    return changed;
}

/* Every line of the file redacted in order (a triple-quoted string's state carries over from
 * one line to the next, and restarts where the profile has no line). */
static int redact_source(struct src *s)
{
    s->red = calloc((size_t)s->n + 1, sizeof(*s->red));
    s->what = calloc((size_t)s->n + 1, sizeof(*s->what));
    s->sent = calloc((size_t)s->n + 1, sizeof(*s->sent));
    if (!s->red || !s->what || !s->sent)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    int state = 0;
    for (long l = 1; l <= s->n; l++) {
        if (!s->line[l]) {
            state = 0;
            continue;
        }
        struct strbuf src = STRBUF_INIT, out = STRBUF_INIT, what = STRBUF_INIT;
        add_source(&src, s, l);
        bool changed = opt_redact_line(sb_str(&src), src.len, &state, &out, &what);
        bool failed = sb_failed(&src) || sb_failed(&out) || sb_failed(&what);
        if (changed && !failed) {
            s->red[l] = sb_detach(&out);
            s->what[l] = sb_detach(&what);
            failed = !s->red[l] || !s->what[l];
        }
        sb_release(&src);
        sb_release(&out);
        sb_release(&what);
        if (failed)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    return 0;
}

/* ---- the prompt ----------------------------------------------------------------------------- */

static void add_figures_row(struct strbuf *p, const struct pdoc_entry *e)
{
    sb_addf(p, "%7.1f | %7.1f | %7.1f | %8.1f | %7.1f | %8.1f", fig(e->python_pct),
            fig(e->native_pct), fig(e->sys_pct), fig(e->malloc_mb), fig(e->peak_mb),
            fig(e->copy_mb_s));
}

static void add_line_row(struct strbuf *p, const struct src *s, long l, bool figures)
{
    sb_addf(p, "%5ld | ", l);
    if (figures) {
        if (s->line[l])
            add_figures_row(p, s->line[l]);
        else
            sb_adds(p, "      - |       - |       - |        - |       - |        -");
        sb_adds(p, " | ");
    }
    add_shown(p, s, l);
    sb_addch(p, '\n');
}

/* A text of the profile's header as sent: t, or with its words (split at spaces) that the rule
 * flags as <redacted>, noted in res->redactions as `what`. tmp holds the
 * result. */
static const char *shown_text(struct opt_result *res, bool redact, const char *t,
                              const char *what, struct strbuf *tmp)
{
    if (!redact || !t || !redact_text_is_secret(t, strlen(t)))
        return t;
    sb_reset(tmp);
    for (const char *w = t; *w;) {
        size_t n = strcspn(w, " ");
        if (redact_text_is_secret(w, n))
            sb_adds(tmp, REDACTED);
        else
            sb_add(tmp, w, n);
        w += n;
        if (*w)
            sb_addch(tmp, *w++);
    }
    /* A shape that spans words (Authorization: Bearer ...) is flagged only whole. */
    if (redact_text_is_secret(sb_str(tmp), tmp->len)) {
        sb_reset(tmp);
        sb_adds(tmp, REDACTED);
    }
    sb_addf(&res->redactions, "%s: a word that looks like a secret\n", what);
    return sb_str(tmp);
}

static void build_prompt(const struct pdoc *d, const struct src *s, struct opt_result *res)
{
    struct strbuf *p = &res->prompt;
    struct strbuf t1 = STRBUF_INIT, t2 = STRBUF_INIT, t3 = STRBUF_INIT;
    bool redact = s->red != NULL;
    const char *prog = d->program[0] ? d->program : NULL;
    const char *ver = d->python_version;
    const char *name = shown_text(res, redact, s->name, "the file's path", &t2);
    sb_addf(p, "Program: %s (CPython %s); it ran %.3f s, of which %.3f s were sampled.\n",
            prog ? shown_text(res, redact, prog, "the program's path", &t1) : name,
            ver ? ver : "3", fig(d->elapsed_sec), fig(d->sampled_given_sec));
    sb_addf(p, "File: %s (%.1f%% of the sampled time)\n", name, fig(s->file->percent));
    long fend = 0;
    const struct pdoc_entry *fn = enclosing(s, res->first, &fend);
    const char *fname = fn ? fn->func : res->function;
    fname = shown_text(res, redact, fname ? fname : "", "the function's name", &t3);
    if (fn) {
        sb_addf(p, "Function: %s (lines %ld-%ld): Python %.1f%%, native %.1f%%, system %.1f%%, "
                   "%.1f MB allocated, peak %.1f MB, copy %.1f MB/s\n",
                fname,
                (long)fn->line, fend, fig(fn->python_pct), fig(fn->native_pct),
                fig(fn->sys_pct), fig(fn->malloc_mb), fig(fn->peak_mb), fig(fn->copy_mb_s));
    } else if (*res->function) {
        sb_addf(p, "Function: %s (lines %ld-%ld): no samples in the profile\n", fname,
                res->first, res->last);
    } else {
        sb_adds(p, "Function: none (module level)\n");
    }
    sb_adds(p, "\nThe file's imports:\n");
    bool any = false;
    for (long l = 1; l <= s->n; l++) {
        struct strbuf t = STRBUF_INIT;
        add_source(&t, s, l);
        const char *x = sb_str(&t) + strspn(sb_str(&t), " \t");
        if (strncmp(x, "import ", 7) == 0 || strncmp(x, "from ", 5) == 0) {
            add_shown(p, s, l);
            sb_addch(p, '\n');
            any = true;
        }
        sb_release(&t);
    }
    if (!any)
        sb_adds(p, "(none)\n");
    long before = res->first - OPT_CONTEXT < 1 ? 1 : res->first - OPT_CONTEXT;
    long after = res->last + OPT_CONTEXT > s->n ? s->n : res->last + OPT_CONTEXT;
    if (before < res->first) {
        sb_adds(p, "\nThe lines before the region (context; not to be replaced):\n");
        for (long l = before; l < res->first; l++)
            add_line_row(p, s, l, false);
    }
    sb_addf(p, "\nThe region to replace, lines %ld-%ld, with each line's figures (time as %% of "
               "the program's sampled time; memory in MB allocated and peak; copy volume in "
               "MB/s):\n",
            res->first, res->last);
    sb_adds(p, " line |  Python |  native |  system | alloc MB | peak MB | copy MB/s | source\n");
    double py = 0, nat = 0, sys = 0, mb = 0, copy = 0;
    for (long l = res->first; l <= res->last; l++) {
        add_line_row(p, s, l, true);
        if (s->line[l]) {
            py += fig(s->line[l]->python_pct);
            nat += fig(s->line[l]->native_pct);
            sys += fig(s->line[l]->sys_pct);
            mb += fig(s->line[l]->malloc_mb);
            copy += fig(s->line[l]->copy_mb_s);
        }
    }
    sb_addf(p, "The region in all: Python %.1f%%, native %.1f%%, system %.1f%%, %.1f MB "
               "allocated, copy %.1f MB/s.\n",
            py, nat, sys, mb, copy);
    if (after > res->last) {
        sb_adds(p, "\nThe lines after the region (context; not to be replaced):\n");
        for (long l = res->last + 1; l <= after; l++)
            add_line_row(p, s, l, false);
    }
    sb_addf(p, "\nReply with the replacement for lines %ld-%ld in one ```python code block, then "
               "your reasons.\n",
            res->first, res->last);
    if (redact && strstr(sb_str(p), REDACTED))
        sb_adds(p, "Values shown as <redacted> were taken out before sending; keep them as "
                   "they are.\n");
    sb_release(&t1);
    sb_release(&t2);
    sb_release(&t3);
}

int opt_prepare(const struct pdoc *profile, const struct opt_request *req, struct opt_result *res)
{
    struct src s = {0};
    int err = find_file(profile, req->file, &s);
    if (!err)
        err = resolve(&s, req, res);
    if (!err && !req->no_redact)
        err = redact_source(&s);
    if (!err) {
        size_t header = res->redactions.len;
        for (long l = res->first; l <= res->last; l++) {
            add_shown(&res->original, &s, l);
            sb_addch(&res->original, '\n');
        }
        build_prompt(profile, &s, res);
        /* The source lines' notes, in line order, for the lines the prompt holds. */
        struct strbuf head = STRBUF_INIT;
        sb_add(&head, sb_str(&res->redactions), header);
        for (long l = 1; s.what && l <= s.n; l++)
            if (s.sent[l] && s.what[l])
                sb_addf(&head, "line %ld: %s\n", l, s.what[l]);
        sb_add(&head, sb_str(&res->redactions) + header, res->redactions.len - header);
        sb_release(&res->redactions);
        res->redactions = head;
    }
    for (long l = 0; s.red && l <= s.n; l++) {
        free(s.red[l]);
        free(s.what[l]);
    }
    free(s.red);
    free(s.what);
    free(s.sent);
    free(s.line);
    free(s.funcs);
    return err;
}

/* ---- the answer ----------------------------------------------------------------------------- */

static size_t min_indent(const char *t)
{
    size_t best = SIZE_MAX;
    for (const char *l = t; *l;) {
        size_t n = strspn(l, " "), len = strcspn(l, "\n");
        if (n < len && l[n] != '\t' && n < best)
            best = n;
        l += len + (l[len] == '\n');
    }
    return best == SIZE_MAX ? 0 : best;
}

static bool is_fence(const char *l, size_t len)
{
    size_t n = strspn(l, " \t");
    return len >= n + 3 && (strncmp(l + n, "```", 3) == 0 || strncmp(l + n, "~~~", 3) == 0);
}

static void trim_into(struct strbuf *out, const char *s, size_t len)
{
    while (len && isspace((unsigned char)*s))
        s++, len--;
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    sb_add(out, s, len);
}

int opt_take_answer(const char *answer, size_t len, struct opt_result *res)
{
    const char *p = answer, *end = answer + len, *open = NULL, *body = NULL, *close = NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (is_fence(p, ll)) {
            if (!open) {
                open = p;
                body = nl ? nl + 1 : end;
            } else {
                close = p;
                break;
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (!open || !close)
        return err_fail(SCRY_E_BAD_ANSWER,
                        "the model's answer holds no fenced code block (it began: %.80s)",
                        answer);
    struct strbuf raw = STRBUF_INIT, reasons = STRBUF_INIT;
    sb_add(&raw, body, (size_t)(close - body));
    const char *after = memchr(close, '\n', (size_t)(end - close));
    after = after ? after + 1 : end;
    trim_into(&reasons, answer, (size_t)(open - answer));
    if (reasons.len && after < end)
        sb_adds(&reasons, "\n\n");
    trim_into(&reasons, after, (size_t)(end - after));
    /* Back to the region's indentation when the model dropped it. */
    size_t want = min_indent(sb_str(&res->original)), have = min_indent(sb_str(&raw));
    for (const char *l = sb_str(&raw); *l;) {
        size_t n = strcspn(l, "\n");
        if (n > strspn(l, " \t") && want > have)
            sb_addf(&res->code, "%*s", (int)(want - have), "");
        sb_add(&res->code, l, n);
        sb_addch(&res->code, '\n');
        l += n + (l[n] == '\n');
    }
    sb_release(&raw);
    if (!reasons.len)
        sb_adds(&reasons, "(the model gave no reasons)");
    res->reasons = reasons;
    if (!res->code.len)
        return err_fail(SCRY_E_BAD_ANSWER, "the model's code block is empty");
    char label[PATH_MAX + 32];
    snprintf(label, sizeof(label), "%s", res->file ? res->file : "region");
    if (!opt_diff(label, res->first, sb_str(&res->original), sb_str(&res->code), &res->diff))
        return err_fail(SCRY_E_BAD_ANSWER, "the model's code has more lines than scry compares");
    return 0;
}

/* ---- the diff: longest common subsequence of the lines --------------------------------------- */

#define DIFF_MAX_LINES 4000

static size_t split_lines(const char *t, const char **lines, size_t *lens, size_t max)
{
    size_t n = 0;
    for (const char *l = t; *l && n <= max;) {
        size_t len = strcspn(l, "\n");
        if (n < max) {
            lines[n] = l;
            lens[n] = len;
        }
        n++;
        l += len + (l[len] == '\n');
    }
    return n;
}

bool opt_diff(const char *label, long first, const char *old, const char *new_text,
              struct strbuf *out)
{
    static const char *a[DIFF_MAX_LINES], *b[DIFF_MAX_LINES];
    static size_t al[DIFF_MAX_LINES], bl[DIFF_MAX_LINES];
    size_t n = split_lines(old, a, al, DIFF_MAX_LINES), m = split_lines(new_text, b, bl,
                                                                        DIFF_MAX_LINES);
    if (n > DIFF_MAX_LINES || m > DIFF_MAX_LINES)
        return false;
    /* L[i][j]: the LCS length of a[i..] and b[j..]. */
    uint32_t *L = calloc((n + 1) * (m + 1), sizeof(*L));
    if (!L)
        return false;
#define AT(i, j) L[(i) * (m + 1) + (j)]
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            AT(i, j) = al[i] == bl[j] && memcmp(a[i], b[j], al[i]) == 0
                           ? AT(i + 1, j + 1) + 1
                           : (AT(i + 1, j) > AT(i, j + 1) ? AT(i + 1, j) : AT(i, j + 1));
    sb_addf(out, "--- %s:%ld-%ld\n+++ %s:%ld (proposed)\n", label, first,
            first + (long)n - 1, label, first);
    sb_addf(out, "@@ -%ld,%zu +%ld,%zu @@\n", first, n, first, m);
    size_t i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && al[i] == bl[j] && memcmp(a[i], b[j], al[i]) == 0) {
            sb_addch(out, ' ');
            sb_add(out, a[i], al[i]);
            i++, j++;
        } else if (i < n && (j == m || AT(i + 1, j) >= AT(i, j + 1))) {
            sb_addch(out, '-');
            sb_add(out, a[i], al[i]);
            i++;
        } else {
            sb_addch(out, '+');
            sb_add(out, b[j], bl[j]);
            j++;
        }
        sb_addch(out, '\n');
    }
#undef AT
    free(L);
    return true;
}

/* ---- the whole proposal --------------------------------------------------------------------- */

int opt_propose(const struct pdoc *profile, const struct opt_request *req,
                const struct llm_config *cfg, struct opt_result *res)
{
    int err = opt_prepare(profile, req, res);
    return err ? err : opt_send(cfg, res);
}

int opt_send(const struct llm_config *cfg, struct opt_result *res)
{
    if (!res->provider)
        res->provider = strdup(llm_name(cfg->provider));
    if (!res->model)
        res->model = strdup(llm_model(cfg));
    if (!res->provider || !res->model)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    struct strbuf answer = STRBUF_INIT;
    int err = llm_complete(cfg, opt_system_prompt, sb_str(&res->prompt), &answer);
    if (!err)
        err = opt_take_answer(sb_str(&answer), answer.len, res);
    sb_release(&answer);
    return err;
}

json_t *opt_result_json(const struct opt_result *r)
{
    return json_pack("{s:s,s:I,s:I,s:s,s:s,s:s,s:s,s:s,s:s}", "file", r->file ? r->file : "",
                     "first_line", (json_int_t)r->first, "last_line", (json_int_t)r->last,
                     "function", r->function ? r->function : "", "provider",
                     r->provider ? r->provider : "", "model", r->model ? r->model : "", "code",
                     sb_str(&r->code), "diff", sb_str(&r->diff), "reasons", sb_str(&r->reasons));
}

void opt_result_free(struct opt_result *r)
{
    free(r->file);
    free(r->function);
    free(r->provider);
    free(r->model);
    sb_release(&r->original);
    sb_release(&r->code);
    sb_release(&r->diff);
    sb_release(&r->reasons);
    sb_release(&r->prompt);
    sb_release(&r->redactions);
}
