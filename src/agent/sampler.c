/* The signal side of the agent: each Python thread has a CPU-time timer whose real-time signal
 * lands on that thread; the handler reads the thread's Python frames with reads that cannot
 * fault, classifies the sample as Python or native, and appends it to the thread's ring. Nothing
 * here allocates, locks or calls into Python. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "common/log.h"
#include "cpython/frame_walk.h"
#include "cpython/opcodes.h"
#include "cpython/thread_list.h"
#include "platform/mem_access.h"
#include "platform/os_process.h"
#include "platform/thread_timer.h"
#include "reader/eh_frame.h"

#if defined(__has_include)
#if __has_include(<libunwind.h>)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define AG_HAVE_LIBUNWIND 1
#endif
#endif

#define MAX_RANGES 32

/* Executable ranges of the interpreter itself (libpython, the executable, the dynamic loader):
 * a PC outside them is native code. */
static struct {
    uint64_t start, end;
} ranges[MAX_RANGES];
static int nranges;

bool ag_safe_read(uint64_t addr, void *buf, size_t len)
{
    if (addr < 4096)
        return false;
    return pf_mem_read(ag_pid, addr, buf, len) == (long)len;
}

uint64_t ag_now_ns(clockid_t clock)
{
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t ag_exp_interval_ns(uint64_t *rng)
{
    /* xorshift64*, then an exponential draw with mean rate_sec (Poisson sampling avoids
     * aliasing with periodic code). */
    uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ULL;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *rng = x;
    double u = (double)((x * 0x2545f4914f6cdd1dULL) >> 11) / 9007199254740992.0; /* [0,1) */
    double s = -ag_cfg.rate_sec * log(1.0 - u);
    if (s < 0.0005)
        s = 0.0005;
    if (s > ag_cfg.rate_sec * 20)
        s = ag_cfg.rate_sec * 20;
    return (uint64_t)(s * 1e9);
}

static uintptr_t self_base; /* where this library is loaded */
/* This library's own executable ranges (part of ranges[] too): its threads are not Python's. */
static uint64_t self_start, self_end;

static int add_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    /* The agent itself too: its interposers (malloc family, memcpy) forward to libc, whose own
     * code is outside; a PC in them is judged by the opcode. */
    bool wanted = name[0] == 0 || strstr(name, "libpython") || strstr(name, "/ld-linux") ||
                  strstr(name, "/ld64") || strstr(name, "ld-linux") ||
                  (info->dlpi_addr == self_base && self_base);
    if (!wanted)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && nranges < MAX_RANGES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        ranges[nranges].start = info->dlpi_addr + ph->p_vaddr;
        ranges[nranges].end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (self_base && info->dlpi_addr == self_base) {
            if (!self_start || ranges[nranges].start < self_start)
                self_start = ranges[nranges].start;
            if (ranges[nranges].end > self_end)
                self_end = ranges[nranges].end;
        }
        nranges++;
    }
    return 0;
}

/* The eval loop's own code (_PyEval_EvalFrameDefault, from its dynamic symbol; where the loop
 * is a local clone that symbol only jumps into, as in Debian sid's 3.14 and 3.15, the clone's
 * range from the unwind tables): on a call instruction, a PC there is the interpreter
 * dispatching the call or setting up a Python callee's frame, not the callee's C code (which
 * runs in functions of its own). */
static uint64_t eval_start, eval_end;

bool ag_pc_in_eval_loop(uint64_t pc)
{
    return pc >= eval_start && pc < eval_end;
}

bool ag_eval_loop_start(uint64_t pc, uint64_t *start)
{
    *start = eval_start;
    return ag_pc_in_eval_loop(pc);
}

/* The loaded object holding want's address, and where its PT_LOAD segments and unwind tables
 * lie in memory. */
struct eval_object {
    uintptr_t want;
    uintptr_t hdr;                  /* its .eh_frame_hdr (PT_GNU_EH_FRAME), 0 when none */
    uintptr_t seg_start[8], seg_end[8];
    int nseg;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct eval_object *o = data;
    bool holds = false;
    struct eval_object found = {.want = o->want};
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_EH_FRAME)
            found.hdr = at;
        if (ph->p_type != PT_LOAD || found.nseg == 8)
            continue;
        found.seg_start[found.nseg] = at;
        found.seg_end[found.nseg++] = at + ph->p_memsz;
        holds |= o->want >= at && o->want < at + ph->p_memsz;
    }
    if (!holds)
        return 0;
    *o = found;
    return 1;
}

/* Reads of the object's own loaded segments, nothing outside them. */
static int object_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const struct eval_object *o = ctx;
    for (int i = 0; i < o->nseg; i++)
        if (addr >= o->seg_start[i] && addr <= o->seg_end[i] && len <= o->seg_end[i] - addr) {
            memcpy(buf, (const void *)(uintptr_t)addr, len);
            return 0;
        }
    return -1;
}

static const char *object_name_at(void *ctx, uint64_t addr)
{
    (void)ctx;
    Dl_info info;
    if (dladdr((void *)(uintptr_t)addr, &info) && info.dli_sname &&
        (uintptr_t)info.dli_saddr == addr)
        return info.dli_sname;
    return NULL;
}

static void find_eval_loop(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *entry = NULL;
    if (sym && dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) && entry &&
        entry->st_size >= EHF_EVAL_LOOP_MIN) {
        eval_start = (uint64_t)(uintptr_t)sym;
        eval_end = eval_start + entry->st_size;
        return;
    }
    struct eval_object o = {.want = (uintptr_t)dlsym(RTLD_DEFAULT, "PyEval_EvalCode")};
    uint64_t start, end;
    if (o.want && dl_iterate_phdr(find_object, &o) && o.hdr &&
        ehf_eval_loop(object_read, &o, o.hdr, object_name_at, &start, &end) == 0) {
        eval_start = start;
        eval_end = end;
    } else if (sym && entry && entry->st_size) {
        eval_start = (uint64_t)(uintptr_t)sym; /* a small loop of a build unlike any measured */
        eval_end = eval_start + entry->st_size;
    }
}

bool ag_pc_in_agent(uint64_t pc)
{
    return pc >= self_start && pc < self_end;
}

bool ag_pc_in_interpreter(uint64_t pc)
{
    for (int i = 0; i < nranges; i++)
        if (pc >= ranges[i].start && pc < ranges[i].end)
            return true;
    return false;
}

/* The frame walker (cpython/frame_walk.h) over this process's own memory, read with reads that
 * cannot fault. */
static struct py_fw fw;
static bool fw_ok;

static bool self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    return ag_safe_read(addr, buf, len);
}

const struct py_mem ag_self_mem = {.read = self_read};

/* A thread's frames mostly live in its current data-stack chunk: one read copies the used part
 * of it, the walker reads the frames from that copy, and the code objects' headers are fetched in
 * one batched read, so a sample costs a handful of system calls whatever the depth. Frames
 * elsewhere (generators, older chunks) are read one by one. */
struct walk_scratch {
    unsigned char chunk[AG_CHUNK_COPY];
    unsigned char headers[AG_MAX_DEPTH][256];
    struct pf_iov local[AG_MAX_DEPTH], remote[AG_MAX_DEPTH];
    struct py_fw_frame frames[AG_MAX_DEPTH];
};

_Static_assert(sizeof(struct walk_scratch) <= AG_SCRATCH_SIZE, "scratch too small");

int ag_walk_stack(uint64_t tstate, int expect_tid, struct ag_sample *s, void *scratch_mem)
{
    const struct py_layout *L = &ag_rt.layout;
    struct walk_scratch *w = scratch_mem;
    struct py_fw_thread th;
    struct py_mem mem = {.read = self_read};
    s->depth = 0;
    if (!fw_ok || !tstate || !py_fw_thread(&fw, &mem, tstate, &th) ||
        (expect_tid && (int64_t)th.native_id != expect_tid))
        return -1;
    if (th.chunk && th.top > th.chunk && th.top - th.chunk <= AG_CHUNK_COPY &&
        ag_safe_read(th.chunk, w->chunk, th.top - th.chunk)) {
        mem.copy_base = th.chunk;
        mem.copy = w->chunk;
        mem.copy_len = th.top - th.chunk;
    }

    /* Pass 1: the chain of frames. */
    unsigned flags;
    int n = (int)py_fw_walk(&fw, &mem, th.frame, w->frames, AG_MAX_DEPTH, 4 * AG_MAX_DEPTH,
                            &flags);
    if (flags)
        s->flags |= AG_S_TRUNCATED;
    if (n == 0)
        return -1;

    /* Pass 2: every code object's header in one batched read. process_vm_readv stops at the
     * first unreadable range: the ones after it are read one by one. */
    for (int i = 0; i < n; i++) {
        w->local[i] = (struct pf_iov){w->headers[i], L->co_size};
        w->remote[i] = (struct pf_iov){(void *)(uintptr_t)w->frames[i].code, L->co_size};
    }
    long got = pf_mem_readv(ag_pid, w->local, w->remote, (size_t)n);
    int complete = got > 0 ? (int)((uint64_t)got / L->co_size) : 0;

    int opcode = -1;
    for (int i = 0; i < n; i++) {
        const uint8_t *co = w->headers[i];
        const struct py_fw_frame *fr = &w->frames[i];
        if (i >= complete && !ag_safe_read(fr->code, w->headers[i], L->co_size))
            continue;
        struct py_fw_code facts;
        py_fw_code_facts(&fw, co, &facts);
        int64_t lasti = py_fw_lasti(&fw, fr->code, fr->instr);
        if (!py_fw_shown(&fw, fr, &facts, lasti))
            continue;
        struct ag_frame *f = &s->frames[s->depth];
        f->code = fr->code;
        memcpy(&f->filename, co + L->co_filename, 8);
        memcpy(&f->qualname, co + L->co_qualname, 8);
        memcpy(&f->firstlineno, co + L->co_firstlineno, 4);
        f->lasti = (int32_t)lasti;
        s->group[s->depth] = fr->group;
        if (s->depth == 0 && lasti >= 0) {
            uint8_t unit[2];
            if (ag_safe_read(fr->code + L->co_code_adaptive + (uint64_t)lasti * 2, unit, 2))
                opcode = unit[0];
            if (py_fw_frame_above(&fw, fr, co, th.chunk, th.top))
                s->flags |= AG_S_FRAME_ABOVE;
        }
        s->depth++;
    }
    return opcode;
}

struct find_ctx {
    int tid;
    uint64_t found;
};

static int find_one(void *ctx, uint64_t interp, uint64_t tstate)
{
    (void)interp;
    struct find_ctx *f = ctx;
    uint64_t native = 0;
    if (!ag_safe_read(tstate + ag_rt.layout.ts_native_thread_id, &native, 8))
        return -1;
    if ((int64_t)native != f->tid)
        return 0;
    f->found = tstate;
    return 1;
}

/* The thread state whose native thread id is tid, from the interpreters' lists (0: none yet).
 * For a thread counted from its creation, whose state the collector has not seen yet. */
static uint64_t find_tstate(int tid)
{
    uint64_t interp = 0;
    if (!ag_safe_read(ag_rt.runtime_addr + ag_rt.layout.rt_interpreters_head, &interp, 8))
        return 0;
    struct find_ctx f = {tid, 0};
    struct py_tl w = {.L = &ag_rt.layout, .mem = &ag_self_mem, .max_interps = 64,
                      .max_threads = AG_MAX_THREADS, .go_on = true, .on_thread = find_one,
                      .ctx = &f};
    py_tl_walk(&w, interp);
    return f.found;
}

static void arm_after(struct ag_thread *t, uint64_t ns)
{
    pf_timer_arm_once(t->timer, ns);
}

static void arm(struct ag_thread *t)
{
    pf_timer_arm_once(t->timer, ag_exp_interval_ns(&t->rng));
}

/* ---- native stacks (SCRY_STACKS=1) ----
 *
 * libunwind is loaded with dlopen(RTLD_LOCAL) rather than linked: linked into a preloaded
 * library it would come first in the process's lookup scope, and its _Unwind_* functions would
 * replace libgcc's for every C++ exception the program throws; and a program run without
 * --stacks does not load it at all. The handler unwinds the interrupted context (the
 * ucontext, UNW_INIT_SIGNAL_FRAME: the first frame is the interrupted PC itself) and keeps raw
 * return addresses; the collector names them (dladdr) later.
 *
 * Why this is safe in a signal handler: libunwind's local unwinding is async-signal-safe when
 * its cache is off or per thread. Debian's libunwind 1.6 is built without
 * --enable-per-thread-cache, and there UNW_CACHE_PER_THREAD silently means the one global cache
 * used without its lock (a race between threads). Without a cache (UNW_CACHE_NONE) each step
 * looks its FDE up and parses it again: measured ~60 us per sample on zlib stacks of ~15 frames,
 * against ~13 us with UNW_CACHE_GLOBAL. So the cache is global: libunwind takes its mutex with
 * every signal blocked (sigprocmask), so a handler never interrupts the thread that holds it;
 * another thread's handler waits a few microseconds. The one hazard is fork(): a child forked
 * while another thread held that mutex would hang in its first unwind. The fork handlers
 * (ag_unwind_fork_prepare) therefore stop new unwinds and wait for the ones in flight before
 * the process forks. Otherwise: no allocation (libunwind's memory pool is static, then mmap),
 * no TLS (the only TLS of libunwind.so.8 belongs to unw_backtrace, never called here), FDEs
 * found through dl_iterate_phdr (a recursive lock of the loader, re-entrant on the same
 * thread). What runs once (tdep_init, memory-validation setup, PLT binding: RTLD_NOW) runs at
 * init, in a warm-up unwind of the constructor's own stack. */
bool ag_unwind_ok;
static _Atomic int unwinding;       /* handlers inside libunwind now */
static _Atomic bool unwind_paused;  /* a fork is under way */

bool ag_unwind_fork_prepare(void)
{
    if (!ag_unwind_ok)
        return true;
    atomic_store(&unwind_paused, true);
    for (int i = 0; i < 100000; i++) { /* at most ~0.1-1 s; an unwind takes microseconds */
        if (atomic_load(&unwinding) == 0)
            return true;
        struct timespec us = {0, 1000};
        nanosleep(&us, NULL);
    }
    return false;
}

void ag_unwind_fork_done(bool child, bool clean)
{
    if (child && !clean)
        ag_unwind_ok = false; /* libunwind's lock may be held for ever in this process */
    atomic_store(&unwind_paused, false);
}

#ifdef AG_HAVE_LIBUNWIND
#define AG_STR2(x) #x
#define AG_STR(x) AG_STR2(x)
static __typeof__(unw_init_local2) *p_init_local2;
static __typeof__(unw_step) *p_step;
static __typeof__(unw_get_reg) *p_get_reg;

static void unwind(void *uctx, struct ag_sample *s)
{
    unw_cursor_t cursor;
    unw_word_t ip = 0;
    uint32_t n = 0;
    if (p_init_local2(&cursor, (unw_context_t *)uctx, UNW_INIT_SIGNAL_FRAME) == 0) {
        for (;;) {
            if (p_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0)
                break;
            s->ips[n++] = (uint64_t)ip;
            if (n == AG_MAX_NATIVE) {
                s->native_truncated = p_step(&cursor) > 0;
                break;
            }
            if (p_step(&cursor) <= 0)
                break;
        }
    }
    s->native_depth = n;
}

bool ag_unwind_init(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        log_warn("agent: libunwind is not installed (libunwind.so.8): stacks have no native "
                 "frames");
        return false;
    }
    __typeof__(unw_set_caching_policy) *set_policy =
        (__typeof__(unw_set_caching_policy) *)dlsym(h, AG_STR(unw_set_caching_policy));
    unw_addr_space_t *local_as = dlsym(h, AG_STR(unw_local_addr_space));
    p_init_local2 = (__typeof__(unw_init_local2) *)dlsym(h, AG_STR(unw_init_local2));
    p_step = (__typeof__(unw_step) *)dlsym(h, AG_STR(unw_step));
    p_get_reg = (__typeof__(unw_get_reg) *)dlsym(h, AG_STR(unw_get_reg));
    if (!set_policy || !local_as || !p_init_local2 || !p_step || !p_get_reg) {
        log_warn("agent: this libunwind lacks unw_init_local2: stacks have no native frames");
        return false;
    }
    set_policy(*local_as, UNW_CACHE_GLOBAL);
    /* Warm-up: the first unwind initialises libunwind (locks, memory pool, validation). */
    static struct ag_sample warm;
    ucontext_t uc;
    if (getcontext(&uc) != 0)
        return false;
    unwind(&uc, &warm);
    if (warm.native_depth == 0) {
        log_warn("agent: libunwind cannot unwind here: stacks have no native frames");
        return false;
    }
    log_debug("agent: libunwind ready (%u frames in the warm-up)", warm.native_depth);
    return true;
}
#else
bool ag_unwind_init(void)
{
    log_warn("agent: built without libunwind.h: stacks have no native frames");
    return false;
}
#endif

_Atomic uint64_t ag_handler_ns, ag_handler_calls;

static void on_cpu_signal(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    int saved_errno = errno;
    ag_mtls.guard++; /* whatever the handler copies is not the program's */
    uint64_t t0 = ag_now_ns(CLOCK_MONOTONIC);
    uintptr_t v = (uintptr_t)si->si_value.sival_ptr;
    struct ag_thread *t = (struct ag_thread *)(v & ~(uintptr_t)63);
    if (si->si_code != SI_TIMER || !t || (v & 63) != t->gen ||
        atomic_load_explicit(&t->state, memory_order_acquire) != AG_T_ACTIVE ||
        !atomic_load_explicit(&ag_running, memory_order_relaxed))
        goto out;
    if (t->tid != pf_gettid())
        goto out;
    /* Profiling off: no sample, and the clock is left as it is (switching on restarts it). */
    if (!atomic_load_explicit(&ag_enabled, memory_order_acquire)) {
        arm(t);
        goto out;
    }

    /* A thread counted from its creation may not have a thread state yet (or the collector has
     * not seen it): look for it. Until there is one the thread is in its C start-up, and the
     * sample says so (no Python frame): its time is charged there, as a sample anywhere else in
     * the thread's life would be. (Skipping it carried a short thread's whole time to the next
     * thread's sample, mostly in a function: +7% on 1 ms threads.) */
    uint64_t tstate = atomic_load_explicit(&t->tstate, memory_order_relaxed);
    if (!tstate) {
        tstate = find_tstate(t->tid);
        if (tstate)
            atomic_store_explicit(&t->tstate, tstate, memory_order_relaxed);
    }

    uint64_t now = ag_now_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t weight = ag_thread_cpu_advance(t, now);
    arm(t);

    struct ag_ring *r = t->ring;
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail >= AG_RING_SLOTS) {
        atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
        goto out;
    }
    struct ag_sample *s = (struct ag_sample *)r->slots[head % AG_RING_SLOTS];
    s->weight_ns = weight;
    s->time_ns = t0;
    s->flags = 0;
    int opcode = ag_walk_stack(tstate, t->tid, s, t->scratch);
    const ucontext_t *uc = uctx;
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    /* Native: inside a call into C (the innermost frame on a call instruction that may call
     * C, and the PC not in the eval loop itself), or the PC outside the interpreter; but never
     * while a Python frame is being set up or cleared above the innermost one (the memcpy or
     * free of that is the call's own work). */
    bool c_call = opcode >= 0 && py_opcode_is_call(ag_rt.minor, (uint8_t)opcode) &&
                  !ag_pc_in_eval_loop(pc);
    if ((c_call || !ag_pc_in_interpreter(pc)) && !(s->flags & AG_S_FRAME_ABOVE))
        s->flags |= AG_S_NATIVE;
    s->native_depth = 0;
    s->native_truncated = 0;
#ifdef AG_HAVE_LIBUNWIND
    if (ag_unwind_ok) {
        atomic_fetch_add(&unwinding, 1);
        if (!atomic_load(&unwind_paused))
            unwind(uctx, s);
        atomic_fetch_sub(&unwinding, 1);
    }
#endif
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
out:
    atomic_fetch_add_explicit(&ag_handler_ns, ag_now_ns(CLOCK_MONOTONIC) - t0,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&ag_handler_calls, 1, memory_order_relaxed);
    ag_mtls.guard--;
    errno = saved_errno;
}

/* A real-time signal nobody uses: the program keeps SIGALRM, SIGPROF and SIGVTALRM to itself. */
static int pick_signal(void)
{
    for (int sig = SIGRTMIN + 3; sig <= SIGRTMAX - 3; sig++) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            return sig;
    }
    return -1;
}

int ag_sampler_init(void)
{
    /* Before anything samples: memory samples walk stacks too, even with CPU sampling off. */
    fw_ok = py_fw_init(&fw, &ag_rt.layout,
                       py_heap_layout_table(ag_rt.minor, ag_rt.layout.free_threaded),
                       ag_rt.types.code) == 0 &&
            ag_rt.layout.co_size <= sizeof(((struct walk_scratch *)0)->headers[0]);
    if (!fw_ok)
        log_warn("agent: this Python's frame layout is out of the walker's bounds: no stacks");
    find_eval_loop();
    nranges = 0;
    Dl_info self;
    if (dladdr((void *)&ag_sampler_init, &self) && self.dli_fbase)
        self_base = (uintptr_t)self.dli_fbase;
    dl_iterate_phdr(add_range, NULL);
    if (ag_cfg.stacks)
        ag_unwind_ok = ag_unwind_init();
    ag_signal = pick_signal();
    if (ag_signal < 0) {
        log_warn("agent: no free real-time signal; CPU profiling is off");
        return -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_cpu_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, ag_signal);
    if (ag_install_signal(ag_signal, &sa) != 0)
        return -1;
    return 0;
}

int ag_timer_create(struct ag_thread *t, uint64_t first_ns)
{
    void *value = (void *)((uintptr_t)t | t->gen);
    if (pf_thread_timer_create(t->cpu_clock, t->tid, ag_signal, value, &t->timer) != 0)
        return -1;
    atomic_store(&t->has_timer, true);
    if (first_ns)
        arm_after(t, first_ns);
    else
        arm(t);
    return 0;
}

/* The collector (ending sampling, retiring a thread) and a hooked thread ending itself may race:
 * one of them deletes the timer. */
void ag_timer_delete(struct ag_thread *t)
{
    if (atomic_exchange(&t->has_timer, false))
        pf_timer_delete(t->timer);
}
