/* Thread enumeration. Names come from threading._active (ident -> Thread, attribute _name): the
 * same registry threading.enumerate() reads. */
#include "threads.h"

#include <string.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "cpython/frames.h"
#include "cpython/objects.h"
#include "cpython/thread_list.h"

#define MAX_THREAD_NAME 256

/* Fills names: thread ident -> name (const char * in the arena). Best effort. */
static void thread_names(struct py_runtime *rt, uint64_t interp, struct arena *arena,
                         struct hashmap *names)
{
    uint64_t tdict, active, key, thread;
    struct py_dict_iter it;
    int more;
    if (py_module_dict(rt, interp, "threading", &tdict) || !tdict)
        return;
    if (py_dict_get_str(rt, tdict, "_active", &active) || !active)
        return;
    if (py_dict_iter_init(rt, active, &it))
        return;
    while ((more = py_dict_next(rt, &it, &key, &thread)) > 0) {
        int64_t ident;
        uint64_t name_obj;
        struct strbuf sb = STRBUF_INIT;
        if (py_read_int(rt, key, &ident, NULL) == 0 && ident &&
            py_instance_attr(rt, thread, "_name", &name_obj) == 0 && name_obj &&
            py_read_str(rt, name_obj, MAX_THREAD_NAME, &sb) == 0) {
            const char *s = arena_strndup(arena, sb_str(&sb), sb.len);
            if (s)
                hm_put(names, (uint64_t)ident, (uint64_t)(uintptr_t)s);
        }
        sb_release(&sb);
    }
    if (more < 0)
        log_debug("reading threading._active: %s", err_last_message());
}

/* py_list_threads' walk: the interpreter being listed, and the threads found so far. */
struct list_ctx {
    struct py_runtime *rt;
    struct arena *arena;
    struct py_reader_mem rm;
    int err;
    struct py_thread *threads;
    size_t n, cap;
    int64_t id; /* the interpreter's */
    uint64_t holder;
    bool gil;
    struct hashmap names;
};

static int list_interp(void *ctx, uint64_t interp)
{
    struct list_ctx *c = ctx;
    c->id = 0;
    c->err = rd_read_u64(c->rt->rd, interp + c->rt->layout.is_id, (uint64_t *)&c->id);
    if (c->err)
        return -1;
    c->holder = 0;
    c->gil = true;
    if (py_gil_holder(c->rt, interp, &c->holder, &c->gil))
        c->holder = 0;
    hm_free(&c->names);
    thread_names(c->rt, interp, c->arena, &c->names);
    return 0;
}

static int list_thread(void *ctx, uint64_t interp, uint64_t tstate)
{
    struct list_ctx *c = ctx;
    const struct py_layout *L = &c->rt->layout;
    uint64_t tid, native;
    c->err = rd_read_u64(c->rt->rd, tstate + L->ts_thread_id, &tid);
    if (!c->err)
        c->err = rd_read_u64(c->rt->rd, tstate + L->ts_native_thread_id, &native);
    if (c->err)
        return -1;
    if (L->llp64) {
        tid &= 0xffffffffu;
        native &= 0xffffffffu;
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        struct py_thread *nt_arr = arena_alloc(c->arena, ncap * sizeof(*nt_arr));
        if (!nt_arr) {
            c->err = err_fail(SCRY_E_NO_MEMORY, "out of memory listing threads");
            return -1;
        }
        if (c->n)
            memcpy(nt_arr, c->threads, c->n * sizeof(*c->threads));
        c->threads = nt_arr;
        c->cap = ncap;
    }
    uint64_t name = 0;
    hm_get(&c->names, tid, &name);
    c->threads[c->n++] = (struct py_thread){
        .tstate = tstate,
        .interp = interp,
        .interp_id = c->id,
        .thread_id = tid,
        .native_id = (int64_t)native,
        .holds_gil = c->holder == tstate,
        .no_gil = !c->gil,
        .name = (const char *)(uintptr_t)name,
    };
    return 0;
}

int py_list_threads(struct py_runtime *rt, struct arena *arena, struct py_thread **out,
                    size_t *count)
{
    struct list_ctx c = {.rt = rt, .arena = arena, .rm = {rt->rd, 0}, .names = HASHMAP_INIT};
    uint64_t interp;
    int err = py_interp_head(rt, &interp);
    if (err)
        goto out;
    if (!interp) {
        err = err_fail(SCRY_E_NOT_PYTHON,
                       "the Python runtime has no interpreter (not started yet, or finalized)");
        goto out;
    }
    struct py_mem mem = {.read = py_reader_read, .ctx = &c.rm};
    struct py_tl w = {.L = &rt->layout, .mem = &mem, .max_interps = PY_MAX_INTERPRETERS,
                      .max_threads = PY_MAX_THREADS, .check_owner = true,
                      .on_interp = list_interp, .on_thread = list_thread, .ctx = &c};
    switch (py_tl_walk(&w, interp)) {
    case PY_TL_COMPLETE:
        break;
    case PY_TL_STOPPED:
        err = c.err;
        break;
    case PY_TL_READ_FAILED:
        err = c.rm.err;
        break;
    case PY_TL_INTERP_LOOP:
    case PY_TL_INTERP_LONG:
        err = err_fail(SCRY_E_READ_FAILED, "the interpreter list loops or is too long");
        break;
    case PY_TL_THREAD_LOOP:
    case PY_TL_THREAD_LONG:
        err = err_fail(SCRY_E_READ_FAILED, "the thread list loops or is too long");
        break;
    case PY_TL_FOREIGN:
        err = err_fail(SCRY_E_READ_FAILED,
                       "thread state 0x%llx does not belong to interpreter 0x%llx",
                       (unsigned long long)w.tstate, (unsigned long long)w.interp);
        break;
    }
out:
    hm_free(&c.names);
    *out = c.threads;
    *count = c.n;
    return err;
}
