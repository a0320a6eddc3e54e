/* Thread enumeration. Names come from threading._active (ident -> Thread, attribute _name): the
 * same registry threading.enumerate() reads. */
#include "threads.h"

#include <string.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "cpython/objects.h"

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

int py_list_threads(struct py_runtime *rt, struct arena *arena, struct py_thread **out,
                    size_t *count)
{
    const struct py_layout *L = &rt->layout;
    struct hashmap seen = HASHMAP_INIT;
    struct py_thread *threads = NULL;
    size_t n = 0, cap = 0;
    uint64_t interp;
    int err = py_interp_head(rt, &interp);
    if (err)
        goto out;
    if (!interp) {
        err = err_fail(SCRY_E_NOT_PYTHON,
                       "the Python runtime has no interpreter (not started yet, or finalized)");
        goto out;
    }

    for (size_t ni = 0; interp; ni++) {
        if (ni >= PY_MAX_INTERPRETERS || hm_has(&seen, interp)) {
            err = err_fail(SCRY_E_READ_FAILED, "the interpreter list loops or is too long");
            goto out;
        }
        hm_put(&seen, interp, 1);
        int64_t id = 0;
        uint64_t tstate, next, holder = 0;
        bool gil = true;
        err = rd_read_u64(rt->rd, interp + L->is_id, (uint64_t *)&id);
        if (!err)
            err = rd_read_u64(rt->rd, interp + L->is_threads_head, &tstate);
        if (!err)
            err = rd_read_u64(rt->rd, interp + L->is_next, &next);
        if (err)
            goto out;
        if (py_gil_holder(rt, interp, &holder, &gil))
            holder = 0;
        struct hashmap names = HASHMAP_INIT;
        thread_names(rt, interp, arena, &names);

        for (size_t nt = 0; tstate; nt++) {
            uint64_t owner, tid, native;
            if (nt >= PY_MAX_THREADS || hm_has(&seen, tstate)) {
                hm_free(&names);
                err = err_fail(SCRY_E_READ_FAILED, "the thread list loops or is too long");
                goto out;
            }
            hm_put(&seen, tstate, 1);
            err = rd_read_u64(rt->rd, tstate + L->ts_interp, &owner);
            if (!err && owner != interp)
                err = err_fail(SCRY_E_READ_FAILED,
                               "thread state 0x%llx does not belong to interpreter 0x%llx",
                               (unsigned long long)tstate, (unsigned long long)interp);
            if (!err)
                err = rd_read_u64(rt->rd, tstate + L->ts_thread_id, &tid);
            if (!err)
                err = rd_read_u64(rt->rd, tstate + L->ts_native_thread_id, &native);
            if (err) {
                hm_free(&names);
                goto out;
            }
            if (n == cap) {
                size_t ncap = cap ? cap * 2 : 16;
                struct py_thread *nt_arr = arena_alloc(arena, ncap * sizeof(*nt_arr));
                if (!nt_arr) {
                    hm_free(&names);
                    err = err_fail(SCRY_E_NO_MEMORY, "out of memory listing threads");
                    goto out;
                }
                if (n)
                    memcpy(nt_arr, threads, n * sizeof(*threads));
                threads = nt_arr;
                cap = ncap;
            }
            uint64_t name = 0;
            hm_get(&names, tid, &name);
            threads[n] = (struct py_thread){
                .tstate = tstate,
                .interp = interp,
                .interp_id = id,
                .thread_id = tid,
                .native_id = (int64_t)native,
                .holds_gil = holder == tstate,
                .no_gil = !gil,
                .name = (const char *)(uintptr_t)name,
            };
            n++;
            err = rd_read_u64(rt->rd, tstate + L->ts_next, &tstate);
            if (err) {
                hm_free(&names);
                goto out;
            }
        }
        hm_free(&names);
        interp = next;
    }
    err = 0;
out:
    hm_free(&seen);
    *out = threads;
    *count = n;
    return err;
}
