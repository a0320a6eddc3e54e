/* asyncio's tasks read from outside (async_tasks.h). Registries are reached by name (module
 * dicts, WeakSet.data), so the only offsets of our own are _asyncio.Task's few fields, from the
 * generated table of ctype_layouts.h; every pointer is checked by type before it is followed, and
 * every loop is bounded. */
#include "async_tasks.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "common/strbuf.h"
#include "cpython/ctype_layouts.h"
#include "cpython/frame_walk.h"
#include "cpython/linetable.h"
#include "cpython/locals.h"
#include "cpython/objects.h"
#include "cpython/redact.h"
#include "cpython/threads.h"
#include "reader/elf_image.h"

#define MAX_NAME_CHARS 256
#define MAX_SET_SLOTS (1u << 24)
#define MAX_BASES 16

/* How each version keeps tasks and a coroutine's frame state; the fields of _asyncio.Task are
 * the rows of ctl_asyncio_task (ctype_layouts.h: probed in each interpreter by
 * tests/tools/probe_ctypes.py; tests/e2e/test_stacks_more.py reads known tasks with them). */
struct task_version {
    int minor;
    bool lists; /* 3.14+: tasks in per-thread and per-interpreter lists (.AsyncioDebug) */
    /* a generator's or coroutine's frame state (enum _framestate, pycore_frame.h): not started,
       suspended (from .. to: suspended in a `yield from`/`await` among them), running */
    int8_t created, suspended_from, suspended_to, executing;
};

static const struct task_version task_versions[] = {
    {11, false, -2, -1, -1, 0},
    {12, false, -2, -1, -1, 0},
    {13, false, -3, -2, -1, 0},
    {14, true, -3, -2, -1, 0},
    {15, true, 0, 1, 3, 4},
};

/* Python 3.14+'s _Py_AsyncioModuleDebugOffsets (the .AsyncioDebug section of the module that
 * holds _asyncio: its extension module or, when built in, the interpreter's image), as u64s. */
enum {
    ADBG_TASK_SIZE,
    ADBG_TASK_NAME,
    ADBG_TASK_AWAITED_BY,
    ADBG_TASK_IS_TASK,
    ADBG_TASK_AWAITED_BY_IS_SET,
    ADBG_TASK_CORO,
    ADBG_TASK_NODE,
    ADBG_INTERP_SIZE,
    ADBG_INTERP_TASKS_HEAD,
    ADBG_TSTATE_SIZE,
    ADBG_TSTATE_RUNNING_LOOP,
    ADBG_TSTATE_RUNNING_TASK,
    ADBG_TSTATE_TASKS_HEAD,
    ADBG_COUNT
};

static const struct task_version *task_version(const struct py_runtime *rt)
{
    for (size_t i = 0; i < sizeof(task_versions) / sizeof(task_versions[0]); i++)
        if (task_versions[i].minor == rt->minor)
            return &task_versions[i];
    return NULL;
}

/* The fields of this build's _asyncio.Task (a free-threaded build has rows of its own). */
static const struct ctl_future *task_fields(const struct py_runtime *rt)
{
    return CTL_ROW(ctl_asyncio_task, rt->minor, rt->layout.free_threaded, false);
}

int py_async_supported(const struct py_runtime *rt)
{
    if (task_version(rt) && task_fields(rt) && py_runtime_heap_layout(rt))
        return 0;
    return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                    "--async reads asyncio's tasks of Python 3.11-3.15 (3.13t included); this "
                    "process runs Python %s%s",
                    rt->version_str, rt->layout.free_threaded ? " free-threaded" : "");
}

struct ctx {
    struct py_runtime *rt;
    struct py_code_cache *cc;
    struct arena *a;
    const struct task_version *V;
    const struct ctl_future *T;
    const struct py_heap_layout *H;
    struct py_fw fw;
    uint64_t set_dummy;
    struct hashmap seen;        /* task address -> 1 */
    struct hashmap task_types;  /* type address -> 1 (a Task) or 2 (not one) */
    struct py_async_task *tasks;
    size_t n, cap;
};

/* Whether the C string at p (a tp_name) is s. */
static bool cstr_is(struct py_runtime *rt, uint64_t p, const char *s)
{
    char buf[64];
    size_t n = strlen(s) + 1;
    return p && n <= sizeof(buf) && rd_read(rt->rd, p, buf, n) == 0 && memcmp(buf, s, n) == 0;
}

/* _asyncio.Task or a subclass of it. */
static bool is_task_type(struct ctx *c, uint64_t type)
{
    uint64_t v;
    if (hm_get(&c->task_types, type, &v))
        return v == 1;
    bool yes = false;
    uint64_t t = type;
    for (int i = 0; t && i < MAX_BASES && !yes; i++) {
        uint64_t name;
        if (rd_read_u64(c->rt->rd, t + c->rt->layout.tp_name, &name))
            break;
        yes = cstr_is(c->rt, name, "_asyncio.Task");
        if (rd_read_u64(c->rt->rd, t + c->H->tp_base, &t))
            break;
    }
    hm_put(&c->task_types, type, yes ? 1 : 2);
    return yes;
}

static const char *type_name_of(struct ctx *c, uint64_t obj)
{
    uint64_t type;
    return py_type_of(c->rt, obj, &type) ? "?" : py_type_name(c->rt, c->a, type);
}

static bool obj_is_task(struct ctx *c, uint64_t obj)
{
    uint64_t type;
    return obj && py_type_of(c->rt, obj, &type) == 0 && is_task_type(c, type);
}

static const char *task_name(struct ctx *c, uint64_t name)
{
    uint64_t type;
    if (!name || py_type_of(c->rt, name, &type))
        return "?";
    if (type == c->rt->types.long_) { /* 3.12+: a counter, formatted on demand as Task-N */
        int64_t v;
        char buf[32];
        if (py_read_int(c->rt, name, &v, NULL))
            return "?";
        snprintf(buf, sizeof(buf), "Task-%" PRId64, v);
        return arena_strdup(c->a, buf);
    }
    struct strbuf sb = STRBUF_INIT;
    const char *r = "?";
    if (py_read_str(c->rt, name, MAX_NAME_CHARS, &sb) == 0) /* a name made of a secret: hidden */
        r = redact_text_is_secret(sb_str(&sb), sb.len) ? REDACTED
                                                       : arena_strndup(c->a, sb_str(&sb), sb.len);
    sb_release(&sb);
    return r ? r : "?";
}

/* The frame of a coroutine or generator object (its embedded _PyInterpreterFrame) as a stack
 * frame, and what it awaits (the top of its value stack while suspended), or 0. Returns false when
 * obj is no coroutine or generator, or its frame is finished. */
static bool coro_frame(struct ctx *c, uint64_t obj, struct py_frame *out, uint64_t *awaits)
{
    struct py_runtime *rt = c->rt;
    const struct py_layout *L = &rt->layout;
    uint64_t type;
    int8_t state;
    *awaits = 0;
    if (py_type_of(rt, obj, &type) || (type != rt->types.coro && type != rt->types.gen) ||
        rd_read(rt->rd, obj + c->H->gi_frame_state, &state, 1))
        return false;
    bool suspended = state >= c->V->suspended_from && state <= c->V->suspended_to;
    if (!suspended && state != c->V->created && state != c->V->executing)
        return false; /* completed or cleared: no frame */
    uint64_t frame = obj + c->H->gi_iframe;
    uint8_t fr[256];
    if (L->fr_localsplus > sizeof(fr) || rd_read(rt->rd, frame, fr, L->fr_localsplus))
        return false;
    uint64_t code = py_fw_object(L, py_u64_at(fr + L->fr_code));
    const struct py_code_info *ci;
    if (!code || py_code_resolve(rt, c->cc, code, &ci))
        return false;
    out->addr = frame;
    out->code = ci;
    out->lasti = py_fw_lasti(&c->fw, code, py_u64_at(fr + L->fr_instr));
    out->group = 0;
    out->line = ci->linetable ? py_linetable_frame_line(ci->linetable, ci->linetable_len,
                                                        ci->firstlineno, out->lasti)
                              : -1;
    if (!suspended)
        return true; /* not started: awaits nothing; running: its value stack is moving */
    /* suspended: what it awaits (`yield from`/`await`) is on top of its value stack */
    int32_t nlocalsplus, stacksize;
    if (rd_read(rt->rd, code + c->H->co_nlocalsplus, &nlocalsplus, 4) ||
        rd_read(rt->rd, code + c->H->co_stacksize, &stacksize, 4) || nlocalsplus < 0)
        return true;
    int64_t top = py_fw_stack_used(&c->fw, frame, fr, (uint64_t)nlocalsplus, stacksize);
    /* 3.15 leaves a NULL stack reference above it: the topmost of the two slots that holds an
       object */
    for (int64_t i = top - 1; i >= nlocalsplus && i >= top - 2 && !*awaits; i--) {
        uint64_t ref;
        if (rd_read_u64(rt->rd, frame + L->fr_localsplus + 8 * (uint64_t)i, &ref))
            break;
        *awaits = py_fw_object(L, ref);
    }
    return true;
}

/* The tasks a gather() future waits for: the list in its _children attribute (asyncio's
 * _GatheringFuture, a Python subclass of _asyncio.Future, keeps it in its __dict__). */
static void gathered(struct ctx *c, struct py_async_task *t)
{
    uint64_t list, type, items;
    int64_t n;
    if (py_instance_attr(c->rt, t->waiter, "_children", &list) || !list ||
        py_type_of(c->rt, list, &type) || type != c->rt->types.list ||
        rd_read_u64(c->rt->rd, list + c->rt->layout.ob_type + 8, (uint64_t *)&n) ||
        rd_read_u64(c->rt->rd, list + c->H->list_items, &items) || n <= 0 || n > PY_MAX_TASKS)
        return;
    uint64_t *kids = arena_alloc(c->a, (size_t)n * 8);
    if (!kids || rd_read(c->rt->rd, items, kids, (size_t)n * 8))
        return;
    size_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (obj_is_task(c, kids[i]))
            kids[k++] = kids[i];
    t->gathers = kids;
    t->ngathers = k;
}

static int add_task(struct ctx *c, uint64_t obj)
{
    uint64_t v;
    if (!obj_is_task(c, obj) || hm_get(&c->seen, obj, &v))
        return 0;
    if (c->n >= PY_MAX_TASKS)
        return 0;
    int err = hm_put(&c->seen, obj, 1);
    if (err)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading tasks");
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct py_async_task *t = arena_alloc(c->a, cap * sizeof(*t));
        if (!t)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory reading tasks");
        if (c->n)
            memcpy(t, c->tasks, c->n * sizeof(*t));
        c->tasks = t;
        c->cap = cap;
    }
    const struct ctl_future *T = c->T;
    uint8_t buf[256];
    uint16_t end = 0; /* the last field read */
    const uint16_t fields[] = {T->loop, T->state, T->fut_waiter, T->coro, T->name};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        end = fields[i] > end ? fields[i] : end;
    size_t len = (size_t)end + 8;
    if (len > sizeof(buf) || rd_read(c->rt->rd, obj, buf, len))
        return 0; /* gone meanwhile */
    struct py_async_task *t = &c->tasks[c->n];
    memset(t, 0, sizeof(*t));
    t->addr = obj;
    t->loop = py_u64_at(buf + T->loop);
    t->state = py_i32_at(buf + T->state);
    t->waiter = py_u64_at(buf + T->fut_waiter);
    t->name = task_name(c, py_u64_at(buf + T->name));
    if (t->waiter) {
        t->waiter_is_task = obj_is_task(c, t->waiter);
        t->waiter_type = type_name_of(c, t->waiter);
        if (!strcmp(t->waiter_type, "_GatheringFuture"))
            gathered(c, t);
    }
    struct py_frame chain[PY_MAX_CORO_CHAIN];
    uint64_t at = py_u64_at(buf + T->coro), next;
    while (at && t->ncoro < PY_MAX_CORO_CHAIN && coro_frame(c, at, &chain[t->ncoro], &next)) {
        t->ncoro++;
        at = next;
    }
    if (t->ncoro) {
        t->coro = arena_memdup(c->a, chain, t->ncoro * sizeof(*chain));
        if (!t->coro)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory reading tasks");
    }
    c->n++;
    return 0;
}

/* The members of a set (a WeakSet's data holds weak references: their referents). */
static int add_set(struct ctx *c, uint64_t set, bool weak)
{
    uint64_t type, mask, table;
    if (py_type_of(c->rt, set, &type) || type != c->rt->types.set ||
        rd_read_u64(c->rt->rd, set + c->H->set_mask, &mask) ||
        rd_read_u64(c->rt->rd, set + c->H->set_table, &table) || mask >= MAX_SET_SLOTS)
        return 0;
    for (uint64_t i = 0; i <= mask; i++) {
        uint64_t key, obj;
        if (rd_read_u64(c->rt->rd, table + i * 16, &key))
            return 0;
        if (!key || key == c->set_dummy)
            continue;
        obj = key;
        /* PyWeakReference: wr_object right after the object header */
        if (weak && rd_read_u64(c->rt->rd, key + c->rt->layout.ob_type + 8, &obj))
            continue;
        int err = add_task(c, obj);
        if (err)
            return err;
    }
    return 0;
}

static int add_registries(struct ctx *c, uint64_t interp)
{
    static const char *const names[] = {"_all_tasks", "_scheduled_tasks", "_eager_tasks"};
    uint64_t dict;
    int err = py_module_dict(c->rt, interp, "asyncio.tasks", &dict);
    if (err || !dict)
        return err;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        uint64_t reg, data;
        if (py_dict_get_str(c->rt, dict, names[i], &reg) || !reg)
            continue;
        /* a WeakSet (its `data`: a set of weak references) or a plain set of tasks */
        if (py_instance_attr(c->rt, reg, "data", &data) == 0 && data)
            err = add_set(c, data, true);
        else
            err = add_set(c, reg, false);
        if (err)
            return err;
    }
    return 0;
}

/* 3.14+: the .AsyncioDebug block of the image that holds _asyncio, read from its file (the
 * constants the build wrote). False when no mapped image has one (asyncio not imported). */
static bool asyncio_debug(struct ctx *c, uint64_t *dbg)
{
    size_t n;
    const struct rd_mapping *m = rd_mappings(c->rt->rd, &n);
    for (size_t i = 0; i < n; i++) {
        const char *path = m[i].path;
        /* the extension module, or the interpreter's own image when it is built in */
        if (m[i].offset != 0 || !path[0] ||
            (!strstr(path, "/_asyncio.") && strcmp(path, c->rt->image_path) != 0))
            continue;
        char host[4096];
        struct elf_image *img;
        uint64_t addr, size;
        if (elf_open(rd_host_path(c->rt->rd, path, host, sizeof(host)), &img))
            continue;
        bool ok = elf_section(img, ".AsyncioDebug", &addr, &size) &&
                  size >= ADBG_COUNT * 8 && elf_read_vaddr(img, addr, dbg, ADBG_COUNT * 8) == 0;
        elf_close(img);
        if (ok)
            return true;
    }
    return false;
}

/* One llist of tasks (struct llist_node {next, prev} at head, linked through each task's
 * task_node), bounded and stopped at the first node that cannot be read. */
static int add_list(struct ctx *c, uint64_t head, uint64_t task_node)
{
    uint64_t node;
    if (rd_read_u64(c->rt->rd, head, &node))
        return 0;
    for (size_t i = 0; node && node != head && i < PY_MAX_TASKS; i++) {
        int err = add_task(c, node - task_node);
        if (err)
            return err;
        if (rd_read_u64(c->rt->rd, node, &node))
            return 0;
    }
    return 0;
}

static int add_lists(struct ctx *c)
{
    uint64_t dbg[ADBG_COUNT];
    if (!asyncio_debug(c, dbg))
        return 0;
    if (dbg[ADBG_TASK_NAME] != c->T->name || dbg[ADBG_TASK_CORO] != c->T->coro ||
        dbg[ADBG_TASK_NODE] + 16 > dbg[ADBG_TASK_SIZE] ||
        dbg[ADBG_INTERP_TASKS_HEAD] + 16 > dbg[ADBG_INTERP_SIZE] ||
        dbg[ADBG_TSTATE_TASKS_HEAD] + 16 > dbg[ADBG_TSTATE_SIZE])
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "the asyncio debug offsets of this Python %s are not the ones scry knows "
                        "(task name at %llu, coroutine at %llu)",
                        c->rt->version_str, (unsigned long long)dbg[ADBG_TASK_NAME],
                        (unsigned long long)dbg[ADBG_TASK_CORO]);
    struct py_thread *threads;
    size_t nthreads;
    struct arena tmp = ARENA_INIT;
    int err = py_list_threads(c->rt, &tmp, &threads, &nthreads);
    for (size_t i = 0; !err && i < nthreads; i++)
        err = add_list(c, threads[i].tstate + dbg[ADBG_TSTATE_TASKS_HEAD], dbg[ADBG_TASK_NODE]);
    arena_free(&tmp);
    /* the tasks of threads that have ended move to their interpreter's list */
    uint64_t interp;
    if (!err)
        err = py_interp_head(c->rt, &interp);
    for (int i = 0; !err && interp && i < PY_MAX_INTERPRETERS; i++) {
        err = add_list(c, interp + dbg[ADBG_INTERP_TASKS_HEAD], dbg[ADBG_TASK_NODE]);
        if (!err)
            err = rd_read_u64(c->rt->rd, interp + c->rt->layout.is_next, &interp);
    }
    return err;
}

int py_async_tasks(struct py_runtime *rt, struct py_code_cache *cc, struct arena *a,
                   struct py_async_task **out, size_t *count)
{
    struct ctx c = {.rt = rt, .cc = cc, .a = a, .V = task_version(rt), .T = task_fields(rt)};
    *out = NULL;
    *count = 0;
    int err = py_async_supported(rt);
    if (err)
        return err;
    c.H = py_runtime_heap_layout(rt);
    if (py_fw_init(&c.fw, &rt->layout, c.H, rt->types.code) != 0)
        return err_fail(SCRY_E_INTERNAL, "frame layout out of range");
    if (rt->types.set_dummy_ptr)
        rd_read_u64(rt->rd, rt->types.set_dummy_ptr, &c.set_dummy);
    uint64_t interp;
    err = c.V->lists ? add_lists(&c) : 0;
    if (!err)
        err = py_interp_head(rt, &interp);
    for (int i = 0; !err && interp && i < PY_MAX_INTERPRETERS; i++) {
        err = add_registries(&c, interp);
        if (!err)
            err = rd_read_u64(rt->rd, interp + rt->layout.is_next, &interp);
    }
    hm_free(&c.seen);
    hm_free(&c.task_types);
    *out = c.tasks;
    *count = c.n;
    return err;
}
