/* Renderers for the stacks report. The JSON document is specified in docs/json-schema.md. */
#include "stacks_render.h"

#include <inttypes.h>
#include <string.h>

#include "common/sanitize.h"
#include "render/json_writer.h"

#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_RESET "\033[0m"

void stacks_render_text(const struct stacks_report *r, bool color, struct strbuf *out)
{
    const char *bold = color ? C_BOLD : "", *dim = color ? C_DIM : "";
    const char *green = color ? C_GREEN : "", *yellow = color ? C_YELLOW : "";
    const char *reset = color ? C_RESET : "";
    if (r->source && r->source[0] && r->pid)
        sb_addf(out, "%sCore %s%s of process %d", bold, san_str(r->source), reset, r->pid);
    else if (r->source && r->source[0])
        sb_addf(out, "%sCore %s%s", bold, san_str(r->source), reset);
    else
        sb_addf(out, "%sProcess %d%s", bold, r->pid, reset);
    if (r->command && r->command[0])
        sb_addf(out, ": %s", san_str(r->command));
    sb_addf(out, "\nPython %s%s%s%s", bold, san_str(r->python_version), reset,
            r->free_threaded ? " free-threaded" : "");
    if (r->python_path)
        sb_addf(out, " %s(%s)%s", dim, san_str(r->python_path), reset);
    sb_addch(out, '\n');
    if (r->nthreads == 0)
        sb_adds(out, "\nNo Python threads.\n");

    bool many_interps = false;
    for (size_t i = 1; i < r->nthreads; i++)
        many_interps |= r->threads[i].interpreter_id != r->threads[0].interpreter_id;

    for (size_t i = 0; i < r->nthreads; i++) {
        const struct stacks_thread *t = &r->threads[i];
        sb_addf(out, "\n%sThread %" PRId64 "%s (%s%s%s%s)", bold, t->native_id, reset,
                t->idle ? dim : green, t->idle ? "idle" : "active", reset,
                t->gil && !t->no_gil ? ", gil" : "");
        if (t->name) {
            /* Quoted as a JSON string, cleaned first (JSON keeps C1 and bidi controls). */
            const char *name = san_str(t->name);
            sb_adds(out, ": ");
            sb_add_json_str(out, name, strlen(name));
        }
        if (many_interps)
            sb_addf(out, " [interpreter %" PRId64 "]", t->interpreter_id);
        sb_addch(out, '\n');
        for (size_t f = 0; f < t->nframes; f++) {
            const struct stacks_frame *fr = &t->frames[f];
            sb_addf(out, "    %s%s%s (%s%s:", yellow, san_str(fr->function), reset, dim,
                    san_str(fr->file));
            if (fr->line >= 0)
                sb_addf(out, "%d", fr->line);
            else
                sb_adds(out, "?");
            sb_addf(out, "%s)\n", reset);
        }
        if (t->truncated)
            sb_adds(out, "    ... (stack truncated)\n");
        if (t->nframes == 0 && !t->truncated)
            sb_addf(out, "    %s(no Python frames)%s\n", dim, reset);
    }
}

void stacks_render_json(const struct stacks_report *r, struct strbuf *out)
{
    struct json_writer w;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "pid");
    jw_int(&w, r->pid);
    if (r->source && r->source[0]) {
        jw_key(&w, "core");
        jw_str(&w, r->source);
    }
    jw_key(&w, "python_version");
    jw_str(&w, r->python_version);
    jw_key(&w, "free_threaded");
    jw_bool(&w, r->free_threaded);
    jw_key(&w, "threads");
    jw_arr_begin(&w);
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct stacks_thread *t = &r->threads[i];
        jw_obj_begin(&w);
        jw_key(&w, "thread_id");
        jw_uint(&w, t->thread_id);
        jw_key(&w, "native_id");
        jw_int(&w, t->native_id);
        jw_key(&w, "interpreter_id");
        jw_int(&w, t->interpreter_id);
        jw_key(&w, "name");
        jw_str(&w, t->name);
        jw_key(&w, "idle");
        jw_bool(&w, t->idle);
        jw_key(&w, "gil");
        if (t->no_gil)
            jw_null(&w);
        else
            jw_bool(&w, t->gil);
        jw_key(&w, "truncated");
        jw_bool(&w, t->truncated);
        jw_key(&w, "frames");
        jw_arr_begin(&w);
        for (size_t f = 0; f < t->nframes; f++) {
            jw_obj_begin(&w);
            jw_key(&w, "function");
            jw_str(&w, t->frames[f].function);
            jw_key(&w, "file");
            jw_str(&w, t->frames[f].file);
            jw_key(&w, "line");
            if (t->frames[f].line >= 0)
                jw_int(&w, t->frames[f].line);
            else
                jw_null(&w);
            jw_obj_end(&w);
        }
        jw_arr_end(&w);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}
