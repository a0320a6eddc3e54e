/* The allocation side of the agent: interposers for the malloc family, anonymous mmap/munmap/
 * mremap and memcpy/memmove. The real functions (dlsym(RTLD_NEXT)) do the work; the hooks add
 * the bytes to per-thread counters and, when a thread's net allocated (or freed) bytes reach the
 * window, or its copied bytes reach the copy window, queue a sample with the thread's Python
 * stack (ag_memq). Rules: no hook takes the GIL, calls Python, locks, or allocates through the
 * hooked functions; errno is preserved; bytes are never dropped (a sample that cannot be queued
 * leaves its bytes in the thread's counters). Format and semantics: docs/agent-protocol.md. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "platform/os_process.h"
#include "platform/raw_mem.h"

__thread struct ag_mem_tls ag_mtls __attribute__((tls_model("initial-exec")));

_Atomic bool ag_mem_on;         /* counting (memory profiling on and not finished) */
_Atomic bool ag_mem_python_ready; /* the interpreter runs Python code: stacks mean something */
uint64_t ag_mem_window = 1048576;
uint64_t ag_copy_window = 8388608;
bool ag_leak_on = true;

static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mmap64)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    void *(*memcpy)(void *, const void *, size_t);
    void *(*memmove)(void *, const void *, size_t);
    void *(*memcpy_chk)(void *, const void *, size_t, size_t);
    void *(*memmove_chk)(void *, const void *, size_t, size_t);
} real;

/* ---- finding the real functions ---- */

/* dlsym may allocate (its error buffer) before the real malloc is known: such requests are
 * served from this buffer, and their frees ignored. */
#define BOOT_SIZE (256 * 1024)
static _Alignas(16) unsigned char boot[BOOT_SIZE];
static _Atomic size_t boot_used;
static _Atomic int resolve_state; /* 0: not yet, 1: under way, 2: done */

static bool in_boot(const void *p)
{
    return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + BOOT_SIZE;
}

/* A block of the boot buffer: 16 bytes of header (its size), then the data. */
static void *boot_alloc(size_t n)
{
    size_t need = ((n + 15) & ~(size_t)15) + 16;
    size_t off = atomic_fetch_add(&boot_used, need);
    if (off + need > BOOT_SIZE)
        return NULL;
    *(size_t *)(boot + off) = n;
    return boot + off + 16;
}

static size_t boot_size(const void *p)
{
    return *(const size_t *)((const unsigned char *)p - 16);
}

/* Byte copies for the moment before memcpy itself is known (volatile: the compiler must not
 * turn the loop into a memcpy call). */
static void *slow_move(void *dst, const void *src, size_t n)
{
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    if (d < s) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        for (size_t i = n; i-- > 0;)
            d[i] = s[i];
    }
    return dst;
}

static void resolve(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&resolve_state, &expected, 1)) {
        while (atomic_load(&resolve_state) != 2 && !ag_mtls.resolving)
            ; /* another thread is resolving (only ever at start-up) */
        return;
    }
    ag_mtls.resolving = true;
#define SYM(field, name) (*(void **)&real.field = dlsym(RTLD_NEXT, name))
    SYM(memcpy, "memcpy");
    SYM(memmove, "memmove");
    SYM(memcpy_chk, "__memcpy_chk");
    SYM(memmove_chk, "__memmove_chk");
    SYM(calloc, "calloc");
    SYM(free, "free");
    SYM(realloc, "realloc");
    SYM(posix_memalign, "posix_memalign");
    SYM(aligned_alloc, "aligned_alloc");
    SYM(memalign, "memalign");
    SYM(valloc, "valloc");
    SYM(pvalloc, "pvalloc");
    SYM(usable, "malloc_usable_size");
    SYM(mmap, "mmap");
    SYM(mmap64, "mmap64");
    SYM(munmap, "munmap");
    SYM(mremap, "mremap");
    SYM(malloc, "malloc"); /* last: a non-NULL malloc means everything is there */
#undef SYM
    ag_mtls.resolving = false;
    atomic_store(&resolve_state, 2);
}

static inline bool ready(void)
{
    if (__builtin_expect(atomic_load_explicit(&resolve_state, memory_order_acquire) == 2, 1))
        return true;
    resolve();
    return atomic_load(&resolve_state) == 2 && !ag_mtls.resolving;
}

/* ---- per-thread counting ---- */

static inline bool counting(void)
{
    return atomic_load_explicit(&ag_mem_on, memory_order_relaxed) && ag_mtls.guard == 0;
}

/* The hooks' fast path: the real functions are known and this thread counts nothing (memory
 * profiling off, as under --cpu-only, or a thread inside the agent). A hook is then a tail call
 * to the real function, with no frame of its own. Python calls memcpy and malloc often enough
 * (a JSON parser, many small objects) that it shows: the memcpy hook, which saved five registers
 * on the way in for the counting it did not do, took 0.8% of a JSON-heavy program's samples
 * under --cpu-only (docs/PERFORMANCE.md, "service-like"). The rest of each hook is a function
 * of its own (`*_slow`, noinline), so that the compiler keeps its frame off the fast path;
 * nothing is counted differently: the slow paths are the hooks as they were. */
static inline bool idle(void)
{
    return atomic_load_explicit(&resolve_state, memory_order_acquire) == 2 && !counting();
}

#define AG_SLOW __attribute__((noinline))

static int my_tid(void)
{
    if (!ag_mtls.tid)
        ag_mtls.tid = pf_gettid();
    return ag_mtls.tid;
}

/* The thread's generator, seeded at its first sampling point from its id, the time and the
 * address of its TLS, so that threads and processes draw different points. */
static void rng_seed(struct ag_mem_tls *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t->rng = ag_rng_seed((uint64_t)my_tid() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_nsec ^
                         ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)t);
}

static uint64_t strata_points(struct ag_mem_tls *t, struct ag_strata *s, uint64_t w)
{
    if (!t->rng)
        rng_seed(t);
    return ag_strata_points(s, &t->rng, w);
}

static inline uint64_t sampled_bytes(struct ag_mem_tls *t, struct ag_strata *s, uint64_t n,
                                     uint64_t w)
{
    if (n >= w)
        return n;
    if ((s->until -= (int64_t)n) > 0)
        return 0;
    return strata_points(t, s, w) * w;
}

/* The thread's heap moved by a window since its last sample: a sample for the footprint. */
static void net_check(struct ag_mem_tls *t)
{
    int64_t w = (int64_t)ag_mem_window;
    if (t->net < w && t->net > -w)
        return;
    t->guard++;
    if (ag_memq_emit(AG_M_NET, 0, 0, t->net, 0, 0, 0, my_tid()))
        t->net = 0;
    t->guard--;
}

/* Queues a malloc sample standing for weight bytes at p (a block of size bytes; Python's when python), with what earlier
 * samples could not queue; if the queue is full, all of it waits for the thread's next sample. */
static void emit_malloc(struct ag_mem_tls *t, void *p, uint64_t size, uint64_t weight,
                        bool python)
{
    t->guard++;
    uint64_t bytes = weight + t->pend, py = (python ? weight : 0) + t->pend_py;
    if (ag_memq_emit(AG_M_MALLOC, bytes, py, t->net, (uint64_t)(uintptr_t)p, size, 0,
                     my_tid())) {
        t->net = 0;
        t->pend = t->pend_py = 0;
    } else {
        t->pend = bytes;
        t->pend_py = py;
    }
    t->guard--;
}

/* An allocation of n bytes at p (its requested size for Python's objects, its usable size for
 * the C library's blocks, its length for a mapping), as the program sees it; size: the block
 * at p (n, or more when n is a realloc's growth). */
static void attribute_alloc(struct ag_mem_tls *t, void *p, uint64_t n, uint64_t size, bool python)
{
    uint64_t weight = sampled_bytes(t, &t->alloc, n, ag_mem_window);
    if (!weight) {
        net_check(t);
        return;
    }
    emit_malloc(t, p, size, weight, python);
}

/* The allocation of malloc sample seq, at address at (0: none), is gone (freed, or a realloc
 * that could not keep it). If the free sample cannot be queued, the sample stays at that address:
 * the next free there, or the next block sampled there (which carries it), frees it later, rather
 * than its line holding it for ever. */
static void attribute_free(struct ag_mem_tls *t, uint64_t seq, void *at)
{
    t->guard++;
    if (ag_memq_emit(AG_M_FREE, 0, 0, t->net, 0, 0, seq, my_tid()))
        t->net = 0;
    else if (at)
        (void)ag_memq_retrack((uint64_t)(uintptr_t)at, seq);
    t->guard--;
}

/* A block about to be freed: if it was a sample's allocation, a free sample. */
static void forget_block(struct ag_mem_tls *t, void *p)
{
    uint64_t seq;
    if (ag_memq_maybe_tracked((uint64_t)(uintptr_t)p) &&
        ag_memq_take_tracked((uint64_t)(uintptr_t)p, &seq))
        attribute_free(t, seq, p);
}

static inline void on_copy(size_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (t->rl_active) /* pymalloc moving a block in a realloc copies the old block's size */
        t->rl_copy = n;
    uint64_t weight = sampled_bytes(t, &t->copy, n, ag_copy_window);
    if (!weight)
        return;
    t->guard++;
    (void)ag_memq_emit(AG_M_COPY, weight, 0, 0, 0, 0, 0, my_tid());
    t->guard--;
}

/* A counted copy that reaches no sampling point (most of them): the distance to the thread's
 * next point moves by n, as on_copy would move it, and true; false, with nothing changed, for
 * the rest (a sample due, a copy of a window or more, pymalloc's realloc copying), which
 * on_copy handles. Inline and without calls, so that a counted copy with no sample is a tail
 * call to the real function too. */
static inline bool copy_unsampled(size_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (t->rl_active || n >= ag_copy_window || t->copy.until <= (int64_t)n)
        return false;
    t->copy.until -= (int64_t)n;
    return true;
}

/* Under Python's allocator on a free-threaded build: its blocks count (ag_mem_py_net), not what
 * it takes underneath. */
static inline bool by_block(const struct ag_mem_tls *t)
{
    return t->in_pymem && ag_mi_by_block;
}

/* A C block allocated (usable size n): in the heap's net; sampled unless Python's allocator
 * made it for an object, which its wrapper samples. */
static void on_alloc(void *p, uint64_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (by_block(t))
        return;
    t->net += (int64_t)n;
    if (t->in_pymem) /* growth goes with the object's sample (a new maximum is a malloc's) */
        return;
    attribute_alloc(t, p, n, n, false);
}

static void freeing_block(void *p)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (by_block(t))
        return;
    t->net -= (int64_t)real.usable(p);
    if (!t->in_pymem)
        forget_block(t, p);
    net_check(t);
}

/* ---- Python's allocator (called by the PyMem wrappers, outside any hook) ---- */

static inline bool py_counting(void)
{
    return counting() && ag_mtls.in_pymem == 0;
}

/* Fast paths first: most objects carry no sampling point, most frees are of no sample's block
 * (errno is saved only on the way to a sample). */
/* The object took the distance to the next point to 0 or below (ag_mem_py_alloc). */
static void py_alloc_slow(struct ag_mem_tls *t, void *p, uint64_t n)
{
    uint64_t w = ag_mem_window;
    if (n >= w) /* not part of the stream: counted at its size */
        t->alloc.until += (int64_t)n;
    if (!py_counting()) {
        if (n < w) /* the stream's place is kept for when counting resumes */
            t->alloc.until += (int64_t)n;
        return;
    }
    int saved = errno;
    uint64_t weight = n >= w ? n : strata_points(t, &t->alloc, w) * w;
    if (weight) {
        emit_malloc(t, p, n, weight, true);
    }
    errno = saved;
}

void ag_mem_py_net(int64_t delta)
{
    if (!delta || !counting())
        return;
    struct ag_mem_tls *t = &ag_mtls;
    t->net += delta;
    if (delta < 0) {
        int saved = errno;
        net_check(t);
        errno = saved;
    }
}

void ag_mem_py_sample(void *p, size_t n)
{
    py_alloc_slow(&ag_mtls, p, n);
}

void ag_mem_py_free(void *p)
{
    if (!p || !py_counting() || !ag_memq_maybe_tracked((uint64_t)(uintptr_t)p))
        return;
    uint64_t seq;
    if (!ag_memq_take_tracked((uint64_t)(uintptr_t)p, &seq))
        return;
    int saved = errno;
    attribute_free(&ag_mtls, seq, p);
    errno = saved;
}

/* Before the wrapped realloc: the block's sample (if any) is taken off its address, so that no
 * other thread can find it once the block moves; the hooks under it report what they see. */
static void realloc_begin(struct ag_mem_tls *t, void *old)
{
    t->rl_tracked = old && ag_memq_take_tracked((uint64_t)(uintptr_t)old, &t->rl_seq);
}

/* After it: the sample follows its block to p (back to old on failure), and the collector is
 * told where the block is now and its size there (a move sample): the samples of the block,
 * those of its growth included, join the block where it lives when the heap is dumped, not where
 * each was taken (docs/allocations.md, "realloc"). A move that cannot be queued (queue full)
 * leaves them at the old address: unmatched at a dump, still charged to their lines. */
static void realloc_keep(struct ag_mem_tls *t, void *old, void *p, uint64_t size)
{
    if (!t->rl_tracked)
        return;
    t->rl_tracked = false;
    uint64_t at = (uint64_t)(uintptr_t)(p ? p : old);
    if (!ag_memq_retrack(at, t->rl_seq)) {
        attribute_free(t, t->rl_seq, NULL); /* no room where it went: counted as gone */
        return;
    }
    if (!p)
        return;
    t->guard++;
    (void)ag_memq_emit(AG_M_MOVE, 0, 0, 0, at, size, t->rl_seq, my_tid());
    t->guard--;
}

void ag_mem_py_realloc_begin(void *old)
{
    struct ag_mem_tls *t = &ag_mtls;
    t->rl_active = false;
    if (!py_counting())
        return;
    t->rl_active = true;
    t->rl_seen = false;
    t->rl_delta = 0;
    t->rl_copy = 0;
    realloc_begin(t, old);
}

void ag_mem_py_realloc_grew(int64_t delta)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (!t->rl_active)
        return;
    t->rl_seen = true;
    t->rl_delta = delta;
}

void ag_mem_py_realloc_end(void *old, void *p, size_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (!t->rl_active)
        return;
    t->rl_active = false;
    int saved = errno;
    realloc_keep(t, old, p, n);
    if (p) {
        /* Growth: what the C library's realloc changed (a block above pymalloc's limit), else
         * the new size less the old block's (copied when pymalloc moved it), else nothing (the
         * block stayed in its size class). */
        int64_t delta = t->rl_seen ? t->rl_delta
                        : !old     ? (int64_t)n
                        : p != old && t->rl_copy ? (int64_t)n - (int64_t)t->rl_copy
                                                 : 0;
        if (delta > 0)
            attribute_alloc(t, p, (uint64_t)delta, n, true);
        else
            net_check(t);
    }
    errno = saved;
}

/* ---- the malloc family ---- */

#define KEEP_ERRNO_BEGIN int saved_errno_ = errno
#define KEEP_ERRNO_END errno = saved_errno_

static void *counted(void *p)
{
    if (p && counting()) {
        KEEP_ERRNO_BEGIN;
        on_alloc(p, real.usable(p));
        KEEP_ERRNO_END;
    }
    return p;
}

static AG_SLOW void *malloc_slow(size_t n)
{
    if (!ready())
        return boot_alloc(n);
    return counted(real.malloc(n));
}

AG_EXPORT void *malloc(size_t n)
{
    if (__builtin_expect(idle(), 1))
        return real.malloc(n);
    return malloc_slow(n);
}

static AG_SLOW void *calloc_slow(size_t n, size_t size)
{
    if (!ready()) {
        if (size && n > SIZE_MAX / size)
            return NULL;
        return boot_alloc(n * size); /* static memory: already zero */
    }
    return counted(real.calloc(n, size));
}

AG_EXPORT void *calloc(size_t n, size_t size)
{
    if (__builtin_expect(idle(), 1))
        return real.calloc(n, size);
    return calloc_slow(n, size);
}

static AG_SLOW void free_slow(void *p)
{
    if (!p)
        return;
    if (!ready())
        return; /* cannot happen: nothing was allocated by the real malloc yet */
    if (counting()) {
        KEEP_ERRNO_BEGIN;
        freeing_block(p);
        KEEP_ERRNO_END;
    }
    real.free(p);
}

AG_EXPORT void free(void *p)
{
    if (in_boot(p)) /* the boot buffer's blocks are never freed */
        return;
    if (__builtin_expect(idle(), 1)) {
        real.free(p); /* free(NULL) included: the real one does nothing with it */
        return;
    }
    free_slow(p);
}

static AG_SLOW void *boot_realloc(void *old, size_t n)
{
    void *p = ready() ? malloc(n) : boot_alloc(n);
    if (p && old) {
        size_t have = boot_size(old);
        slow_move(p, old, have < n ? have : n);
    }
    return p;
}

/* realloc counts the change of the block's usable size; a sample's block keeps its sample
 * when it moves. Under Python's allocator it only reports the change to the wrapper. */
static AG_SLOW void *realloc_slow(void *old, size_t n)
{
    if (!ready())
        return boot_alloc(n);
    if (!counting())
        return real.realloc(old, n);
    struct ag_mem_tls *t = &ag_mtls;
    int saved = errno;
    if (old && n == 0) { /* glibc frees the block and returns NULL */
        freeing_block(old);
        errno = saved;
        return real.realloc(old, 0);
    }
    if (by_block(t))
        return real.realloc(old, n);
    uint64_t before = old ? real.usable(old) : 0;
    bool pymem = t->in_pymem > 0;
    if (!pymem)
        realloc_begin(t, old);
    errno = saved;
    void *p = real.realloc(old, n);
    saved = errno;
    uint64_t after = p ? real.usable(p) : 0;
    if (!pymem)
        realloc_keep(t, old, p, after);
    if (p) { /* on failure the old block is untouched */
        int64_t delta = (int64_t)after - (int64_t)before;
        if (pymem && old && t->rl_active) {
            t->rl_seen = true;
            t->rl_delta = delta;
        }
        t->net += delta;
        if (!pymem && delta > 0)
            attribute_alloc(t, p, (uint64_t)delta, after, false);
        else if (delta < 0)
            net_check(t);
    }
    errno = saved;
    return p;
}

AG_EXPORT void *realloc(void *old, size_t n)
{
    if (in_boot(old))
        return boot_realloc(old, n);
    if (__builtin_expect(idle(), 1))
        return real.realloc(old, n);
    return realloc_slow(old, n);
}

/* As glibc's: realloc of n * size, refused on overflow. */
AG_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n * size);
}

AG_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!ready())
        return ENOMEM;
    int rc = real.posix_memalign(out, align, n);
    if (rc == 0)
        counted(*out);
    return rc;
}

AG_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return ready() ? counted(real.aligned_alloc(align, n)) : NULL;
}

AG_EXPORT void *memalign(size_t align, size_t n)
{
    return ready() ? counted(real.memalign(align, n)) : NULL;
}

AG_EXPORT void *valloc(size_t n)
{
    return ready() ? counted(real.valloc(n)) : NULL;
}

AG_EXPORT void *pvalloc(size_t n)
{
    return ready() ? counted(real.pvalloc(n)) : NULL;
}

/* ---- anonymous mappings ---- */

static uint64_t page_round(uint64_t n)
{
    return (n + 4095) & ~(uint64_t)4095;
}

/* An anonymous mapping costs the program its pages as they become resident: the collector
 * charges those to the footprint (ag_maps_scan_resident); the mapping's length is what the line
 * that mapped it allocated, and its resident pages what that line holds. */
static void *mapped(void *p, size_t len, int flags)
{
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len && counting() && !by_block(&ag_mtls)) {
        KEEP_ERRNO_BEGIN;
        struct ag_mem_tls *t = &ag_mtls;
        uint64_t n = page_round(len), resident = 0;
        if (flags & MAP_FIXED) { /* it replaced whatever was mapped there */
            if (ag_maps_remove((uint64_t)(uintptr_t)p, n, &resident)) {
                t->net -= (int64_t)resident;
                if (!t->in_pymem)
                    forget_block(t, p);
            }
        }
        if (!ag_maps_add((uint64_t)(uintptr_t)p, n, t->in_pymem > 0)) {
            net_check(t);
        } else if (t->in_pymem) { /* an arena of Python's allocator: its objects are sampled */
            t->net += (int64_t)n; /* (and carry it) */
        } else {
            t->mapping = true; /* its line holds its resident pages (memqueue.c) */
            attribute_alloc(t, p, n, n, false);
            t->mapping = false;
        }
        KEEP_ERRNO_END;
    }
    return p;
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return pf_raw_mmap(addr, len, prot, flags, fd, off);
}

AG_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!ready() || !real.mmap) {
        void *p = raw_mmap(addr, len, prot, flags, fd, off);
        if ((unsigned long)p > -4096UL) {
            errno = -(int)(long)p;
            return MAP_FAILED;
        }
        return p;
    }
    return mapped(real.mmap(addr, len, prot, flags, fd, off), len, flags);
}

AG_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (!ready() || !real.mmap64)
        return mmap(addr, len, prot, flags, fd, off);
    return mapped(real.mmap64(addr, len, prot, flags, fd, off), len, flags);
}

AG_EXPORT int munmap(void *addr, size_t len)
{
    if (!ready() || !real.munmap)
        return pf_raw_munmap(addr, len);
    struct ag_mem_tls *t = &ag_mtls;
    bool count = counting();
    uint64_t seq = 0, resident = 0;
    bool tracked = count && !t->in_pymem && ag_memq_take_tracked((uint64_t)(uintptr_t)addr, &seq);
    int rc = real.munmap(addr, len);
    if (count) {
        KEEP_ERRNO_BEGIN;
        uint64_t n = rc == 0 ? ag_maps_remove((uint64_t)(uintptr_t)addr, page_round(len),
                                               &resident)
                             : 0;
        t->net -= (int64_t)resident;
        if (tracked && n)
            attribute_free(t, seq, addr);
        else if (tracked && !ag_memq_retrack((uint64_t)(uintptr_t)addr, seq))
            attribute_free(t, seq, NULL);
        net_check(t);
        KEEP_ERRNO_END;
    }
    return rc;
}

AG_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
    void *newaddr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        newaddr = va_arg(ap, void *);
        va_end(ap);
    }
    struct ag_mem_tls *t = &ag_mtls;
    bool count = counting() && ready();
    bool pymem = t->in_pymem > 0;
    if (count && !pymem)
        realloc_begin(t, old);
    void *p;
    if (!ready() || !real.mremap)
        p = pf_raw_mremap(old, oldlen, newlen, flags, newaddr);
    else
        p = real.mremap(old, oldlen, newlen, flags, newaddr);
    if (count) {
        KEEP_ERRNO_BEGIN;
        if (!pymem)
            realloc_keep(t, old, p == MAP_FAILED ? NULL : p, page_round(newlen));
        uint64_t resident = 0, had = 0;
        if (p != MAP_FAILED)
            had = ag_maps_remove((uint64_t)(uintptr_t)old, page_round(oldlen), &resident);
        if (had) {
            t->net -= (int64_t)resident; /* charged again as its pages are found resident */
            uint64_t now = page_round(newlen);
            if (!ag_maps_add((uint64_t)(uintptr_t)p, now, pymem))
                now = 0; /* table full: from now on, it is not ours */
            else if (pymem)
                t->net += (int64_t)now;
            if (now > had && !pymem)
                attribute_alloc(t, p, now - had, now, false);
            else
                net_check(t);
        }
        KEEP_ERRNO_END;
    }
    return p;
}

/* ---- copies ---- */

/* glibc's checked copies (_FORTIFY_SOURCE), which have no header of their own. */
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);

/* A copy's fast path: idle, or counted with no sample to take. */
static inline bool copy_fast(size_t n)
{
    return atomic_load_explicit(&resolve_state, memory_order_acquire) == 2 &&
           (!counting() || copy_unsampled(n));
}

static AG_SLOW void *memcpy_slow(void *dst, const void *src, size_t n)
{
    if (!real.memcpy && !ready())
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memcpy(dst, src, n);
}

AG_EXPORT void *memcpy(void *dst, const void *src, size_t n)
{
    if (__builtin_expect(copy_fast(n), 1))
        return real.memcpy(dst, src, n);
    return memcpy_slow(dst, src, n);
}

static AG_SLOW void *memmove_slow(void *dst, const void *src, size_t n)
{
    if (!real.memmove && !ready())
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memmove(dst, src, n);
}

AG_EXPORT void *memmove(void *dst, const void *src, size_t n)
{
    if (__builtin_expect(copy_fast(n), 1))
        return real.memmove(dst, src, n);
    return memmove_slow(dst, src, n);
}

static AG_SLOW void *memcpy_chk_slow(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (!ready() || !real.memcpy_chk)
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memcpy_chk(dst, src, n, dstlen);
}

AG_EXPORT void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (real.memcpy_chk && __builtin_expect(copy_fast(n), 1)) /* copy_fast counts */
        return real.memcpy_chk(dst, src, n, dstlen);
    return memcpy_chk_slow(dst, src, n, dstlen);
}

static AG_SLOW void *memmove_chk_slow(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (!ready() || !real.memmove_chk)
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memmove_chk(dst, src, n, dstlen);
}

AG_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (real.memmove_chk && __builtin_expect(copy_fast(n), 1)) /* copy_fast counts */
        return real.memmove_chk(dst, src, n, dstlen);
    return memmove_chk_slow(dst, src, n, dstlen);
}

/* ---- life cycle ---- */

void ag_mem_hooks_init(void)
{
    (void)ready();
}

void *ag_real_mmap(size_t len)
{
    void *p = raw_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return (unsigned long)p > -4096UL ? NULL : p;
}

void ag_mem_thread_end(void)
{
    struct ag_mem_tls *t = &ag_mtls;
    if (!t->net || !atomic_load_explicit(&ag_mem_on, memory_order_relaxed))
        return;
    int saved = errno;
    if (ag_memq_emit(AG_M_NET, 0, 0, t->net, 0, 0, 0, my_tid()))
        t->net = 0;
    errno = saved;
}

void ag_mem_fork_child(void)
{
    ag_mtls.tid = 0; /* the child's thread has another id */
    ag_mtls.net = 0;
    ag_mtls.pend = ag_mtls.pend_py = 0;
    if (ag_mtls.rng) /* the child draws its own points */
        rng_seed(&ag_mtls);
}

/* ---- the hooks' own addresses (for platform/module_hooks.h) ----
 * A reference to `malloc` from inside the agent binds to the program's malloc when the agent
 * was loaded late (dlopen) rather than preloaded: these hidden aliases are the hooks themselves,
 * for the relocation entries that `scry record --pid --memory` patches. */
#define AG_HOOK_ALIAS(name) extern __typeof__(name) ag_hook_##name AG_ALIAS_OF(name);
AG_HOOK_NAMES(AG_HOOK_ALIAS)
#undef AG_HOOK_ALIAS

const struct ag_hook ag_mem_hooks[] = {
#define AG_HOOK_ENTRY(name) {#name, (void *)ag_hook_##name},
    AG_HOOK_NAMES(AG_HOOK_ENTRY)
#undef AG_HOOK_ENTRY
    {NULL, NULL},
};
