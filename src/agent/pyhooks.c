/* The agent's few calls into CPython's C API, all made in the main thread with the GIL held, at
 * the program's first line (an audit hook, below) or from a pending call the collector schedules
 * (an agent loaded into a running interpreter):
 * - with memory profiling, it wraps Python's MEM and OBJ allocators (PyMem_SetAllocator, as
 *   tracemalloc does at run time): the wrappers sample the objects handed out and mark the
 *   thread as inside Python's allocator while the original runs, so that the malloc/mmap hooks
 *   under them count those bytes in the heap's net only (memory.h);
 * - it registers os.register_at_fork hooks so that the collector thread is not alive when
 *   os.fork() counts the process's threads (CPython 3.12+ warns on stderr about forking a
 *   multi-threaded process) and is started again after it.
 * The API is looked up with dlsym: the agent is not linked against any particular Python.
 * On a free-threaded build (3.13t) there is no GIL: "the GIL held" means an attached thread
 * state there (what PyGILState_Check reports), which is what these calls need; memory
 * profiling wraps the allocators there too, and the wrappers count mimalloc's blocks in the heap's
 * net by their sizes (mimalloc_sizes.c). */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "common/log.h"
#include "cpython/objects.h"
#include "platform/mem_access.h"

_Atomic bool ag_python_fork;

typedef void PyObject;
struct py_method_def { /* PyMethodDef */
    const char *name;
    PyObject *(*meth)(PyObject *, PyObject *);
    int flags;
    const char *doc;
};
#define METH_NOARGS 0x0004
#define METH_O 0x0008

static struct {
    int (*add_pending_call)(int (*)(void *), void *);
    PyObject *(*import_module)(const char *);
    PyObject *(*get_attr)(PyObject *, const char *);
    PyObject *(*cfunction_new)(struct py_method_def *, PyObject *, PyObject *);
    PyObject *(*dict_new)(void);
    int (*dict_set)(PyObject *, const char *, PyObject *);
    PyObject *(*tuple_new)(ptrdiff_t);
    PyObject *(*call)(PyObject *, PyObject *, PyObject *);
    void (*decref)(PyObject *);
    void (*incref)(PyObject *);
    void (*err_clear)(void);
    PyObject *none;
    PyObject *(*call_args)(PyObject *, ...);
    void (*mem_get)(int, void *);
    void (*mem_set)(int, void *);
    int (*gil_held)(void);
    int (*set_attr)(PyObject *, const char *, PyObject *);
    const char *(*utf8)(PyObject *);
    long (*as_long)(PyObject *);
} api;

/* ---- Python's allocators ---- */

struct pymem_allocator { /* PyMemAllocatorEx */
    void *ctx;
    void *(*malloc)(void *, size_t);
    void *(*calloc)(void *, size_t, size_t);
    void *(*realloc)(void *, void *, size_t);
    void (*free)(void *, void *);
};

enum { PYMEM_DOMAIN_MEM = 1, PYMEM_DOMAIN_OBJ = 2 };

static struct pymem_allocator original[3];
static bool allocators_wrapped;

/* The wrappers sample the objects Python's allocator hands out (by their requested size, as
 * tracemalloc counts them), and mark the thread as inside it while the original runs, so that
 * the C blocks and arenas it takes count in the heap's net as Python's, not as allocations of
 * their own (memhooks.c). */
static void *wrap_malloc(void *ctx, size_t n)
{
    const struct pymem_allocator *o = ctx;
    ag_mtls.in_pymem++;
    void *p = o->malloc(o->ctx, n);
    ag_mtls.in_pymem--;
    if (p && ag_mi_by_block)
        ag_mem_py_net((int64_t)ag_mi_alloc_bytes(p, n));
    if (p)
        ag_mem_py_alloc(p, n);
    return p;
}

static void *wrap_calloc(void *ctx, size_t n, size_t size)
{
    const struct pymem_allocator *o = ctx;
    ag_mtls.in_pymem++;
    void *p = o->calloc(o->ctx, n, size);
    ag_mtls.in_pymem--;
    if (p && ag_mi_by_block)
        ag_mem_py_net((int64_t)ag_mi_alloc_bytes(p, n * size));
    if (p)
        ag_mem_py_alloc(p, n * size);
    return p;
}

static void *wrap_realloc(void *ctx, void *old, size_t n)
{
    const struct pymem_allocator *o = ctx;
    ag_mem_py_realloc_begin(old);
    uint64_t before = ag_mi_by_block && old ? ag_mi_free_bytes(old) : 0;
    ag_mtls.in_pymem++;
    void *p = o->realloc(o->ctx, old, n);
    ag_mtls.in_pymem--;
    if (p && ag_mi_by_block) {
        int64_t delta = (int64_t)ag_mi_alloc_bytes(p, n) - (int64_t)before;
        ag_mem_py_net(delta);
        ag_mem_py_realloc_grew(delta);
    } else if (ag_mi_by_block && old)
        ag_mi_keep_bytes(old, before);
    ag_mem_py_realloc_end(old, p, n);
    return p;
}

static void wrap_free(void *ctx, void *p)
{
    const struct pymem_allocator *o = ctx;
    if (ag_memq_maybe_tracked((uint64_t)(uintptr_t)p))
        ag_mem_py_free(p);
    if (p && ag_mi_by_block)
        ag_mem_py_net(-(int64_t)ag_mi_free_bytes(p));
    ag_mtls.in_pymem++;
    o->free(o->ctx, p);
    ag_mtls.in_pymem--;
}

/* A free-threaded build: the sizes of the allocator's blocks are read right (a few blocks of
 * each domain, small to large, read as blocks of their sizes), and the mappings the
 * interpreter's start took them from are no longer counted by their pages: their blocks are,
 * from now on (what their pages counted so far stays: the blocks the start made, which count
 * off as they are freed). Not counted itself. */
static bool mimalloc_blocks_read_right(void)
{
    static const size_t sizes[] = {24, 3000, 200000};
    bool ok = true;
    ag_mtls.guard++;
    for (int d = PYMEM_DOMAIN_MEM; d <= PYMEM_DOMAIN_OBJ; d++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            void *p = original[d].malloc(original[d].ctx, sizes[i]);
            ok = ok && ag_mi_sizes_probe(p, sizes[i]);
            if (ok)
                (void)ag_maps_forget_holding((uint64_t)(uintptr_t)p);
            if (p)
                original[d].free(original[d].ctx, p);
        }
    }
    ag_mtls.guard--;
    return ok;
}

static void wrap_allocators(void)
{
    if (allocators_wrapped || !api.mem_get || !api.mem_set)
        return;
    static const int domains[] = {PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};
    if (ag_rt.layout.free_threaded) {
        for (size_t i = 0; i < 2; i++)
            api.mem_get(domains[i], &original[domains[i]]);
        if (ag_mi_sizes_init() != 0 || !mimalloc_blocks_read_right()) {
            log_warn("agent: memory is not profiled in pid %d: the blocks of Python %s's "
                     "allocator (mimalloc) do not read as scry knows them",
                     ag_pid, ag_rt.version_str);
            atomic_store(&ag_mem_on, false);
            ag_cfg.memory = false; /* the part says why, `scry run` warns */
            ag_cfg.memory_unsupported = true;
            return;
        }
        ag_mi_by_block = true;
    }
    for (size_t i = 0; i < 2; i++) {
        int d = domains[i];
        api.mem_get(d, &original[d]);
        struct pymem_allocator w = {&original[d], wrap_malloc, wrap_calloc, wrap_realloc,
                                    wrap_free};
        api.mem_set(d, &w);
    }
    allocators_wrapped = true;
}

static _Atomic bool scheduled;
static _Atomic bool installed;
static _Atomic int attempts;

bool ag_pyhooks_installed(void)
{
    return atomic_load(&installed);
}

static PyObject *none(void)
{
    api.incref(api.none);
    return api.none;
}

static PyObject *before_fork(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    atomic_store(&ag_python_fork, true);
    return none();
}

static int resume_pending(void *arg)
{
    (void)arg;
    ag_collector_resume();
    return 0;
}

static PyObject *after_fork_parent(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    atomic_store(&ag_python_fork, false);
    /* 3.13+ counts the threads after running these hooks: start the collector from a pending
     * call, which runs once os.fork() has returned. 3.12 counted them before. */
    if (ag_rt.minor >= 13 && api.add_pending_call(resume_pending, NULL) == 0)
        return none();
    ag_collector_resume();
    return none();
}

static PyObject *after_fork_child(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    atomic_store(&ag_python_fork, false);
    ag_collector_resume();
    return none();
}

static struct py_method_def before_def = {"_scry_before_fork", before_fork, METH_NOARGS, NULL};
static struct py_method_def parent_def = {"_scry_after_fork_parent", after_fork_parent,
                                          METH_NOARGS, NULL};
static struct py_method_def child_def = {"_scry_after_fork_child", after_fork_child, METH_NOARGS,
                                         NULL};

static void put_ref(PyObject *o)
{
    if (o)
        api.decref(o);
}

/* The last atexit callback (registered first): the program is over. What the interpreter frees
 * while it finalizes is not the program's memory (its time is <interpreter shutdown>'s), and
 * the samples waiting in the rings and the memory queue are resolved now, before finalization
 * frees their code objects (a short program's samples may all be waiting). */
static PyObject *at_exit(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    atomic_store(&ag_mem_on, false);
    ag_collector_shutdown_begins();
    ag_heap_at_exit_wait(); /* before finalization: the program's heap, as it ended */
    return none();
}

static struct py_method_def at_exit_def = {"_scry_at_exit", at_exit, METH_NOARGS, NULL};

/* Once, and never from inside itself: the import of atexit runs the import system's bytecode,
 * and with it the pending calls. The start-up audit hook (on_audit) calls this before the
 * collector's install() has run when a loaded machine kept the collector off the CPU through
 * the interpreter's start; install() then ran inside that import (Py_AddPendingCall from the
 * collector meanwhile), registered the callback, and the hook's call registered it a second
 * time. At exit the second one waited for a snapshot that scry run had already taken: 600 s
 * (HEAP_AT_EXIT_WAIT_MS) with --heap-at-exit. Main thread, GIL held: plain flags. */
static void register_at_exit(void)
{
    static bool done, busy;
    if (done || busy)
        return;
    busy = true;
    PyObject *mod = api.import_module("atexit"), *reg = NULL, *fn = NULL, *res = NULL;
    if (mod)
        reg = api.get_attr(mod, "register");
    if (reg)
        fn = api.cfunction_new(&at_exit_def, NULL, NULL);
    if (fn)
        res = api.call_args(reg, fn, NULL);
    if (res)
        done = true;
    else
        api.err_clear();
    put_ref(res);
    put_ref(fn);
    put_ref(reg);
    put_ref(mod);
    busy = false;
}

/* builtins.profile while the program runs under scry (as Scalene and line_profiler give it):
 * records the decorated function (its code object's file, qualified name and first line) and
 * returns it unchanged. Anything that has no __code__ is returned as it is. */
static PyObject *builtin_profile(PyObject *self, PyObject *func)
{
    (void)self;
    PyObject *code = api.get_attr(func, "__code__");
    PyObject *file = code ? api.get_attr(code, "co_filename") : NULL;
    PyObject *name = code ? api.get_attr(code, "co_qualname") : NULL;
    PyObject *first = code ? api.get_attr(code, "co_firstlineno") : NULL;
    const char *f = file ? api.utf8(file) : NULL;
    const char *n = name ? api.utf8(name) : NULL;
    long line = first ? api.as_long(first) : -1;
    if (f && n && line >= 0 && line <= 0x7fffffff)
        scry_agent_profile_function(f, n, (int)line);
    api.err_clear();
    put_ref(first);
    put_ref(name);
    put_ref(file);
    put_ref(code);
    api.incref(func);
    return func;
}

static struct py_method_def profile_def = {"profile", builtin_profile, METH_O,
                                           "scry's @profile: report only decorated functions"};

/* Unless the program's builtins already have a `profile` (another profiler's). */
static void install_builtin_profile(void)
{
    if (!api.set_attr || !api.utf8 || !api.as_long)
        return;
    PyObject *b = api.import_module("builtins");
    PyObject *have = b ? api.get_attr(b, "profile") : NULL;
    PyObject *fn = b && !have ? api.cfunction_new(&profile_def, NULL, NULL) : NULL;
    if (fn && api.set_attr(b, "profile", fn) != 0)
        log_debug("agent: could not set builtins.profile");
    api.err_clear();
    put_ref(fn);
    put_ref(have);
    put_ref(b);
}

/* The allocator wrappers, the atexit callback and builtins.profile: each once. Main thread, GIL
 * held. */
static void install_python_side(void)
{
    if (ag_cfg.memory)
        wrap_allocators();
    register_at_exit();
    static bool profile_done;
    if (!profile_done) {
        install_builtin_profile();
        profile_done = true;
    }
    atomic_store(&ag_mem_python_ready, true);
}

/* Runs in the main thread with the GIL held. */
static int install(void *arg)
{
    (void)arg;
    install_python_side();
    if (atomic_load(&installed))
        return 0; /* attached again (attach.c): the fork hooks are there */
    PyObject *os = NULL, *reg = NULL, *kwargs = NULL, *args = NULL, *res = NULL;
    PyObject *fns[3] = {NULL, NULL, NULL};
    static const char *const keys[3] = {"before", "after_in_parent", "after_in_child"};
    struct py_method_def *defs[3] = {&before_def, &parent_def, &child_def};
    os = api.import_module("os");
    if (os)
        reg = api.get_attr(os, "register_at_fork");
    kwargs = api.dict_new();
    args = api.tuple_new(0);
    bool ok = reg && kwargs && args;
    for (int i = 0; ok && i < 3; i++) {
        fns[i] = api.cfunction_new(defs[i], NULL, NULL);
        ok = fns[i] && api.dict_set(kwargs, keys[i], fns[i]) == 0;
    }
    if (ok)
        res = api.call(reg, args, kwargs);
    if (res)
        atomic_store(&installed, true);
    if (!res) {
        /* Typically os is still being imported: try again at a later tick. */
        api.err_clear();
        if (atomic_fetch_add(&attempts, 1) < 1000)
            atomic_store(&scheduled, false);
        else
            log_debug("agent: could not register fork hooks");
    }
    for (int i = 0; i < 3; i++)
        put_ref(fns[i]);
    put_ref(res);
    put_ref(args);
    put_ref(kwargs);
    put_ref(reg);
    put_ref(os);
    return 0;
}

static bool load_api(void)
{
#define SYM(field, name) (*(void **)&api.field = dlsym(RTLD_DEFAULT, name))
    SYM(add_pending_call, "Py_AddPendingCall");
    SYM(import_module, "PyImport_ImportModule");
    SYM(get_attr, "PyObject_GetAttrString");
    SYM(cfunction_new, "PyCFunction_NewEx");
    SYM(dict_new, "PyDict_New");
    SYM(dict_set, "PyDict_SetItemString");
    SYM(tuple_new, "PyTuple_New");
    SYM(call, "PyObject_Call");
    SYM(decref, "Py_DecRef");
    SYM(incref, "Py_IncRef");
    SYM(err_clear, "PyErr_Clear");
    SYM(none, "_Py_NoneStruct");
    SYM(call_args, "PyObject_CallFunctionObjArgs");
    SYM(mem_get, "PyMem_GetAllocator");
    SYM(mem_set, "PyMem_SetAllocator");
    SYM(gil_held, "PyGILState_Check");
    SYM(set_attr, "PyObject_SetAttrString");
    SYM(utf8, "PyUnicode_AsUTF8");
    SYM(as_long, "PyLong_AsLong");
#undef SYM
    return api.add_pending_call && api.import_module && api.get_attr && api.cfunction_new &&
           api.dict_new && api.dict_set && api.tuple_new && api.call && api.decref &&
           api.incref && api.err_clear && api.none;
}

/* Runs in the main thread with the GIL held: Python's own allocators back, unless memory is
 * counted again by then (a new attach). Blocks the wrappers handed out are the originals'. */
static int unwrap(void *arg)
{
    (void)arg;
    if (!allocators_wrapped || atomic_load(&ag_mem_on))
        return 0;
    static const int domains[] = {PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};
    for (size_t i = 0; i < 2; i++)
        api.mem_set(domains[i], &original[domains[i]]);
    allocators_wrapped = false;
    return 0;
}

void ag_pyhooks_detach(void)
{
    if (allocators_wrapped && api.add_pending_call && api.add_pending_call(unwrap, NULL) != 0)
        log_debug("agent: Py_AddPendingCall failed: the allocator wrappers stay (idle)");
    atomic_store(&scheduled, false); /* the next attach schedules install() again */
}

bool ag_pyhooks_defer_resume(void)
{
    /* os.fork() in the first milliseconds, before install() ran: CPython counts the threads
     * (3.12+) after this C parent handler, so a collector started here would be counted. */
    static int have_api = -1;
    if (have_api < 0)
        have_api = load_api() && api.gil_held;
    return have_api && api.gil_held() && api.add_pending_call(resume_pending, NULL) == 0;
}

void ag_pyhooks_maybe_schedule(void)
{
    if (atomic_load(&scheduled))
        return;
    /* Only once the main interpreter runs and has imported os (it always does at start-up). */
    uint64_t interp = 0, osdict = 0;
    if (py_interp_head(&ag_rt, &interp) || !interp ||
        py_module_dict(&ag_rt, interp, "os", &osdict) || !osdict)
        return;
    atomic_store(&scheduled, true);
    if (!load_api()) {
        log_debug("agent: the C API needed for fork hooks is missing");
        return;
    }
    if (api.add_pending_call(install, NULL) != 0)
        log_debug("agent: Py_AddPendingCall failed");
}

/* ---- the program's first line: Python's "cpython.run_*" audit event ----
 * The pending call above comes from the collector thread, which a loaded machine may not run for
 * tens of milliseconds: the program's first lines would then allocate before the wrappers are
 * there, without a stack. So `scry run`'s agent also adds a C audit hook before the interpreter
 * starts (PySys_AddAuditHook may be called then; the runtime keeps such hooks across its
 * initialization). The interpreter raises cpython.run_file (run_module, run_command, run_stdin,
 * ...) in the main thread, with the GIL held, just before the program's own code: the hook
 * installs everything there. It then takes itself out of the runtime's list (the head word found
 * at start-up, below), because while any C hook is listed, every audited operation (id(),
 * sys._getframe(), open(), ...) builds its argument tuple and calls it. */

static struct {
    uintptr_t *head;    /* _PyRuntime's audit_hooks.head: found when the hook was added */
    uintptr_t entry;    /* our _Py_AuditHookEntry {next, hook, userData} */
    _Atomic bool fired; /* the program's code started: nothing more to do here */
} audit;
static const char audit_cookie[] = "scry"; /* userData: tells our entry from another's */

/* Reads n bytes at addr of this process, or fails (EFAULT) where nothing is mapped. */
static bool read_self(uintptr_t addr, void *out, size_t n)
{
    return pf_mem_read(ag_pid, (uint64_t)addr, out, n) == (long)n;
}

static int on_audit(const char *event, PyObject *args, void *data)
{
    (void)args;
    (void)data;
    if (atomic_load_explicit(&audit.fired, memory_order_relaxed) ||
        strncmp(event, "cpython.run_", 12) != 0)
        return 0;
    atomic_store(&audit.fired, true);
    /* Out of the list, unless another hook came first (then it stays, and costs nothing more
     * than the other one does). Our entry is not freed: a thread may be reading it. */
    uintptr_t next;
    if (audit.head && *audit.head == audit.entry && read_self(audit.entry, &next, sizeof(next)))
        *audit.head = next;
    else
        log_debug("agent: the start-up audit hook stays listed");
    ag_collector_program_runs();
    if (!load_api())
        return 0;
    install_python_side();
    /* The fork hooks need os, which a program run with -S may never import: then the collector
     * installs them once it is imported (ag_pyhooks_maybe_schedule). */
    uint64_t interp = 0, osdict = 0;
    if (!py_interp_head(&ag_rt, &interp) && interp &&
        !py_module_dict(&ag_rt, interp, "os", &osdict) && osdict &&
        !atomic_exchange(&scheduled, true))
        install(NULL);
    log_debug("agent: Python hooks installed at %s", event);
    return 0;
}

void ag_pyhooks_at_start(void)
{
    int (*add)(int (*)(const char *, PyObject *, void *), void *);
    int (*initialized)(void);
    *(void **)&add = dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
    *(void **)&initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
    /* Loaded into a running interpreter (scry.start() in a plain python): its program started
     * long ago, no run event will come, and the hook would stay listed. */
    if (!initialized || initialized())
        return;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!add || !rt || !dladdr1(rt, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
        sym->st_size < sizeof(uintptr_t) || sym->st_size > (1u << 20))
        return;
    size_t words = sym->st_size / sizeof(uintptr_t);
    uintptr_t *before = malloc(words * sizeof(uintptr_t));
    if (!before)
        return;
    uintptr_t *now = rt;
    memcpy(before, now, words * sizeof(uintptr_t));
    if (add(on_audit, (void *)audit_cookie) != 0) {
        free(before);
        return;
    }
    /* The one word of the runtime that went from nothing to our entry is the list's head. */
    uintptr_t *head = NULL;
    size_t changed = 0;
    for (size_t i = 0; i < words; i++)
        if (now[i] != before[i]) {
            changed++;
            head = before[i] == 0 ? &now[i] : NULL;
        }
    free(before);
    uintptr_t entry[3];
    if (changed == 1 && head && read_self(*head, entry, sizeof(entry)) &&
        entry[1] == (uintptr_t)on_audit && entry[2] == (uintptr_t)audit_cookie) {
        audit.head = head;
        audit.entry = *head;
    }
    log_debug("agent: start-up audit hook added (%s)",
              audit.head ? "its list head found" : "its list head not found: it stays");
}
