/* speedscope export (see speedscope.h). Only frames that some stack uses go into the table, in
 * order of first use, so the indices are dense and the output deterministic. */
#include "render/speedscope.h"

#include <stdlib.h>
#include <string.h>

#include "render/json_writer.h"

static void write_frame(struct json_writer *w, const char *text)
{
    struct stk_frame_parts p;
    jw_obj_begin(w);
    jw_key(w, "name");
    if (stk_frame_split(text, &p)) {
        jw_strn(w, p.name, p.name_len);
        jw_key(w, "file");
        jw_strn(w, p.file, p.file_len);
        if (p.line > 0) {
            jw_key(w, "line");
            jw_int(w, p.line);
        }
    } else {
        jw_str(w, text);
    }
    jw_obj_end(w);
}

void speedscope_write(const struct stk_tree *t, const struct speedscope_opts *o,
                      struct strbuf *out)
{
    const char *name = o->name ? o->name : "scry";
    struct json_writer w;
    jw_init(&w, out, false);
    /* index[frame] + 1: the frame's position in the shared table (0: not used). */
    uint32_t *index = calloc(t->nframes + 1, sizeof(*index));
    uint32_t *order = malloc((t->nframes + 1) * sizeof(*order));
    uint32_t *path = NULL;
    size_t nused = 0;
    if (!index || !order)
        goto out;
    uint32_t depth = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        depth = n->depth > depth ? n->depth : depth;
    }
    path = malloc((depth + 1) * sizeof(*path));
    if (!path)
        goto out;
    /* Frames in depth-first order of first use. */
    for (size_t i = 1; i < t->nnodes; i++) {
        uint32_t f = t->nodes[i].frame;
        if (!index[f]) {
            order[nused] = f;
            index[f] = (uint32_t)++nused;
        }
    }

    jw_obj_begin(&w);
    jw_key(&w, "$schema");
    jw_str(&w, SPEEDSCOPE_SCHEMA);
    jw_key(&w, "shared");
    jw_obj_begin(&w);
    jw_key(&w, "frames");
    jw_arr_begin(&w);
    for (size_t i = 0; i < nused; i++)
        write_frame(&w, t->frames[order[i]]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_key(&w, "profiles");
    jw_arr_begin(&w);
    jw_obj_begin(&w);
    jw_key(&w, "type");
    jw_str(&w, "sampled");
    jw_key(&w, "name");
    jw_str(&w, name);
    jw_key(&w, "unit");
    jw_str(&w, o->unit ? o->unit : "none");
    jw_key(&w, "startValue");
    jw_int(&w, 0);
    jw_key(&w, "endValue");
    jw_double(&w, t->nnodes ? t->nodes[STK_ROOT].total : 0);
    jw_key(&w, "samples");
    jw_arr_begin(&w);
    for (size_t i = 1; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        if (n->self <= 0)
            continue;
        uint32_t d = 0;
        for (uint32_t c = (uint32_t)i; c != STK_ROOT; c = t->nodes[c].parent)
            path[d++] = c;
        jw_arr_begin(&w);
        while (d-- > 0)
            jw_uint(&w, index[t->nodes[path[d]].frame] - 1);
        jw_arr_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "weights");
    jw_arr_begin(&w);
    for (size_t i = 1; i < t->nnodes; i++)
        if (t->nodes[i].self > 0)
            jw_double(&w, t->nodes[i].self);
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_arr_end(&w);
    jw_key(&w, "name");
    jw_str(&w, name);
    jw_key(&w, "activeProfileIndex");
    jw_int(&w, 0);
    jw_key(&w, "exporter");
    jw_str(&w, o->exporter ? o->exporter : "scry");
    jw_obj_end(&w);
    sb_addch(out, '\n');
out:
    free(index);
    free(order);
    free(path);
}
