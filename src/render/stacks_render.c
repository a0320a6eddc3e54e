/* Renderers for the stacks report. The JSON document is specified in docs/json-schema.md. */
#include "stacks_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sanitize.h"
#include "render/json_writer.h"

#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_RESET "\033[0m"

struct colors {
    const char *bold, *dim, *green, *yellow, *reset;
};

static void render_frame(const struct stacks_frame *fr, const struct colors *c, const char *indent,
                         struct strbuf *out)
{
    if (fr->native) {
        sb_addf(out, "%s%s%s%s+0x%" PRIx64 " (%snative: %s%s)\n", indent, c->yellow,
                fr->function[0] ? san_str(fr->function) : "??", c->reset, fr->offset, c->dim,
                san_str(fr->file), c->reset);
        return;
    }
    sb_addf(out, "%s%s%s%s (%s%s:", indent, c->yellow, san_str(fr->function), c->reset, c->dim,
            san_str(fr->file));
    if (fr->line >= 0)
        sb_addf(out, "%d", fr->line);
    else
        sb_adds(out, "?");
    sb_addf(out, "%s)\n", c->reset);
    for (size_t i = 0; i < fr->nlocals; i++) {
        const struct stacks_local *l = &fr->locals[i];
        sb_addf(out, "%s    %s%s = %s%s%s\n", indent, san_str(l->name), l->cell ? " (cell)" : "",
                l->redacted ? c->dim : "", san_str(l->value), l->redacted ? c->reset : "");
    }
    if (fr->locals_cut)
        sb_addf(out, "%s    ... (more locals)\n", indent);
}

/* The index of the task at addr, or n. */
static size_t task_index(const struct stacks_report *r, uint64_t addr)
{
    for (size_t i = 0; addr && i < r->ntasks; i++)
        if (r->tasks[i].addr == addr)
            return i;
    return r->ntasks;
}

static void add_prefix(struct strbuf *out, int depth)
{
    for (int i = 0; i < depth; i++)
        sb_adds(out, "    ");
}

/* One task and, below its coroutine chain, the task it awaits, as `python -m asyncio pstree`
 * draws them. seen[] stops a task drawn twice (a cycle, or two awaiters of one task). */
static void render_task(const struct stacks_report *r, size_t i, int depth, bool *seen,
                        const struct colors *c, struct strbuf *out)
{
    const struct stacks_task *t = &r->tasks[i];
    add_prefix(out, depth);
    sb_addf(out, "\u2514\u2500\u2500 (T) %s%s%s [%s", c->bold, san_str(t->name), c->reset,
            t->state);
    if (t->awaits_type)
        sb_addf(out, ", awaits %s", san_str(t->awaits_type));
    sb_addf(out, "] %s0x%" PRIx64 "%s\n", c->dim, t->addr, c->reset);
    if (seen[i]) {
        add_prefix(out, depth + 1);
        sb_adds(out, "\u2514\u2500\u2500 (shown above)\n");
        return;
    }
    seen[i] = true;
    for (size_t f = 0; f < t->ncoro; f++) {
        add_prefix(out, depth + 1 + (int)f);
        render_frame(&t->coro[f], c, "\u2514\u2500\u2500 ", out);
    }
    size_t next = task_index(r, t->awaits);
    if (next < r->ntasks)
        render_task(r, next, depth + 1 + (int)t->ncoro, seen, c, out);
    for (size_t g = 0; g < t->ngathers; g++) {
        size_t j = task_index(r, t->gathers[g]);
        if (j < r->ntasks)
            render_task(r, j, depth + 1 + (int)t->ncoro, seen, c, out);
    }
}

static void render_tasks(const struct stacks_report *r, const struct colors *c,
                         struct strbuf *out)
{
    sb_addf(out, "\n%sAsyncio tasks (%zu)%s\n", c->bold, r->ntasks, c->reset);
    if (r->ntasks == 0) {
        sb_addf(out, "    %s(no asyncio tasks)%s\n", c->dim, c->reset);
        return;
    }
    bool *seen = calloc(r->ntasks, sizeof(bool));
    bool *awaited = calloc(r->ntasks, sizeof(bool));
    if (!seen || !awaited) {
        free(seen);
        free(awaited);
        sb_adds(out, "    (out of memory)\n");
        return;
    }
    for (size_t i = 0; i < r->ntasks; i++) {
        size_t j = task_index(r, r->tasks[i].awaits);
        if (j < r->ntasks && j != i)
            awaited[j] = true;
        for (size_t g = 0; g < r->tasks[i].ngathers; g++) {
            j = task_index(r, r->tasks[i].gathers[g]);
            if (j < r->ntasks && j != i)
                awaited[j] = true;
        }
    }
    for (size_t i = 0; i < r->ntasks; i++)
        if (!awaited[i])
            render_task(r, i, 0, seen, c, out);
    for (size_t i = 0; i < r->ntasks; i++) /* what is left is a cycle of awaits */
        if (!seen[i])
            render_task(r, i, 0, seen, c, out);
    free(seen);
    free(awaited);

    /* the table: one task a line */
    sb_addf(out, "\n%-18s  %-24s  %-9s  %-24s  %s\n", "task", "name", "state", "awaits",
            "coroutine chain");
    for (size_t i = 0; i < r->ntasks; i++) {
        const struct stacks_task *t = &r->tasks[i];
        char addr[32], awaits[64];
        snprintf(addr, sizeof(addr), "0x%" PRIx64, t->addr);
        size_t j = task_index(r, t->awaits);
        if (j < r->ntasks)
            snprintf(awaits, sizeof(awaits), "task 0x%" PRIx64, t->awaits);
        else
            snprintf(awaits, sizeof(awaits), "%s", t->awaits_type ? t->awaits_type : "-");
        sb_addf(out, "%-18s  %-24s  %-9s  %-24s  ", addr, san_str(t->name), t->state,
                san_str(awaits));
        for (size_t f = 0; f < t->ncoro; f++)
            sb_addf(out, "%s%s", f ? " -> " : "", san_str(t->coro[f].function));
        sb_addch(out, '\n');
    }
}

static void render_text(const struct stacks_report *r, const struct colors *c,
                        struct strbuf *out)
{
    const char *kind = r->minidump ? "Minidump" : "Core";
    if (r->source && r->source[0] && r->pid)
        sb_addf(out, "%s%s %s%s of process %d", c->bold, kind, san_str(r->source), c->reset,
                r->pid);
    else if (r->source && r->source[0])
        sb_addf(out, "%s%s %s%s", c->bold, kind, san_str(r->source), c->reset);
    else
        sb_addf(out, "%sProcess %d%s", c->bold, r->pid, c->reset);
    if (r->parent_pid)
        sb_addf(out, " (child of %d)", r->parent_pid);
    if (r->command && r->command[0])
        sb_addf(out, ": %s", san_str(r->command));
    if (r->error_code) {
        sb_addf(out, "\n    %s%s (%s)%s\n", c->dim, san_str(r->error_message), r->error_code,
                c->reset);
        return;
    }
    sb_addf(out, "\nPython %s%s%s%s", c->bold, san_str(r->python_version), c->reset,
            r->free_threaded ? " free-threaded" : "");
    if (r->python_path)
        sb_addf(out, " %s(%s)%s", c->dim, san_str(r->python_path), c->reset);
    sb_addch(out, '\n');
    if (r->nthreads == 0)
        sb_adds(out, "\nNo Python threads.\n");

    bool many_interps = false;
    for (size_t i = 1; i < r->nthreads; i++)
        many_interps |= r->threads[i].interpreter_id != r->threads[0].interpreter_id;

    for (size_t i = 0; i < r->nthreads; i++) {
        const struct stacks_thread *t = &r->threads[i];
        sb_addf(out, "\n%sThread %" PRId64 "%s (%s%s%s%s)", c->bold, t->native_id, c->reset,
                t->idle ? c->dim : c->green, t->idle ? "idle" : "active", c->reset,
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
        for (size_t f = 0; f < t->nframes; f++)
            render_frame(&t->frames[f], c, "    ", out);
        if (t->truncated)
            sb_adds(out, "    ... (stack truncated)\n");
        if (t->nframes == 0 && !t->truncated)
            sb_addf(out, "    %s(no Python frames)%s\n", c->dim, c->reset);
    }
    if (r->with_async)
        render_tasks(r, c, out);
}

void stacks_render_text(const struct stacks_report *r, bool color, struct strbuf *out)
{
    struct colors c = {"", "", "", "", ""};
    if (color)
        c = (struct colors){C_BOLD, C_DIM, C_GREEN, C_YELLOW, C_RESET};
    render_text(r, &c, out);
    for (size_t i = 0; i < r->nchildren; i++) {
        sb_addch(out, '\n');
        render_text(&r->children[i], &c, out);
    }
}

static void json_frames(struct json_writer *w, const struct stacks_report *r,
                        const struct stacks_frame *frames, size_t n)
{
    jw_arr_begin(w);
    for (size_t f = 0; f < n; f++) {
        const struct stacks_frame *fr = &frames[f];
        jw_obj_begin(w);
        jw_key(w, "function");
        jw_str(w, fr->function);
        jw_key(w, "file");
        jw_str(w, fr->file);
        jw_key(w, "line");
        if (fr->line >= 0)
            jw_int(w, fr->line);
        else
            jw_null(w);
        if (r->with_native) {
            jw_key(w, "kind");
            jw_str(w, fr->native ? "native" : "python");
            if (fr->native) {
                jw_key(w, "offset");
                jw_uint(w, fr->offset);
            }
        }
        if (r->with_locals && !fr->native) {
            jw_key(w, "locals");
            jw_arr_begin(w);
            for (size_t i = 0; i < fr->nlocals; i++) {
                const struct stacks_local *l = &fr->locals[i];
                jw_obj_begin(w);
                jw_key(w, "name");
                jw_str(w, l->name);
                jw_key(w, "type");
                jw_str(w, l->type);
                jw_key(w, "value");
                jw_str(w, l->value);
                jw_key(w, "redacted");
                jw_bool(w, l->redacted);
                jw_key(w, "cell");
                jw_bool(w, l->cell);
                jw_obj_end(w);
            }
            jw_arr_end(w);
            jw_key(w, "locals_truncated");
            jw_bool(w, fr->locals_cut);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

static void json_addr(struct json_writer *w, const char *key, uint64_t addr)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
    if (key)
        jw_key(w, key);
    if (addr)
        jw_str(w, buf);
    else
        jw_null(w);
}

static void json_tasks(struct json_writer *w, const struct stacks_report *r)
{
    jw_key(w, "async_tasks");
    jw_arr_begin(w);
    for (size_t i = 0; i < r->ntasks; i++) {
        const struct stacks_task *t = &r->tasks[i];
        jw_obj_begin(w);
        json_addr(w, "address", t->addr);
        json_addr(w, "loop", t->loop);
        jw_key(w, "name");
        jw_str(w, t->name);
        jw_key(w, "state");
        jw_str(w, t->state);
        json_addr(w, "awaits_task", task_index(r, t->awaits) < r->ntasks ? t->awaits : 0);
        jw_key(w, "awaits_type");
        jw_str(w, t->awaits_type);
        jw_key(w, "gathers");
        jw_arr_begin(w);
        for (size_t g = 0; g < t->ngathers; g++)
            json_addr(w, NULL, t->gathers[g]);
        jw_arr_end(w);
        jw_key(w, "coroutine_stack");
        json_frames(w, r, t->coro, t->ncoro);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

static void render_json(const struct stacks_report *r, struct json_writer *w)
{
    jw_obj_begin(w);
    jw_key(w, "pid");
    jw_int(w, r->pid);
    if (r->parent_pid) {
        jw_key(w, "parent_pid");
        jw_int(w, r->parent_pid);
        jw_key(w, "command");
        jw_str(w, r->command);
    }
    if (r->error_code) {
        jw_key(w, "error");
        jw_obj_begin(w);
        jw_key(w, "code");
        jw_str(w, r->error_code);
        jw_key(w, "message");
        jw_str(w, r->error_message);
        jw_obj_end(w);
        jw_obj_end(w);
        return;
    }
    if (r->source && r->source[0]) {
        jw_key(w, r->minidump ? "minidump" : "core");
        jw_str(w, r->source);
    }
    jw_key(w, "python_version");
    jw_str(w, r->python_version);
    jw_key(w, "free_threaded");
    jw_bool(w, r->free_threaded);
    jw_key(w, "threads");
    jw_arr_begin(w);
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct stacks_thread *t = &r->threads[i];
        jw_obj_begin(w);
        jw_key(w, "thread_id");
        jw_uint(w, t->thread_id);
        jw_key(w, "native_id");
        jw_int(w, t->native_id);
        jw_key(w, "interpreter_id");
        jw_int(w, t->interpreter_id);
        jw_key(w, "name");
        jw_str(w, t->name);
        jw_key(w, "idle");
        jw_bool(w, t->idle);
        jw_key(w, "gil");
        if (t->no_gil)
            jw_null(w);
        else
            jw_bool(w, t->gil);
        jw_key(w, "truncated");
        jw_bool(w, t->truncated);
        jw_key(w, "frames");
        json_frames(w, r, t->frames, t->nframes);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (r->with_async)
        json_tasks(w, r);
    if (r->with_subprocesses) {
        jw_key(w, "subprocesses");
        jw_arr_begin(w);
        for (size_t i = 0; i < r->nchildren; i++)
            render_json(&r->children[i], w);
        jw_arr_end(w);
    }
    jw_obj_end(w);
}

void stacks_render_json(const struct stacks_report *r, struct strbuf *out)
{
    struct json_writer w;
    jw_init(&w, out, false);
    render_json(r, &w);
    sb_addch(out, '\n');
}
