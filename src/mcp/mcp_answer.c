/* Cutting and writing `scry mcp`'s answers (mcp_answer.h). */
#include "mcp/mcp_answer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sanitize.h"

/* Longest scalar kept whole in the text (a command line, a source line); the JSON keeps all. */
#define TEXT_SCALAR_MAX 240

/* ---- the text: one line per scalar, one line per row of a list ---------------------------- */

static void add_scalar(struct strbuf *sb, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), cut = n < TEXT_SCALAR_MAX ? n : TEXT_SCALAR_MAX;
        /* Newlines (source lines end with one) would break the one-row-per-line layout. The
         * cut may split a character: the sanitizer shows its bytes as U+FFFD and hides what
         * must not reach a terminal (ESC, bidi controls), as the sender does again. */
        char *flat = malloc(cut + 1);
        if (!flat)
            break;
        for (size_t i = 0; i < cut; i++)
            flat[i] = s[i] == '\n' || s[i] == '\r' || s[i] == '\t' ? ' ' : s[i];
        san_addn(sb, flat, cut);
        free(flat);
        if (n > TEXT_SCALAR_MAX)
            sb_adds(sb, "...");
        break;
    }
    case JSON_REAL: {
        double x = json_real_value(v);
        sb_addf(sb, fabs(x) >= 100 || x == floor(x) ? "%.0f" : "%.4g", x);
        break;
    }
    default: {
        char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        sb_adds(sb, t ? t : "?");
        free(t);
    }
    }
}

static void render(struct strbuf *sb, const json_t *v, int depth);

static void indent(struct strbuf *sb, int depth)
{
    for (int i = 0; i < depth; i++)
        sb_adds(sb, "  ");
}

/* A row: its scalars as key=value, its lists and objects nested below. */
static void render_row(struct strbuf *sb, const json_t *row, int depth)
{
    indent(sb, depth);
    sb_adds(sb, "- ");
    if (!json_is_object(row)) {
        add_scalar(sb, row);
        sb_addch(sb, '\n');
        return;
    }
    const char *k;
    const json_t *x;
    bool first = true;
    json_object_foreach((json_t *)row, k, x) {
        if (json_is_object(x) || json_is_array(x) || json_is_null(x))
            continue;
        sb_addf(sb, "%s%s=", first ? "" : " ", k);
        add_scalar(sb, x);
        first = false;
    }
    sb_addch(sb, '\n');
    json_object_foreach((json_t *)row, k, x) {
        if ((json_is_object(x) && json_object_size(x)) || (json_is_array(x) && json_array_size(x))) {
            indent(sb, depth + 1);
            sb_addf(sb, "%s:\n", k);
            render(sb, x, depth + 2);
        }
    }
}

static void render(struct strbuf *sb, const json_t *v, int depth)
{
    if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) render_row(sb, e, depth);
        return;
    }
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        if (strcmp(k, "truncated") == 0 && depth == 0)
            continue;
        indent(sb, depth);
        if (json_is_array(x)) {
            sb_addf(sb, "%s (%zu):\n", k, json_array_size(x));
            render(sb, x, depth + 1);
        } else if (json_is_object(x)) {
            sb_addf(sb, "%s:\n", k);
            render(sb, x, depth + 1);
        } else {
            sb_addf(sb, "%s: ", k);
            add_scalar(sb, x);
            sb_addch(sb, '\n');
        }
    }
}

/* ---- the cuts ------------------------------------------------------------------------------ */

/* Cuts every list in v (recursively) to limit rows, counting what went in cut[path]. */
static void cut_lists(json_t *v, const char *path, size_t limit, json_t *cut)
{
    const char *k;
    json_t *x;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) {
            if (x == cut)
                continue;
            char p[256];
            snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", k);
            cut_lists(x, p, limit, cut);
        }
        return;
    }
    if (!json_is_array(v))
        return;
    size_t n = json_array_size(v);
    if (n > limit) {
        for (size_t i = n; i > limit; i--)
            json_array_remove(v, i - 1);
        const json_t *before = json_object_get(cut, path); /* a budget's round adds to it */
        json_int_t was = before ? json_integer_value(before) : 0;
        json_object_set_new(cut, path, json_integer(was + (json_int_t)(n - limit)));
    }
    size_t i;
    json_array_foreach(v, i, x) {
        char p[256];
        snprintf(p, sizeof(p), "%s[]", path);
        cut_lists(x, p, limit, cut);
    }
}

/* The list in v to cut next: the one with the most rows, of two as long the one with the most
 * bytes; its path and its bytes in best_path and *best. NULL when no list has rows. By rows,
 * not bytes, so that a list of long rows (lines with their source) is not emptied while a list
 * of short ones (functions) keeps its top: a small budget gets the top of every list. */
struct cut_pick {
    json_t *list;
    size_t rows, bytes;
    size_t second; /* the rows of the next longest list */
};

static void longest_list(json_t *v, const char *path, char *best_path, size_t size,
                         struct cut_pick *best)
{
    json_t *x;
    const char *k;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) {
            if (strcmp(k, "truncated") == 0)
                continue;
            char p[256];
            snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", k);
            longest_list(x, p, best_path, size, best);
        }
    } else if (json_is_array(v) && json_array_size(v)) {
        size_t rows = json_array_size(v);
        if (rows >= best->rows) {
            char *t = json_dumps(v, JSON_COMPACT);
            size_t n = t ? strlen(t) : 0;
            free(t);
            if (rows > best->rows || n > best->bytes) {
                *best = (struct cut_pick){v, rows, n, best->list ? best->rows : 0};
                snprintf(best_path, size, "%s", path);
            } else {
                best->second = rows;
            }
        } else if (rows > best->second) {
            best->second = rows;
        }
        json_array_foreach(v, i, x) {
            char p[256];
            snprintf(p, sizeof(p), "%s[]", path);
            longest_list(x, p, best_path, size, best);
        }
    }
}

/* The bytes of a row (its list's bytes / rows, plus one) summed over the lists of n rows. */
static size_t tied_row_bytes(json_t *v, size_t n)
{
    json_t *x;
    const char *k;
    size_t i, sum = 0;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) {
            if (strcmp(k, "truncated") != 0)
                sum += tied_row_bytes(x, n);
        }
    } else if (json_is_array(v)) {
        if (json_array_size(v) == n) {
            char *t = json_dumps(v, JSON_COMPACT);
            sum += (t ? strlen(t) : 0) / n + 1;
            free(t);
        }
        json_array_foreach(v, i, x) sum += tied_row_bytes(x, n);
    }
    return sum;
}

static void count_cut(json_t *cut, const char *path)
{
    json_t *n = json_object_get(cut, path);
    json_object_set_new(cut, path, json_integer(n ? json_integer_value(n) + 1 : 1));
}

static void write_text(struct strbuf *sb, const json_t *doc, const char *title, const char *next)
{
    sb_reset(sb);
    sb_addf(sb, "%s\n", title);
    render(sb, doc, 0);
    const json_t *cut = json_object_get(doc, "truncated");
    if (json_object_size(cut)) {
        sb_adds(sb, "truncated:");
        const char *k;
        const json_t *n;
        bool first = true;
        json_object_foreach((json_t *)cut, k, n) {
            sb_addf(sb, "%s %lld more %s", first ? "" : ",", (long long)json_integer_value(n), k);
            first = false;
        }
        sb_adds(sb, " (raise limit or token_budget to see them)\n");
    }
    if (next && *next)
        sb_addf(sb, "next: %s\n", next);
}

static size_t json_bytes(const json_t *doc)
{
    char *t = json_dumps(doc, JSON_COMPACT);
    size_t n = t ? strlen(t) : 0;
    free(t);
    return n;
}

json_t *mcp_answer(json_t *doc, const char *title, size_t limit, size_t budget, const char *next)
{
    json_t *cut = json_object();
    struct strbuf text = STRBUF_INIT;
    size_t max = budget * MCP_BYTES_PER_TOKEN;
    cut_lists(doc, "", limit, cut);
    json_object_set(doc, "truncated", cut);
    write_text(&text, doc, title, next);
    /* Rows leave from the bottom of the longest list until text and JSON fit together. Each
     * round drops half the excess's worth of rows (at least one) so that a long list does not
     * cost a render per row. */
    while (text.len + json_bytes(doc) > max) {
        char path[256] = "";
        struct cut_pick best = {NULL, 0, 0, 0};
        longest_list(doc, "", path, sizeof(path), &best);
        json_t *list = best.list;
        if (!list)
            break;
        size_t n = json_array_size(list);
        size_t over = text.len + json_bytes(doc) - max;
        size_t per_row = best.bytes / n + 1;
        size_t drop = over / per_row / 2;
        if (drop < 1)
            drop = 1;
        if (n > best.second && drop > n - best.second)
            drop = n - best.second; /* down to the next longest list, not past it */
        if (n == best.second && n > 1) {
            /* Lists as long as each other shrink together, so that each keeps its top rows;
             * the round's rows are counted over all of them. */
            drop = over / (tied_row_bytes(doc, n) + 1) / 2;
            drop = drop < 1 ? 1 : drop > n - 1 ? n - 1 : drop;
            cut_lists(doc, "", n - drop, cut);
        } else {
            if (n == best.second)
                drop = 1; /* the lists are down to one row: one at a time */
            for (size_t i = 0; i < drop; i++) {
                json_array_remove(list, json_array_size(list) - 1);
                count_cut(cut, path);
            }
        }
        write_text(&text, doc, title, next);
    }
    json_t *res = json_pack("{s:[{s:s,s:s%}],s:o,s:b}", "content", "type", "text", "text",
                            text.buf ? text.buf : "", text.len, "structuredContent", doc,
                            "isError", 0);
    json_decref(cut);
    sb_release(&text);
    return res;
}

json_t *mcp_answer_error(void)
{
    const char *code = err_code_name(err_last_code());
    const char *msg = err_last_message() ? err_last_message() : "";
    const char *hint = err_last_hint() ? err_last_hint() : "";
    /* Cleaned here already: a message may hold bytes that are not UTF-8 (a name from a file),
     * which jansson would refuse, losing the whole answer. */
    struct strbuf t = STRBUF_INIT, m = STRBUF_INIT, h = STRBUF_INIT;
    san_addn_lines(&m, msg, strlen(msg));
    san_addn_lines(&h, hint, strlen(hint));
    sb_addf(&t, "%s: %s", code, sb_str(&m));
    if (*hint)
        sb_addf(&t, "\nhint: %s", sb_str(&h));
    json_t *res = json_pack("{s:[{s:s,s:s}],s:{s:{s:s,s:s,s:s}},s:b}", "content", "type", "text",
                            "text", sb_str(&t), "structuredContent", "error", "code", code,
                            "message", sb_str(&m), "hint", sb_str(&h), "isError", 1);
    sb_release(&t);
    sb_release(&m);
    sb_release(&h);
    return res;
}
