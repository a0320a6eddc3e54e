/* The collector thread: finds the Python threads (the interpreters' thread-state lists) and gives
 * each a CPU-time timer, takes the off-CPU samples (wall time a thread did not spend on a CPU),
 * drains the threads' rings, resolves code objects to file/function/line and charges each sample
 * to the first profiled frame. At the end it writes the part file. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/gpu.h"
#include "agent/memstats.h"
#include "agent/stats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/outfile.h"
#include "common/strbuf.h"
#include "cpython/file_filter.h"
#include "cpython/frames.h"
#include "cpython/linetable.h"
#include "cpython/objects.h"
#include "common/grow.h"

#define SCAN_INTERVAL_NS 20000000ULL  /* look for new or ended threads every 20 ms */
#define RETIRE_GRACE_NS 2000000000ULL /* a retired slot is reused only after 2 s */
#define FINISH_WAIT_MS 5000
#define WALL_MIN_NS 1000000ULL
#define SCHED_INTERVAL_NS 100000000ULL /* the threads' run-queue delay, every 100 ms */

/* What the collector knows of a code object, by address. */
struct ag_code {
    uint64_t addr, filename_obj, qualname_obj;
    int32_t firstlineno;
    uint32_t file, func;
    const struct py_code_info *ci;
    size_t dec_seen; /* @profile: the decorated functions it was compared with (a prefix) */
    bool decorated;
};

static struct ag_thread *threads; /* AG_MAX_THREADS entries, mmap'd */
static _Atomic size_t nthreads_used; /* high-water mark (slots are claimed by any thread) */
static struct ag_stats stats;
static struct ag_mem_stats mstats;
static uint32_t native_file = UINT32_MAX, native_func; /* the <native> pseudo-file, once seen */
static struct py_code_cache code_cache;
static struct hashmap code_by_addr; /* address -> index + 1 into codes */
static struct ag_code *codes;
static size_t ncodes, codes_cap;
static struct ag_sample wall_sample; /* collector-only scratch */
static void *wall_scratch;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t collector;
static bool collector_started;
static struct ag_fd wake_fd = {-1, 0, 0};
static _Atomic bool stop_requested;
static _Atomic bool pause_requested;
static _Atomic int collector_tid;
static uint64_t collector_cpu_ns; /* the collector thread's own CPU time, for the log */ /* the thread exits; ag_collector_resume starts another */
static _Atomic bool finished;
static _Atomic int finish_started;
static uint64_t last_scan_ns, last_sched_ns, start_mono_ns, last_snapshot_ns;
static double start_real_sec;
static char cwd[4096];

static void take_lock(void)
{
    pthread_mutex_lock(&lock);
}

static void drop_lock(void)
{
    pthread_mutex_unlock(&lock);
}

/* The lock, taken by one of the program's threads: with every signal blocked while it is held,
 * so that no handler of this thread waits for the collector (the flush of SIGTERM, SIGINT,
 * SIGHUP) while the collector waits for the lock, and with the agent's own allocations not
 * counted. A SIGTERM that came while a worker drained its samples at exit hung it for the 5 s
 * of FINISH_WAIT_MS, and its part was lost. */
static void take_lock_in_program(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
    ag_mtls.guard++;
    take_lock();
}

static void drop_lock_in_program(const sigset_t *old)
{
    drop_lock();
    ag_mtls.guard--;
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* ---- the filter (docs/agent-protocol.md; the rules are cpython/file_filter.c's) ---- */

static struct py_filter filter;

_Static_assert((int)PY_RULE_OUTSIDE_PROGRAM == (int)AG_RULE_OUTSIDE_PROGRAM &&
                   (int)PY_RULE_SYSTEM_LIBRARY == (int)AG_RULE_SYSTEM_LIBRARY &&
                   (int)PY_RULE_NOT_IN_PROFILE_ONLY == (int)AG_RULE_NOT_IN_PROFILE_ONLY &&
                   (int)PY_RULE_EXCLUDED == (int)AG_RULE_EXCLUDED &&
                   (int)PY_RULE_NOT_A_FILE == (int)AG_RULE_NOT_A_FILE &&
                   (int)PY_RULE_PROFILED == (int)AG_RULE_PROFILED,
               "enum ag_rule follows enum py_rule");

static enum ag_rule filter_file(const char *path)
{
    filter.profile_all = ag_cfg.profile_all;
    filter.system_libraries = ag_cfg.system_libraries;
    filter.program_path = ag_cfg.program_path;
    filter.profile_only = ag_cfg.profile_only;
    filter.profile_exclude = ag_cfg.profile_exclude;
    return (enum ag_rule)py_filter_classify(&filter, path);
}

/* sys.prefix, sys.base_prefix and sys.exec_prefix, once the interpreter has set them. */
static void read_prefixes(uint64_t interp)
{
    py_filter_read_prefixes(&filter, &ag_rt, interp);
}

/* ---- code objects ---- */

/* co_filename made absolute against the directory the program started in (relative names come
 * from relative sys.path entries). Returns false if it does not fit. */
static bool absolute_name(const char *name, char *out, size_t size)
{
    int n;
    if (name[0] == '/' || name[0] == '<' || !cwd[0])
        n = snprintf(out, size, "%s", name);
    else
        n = snprintf(out, size, "%s/%s", cwd, name);
    return n >= 0 && (size_t)n < size;
}

/* The collector's entry for the code object of frame f, or NULL if it is gone or changed. */
static const struct ag_code *resolve(const struct ag_frame *f)
{
    uint64_t v;
    if (hm_get(&code_by_addr, f->code, &v)) {
        const struct ag_code *c = &codes[v - 1];
        if (c->filename_obj == f->filename && c->qualname_obj == f->qualname &&
            c->firstlineno == f->firstlineno)
            return c;
        /* Memory reused by another code object since we saw it: read it afresh. */
        py_code_forget(&code_cache, f->code);
        hm_del(&code_by_addr, f->code);
    }
    const struct py_code_info *ci;
    if (py_code_resolve(&ag_rt, &code_cache, f->code, &ci) != 0)
        return NULL;
    if (ci->filename_obj != f->filename || ci->qualname_obj != f->qualname ||
        ci->firstlineno != f->firstlineno) {
        py_code_forget(&code_cache, f->code);
        return NULL;
    }
    if (grow_array(&codes, &codes_cap, ncodes + 1, sizeof(*codes)) != 0)
        return NULL;
    char path[8192];
    if (!absolute_name(ci->filename, path, sizeof(path)))
        return NULL;
    struct ag_code *c = &codes[ncodes];
    *c = (struct ag_code){.addr = f->code,
                          .filename_obj = ci->filename_obj,
                          .qualname_obj = ci->qualname_obj,
                          .firstlineno = ci->firstlineno,
                          .ci = ci};
    if (ag_stats_file(&stats, path, filter_file, &c->file) ||
        ag_stats_func(&stats, ci->qualname, c->file, ci->firstlineno, &c->func) ||
        hm_put(&code_by_addr, f->code, ncodes + 1))
        return NULL;
    ncodes++;
    return c;
}

/* Where a sample is charged: a profiled line, or (time nobody takes) the innermost file; with
 * --stacks also the call stack of its profiled frames. */
struct ag_attr {
    enum { ATTR_NONE, ATTR_LINE, ATTR_EXCLUDED } kind;
    uint32_t file, func;
    int32_t line;
    uint32_t stack; /* index + 1 into stats.stacks, 0 for none */
};

static int frame_line(const struct ag_code *c, int32_t lasti)
{
    const struct py_code_info *ci = c->ci;
    int line = ci->linetable ? py_linetable_frame_line(ci->linetable, ci->linetable_len,
                                                       ci->firstlineno, lasti)
                             : -1;
    return line < 0 ? ci->firstlineno : line; /* malformed there: the code's first line */
}

/* With stacks: the profiled frames of the sample being processed, outermost first, and the C
 * call of the eval loop running each (struct ag_sample.group). */
static struct {
    struct ag_sframe f[AG_MAX_DEPTH];
    uint8_t group[AG_MAX_DEPTH];
    uint32_t n;
} pychain;

/* @profile: whether the code object is one of the first ndec decorated functions (each is
 * compared once: the table only grows). */
static bool code_decorated(const struct ag_code *code, size_t ndec)
{
    struct ag_code *c = codes + (code - codes);
    if (c->dec_seen < ndec) {
        c->decorated = c->decorated || ag_decorated_in(c->dec_seen, ndec, c->ci->filename,
                                                       c->ci->qualname, c->firstlineno);
        c->dec_seen = ndec;
    }
    return c->decorated;
}

/* Finds the first frame whose file is profiled (and, with stacks or chain, all of them: in
 * pychain; interned in stats.stacks with stacks only). Its line belongs to the outermost of the
 * profiled frames around it that run that same line of that file: a generator expression,
 * comprehension or lambda called from the line that holds it runs on its caller's line, and
 * charging the caller whichever frame a sample caught keeps a line's function the same in every
 * sample (its memory record takes the function of its first sample). When the program decorated
 * functions with @profile, a sample with one on its stack is charged to the innermost one's
 * current line instead, whatever its file's rule: time in undecorated code it calls is its
 * calling line's, as line_profiler and Scalene count it (samples with none go where they went:
 * the merge keeps only decorated functions' lines, the totals keep everything). */
static struct ag_attr attribute(const struct ag_sample *s, bool chain_wanted)
{
    struct ag_sframe *chain = pychain.f;
    uint8_t *group = pychain.group;
    uint32_t n = 0;
    bool want_chain = ag_cfg.stacks || chain_wanted;
    size_t ndec = ag_decorated_count();
    struct ag_attr a = {.kind = ATTR_NONE}, dec = {.kind = ATTR_NONE};
    bool owner_open = false; /* the next profiled frame may still own a's line */
    for (uint32_t i = 0; i < s->depth; i++) {
        const struct ag_code *c = resolve(&s->frames[i]);
        if (!c)
            continue;
        if (a.kind == ATTR_NONE) {
            a.kind = ATTR_EXCLUDED;
            a.file = c->file;
        }
        if (ndec && dec.kind == ATTR_NONE && code_decorated(c, ndec))
            dec = (struct ag_attr){ATTR_LINE, c->file, c->func,
                                   frame_line(c, s->frames[i].lasti), 0};
        if (stats.files[c->file].rule == AG_RULE_PROFILED) {
            int line = frame_line(c, s->frames[i].lasti);
            if (a.kind != ATTR_LINE) {
                a = (struct ag_attr){ATTR_LINE, c->file, c->func, line, 0};
                owner_open = true;
            } else if (owner_open && c->file == a.file && line == a.line) {
                a.func = c->func;
            } else {
                owner_open = false;
            }
            if (want_chain || n == 0) {
                group[n] = s->group[i];
                chain[n++] = (struct ag_sframe){c->file, c->func, line};
            }
        }
        if (!want_chain && a.kind == ATTR_LINE && !owner_open && (!ndec || dec.kind == ATTR_LINE))
            break;
    }
    pychain.n = n;
    if (n > 0) {
        for (uint32_t i = 0; i < n / 2; i++) { /* outermost first */
            struct ag_sframe t = chain[i];
            chain[i] = chain[n - 1 - i];
            chain[n - 1 - i] = t;
            uint8_t g = group[i];
            group[i] = group[n - 1 - i];
            group[n - 1 - i] = g;
        }
        if (!ag_cfg.stacks || ag_stats_stack(&stats, chain, n, &a.stack))
            a.stack = 0;
    }
    if (dec.kind == ATTR_LINE) {
        dec.stack = a.stack; /* the whole stack, down to the undecorated callee */
        a = dec;
    }
    return a;
}

/* Per thread slot: where its last off-CPU sample went, and its CPU clock then. */
static struct {
    bool valid;
    uint64_t cpu_ns;
    uint64_t t_ns; /* when its stack was read */
    struct ag_attr attr;
} wall_cache[AG_MAX_THREADS];

/* Where and when the samples being charged were taken (the sample stream, sstream.h). */
static struct {
    uint64_t t_ns;
    int tid;
} charged_at;

static void charging_at(uint64_t t_ns, int tid)
{
    charged_at.t_ns = t_ns;
    charged_at.tid = tid;
}

bool ag_sstream_on;
size_t ag_sstream_max = SST_DEFAULT_MAX;
struct sst_stream ag_sstream;

/* The kernel's name of thread tid (its comm: 15 bytes at most), "" when it cannot be read or no
 * file may be opened (the program started with fd 0-2 closed). */
static void thread_comm(int tid, char *out, size_t size)
{
    char path[64];
    out[0] = 0;
    if (ag_low_fds_closed)
        return;
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    int fd = fd_above_stdio(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* A charge to a line, into the sample stream (--timeline), at charged_at. */
static void stream_note(const struct ag_attr *a, enum ag_cat cat, uint64_t weight_ns)
{
    bool added;
    size_t th = sst_thread(&ag_sstream, charged_at.tid, &added);
    if (added)
        thread_comm(charged_at.tid, ag_sstream.threads[th].name, 16);
    sst_add(&ag_sstream, charged_at.t_ns, th, cat, weight_ns, a->file, a->func, a->line,
            a->stack ? (int32_t)(a->stack - 1) : -1);
}

/* The GPU's reading (gpu.c) charged with each sample: the one published before the previous
 * tick, so never one newer than the samples charged now (taken since that tick's drain), and a
 * line that ends as the GPU's activity changes does not get the next line's figures. */
static struct {
    bool valid;
    struct ag_gpu_reading r;
} gpu_seen, gpu_next;

static void gpu_tick(void)
{
    gpu_seen = gpu_next;
    gpu_next.valid = ag_gpu_read(&gpu_next.r);
}

static void charge(const struct ag_attr *a, enum ag_cat cat, uint64_t weight_ns)
{
    double sec = (double)weight_ns / 1e9;
    if (ag_sstream_on && a->kind == ATTR_LINE && sec > 0)
        stream_note(a, cat, weight_ns);
    if (a->kind == ATTR_NONE || sec <= 0) {
        stats.unattributed++;
        return;
    }
    if (a->kind == ATTR_EXCLUDED && cat == AG_SYS) {
        /* A thread waiting where no profiled code is on its stack (an idle pool worker, a
         * library's helper thread) would only dilute the profile: its waiting is not counted. */
        stats.files[a->file].excluded_idle_sec += sec;
        return;
    }
    stats.total_sec[cat] += sec;
    stats.samples++;
    if (a->kind == ATTR_EXCLUDED)
        stats.files[a->file].excluded_sec += sec;
    else if (ag_stats_add(&stats, a->file, a->func, a->line, cat, sec))
        stats.dropped++;
    else if (gpu_seen.valid)
        ag_stats_add_gpu(&stats, a->file, a->func, a->line, sec, gpu_seen.r.load,
                         gpu_seen.r.mem_mb);
    if (a->stack) {
        struct ag_stack *st = &stats.stacks[a->stack - 1];
        st->sec[cat] += sec;
        st->samples++;
    }
}

static struct ag_attr process(const struct ag_sample *s, enum ag_cat cat)
{
    struct ag_attr a = {.kind = ATTR_NONE};
    pychain.n = 0;
    if (s->depth > 0)
        a = attribute(s, false);
    charge(&a, cat, s->weight_ns);
    return a;
}

/* ---- memory samples ---- */

static enum ag_rule always_profiled(const char *path)
{
    (void)path;
    return AG_RULE_PROFILED;
}

/* Threads with no Python frame charge the pseudo-file <native>, line 0. */
static bool native_where(struct ag_mwhere *w)
{
    if (native_file == UINT32_MAX) {
        uint32_t f, fn;
        if (ag_stats_file(&stats, "<native>", always_profiled, &f) ||
            ag_stats_func(&stats, "<native>", f, 0, &fn))
            return false;
        native_file = f;
        native_func = fn;
    }
    *w = (struct ag_mwhere){AG_MW_LINE, true, native_file, native_func, 0, 0};
    return true;
}

#define RESIDENT_SCAN_NS 50000000ULL /* how often mappings are checked for resident pages */

static void mapping_held(void *ctx, uint64_t seq, uint64_t bytes)
{
    ag_mem_held(ctx, seq, bytes);
}

static void drain_memory(bool flush)
{
    struct ag_mem_sample *s;
    while ((s = ag_memq_peek())) {
        struct ag_mwhere w = {.kind = AG_MW_FOOTPRINT_ONLY};
        if (s->kind == AG_M_NET || s->kind == AG_M_MOVE) {
            /* the footprint only, or where a sample's block is now */
        } else if (s->mflags & AG_M_NO_PYTHON) {
            native_where(&w);
        } else if (!(s->mflags & AG_M_STARTUP)) {
            pychain.n = 0;
            struct ag_attr a = attribute(&s->s, s->kind == AG_M_MALLOC);
            uint32_t at = 0; /* a live sample's stack, for the heap join (out of memory: none) */
            if (a.kind == ATTR_LINE && s->kind == AG_M_MALLOC && pychain.n)
                (void)ag_chains_hit_at(&stats.alloc_stacks, pychain.f, pychain.n, &at);
            if (a.kind == ATTR_LINE)
                w = (struct ag_mwhere){AG_MW_LINE, false, a.file, a.func, a.line, at};
            if (a.kind == ATTR_LINE && a.stack && s->kind == AG_M_MALLOC)
                stats.stacks[a.stack - 1].malloc_bytes += s->bytes; /* memory flame graph */
        }
        ag_mem_record(&mstats, s, &w, start_mono_ns);
        ag_memq_pop();
    }
    ag_mem_end_batch(&mstats);
    /* After the samples: the pages of a mapping go to the line of its sample, taken by now. */
    static uint64_t last_resident_scan;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if (!last_resident_scan) /* not in the first ticks, which install the Python hooks */
        last_resident_scan = now;
    if (flush || now - last_resident_scan >= RESIDENT_SCAN_NS) {
        ag_mem_resident(&mstats, ag_maps_scan_resident(mapping_held, &mstats), now - start_mono_ns);
        last_resident_scan = now;
    }
}

/* ---- native stacks (with --stacks) ---- */

static char self_exe[4096];
static const void *agent_base;
static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
static bool demangle_looked_up;

static enum ag_nkind kind_of(const char *sym)
{
    static const char *const startup[] = {
        "_start",     "__libc_start_main", "__libc_start_call_main", "main", "Py_BytesMain",
        "Py_RunMain", "Py_Main",           "pymain_main",            "pymain_run_python"};
    if (strcmp(sym, "_PyEval_EvalFrameDefault") == 0)
        return AG_N_EVAL;
    if (strcmp(sym, "__restore_rt") == 0)
        return AG_N_TRAMPOLINE;
    for (size_t i = 0; i < sizeof(startup) / sizeof(startup[0]); i++)
        if (strcmp(sym, startup[i]) == 0)
            return AG_N_STARTUP;
    return AG_N_OTHER;
}

/* The native frame of return address ip (leaf: the interrupted PC itself), named with dladdr
 * once per address: the address looked up is ip - 1 for return addresses, so that a call at
 * the very end of a function is not taken for the next one. UINT32_MAX when out of memory. */
static uint32_t native_frame(uint64_t ip, bool leaf)
{
    uint64_t addr = leaf ? ip : ip - 1;
    uint32_t idx;
    if (ag_stats_nframe_find(&stats, addr, &idx))
        return idx;
    struct ag_nframe f = {.ip = ip};
    const char *module = "[unknown]", *sym = "";
    char *demangled = NULL;
    Dl_info info;
    memset(&info, 0, sizeof(info));
    if (dladdr((void *)(uintptr_t)addr, &info) && info.dli_fbase) {
        module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : self_exe;
        if (info.dli_sname && info.dli_saddr) {
            sym = info.dli_sname;
            f.offset = ip - (uint64_t)(uintptr_t)info.dli_saddr;
        } else {
            f.offset = ip - (uint64_t)(uintptr_t)info.dli_fbase;
        }
        if (info.dli_fbase == agent_base)
            f.kind = AG_N_TRAMPOLINE;
    }
    if (sym[0] == '_' && sym[1] == 'Z') {
        if (!demangle_looked_up) {
            *(void **)&cxa_demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
            demangle_looked_up = true;
        }
        int status = -1;
        if (cxa_demangle && (demangled = cxa_demangle(sym, NULL, NULL, &status)) && status == 0)
            sym = demangled;
    }
    uint64_t eval_start;
    if (ag_eval_loop_start(addr, &eval_start)) {
        /* the eval loop, maybe a clone no symbol names: named as such (sampler.c) */
        sym = "_PyEval_EvalFrameDefault";
        f.offset = ip - eval_start;
    }
    if (f.kind == AG_N_OTHER)
        f.kind = kind_of(sym);
    int err = ag_stats_intern(&stats, module, &f.module);
    if (!err)
        err = ag_stats_intern(&stats, sym, &f.symbol);
    free(demangled);
    if (err || ag_stats_nframe(&stats, addr, &f, &idx))
        return UINT32_MAX;
    return idx;
}

/* Records a CPU sample's native chain, and its combined stack: the native chain from the root
 * where each _PyEval_EvalFrameDefault stands for the profiled Python frames it runs. The k-th
 * eval-loop frame from the leaf runs group k of the Python frames (struct ag_sample.group);
 * groups with no eval-loop frame in the chain (its root cut off at AG_MAX_NATIVE frames, or
 * not unwound) go first. Start-up frames (everything under the outermost eval loop) are left
 * out, as are the agent's own frames and the signal trampoline. */
static void native_sample(const struct ag_sample *s, const struct ag_attr *a)
{
    static uint32_t nat[AG_MAX_NATIVE];
    static struct ag_citem out[AG_MAX_DEPTH + AG_MAX_NATIVE];
    uint32_t m = 0, evals = 0, k = 0;
    for (uint32_t i = s->native_depth; i-- > 0;) {
        uint32_t idx = native_frame(s->ips[i], i == 0);
        if (idx == UINT32_MAX)
            continue;
        nat[m++] = idx;
        if (stats.nframes[idx].kind == AG_N_EVAL)
            evals++;
    }
    if (m)
        (void)ag_chains_hit(&stats.native_stacks, nat, m); /* out of memory: one hit fewer */
    if (a->kind != ATTR_LINE || pychain.n == 0)
        return;
    for (uint32_t p = 0; p < pychain.n; p++)
        if (pychain.group[p] >= evals)
            out[k++] = (struct ag_citem){0, pychain.f[p].file, pychain.f[p].func,
                                         pychain.f[p].line};
    uint32_t j = 0;
    if (!s->native_truncated) {
        if (evals > 0)
            while (j < m && stats.nframes[nat[j]].kind != AG_N_EVAL)
                j++;
        else
            while (j < m && stats.nframes[nat[j]].kind == AG_N_STARTUP)
                j++;
    }
    for (uint32_t e = 0; j < m; j++) {
        const struct ag_nframe *f = &stats.nframes[nat[j]];
        if (f->kind == AG_N_EVAL) {
            uint32_t g = evals - 1 - e++;
            for (uint32_t p = 0; p < pychain.n; p++)
                if (pychain.group[p] == g)
                    out[k++] = (struct ag_citem){0, pychain.f[p].file, pychain.f[p].func,
                                                 pychain.f[p].line};
        } else if (f->kind != AG_N_TRAMPOLINE) {
            out[k++] = (struct ag_citem){1, nat[j], 0, 0};
        }
    }
    if (k)
        (void)ag_chains_hit(&stats.combined_stacks, out, k);
}

static void native_names_init(void)
{
    Dl_info info;
    if (dladdr((void *)&native_names_init, &info))
        agent_base = info.dli_fbase;
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    self_exe[n > 0 ? n : 0] = 0;
}

/* ---- threads ---- */

static clockid_t thread_cpu_clock(int tid)
{
    /* The kernel's encoding of a per-thread CPU clock (MAKE_THREAD_CPUCLOCK(tid, SCHED)). */
    return (clockid_t)((~(unsigned)tid << 3) | 6);
}

static struct ag_thread *find_thread(int tid)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE && threads[i].tid == tid)
            return &threads[i];
    return NULL;
}

/* ---- interpreter shutdown ---- */

/* From the program's last atexit callback until the part is written, the thread that finalizes
 * the interpreter (it frees every module's objects, runs the last collections, then the C
 * library's exit handlers) has no frame of the program's: its time is measured by its own
 * clocks, wall and CPU, and charged to the pseudo-file <interpreter shutdown>. Its CPU samples
 * over that stretch only give the split of the CPU time between Python and native. */
static struct {
    uint64_t start_ns; /* CLOCK_MONOTONIC when it began; 0: not (yet) */
    uint64_t cpu0_ns;  /* the finalizing thread's CPU clock then */
    int tid;
    uint64_t sampled_ns[2]; /* its CPU samples since then: python, native */
} shutdown;

static bool in_shutdown(const struct ag_thread *t)
{
    return shutdown.start_ns && t->tid == shutdown.tid;
}

/* Per thread slot: where its last CPU sample went (the thread's CPU time after it, when the
 * thread ends, goes there too). */
static struct {
    bool valid;
    enum ag_cat cat;
    struct ag_attr attr;
    uint64_t t_ns; /* when it was taken: the CPU time after it is charged there, at that time */
} last_cpu[AG_MAX_THREADS];

/* CPU time of threads that ended before any sample of theirs was taken (threads shorter than
 * the sampling interval, or than the kernel's tick): it goes with the next CPU sample of a
 * thread counted from its creation, as a timer over all such threads would have charged it.
 * last_hooked: where the last such sample went (for what is left at the end). */
static uint64_t carry_ns;
static struct ag_attr last_hooked;
static enum ag_cat last_hooked_cat;
static int last_hooked_tid;

static void drain(struct ag_thread *t)
{
    struct ag_ring *r = t->ring;
    if (!r)
        return;
    size_t slot = (size_t)(t - threads);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    for (; tail != head; tail++) {
        const struct ag_sample *s = (const struct ag_sample *)r->slots[tail % AG_RING_SLOTS];
        if (in_shutdown(t)) {
            shutdown.sampled_ns[(s->flags & AG_S_NATIVE) ? 1 : 0] += s->weight_ns;
            continue;
        }
        enum ag_cat cat = (s->flags & AG_S_NATIVE) ? AG_NATIVE : AG_PYTHON;
        charging_at(s->time_ns, t->tid);
        struct ag_attr a = process(s, cat);
        if (ag_unwind_ok)
            native_sample(s, &a);
        /* A thread counted from its creation that has no Python frame yet (or any more: the
         * C start-up and exit of the thread) is where it is: the rest of its time and what is
         * carried go there too (unattributed), not to the next sample's line, which would
         * charge the threads' start-up and exit to their functions. */
        if (a.kind == ATTR_NONE && !t->hooked)
            continue;
        last_cpu[slot].valid = true;
        last_cpu[slot].cat = cat;
        last_cpu[slot].attr = a;
        last_cpu[slot].t_ns = s->time_ns;
        if (t->hooked) {
            last_hooked = a;
            last_hooked_cat = cat;
            last_hooked_tid = t->tid;
            if (carry_ns) {
                charge(&a, cat, carry_ns);
                carry_ns = 0;
            }
        }
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    stats.dropped += atomic_exchange(&r->dropped, 0);
}

static void retire(struct ag_thread *t, uint64_t now)
{
    ag_timer_delete(t);
    drain(t);
    size_t slot = (size_t)(t - threads);
    last_cpu[slot].valid = false;
    wall_cache[slot].valid = false;
    /* A thread counted from its creation deleted its own timer with its signal blocked, and
     * took it along when it ended: no late signal can come, its slot is free at once (so that
     * thousands of short threads use a handful of slots). */
    t->retired_at_ns = t->hooked && now > RETIRE_GRACE_NS ? now - RETIRE_GRACE_NS - 1 : now;
    atomic_store_explicit(&t->state, AG_T_RETIRED, memory_order_release);
}

/* A free slot (or one retired long enough ago), marked AG_T_CLAIMED; NULL if there is none.
 * Called by the collector and by any thread that creates a thread. */
static struct ag_thread *claim_slot(uint64_t now)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++) {
        struct ag_thread *t = &threads[i];
        int st = atomic_load(&t->state);
        if (st == AG_T_RETIRED && now - t->retired_at_ns <= RETIRE_GRACE_NS)
            continue;
        if ((st == AG_T_FREE || st == AG_T_RETIRED) &&
            atomic_compare_exchange_strong(&t->state, &st, AG_T_CLAIMED))
            return t;
    }
    for (;;) {
        if (n >= AG_MAX_THREADS)
            return NULL;
        if (atomic_compare_exchange_weak(&nthreads_used, &n, n + 1))
            break;
    }
    /* A new slot is FREE (zeroed, or emptied in a forked child): it is ours. */
    struct ag_thread *t = &threads[n];
    int st = AG_T_FREE;
    return atomic_compare_exchange_strong(&t->state, &st, AG_T_CLAIMED) ? t : NULL;
}

/* The slot's ring and scratch memory (mapped once, kept when the slot is reused). */
static bool slot_memory(struct ag_thread *t)
{
    if (t->ring)
        return true;
    ag_mtls.guard++; /* the agent's memory is not the program's */
    void *m = mmap(NULL, sizeof(struct ag_ring) + AG_SCRATCH_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ag_mtls.guard--;
    if (m == MAP_FAILED)
        return false;
    t->scratch = (unsigned char *)m + sizeof(struct ag_ring);
    t->ring = m;
    return true;
}

static void reset_ring(struct ag_thread *t)
{
    atomic_store(&t->ring->head, 0);
    atomic_store(&t->ring->tail, 0);
    atomic_store(&t->ring->dropped, 0);
}

static void start_thread_sampling(uint64_t tstate, int tid, uint64_t now, uint64_t scan)
{
    struct ag_thread *t = claim_slot(now);
    if (!t)
        return;
    if (!slot_memory(t)) {
        atomic_store(&t->state, AG_T_FREE);
        return;
    }
    t->pending_off_ns = 0;
    reset_ring(t);
    t->gen = (t->gen + 1) & 63;
    t->hooked = false;
    t->tid = tid;
    t->tstate = tstate;
    t->cpu_clock = thread_cpu_clock(tid);
    t->last_cpu_ns = ag_now_ns(t->cpu_clock);
    if (!t->last_cpu_ns) {
        atomic_store(&t->state, AG_T_FREE);
        return; /* the thread is already gone */
    }
    t->rng = hm_hash64(((uint64_t)tid << 32) ^ now);
    t->wall_last_ns = now;
    t->wall_last_cpu_ns = t->last_cpu_ns;
    t->seen_scan = scan;
    atomic_store_explicit(&t->state, AG_T_ACTIVE, memory_order_release);
    if (ag_signal > 0 && ag_timer_create(t, 0) != 0)
        log_debug("agent: no CPU timer for thread %d: %s", tid, strerror(errno));
}

/* ---- threads counted from their creation (threadhooks.c) ----
 *
 * The creating thread claims a slot; the new thread fills it and arms its timer before it runs
 * any Python, so that every nanosecond of its CPU time from there is charged: by its samples
 * (a sample before the thread has a thread state, or after, has no frame: C start-up and exit,
 * not charged), then (ag_thread_end) the time since its last sample goes where that sample
 * went, or, for a thread that ended before any sample, with the next sample of such a thread
 * (carry_ns). */

/* A thread's first sample comes at the first kernel tick (when CPU timers are checked) that
 * finds it running: a point uniform over its life, so that a short thread's time, all charged
 * where that one sample lands, goes to its function, its start-up or its exit in proportion.
 * (A first sample only after 0.5 ms of CPU never saw the start-up: +15% on 1 ms threads.) */
#define FIRST_SAMPLE_NS 1ULL

struct ag_thread *ag_thread_claim(void *(*start_routine)(void *), void *arg)
{
    if (!threads || ag_signal <= 0 || !atomic_load(&ag_running) ||
        atomic_load(&finish_started))
        return NULL;
    struct ag_thread *t = claim_slot(ag_now_ns(CLOCK_MONOTONIC));
    if (!t)
        return NULL;
    if (!slot_memory(t)) {
        atomic_store(&t->state, AG_T_FREE);
        return NULL;
    }
    t->start_routine = start_routine;
    t->start_arg = arg;
    t->gen = (t->gen + 1) & 63;
    t->hooked = true;
    return t;
}

void ag_thread_unclaim(struct ag_thread *t)
{
    atomic_store(&t->state, AG_T_FREE);
}

void ag_thread_begin(struct ag_thread *t)
{
    ag_mtls.py_thread = true;
    int tid = (int)syscall(SYS_gettid);
    t->tid = tid;
    atomic_store(&t->tstate, 0);
    t->cpu_clock = thread_cpu_clock(tid);
    t->rng = hm_hash64(((uint64_t)tid << 32) ^ ag_now_ns(CLOCK_MONOTONIC));
    t->pending_off_ns = 0;
    t->seen_scan = 0;
    t->wall_last_ns = ag_now_ns(CLOCK_MONOTONIC);
    t->wall_last_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
    /* The CPU time before the timer is armed (the kernel's and libc's start of the thread) has
     * no Python frame, like a sample in the C start-up: it is not charged. Charged with the
     * first sample it went where that sample went, mostly the thread's function (+5% there on
     * 1 ms threads). */
    t->last_cpu_ns = t->wall_last_cpu_ns;
    reset_ring(t);
    atomic_store_explicit(&t->state, AG_T_ACTIVE, memory_order_release);
    if (ag_timer_create(t, FIRST_SAMPLE_NS) != 0)
        log_debug("agent: no CPU timer for thread %d: %s", tid, strerror(errno));
}

void ag_thread_end(struct ag_thread *t)
{
    if (atomic_load(&t->state) != AG_T_ACTIVE || t->tid != (int)syscall(SYS_gettid))
        return; /* a forked child's copy, or sampling has ended */
    /* No sample of this thread after its exit time is read: its signal is blocked for the few
     * instructions it has left, and its timer goes. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, ag_signal);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    ag_timer_delete(t);
    t->exit_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
    t->exit_wall_ns = ag_now_ns(CLOCK_MONOTONIC);
    int st = AG_T_ACTIVE;
    atomic_compare_exchange_strong_explicit(&t->state, &st, AG_T_EXITED, memory_order_release,
                                            memory_order_relaxed);
}

/* Charges what the threads that ended since the last tick left (collector, lock held). */
static void end_exited_threads(uint64_t now)
{
    size_t n = atomic_load(&nthreads_used);
    for (size_t i = 0; i < n; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != AG_T_EXITED)
            continue;
        drain(t);
        if (!atomic_load(&ag_enabled)) { /* it ended while profiling was off */
            retire(t, now);
            continue;
        }
        uint64_t last = atomic_load(&t->last_cpu_ns);
        uint64_t rest = t->exit_cpu_ns > last ? t->exit_cpu_ns - last : 0;
        charging_at(last_cpu[i].t_ns, t->tid);
        if (last_cpu[i].valid)
            charge(&last_cpu[i].attr, last_cpu[i].cat, rest);
        else
            carry_ns += rest; /* a thread of the interpreter's: its time is Python's */
        if (!ag_cfg.virtual_time && t->exit_wall_ns > t->wall_last_ns) {
            int64_t off = (int64_t)(t->exit_wall_ns - t->wall_last_ns) -
                          (int64_t)(t->exit_cpu_ns - t->wall_last_cpu_ns);
            uint64_t weight = t->pending_off_ns + (off > 0 ? (uint64_t)off : 0);
            const struct ag_attr *a = wall_cache[i].valid ? &wall_cache[i].attr
                                      : last_cpu[i].valid ? &last_cpu[i].attr
                                                          : NULL;
            /* In the stream, at the time the thread was last seen there (not at its exit). */
            charging_at(wall_cache[i].valid ? wall_cache[i].t_ns : last_cpu[i].t_ns, t->tid);
            if (a && weight)
                charge(a, AG_SYS, weight);
        }
        retire(t, now);
    }
}

/* What is still carried when sampling ends goes where the last such sample went. */
static void end_carry(void)
{
    charging_at(ag_now_ns(CLOCK_MONOTONIC), last_hooked_tid);
    if (carry_ns && last_hooked.kind != ATTR_NONE)
        charge(&last_hooked, last_hooked_cat, carry_ns);
    else if (carry_ns)
        log_debug("agent: %.3f ms of CPU of short threads never sampled", carry_ns / 1e6);
    carry_ns = 0;
}

/* Walks every interpreter's thread list, starts sampling new threads and retires ended ones. */
static void scan_threads(uint64_t now)
{
    static uint64_t scan;
    const struct py_layout *L = &ag_rt.layout;
    uint64_t interp = 0;
    scan++;
    if (!ag_safe_read(ag_rt.runtime_addr + L->rt_interpreters_head, &interp, 8))
        return;
    bool complete = true;
    for (int ni = 0; interp && ni < 64; ni++) {
        uint64_t tstate = 0, next = 0;
        if (!ag_safe_read(interp + L->is_threads_head, &tstate, 8) ||
            !ag_safe_read(interp + L->is_next, &next, 8)) {
            complete = false;
            break;
        }
        read_prefixes(interp);
        for (int nt = 0; tstate && nt < AG_MAX_THREADS; nt++) {
            uint64_t owner = 0, native = 0, tnext = 0;
            if (!ag_safe_read(tstate + L->ts_interp, &owner, 8) || owner != interp ||
                !ag_safe_read(tstate + L->ts_native_thread_id, &native, 8) ||
                !ag_safe_read(tstate + L->ts_next, &tnext, 8)) {
                complete = false;
                break;
            }
            int tid = (int)native;
            if (tid > 0) {
                struct ag_thread *t = find_thread(tid);
                if (t) {
                    t->tstate = tstate;
                    t->seen_scan = scan;
                } else {
                    start_thread_sampling(tstate, tid, now, scan);
                }
            }
            tstate = tnext;
        }
        interp = next;
    }
    if (!complete)
        return; /* a torn list says nothing about which threads ended */
    /* Threads counted from their creation end on their own (end_exited_threads). */
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE && !threads[i].hooked &&
            threads[i].seen_scan != scan)
            retire(&threads[i], now);
}

/* Off-CPU samples: the part of the wall time since the last look that a thread was not on a CPU,
 * charged to where it is now. */
static void wall_samples(uint64_t now, bool flush)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE || !atomic_load(&t->tstate) || in_shutdown(t))
            continue;
        uint64_t cpu = ag_now_ns(t->cpu_clock);
        if (!cpu)
            continue;
        int64_t off = (int64_t)(now - t->wall_last_ns) - (int64_t)(cpu - t->wall_last_cpu_ns);
        t->wall_last_ns = now;
        t->wall_last_cpu_ns = cpu;
        if (off > 0)
            t->pending_off_ns += (uint64_t)off;
        /* Slivers (a preemption, a page fault) are gathered until they make a millisecond, so a
         * busy thread is not walked at every tick for nothing. */
        if (t->pending_off_ns < WALL_MIN_NS && !flush)
            continue;
        if (!t->pending_off_ns)
            continue;
        uint64_t weight = t->pending_off_ns;
        t->pending_off_ns = 0;
        charging_at(now, t->tid);
        /* A thread that has not run since its stack was last read is still where it was: a
         * blocked thread costs one clock read per tick, not a stack walk. */
        size_t slot = (size_t)(t - threads);
        if (wall_cache[slot].valid && cpu == wall_cache[slot].cpu_ns && !flush) {
            charge(&wall_cache[slot].attr, AG_SYS, weight);
            continue;
        }
        wall_sample.weight_ns = weight;
        wall_sample.flags = 0;
        wall_sample.native_depth = 0;
        ag_walk_stack(t->tstate, t->tid, &wall_sample, wall_scratch);
        wall_cache[slot].attr = process(&wall_sample, AG_SYS);
        wall_cache[slot].cpu_ns = cpu;
        wall_cache[slot].t_ns = now;
        wall_cache[slot].valid = true;
    }
}

/* The threads' run-queue delay and CPU time (schedstat.c), at most every SCHED_INTERVAL_NS.
 * The last time, retired threads too: the thread that finalizes the interpreter leaves the
 * thread list before the end, and still runs (a thread that has ended reads nothing). */
static void sched_reads(uint64_t now, bool flush)
{
    if (!flush && now - last_sched_ns < SCHED_INTERVAL_NS)
        return;
    last_sched_ns = now;
    for (size_t i = 0; i < nthreads_used; i++) {
        int st = atomic_load(&threads[i].state);
        if (st == AG_T_ACTIVE || (flush && st == AG_T_RETIRED))
            ag_sched_read(threads[i].tid);
    }
}

/* Everything the threads' rings and the memory queue hold. */
static void drain_all(bool flush)
{
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++)
        if (atomic_load(&threads[i].state) == AG_T_ACTIVE)
            drain(&threads[i]);
    if (ag_cfg.memory)
        drain_memory(flush);
}

static void tick(bool flush)
{
    gpu_tick();
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if (now - last_scan_ns >= SCAN_INTERVAL_NS) {
        scan_threads(now);
        last_scan_ns = now;
    }
    if (!ag_cfg.virtual_time && atomic_load(&ag_enabled))
        wall_samples(now, flush);
    sched_reads(now, flush);
    drain_all(flush);
    end_exited_threads(now);
}

/* ---- profiling on and off (control.c) ----
 *
 * Off: the handler takes no sample (it only re-arms the timer), and neither off-CPU time, the
 * CPU time of threads that end, nor memory is counted. Switching off first charges what every
 * thread did since its last sample (where that sample went, as when a thread ends); switching
 * on starts every thread's clocks afresh, so that nothing of the time off is charged. */
static uint64_t off_since_ns, off_total_ns;

static void set_profiling_locked(bool on)
{
    if (on == atomic_load(&ag_enabled) || atomic_load(&finish_started))
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    end_exited_threads(now); /* threads that ended before the switch, in the old state */
    size_t used = atomic_load(&nthreads_used);
    if (!on) {
        if (!ag_cfg.virtual_time)
            wall_samples(now, true);
        atomic_store(&ag_enabled, false);
        if (ag_cfg.memory)
            atomic_store(&ag_mem_on, false);
        for (size_t i = 0; i < used; i++) {
            struct ag_thread *t = &threads[i];
            if (atomic_load(&t->state) != AG_T_ACTIVE || in_shutdown(t))
                continue;
            drain(t);
            uint64_t cpu = ag_now_ns(t->cpu_clock);
            uint64_t rest = cpu ? ag_thread_cpu_advance(t, cpu) : 0;
            charging_at(last_cpu[i].t_ns, t->tid);
            if (last_cpu[i].valid && rest)
                charge(&last_cpu[i].attr, last_cpu[i].cat, rest);
        }
        off_since_ns = now;
        return;
    }
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE)
            continue;
        uint64_t cpu = ag_now_ns(t->cpu_clock);
        t->last_cpu_ns = cpu;
        t->wall_last_ns = now;
        t->wall_last_cpu_ns = cpu;
        t->pending_off_ns = 0;
        wall_cache[i].valid = false;
        /* Where the thread was before the time off is not where it is now: its CPU time from
         * here to its next sample must not go to that line (a settle or a switch off before
         * any new sample would charge it there). */
        last_cpu[i].valid = false;
    }
    if (off_since_ns && now > off_since_ns)
        off_total_ns += now - off_since_ns;
    off_since_ns = 0;
    atomic_store_explicit(&ag_enabled, true, memory_order_release);
    if (ag_cfg.memory && !shutdown.start_ns)
        atomic_store(&ag_mem_on, true);
}

void ag_collector_set_profiling(bool on)
{
    sigset_t old;
    take_lock_in_program(&old);
    set_profiling_locked(on);
    drop_lock_in_program(&old);
}

/* Seconds profiling was off so far. */
static double off_seconds(uint64_t now)
{
    uint64_t ns = off_total_ns + (off_since_ns && now > off_since_ns ? now - off_since_ns : 0);
    return (double)ns / 1e9;
}

/* ---- checkpoints (window.c): the statistics so far, for a cell or a test ----
 *
 * Settling makes the statistics say everything that happened before the call: every sample the
 * rings and the memory queue hold is taken in, every thread's off-CPU time so far is charged,
 * and so is its CPU time since its last sample, where that sample went (as when profiling is
 * switched off). The calling thread blocks its own sampling signals meanwhile, so that its
 * handler cannot charge the same interval a second time. */
static void settle_locked(void)
{
    if (atomic_load(&finish_started) || !atomic_load(&ag_running))
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    drain_all(true);
    if (!atomic_load(&ag_enabled))
        return; /* switching off settled everything; nothing is counted since */
    end_exited_threads(now);
    if (!ag_cfg.virtual_time)
        wall_samples(now, true);
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        struct ag_thread *t = &threads[i];
        if (atomic_load(&t->state) != AG_T_ACTIVE || in_shutdown(t))
            continue;
        drain(t);
        /* The thread's handler may take a sample meanwhile (it is not the caller's): what it
         * charges, this does not. */
        uint64_t cpu = ag_now_ns(t->cpu_clock);
        uint64_t rest = cpu ? ag_thread_cpu_advance(t, cpu) : 0;
        if (!rest)
            continue;
        charging_at(last_cpu[i].t_ns, t->tid);
        if (last_cpu[i].valid)
            charge(&last_cpu[i].attr, last_cpu[i].cat, rest);
    }
    stats.off_sec = off_seconds(now);
}

/* Runs fn under the lock with the calling thread's signals blocked and its allocations not
 * counted. False when this process is not being profiled (any more). */
static bool with_settled(void (*fn)(void *), void *arg)
{
    if (!ag_agent_active() || !atomic_load(&ag_running) || atomic_load(&finish_started))
        return false;
    sigset_t old;
    take_lock_in_program(&old);
    bool ok = !atomic_load(&finished);
    if (ok) {
        settle_locked();
        fn(arg);
    }
    drop_lock_in_program(&old);
    return ok;
}

struct checkpoint_call {
    const char *path;
    int rc;
};

static void checkpoint_locked(void *arg)
{
    struct checkpoint_call *c = arg;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    c->rc = ag_write_checkpoint_file(&stats, ag_cfg.memory ? &mstats : NULL, start_real_sec,
                                     (double)(now - start_mono_ns) / 1e9, c->path);
}

int ag_collector_checkpoint(const char *path)
{
    struct checkpoint_call c = {path, -1};
    if (!with_settled(checkpoint_locked, &c))
        return -1;
    return c.rc;
}

static void totals_locked(void *arg)
{
    struct ag_totals *t = arg;
    t->profiling = atomic_load(&ag_enabled);
    t->memory = ag_cfg.memory;
    for (int k = 0; k < 3; k++)
        t->sec[k] = stats.total_sec[k];
    t->samples = stats.samples;
    t->malloc_bytes = mstats.malloc_bytes;
    t->free_bytes = mstats.free_bytes;
    t->python_bytes = mstats.python_bytes;
    t->copy_bytes = mstats.copy_bytes;
    t->footprint = mstats.footprint;
    t->max_footprint = mstats.max_footprint;
    t->mark_peak = mstats.mark_peak > mstats.footprint ? mstats.mark_peak : mstats.footprint;
}

int ag_collector_totals(struct ag_totals *out)
{
    memset(out, 0, sizeof(*out));
    return with_settled(totals_locked, out) ? 0 : -1;
}

static void mark_locked(void *arg)
{
    (void)arg;
    mstats.mark_peak = mstats.footprint;
}

int ag_collector_mark_peak(void)
{
    return with_settled(mark_locked, NULL) ? 0 : -1;
}


/* <interpreter shutdown> is profiled unless --profile-exclude names it or --profile-only does
 * not (the other rules are about real files). */
static enum ag_rule shutdown_rule(const char *name)
{
    filter_file(name); /* the options into the filter */
    return (enum ag_rule)py_filter_pseudo(&filter, name);
}

/* Charges the finalizing thread's time since the shutdown began (see `shutdown`). */
static void charge_shutdown(uint64_t now)
{
    /* A program never sampled (it ended before its first sample) has no shares to complete:
     * its profile stays empty, with the note that says it ran too briefly. */
    if (!shutdown.start_ns || now <= shutdown.start_ns || stats.samples == 0 ||
        !atomic_load(&ag_enabled))
        return;
    uint64_t wall = now - shutdown.start_ns;
    uint64_t cpu_now = ag_now_ns(thread_cpu_clock(shutdown.tid));
    uint64_t sampled = shutdown.sampled_ns[0] + shutdown.sampled_ns[1];
    uint64_t cpu = cpu_now > shutdown.cpu0_ns ? cpu_now - shutdown.cpu0_ns : 0;
    if (!cpu_now)
        cpu = sampled; /* the thread is gone (it cannot be: it waits for this part) */
    if (cpu > wall)
        cpu = wall;
    uint32_t f, fn;
    if (ag_stats_file(&stats, AG_SHUTDOWN_FILE, shutdown_rule, &f) ||
        ag_stats_func(&stats, AG_SHUTDOWN_FILE, f, 0, &fn))
        return;
    /* Filtered out: its CPU time is another excluded file's, its waiting not counted. */
    struct ag_attr a = {ATTR_LINE, f, fn, 0, 0};
    if (stats.files[f].rule != AG_RULE_PROFILED) {
        a.kind = ATTR_EXCLUDED;
    } else if (ag_cfg.stacks) {
        /* A stack of its own, so that the flame graph's widths add up to the whole run. */
        struct ag_sframe top = {f, fn, 0};
        if (ag_stats_stack(&stats, &top, 1, &a.stack))
            a.stack = 0;
    }
    /* Unsampled (a short shutdown): the interpreter's own work, Python's by the PC rule. */
    uint64_t native = sampled ? (uint64_t)((double)cpu * (double)shutdown.sampled_ns[1] /
                                           (double)sampled)
                              : 0;
    charging_at(now, shutdown.tid);
    charge(&a, AG_PYTHON, cpu - native);
    charge(&a, AG_NATIVE, native);
    if (!ag_cfg.virtual_time)
        charge(&a, AG_SYS, wall - cpu);
}

static void finish_locked(void)
{
    atomic_store(&ag_running, false);
    atomic_store(&ag_mem_on, false);
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        if (atomic_load(&threads[i].state) != AG_T_ACTIVE)
            continue;
        ag_timer_delete(&threads[i]);
    }
    tick(true); /* the last off-CPU interval and whatever the rings still hold */
    end_carry();
    uint64_t end = ag_now_ns(CLOCK_MONOTONIC);
    charge_shutdown(end);
    ag_gpu_stop();
    double elapsed = (double)(end - start_mono_ns) / 1e9;
    uint64_t calls = atomic_load(&ag_handler_calls), hns = atomic_load(&ag_handler_ns);
    log_info("agent: pid %d: %llu samples, %llu signals taking %.3f ms in the handler (%.1f us "
             "each), collector %.3f ms of CPU, %llu dropped",
             ag_pid, (unsigned long long)stats.samples, (unsigned long long)calls, hns / 1e6,
             calls ? hns / 1e3 / calls : 0.0, collector_cpu_ns / 1e6,
             (unsigned long long)stats.dropped);
    ag_mem_finish(&mstats);
    stats.off_sec = off_seconds(end);
    if (ag_write_part_file(&stats, ag_cfg.memory ? &mstats : NULL, start_real_sec, elapsed,
                           start_mono_ns) != 0)
        log_warn("agent: could not write the profile part: %s", err_last_message());
    atomic_store(&finished, true);
}

/* SCRY_SNAPSHOT_INTERVAL: the statistics so far, for `scry run --push`. Not when the program
 * started with fd 0-2 closed (no file is opened while it runs). */
static void maybe_snapshot(void)
{
    if (ag_cfg.snapshot_sec <= 0 || ag_low_fds_closed)
        return;
    uint64_t now = ag_now_ns(CLOCK_MONOTONIC);
    if ((double)(now - last_snapshot_ns) < ag_cfg.snapshot_sec * 1e9)
        return;
    last_snapshot_ns = now;
    stats.off_sec = off_seconds(now);
    if (ag_write_snapshot_file(&stats, ag_cfg.memory ? &mstats : NULL, start_real_sec,
                               (double)(now - start_mono_ns) / 1e9) != 0)
        log_warn("agent: could not write a snapshot: %s", err_last_message());
}

/* `scry dump --pid` asked for the live allocation samples (after tick: the queue drained). */
static void answer_alloc_request(void)
{
    uint64_t req = ag_alloc_request_poll();
    if (req && ag_write_allocations_file(&stats, ag_cfg.memory ? &mstats : NULL, req) != 0)
        log_warn("agent: could not write the allocation samples: %s", err_last_message());
}

static void *collector_main(void *arg)
{
    (void)arg;
    ag_mtls.guard = 1; /* the agent's own allocations and copies are not the program's */
    uint64_t rng = hm_hash64((uint64_t)ag_pid ^ ag_now_ns(CLOCK_MONOTONIC));
    atomic_store(&collector_tid, (int)syscall(SYS_gettid));
    uint64_t started = ag_now_ns(CLOCK_MONOTONIC);
    while (!atomic_load(&stop_requested) && !atomic_load(&pause_requested)) {
        uint64_t ns = ag_exp_interval_ns(&rng);
        /* Until the fork hooks are in place (the first few ms of the interpreter), look every
         * millisecond so that they are there before the program's own code runs. */
        if (!ag_pyhooks_installed() && ag_now_ns(CLOCK_MONOTONIC) - started < 5000000000ULL)
            ns = 1000000;
        /* Not ours any more (the program closed it): wait out the interval. */
        struct pollfd pfd = {ag_fd_get(&wake_fd), POLLIN, 0};
        struct timespec ts = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)};
        if (ppoll(&pfd, 1, &ts, NULL) > 0) {
            uint64_t v;
            ssize_t r = read(pfd.fd, &v, sizeof(v));
            (void)r;
        }
        if (atomic_load(&stop_requested) || atomic_load(&pause_requested))
            break;
        take_lock();
        int want = ag_control_poll();
        if (want >= 0)
            set_profiling_locked(want == 1);
        tick(false);
        maybe_snapshot();
        answer_alloc_request();
        ag_pyhooks_maybe_schedule();
        collector_cpu_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
        drop_lock();
    }
    if (atomic_load(&stop_requested)) {
        take_lock();
        if (!atomic_load(&finished))
            finish_locked();
        drop_lock();
    }
    return NULL;
}

static int spawn_collector(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the collector takes no signals */
    int rc = pthread_create(&collector, NULL, collector_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    collector_started = true;
    return 0;
}

static void reset_state(void)
{
    ag_stats_init(&stats);
    ag_mem_stats_free(&mstats);
    native_file = UINT32_MAX;
    memset(&shutdown, 0, sizeof(shutdown));
    ag_sched_reset();
    last_sched_ns = 0;
    start_mono_ns = ag_now_ns(CLOCK_MONOTONIC);
    start_real_sec = (double)ag_now_ns(CLOCK_REALTIME) / 1e9;
    last_snapshot_ns = start_mono_ns;
    last_scan_ns = 0;
    carry_ns = 0;
    off_total_ns = 0;
    off_since_ns = atomic_load(&ag_enabled) ? 0 : start_mono_ns;
    last_hooked.kind = ATTR_NONE;
    last_hooked_tid = 0;
    sst_reset(&ag_sstream, ag_sstream_max);
}

int ag_collector_start(void)
{
    if (!threads) {
        void *m = mmap(NULL, AG_MAX_THREADS * sizeof(struct ag_thread), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        threads = m;
    }
    if (!wall_scratch) {
        void *m = mmap(NULL, AG_SCRATCH_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            return -1;
        wall_scratch = m;
    }
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = 0;
    if (ag_unwind_ok)
        native_names_init();
    py_code_cache_init(&code_cache);
    reset_state();
    if (ag_fd_keep(&wake_fd, eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return -1;
    atomic_store(&ag_running, true);
    ag_part_begin();
    return spawn_collector();
}

static void wake(void)
{
    uint64_t one = 1;
    int fd = ag_fd_get(&wake_fd);
    ssize_t r = fd >= 0 ? write(fd, &one, sizeof(one)) : -1;
    (void)r;
}

void ag_collector_wake(void)
{
    if (wake_fd.fd >= 0)
        wake();
}

void ag_collector_finish(void)
{
    if (atomic_fetch_add(&finish_started, 1) == 0) {
        atomic_store(&ag_running, false);
        if (collector_started && !pthread_equal(pthread_self(), collector)) {
            atomic_store(&stop_requested, true);
            wake();
        } else {
            take_lock();
            if (!atomic_load(&finished))
                finish_locked();
            drop_lock();
        }
    }
    /* Wait (async-signal-safely) for the collector to write the part. */
    for (int i = 0; i < FINISH_WAIT_MS && !atomic_load(&finished); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

void ag_collector_drain(void)
{
    if (atomic_load(&finish_started) || !atomic_load(&ag_running))
        return;
    sigset_t old;
    take_lock_in_program(&old);
    drain_all(true);
    drop_lock_in_program(&old);
}

void ag_collector_shutdown_begins(void)
{
    if (atomic_load(&finish_started) || !atomic_load(&ag_running))
        return;
    ag_collector_drain();
    sigset_t old;
    take_lock_in_program(&old);
    if (!shutdown.start_ns) {
        shutdown.tid = (int)syscall(SYS_gettid);
        shutdown.cpu0_ns = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
        shutdown.start_ns = ag_now_ns(CLOCK_MONOTONIC);
    }
    drop_lock_in_program(&old);
}

void ag_collector_pause(void)
{
    if (!collector_started || pthread_equal(pthread_self(), collector))
        return;
    atomic_store(&pause_requested, true);
    wake();
    pthread_join(collector, NULL);
    /* pthread_join returns when the thread's tid word is cleared, a moment before the kernel
     * stops counting the thread in /proc/self/stat (which CPython reads to warn about forking a
     * multi-threaded process): wait until the thread is gone for the kernel too. */
    int tid = atomic_load(&collector_tid);
    for (int i = 0; tid > 0 && i < 2000; i++) {
        if (syscall(SYS_tgkill, ag_pid, tid, 0) != 0 && errno == ESRCH)
            break;
        struct timespec us = {0, 5000};
        nanosleep(&us, NULL);
    }
    atomic_store(&collector_tid, 0);
    collector_started = false;
    atomic_store(&pause_requested, false);
}

void ag_collector_resume(void)
{
    if (!collector_started && atomic_load(&ag_running) && !atomic_load(&finish_started))
        spawn_collector();
}

void ag_collector_reset_child(void)
{
    ag_part_begin();
    /* POSIX timers and the other threads do not exist here: start from nothing, keeping the
     * code-object cache (the child has the same objects). */
    size_t used = atomic_load(&nthreads_used);
    for (size_t i = 0; i < used; i++) {
        threads[i].has_timer = false;
        atomic_store(&threads[i].state, AG_T_FREE);
    }
    nthreads_used = 0;
    memset(wall_cache, 0, sizeof(wall_cache));
    memset(last_cpu, 0, sizeof(last_cpu));
    hm_clear(&code_by_addr); /* its entries point into the parent's statistics */
    ncodes = 0;
    reset_state();
    collector_started = false;
    atomic_store(&stop_requested, false);
    atomic_store(&pause_requested, false);
    atomic_store(&finished, false);
    atomic_store(&finish_started, 0);
    pthread_mutex_init(&lock, NULL);
}
