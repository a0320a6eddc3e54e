/* A small streaming JSON writer into a strbuf: it tracks nesting and commas so callers only say
 * what comes next. Output is compact unless `pretty` is set (two-space indentation). */
#ifndef SCRY_RENDER_JSON_WRITER_H
#define SCRY_RENDER_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"

#define JW_MAX_DEPTH 64

struct json_writer {
    struct strbuf *out;
    bool pretty;
    int depth;
    bool need_comma[JW_MAX_DEPTH];
    bool after_key;
};

void jw_init(struct json_writer *w, struct strbuf *out, bool pretty);
void jw_obj_begin(struct json_writer *w);
void jw_obj_end(struct json_writer *w);
void jw_arr_begin(struct json_writer *w);
void jw_arr_end(struct json_writer *w);
void jw_key(struct json_writer *w, const char *key);
void jw_str(struct json_writer *w, const char *s); /* NULL writes null */
void jw_strn(struct json_writer *w, const char *s, size_t len);
void jw_int(struct json_writer *w, int64_t v);
void jw_uint(struct json_writer *w, uint64_t v);
void jw_double(struct json_writer *w, double v); /* non-finite values write null */
void jw_bool(struct json_writer *w, bool v);
void jw_null(struct json_writer *w);

#endif
