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
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"

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

static int my_tid(void)
{
    if (!ag_mtls.tid)
        ag_mtls.tid = (int)syscall(SYS_gettid);
    return ag_mtls.tid;
}

static void on_alloc(void *p, uint64_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    t->inc += n;
    if (t->in_pymem)
        t->py += n;
    else
        t->nat += n;
    if (t->inc < t->dec + ag_mem_window)
        return;
    t->guard++;
    uint64_t bytes = t->inc - t->dec;
    uint64_t all = t->py + t->nat;
    uint64_t pybytes = all ? (uint64_t)((double)bytes * ((double)t->py / (double)all)) : 0;
    if (ag_memq_emit(AG_M_MALLOC, bytes, pybytes, (uint64_t)(uintptr_t)p, my_tid())) {
        t->inc = t->dec = 0;
        t->py = t->nat = 0;
    }
    t->guard--;
}

static void on_free(uint64_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    t->dec += n;
    if (t->dec < t->inc + ag_mem_window)
        return;
    t->guard++;
    if (ag_memq_emit(AG_M_FREE, t->dec - t->inc, 0, 0, my_tid()))
        t->inc = t->dec = 0;
    t->guard--;
}

static inline void on_copy(size_t n)
{
    struct ag_mem_tls *t = &ag_mtls;
    t->copy += n;
    if (t->copy < ag_copy_window)
        return;
    t->guard++;
    if (ag_memq_emit(AG_M_COPY, t->copy, 0, 0, my_tid()))
        t->copy = 0;
    t->guard--;
}

/* A block about to be freed: its size, and whether it was a sample's allocation. */
static void freeing_block(void *p)
{
    uint64_t n = real.usable(p);
    ag_memq_note_freed((uint64_t)(uintptr_t)p);
    on_free(n);
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

AG_EXPORT void *malloc(size_t n)
{
    if (!ready())
        return boot_alloc(n);
    return counted(real.malloc(n));
}

AG_EXPORT void *calloc(size_t n, size_t size)
{
    if (!ready()) {
        if (size && n > SIZE_MAX / size)
            return NULL;
        return boot_alloc(n * size); /* static memory: already zero */
    }
    return counted(real.calloc(n, size));
}

AG_EXPORT void free(void *p)
{
    if (!p || in_boot(p))
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

static void *boot_realloc(void *old, size_t n)
{
    void *p = ready() ? malloc(n) : boot_alloc(n);
    if (p && old) {
        size_t have = boot_size(old);
        slow_move(p, old, have < n ? have : n);
    }
    return p;
}

/* realloc counts the change of the block's usable size. */
AG_EXPORT void *realloc(void *old, size_t n)
{
    if (old && in_boot(old))
        return boot_realloc(old, n);
    if (!ready())
        return boot_alloc(n);
    if (!counting())
        return real.realloc(old, n);
    int saved = errno;
    if (old && n == 0) { /* glibc frees the block and returns NULL */
        freeing_block(old);
        errno = saved;
        return real.realloc(old, 0);
    }
    uint64_t before = old ? real.usable(old) : 0;
    errno = saved;
    void *p = real.realloc(old, n);
    saved = errno;
    if (p) { /* on failure the old block is untouched */
        uint64_t after = real.usable(p);
        if (old && p != old)
            ag_memq_note_freed((uint64_t)(uintptr_t)old);
        if (after > before)
            on_alloc(p, after - before);
        else if (before > after)
            on_free(before - after);
    }
    errno = saved;
    return p;
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

static void *mapped(void *p, size_t len, int flags)
{
    if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len && counting()) {
        KEEP_ERRNO_BEGIN;
        uint64_t n = page_round(len);
        if (flags & MAP_FIXED) { /* it replaced whatever was mapped there */
            uint64_t had = ag_maps_remove((uint64_t)(uintptr_t)p, n);
            if (had)
                on_free(had);
        }
        if (ag_maps_add((uint64_t)(uintptr_t)p, n))
            on_alloc(p, n);
        KEEP_ERRNO_END;
    }
    return p;
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
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
        return (int)syscall(SYS_munmap, addr, len);
    int rc = real.munmap(addr, len);
    if (rc == 0 && counting()) {
        KEEP_ERRNO_BEGIN;
        uint64_t n = ag_maps_remove((uint64_t)(uintptr_t)addr, page_round(len));
        if (n) {
            ag_memq_note_freed((uint64_t)(uintptr_t)addr);
            on_free(n);
        }
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
    void *p;
    if (!ready() || !real.mremap)
        p = (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, newaddr);
    else
        p = real.mremap(old, oldlen, newlen, flags, newaddr);
    if (p != MAP_FAILED && counting()) {
        KEEP_ERRNO_BEGIN;
        uint64_t had = ag_maps_remove((uint64_t)(uintptr_t)old, page_round(oldlen));
        if (had) {
            uint64_t now = page_round(newlen);
            if (!ag_maps_add((uint64_t)(uintptr_t)p, now))
                now = 0; /* table full: from now on, it is not ours */
            if (now > had)
                on_alloc(p, now - had);
            else if (had > now)
                on_free(had - now);
        }
        KEEP_ERRNO_END;
    }
    return p;
}

/* ---- copies ---- */

/* glibc's checked copies (_FORTIFY_SOURCE), which have no header of their own. */
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);

AG_EXPORT void *memcpy(void *dst, const void *src, size_t n)
{
    if (__builtin_expect(!real.memcpy, 0) && !ready())
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memcpy(dst, src, n);
}

AG_EXPORT void *memmove(void *dst, const void *src, size_t n)
{
    if (__builtin_expect(!real.memmove, 0) && !ready())
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memmove(dst, src, n);
}

AG_EXPORT void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (!ready() || !real.memcpy_chk)
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memcpy_chk(dst, src, n, dstlen);
}

AG_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
    if (!ready() || !real.memmove_chk)
        return slow_move(dst, src, n);
    if (counting())
        on_copy(n);
    return real.memmove_chk(dst, src, n, dstlen);
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

void ag_mem_fork_child(void)
{
    ag_mtls.tid = 0; /* the child's thread has another id */
    ag_mtls.inc = ag_mtls.dec = ag_mtls.py = ag_mtls.nat = ag_mtls.copy = 0;
}
