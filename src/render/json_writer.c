/* JSON writer: value placement (comma, newline, indentation) is decided in one place. */
#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(struct json_writer *w, struct strbuf *out, bool pretty)
{
    memset(w, 0, sizeof(*w));
    w->out = out;
    w->pretty = pretty;
}

static void newline(struct json_writer *w)
{
    if (!w->pretty)
        return;
    sb_addch(w->out, '\n');
    for (int i = 0; i < w->depth; i++)
        sb_adds(w->out, "  ");
}

/* Called before every value and key. */
static void place(struct json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0) {
        if (w->need_comma[w->depth])
            sb_addch(w->out, ',');
        w->need_comma[w->depth] = true;
        newline(w);
    }
}

static void open(struct json_writer *w, char c)
{
    place(w);
    sb_addch(w->out, c);
    if (w->depth < JW_MAX_DEPTH - 1)
        w->depth++;
    w->need_comma[w->depth] = false;
}

static void close_(struct json_writer *w, char c)
{
    bool had = w->need_comma[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (had)
        newline(w);
    sb_addch(w->out, c);
}

void jw_obj_begin(struct json_writer *w) { open(w, '{'); }
void jw_obj_end(struct json_writer *w) { close_(w, '}'); }
void jw_arr_begin(struct json_writer *w) { open(w, '['); }
void jw_arr_end(struct json_writer *w) { close_(w, ']'); }

void jw_key(struct json_writer *w, const char *key)
{
    place(w);
    sb_add_json_str(w->out, key, strlen(key));
    sb_adds(w->out, w->pretty ? ": " : ":");
    w->after_key = true;
}

void jw_strn(struct json_writer *w, const char *s, size_t len)
{
    place(w);
    sb_add_json_str(w->out, s, len);
}

void jw_str(struct json_writer *w, const char *s)
{
    if (!s) {
        jw_null(w);
        return;
    }
    jw_strn(w, s, strlen(s));
}

void jw_int(struct json_writer *w, int64_t v)
{
    place(w);
    sb_addf(w->out, "%" PRId64, v);
}

void jw_uint(struct json_writer *w, uint64_t v)
{
    place(w);
    sb_addf(w->out, "%" PRIu64, v);
}

void jw_double(struct json_writer *w, double v)
{
    if (!isfinite(v)) {
        jw_null(w);
        return;
    }
    place(w);
    /* The shortest of %.15g..%.17g that reads back as the same double. */
    char buf[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (prec == 17 || strtod(buf, NULL) == v)
            break;
    }
    sb_adds(w->out, buf);
}

void jw_bool(struct json_writer *w, bool v)
{
    place(w);
    sb_adds(w->out, v ? "true" : "false");
}

void jw_null(struct json_writer *w)
{
    place(w);
    sb_adds(w->out, "null");
}
