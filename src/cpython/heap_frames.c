/* The heap walker's code objects, frames and threads (heap_walk_int.h): local names per code
 * object, an _PyInterpreterFrame's locals and (suspended) value stack, and the roots each thread
 * holds. Frames are found and read by the frame walker's rules (frame_walk.h: the thread's chain
 * through frames.c, tagged pointers, a suspended frame's stack top); nothing here follows a
 * frame's previous pointer. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "cpython/frames.h"
#include "cpython/heap_walk_int.h"
#include "cpython/threads.h"

static const struct code_names *code_names(struct hw *w, uint64_t code)
{
    uint64_t v, names;
    if (hm_get(&w->codes, code, &v))
        return (const struct code_names *)(uintptr_t)v;
    struct code_names *cn = arena_alloc(&w->arena, sizeof(*cn));
    if (!cn)
        return NULL;
    int32_t n = 0;
    int64_t tn = 0;
    if (mc_read(&w->mc, code + w->H->co_nlocalsplus, &n, 4) == 0 &&
        mc_read_u64(&w->mc, code + w->H->co_localsplusnames, &names) == 0 && names &&
        mc_read_u64(&w->mc, names + w->H->ob_size, (uint64_t *)&tn) == 0 && n > 0 && n < 65536 &&
        tn >= n) {
        cn->names = arena_alloc(&w->arena, (size_t)n * sizeof(char *));
        for (int32_t i = 0; cn->names && i < n; i++) {
            uint64_t s;
            if (mc_read_u64(&w->mc, names + w->H->tuple_items + (uint64_t)i * PTR, &s) == 0)
                cn->names[i] = hw_str_text(w, s, NULL);
        }
        if (cn->names)
            cn->n = (uint32_t)n;
    }
    hm_put(&w->codes, code, (uint64_t)(uintptr_t)cn);
    return cn;
}

int hw_code_location(struct hw *w, uint64_t at, uint64_t code)
{
    uint64_t file;
    int32_t line = 0;
    if (!w->sink->location || mc_read_u64(&w->mc, code + w->L->co_filename, &file) ||
        mc_read(&w->mc, code + w->L->co_firstlineno, &line, 4))
        return 0;
    const char *f = file ? hw_str_text(w, file, NULL) : NULL;
    return f ? w->sink->location(w->sink->ctx, at, f, line) : 0;
}

/* The locals (and, for suspended frames, the value stack) of an _PyInterpreterFrame. */
int hw_walk_iframe(struct hw *w, const struct holder *h, uint64_t frame, bool suspended,
                       uint64_t *code_out)
{
    const struct py_layout *L = w->L;
    const struct py_heap_layout *H = w->H;
    uint8_t fr[128];
    uint64_t code;
    if (L->fr_localsplus > sizeof(fr) || mc_read(&w->mc, frame, fr, L->fr_localsplus))
        return 0;
    code = py_fw_object(L, rd64(fr + L->fr_code));
    if (code_out)
        *code_out = code;
    uint64_t ct;
    if (!code || mc_read_u64(&w->mc, code + L->ob_type, &ct) || ct != w->rt->types.code)
        return 0;
    const struct code_names *cn = code_names(w, code);
    uint64_t nlocals = cn ? cn->n : 0, nslots = nlocals;
    if (suspended) {
        int32_t stacksize = 0;
        mc_read(&w->mc, code + H->co_stacksize, &stacksize, 4);
        int64_t top = py_fw_stack_used(&w->fw, frame, fr, nlocals, stacksize);
        if (top >= 0)
            nslots = (uint64_t)top;
    }
    uint64_t slots[CHUNK];
    char label[MAX_NAME + 32];
    for (uint64_t i = 0; i < nslots; i += CHUNK) {
        size_t n = nslots - i < CHUNK ? (size_t)(nslots - i) : CHUNK;
        if (mc_read(&w->mc, frame + L->fr_localsplus + i * PTR, slots,
                    n * PTR))
            break;
        for (size_t j = 0; j < n; j++) {
            uint64_t p = py_fw_object(L, slots[j]); /* 0: NULL or a tagged int */
            if (!p)
                continue;
            uint64_t idx = i + j;
            const char *name = idx < nlocals ? cn->names[idx] : NULL;
            if (idx < nlocals) {
                label[0] = 0;
                strcpy(label, ".locals[");
                if (name == hw_redacted)
                    strcat(label, hw_redacted);
                else
                    hw_quote(label, sizeof(label) - 1, name ? name : "?");
                strcat(label, "]");
            } else {
                snprintf(label, sizeof(label), ".stack[%llu]",
                         (unsigned long long)(idx - nlocals));
            }
            int err = hw_ref(w, h, p, HW_EDGE_LOCAL, label,
                          hw_sensitive_name(w, name));
            if (err)
                return err;
        }
    }
    uint64_t locals = rd64(fr + H->fr_locals), globals = rd64(fr + H->fr_globals);
    int err = 0;
    if (locals && locals != globals)
        err = hw_ref(w, h, locals, HW_EDGE_ATTR, ".f_locals", false);
    if (!err && h->from) { /* thread frames: module dicts are reached through sys.modules */
        uint64_t func = py_fw_object(L, rd64(fr + H->fr_func));
        err = hw_ref(w, h, globals, HW_EDGE_INTERNAL, ".f_globals", false);
        if (!err)
            err = hw_ref(w, h, func, HW_EDGE_INTERNAL, ".f_func", false);
        if (!err)
            err = hw_ref(w, h, code, HW_EDGE_INTERNAL, ".f_code", false);
    }
    return err;
}
int hw_collect_threads(struct hw *w)
{
    struct arena a = ARENA_INIT;
    struct py_thread *threads;
    size_t nthreads;
    struct py_code_cache cc;
    struct py_frame *frames = malloc(PY_MAX_STACK_DEPTH * sizeof(*frames));
    py_code_cache_init(&cc);
    int err = frames ? py_list_threads(w->rt, &a, &threads, &nthreads)
                     : err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (err)
        goto out;
    for (size_t t = 0; t < nthreads && !err; t++) {
        size_t n;
        bool truncated;
        if (py_thread_stack(w->rt, &cc, threads[t].tstate, frames, PY_MAX_STACK_DEPTH, &n,
                            &truncated) != 0) {
            log_debug("thread %lld: %s", (long long)threads[t].native_id, err_last_message());
            n = 0;
        }
        for (size_t f = 0; f <= n && !err; f++) {
            /* n frames, then the thread state itself */
            const char *prefix =
                f < n ? arena_printf(&w->arena, "Thread %lld %s (%s:%d)",
                                     (long long)threads[t].native_id,
                                     hw_redacted_or(frames[f].code->qualname),
                                     hw_redacted_or(frames[f].code->filename), frames[f].line)
                      : arena_printf(&w->arena, "Thread %lld", (long long)threads[t].native_id);
            struct thread_item *it = NULL;
            if (w->nthread_items == w->capthread_items) {
                size_t nc = w->capthread_items ? w->capthread_items * 2 : 64;
                it = realloc(w->thread_items, nc * sizeof(*it));
                if (it) {
                    w->thread_items = it;
                    w->capthread_items = nc;
                }
            }
            if (!prefix || w->nthread_items == w->capthread_items) {
                err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
                break;
            }
            it = &w->thread_items[w->nthread_items++];
            it->addr = f < n ? frames[f].addr : threads[t].tstate;
            it->prefix = prefix;
            it->is_tstate = f == n;
        }
    }
out:
    free(frames);
    py_code_cache_free(&cc);
    arena_free(&a);
    return err;
}

int hw_thread_roots(struct hw *w)
{
    const struct py_heap_layout *H = w->H;
    static const struct {
        size_t off;
        const char *label;
    } fields[] = {
        {offsetof(struct py_heap_layout, ts_dict), "threadstate.dict"},
        {offsetof(struct py_heap_layout, ts_async_exc), "threadstate.async_exc"},
        {offsetof(struct py_heap_layout, ts_context), "threadstate.context"},
        {offsetof(struct py_heap_layout, ts_current_exception), "threadstate.exception"},
    };
    int err = 0;
    for (size_t k = 0; k < w->nthread_items && !err; k++) {
        const struct thread_item *it = &w->thread_items[k];
        struct holder hd = {0, it->prefix, false};
        uint64_t p;
        if (!it->is_tstate) {
            err = hw_walk_iframe(w, &hd, it->addr, false, NULL);
            if (!err && mc_read_u64(&w->mc, it->addr + H->fr_frame_obj, &p) == 0 && p)
                err = hw_ref(w, &hd, p, HW_EDGE_INTERNAL, ".f_frame", false);
            continue;
        }
        for (size_t i = 0; i < NFIELDS(fields) && !err; i++) {
            uint64_t off;
            memcpy(&off, (const uint8_t *)H + fields[i].off, 8);
            if (off && mc_read_u64(&w->mc, it->addr + off, &p) == 0 && p)
                err = hw_ref(w, &hd, p, HW_EDGE_INTERNAL, fields[i].label, false);
        }
        uint64_t exc_info;
        if (!err && mc_read_u64(&w->mc, it->addr + H->ts_exc_info, &exc_info) == 0 && exc_info &&
            mc_read_u64(&w->mc, exc_info + H->exc_item_value, &p) == 0 && p)
            err = hw_ref(w, &hd, p, HW_EDGE_INTERNAL, "threadstate.exc_info", false);
    }
    return err;
}
