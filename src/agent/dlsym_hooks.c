/* dlsym and dlvsym interposed, so that native memory the program reaches through a library's own
 * handle is counted: `ctypes.CDLL("libc.so.6").malloc` looks malloc up with dlsym on libc's
 * handle, which searches libc alone and returns the real malloc, not the agent's hook (a call
 * through the global scope reaches the hook because the agent is preloaded). A look-up through a
 * handle whose answer is the function one of the agent's hooks stands for (the definition that
 * follows the agent, as dlsym(RTLD_NEXT) from the agent finds it) answers the function the
 * global scope gives for that name instead: the hook. Any other answer is returned unchanged: a
 * library's own malloc, or a name the agent does not hook.
 *
 * RTLD_NEXT and RTLD_DEFAULT are passed on by a tail call: glibc finds "the object after the
 * caller" from its return address, which must stay the caller's. The agent's own look-ups
 * (memhooks.c, RTLD_NEXT) thus still find libc's functions.
 *
 * The real dlsym and dlvsym cannot be looked up with dlsym (that is this file): they are found
 * in libc's (before glibc 2.34: libdl's) dynamic symbol table, through dl_iterate_phdr, which
 * neither allocates nor calls dlsym. */
#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "reader/self_symbols.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym;
static dlvsym_fn real_dlvsym;

/* ---- the real functions, from the dynamic symbol tables of libc or libdl ---- */

static void find_real(void)
{
    static const char *const libs[] = {"libc.so", "libdl.so"};
    static const char *const names[2] = {"dlsym", "dlvsym"};
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        void *found[2] = {NULL, NULL};
        struct self_sym_query q = {.file_prefix = libs[i], .names = names, .found = found, .n = 2};
        if (self_symbols_find(&q)) {
            *(void **)&real_dlvsym = found[1];
            atomic_thread_fence(memory_order_release);
            *(void **)&real_dlsym = found[0];
            return;
        }
    }
}

/* ---- the hooked names ---- */

/* The agent's hooks (memhooks.c; keep the two lists below as its interposers): the addresses are what the global scope gives for each name,
 * as a plain call from the program reaches it. */
extern void *__memcpy_chk(void *, const void *, size_t, size_t);
extern void *__memmove_chk(void *, const void *, size_t, size_t);

static struct {
    const char *name;
    void *next; /* the function the hook stands for: dlsym(RTLD_NEXT) from the agent */
} hooked[] = {
    {"malloc", NULL},        {"calloc", NULL},   {"realloc", NULL},        {"reallocarray", NULL},
    {"free", NULL},          {"posix_memalign", NULL},                     {"aligned_alloc", NULL},
    {"memalign", NULL},      {"valloc", NULL},   {"pvalloc", NULL},        {"mmap", NULL},
    {"munmap", NULL},        {"mremap", NULL},   {"memcpy", NULL},         {"memmove", NULL},
    {"__memcpy_chk", NULL},  {"__memmove_chk", NULL},                      {"dlsym", NULL},
    {"dlvsym", NULL},
};
#define NHOOKED (sizeof(hooked) / sizeof(hooked[0]))

static void *hook_address(size_t i)
{
    /* Indexed as hooked[]. */
    void *const hooks[NHOOKED] = {
        (void *)malloc,         (void *)calloc,        (void *)realloc,
        (void *)reallocarray,   (void *)free,          (void *)posix_memalign,
        (void *)aligned_alloc,  (void *)memalign,      (void *)valloc,
        (void *)pvalloc,        (void *)mmap,          (void *)munmap,
        (void *)mremap,         (void *)memcpy,        (void *)memmove,
        (void *)__memcpy_chk,   (void *)__memmove_chk, (void *)dlsym,
        (void *)dlvsym,
    };
    return hooks[i];
}

static _Atomic int next_state; /* 0: not looked up, 1: under way, 2: done */

/* The definitions that follow the agent, found the way memhooks.c finds them. Called from this
 * file (not tail-called), so that RTLD_NEXT means "after the agent". */
static void find_next(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&next_state, &expected, 1))
        return;
    for (size_t i = 0; i < NHOOKED; i++)
        hooked[i].next = real_dlsym(RTLD_NEXT, hooked[i].name);
    atomic_store(&next_state, 2);
}

/* The hook for a look-up that found the function hooked[i] stands for: what the global scope
 * gives (the agent's, when preloaded), or, when that is the function itself (an agent loaded
 * late is not in the global scope), the agent's own hook. */
static void *replace(const char *name, void *found)
{
    if (!found || !name || atomic_load(&next_state) != 2)
        return found;
    for (size_t i = 0; i < NHOOKED; i++) {
        if (found != hooked[i].next || strcmp(name, hooked[i].name) != 0)
            continue;
        void *global = hook_address(i), *own;
        return global != found || !(own = ag_hook_for(name)) ? global : own;
    }
    return found;
}

static void ensure_real(void)
{
    if (!real_dlsym)
        find_real();
}

/* Before the program runs (one thread): a look-up racing with the first one would otherwise be
 * answered unreplaced. Look-ups made earlier (another preloaded library's constructor) find
 * them on the way. */
__attribute__((constructor)) static void dlsym_hooks_init(void)
{
    ensure_real();
    if (real_dlsym)
        find_next();
}

/* Tail calls are what keeps RTLD_NEXT right: they must be made whatever the build (DEBUG=1 is
 * -O0). tests/e2e/test_run_hostile.py checks RTLD_NEXT from a library of the program's. */
#if defined(__clang__)
#define TAIL_CALLS
#define TAIL_RETURN __attribute__((musttail)) return
#else
#define TAIL_CALLS __attribute__((optimize("O2", "optimize-sibling-calls")))
#define TAIL_RETURN return
#endif

TAIL_CALLS AG_EXPORT void *dlsym(void *handle, const char *name)
{
    ensure_real();
    if (!real_dlsym)
        return NULL;
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        TAIL_RETURN real_dlsym(handle, name);
    if (atomic_load(&next_state) == 0)
        find_next();
    return replace(name, real_dlsym(handle, name));
}

TAIL_CALLS AG_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
    ensure_real();
    if (!real_dlvsym)
        return NULL;
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        TAIL_RETURN real_dlvsym(handle, name, version);
    if (atomic_load(&next_state) == 0)
        find_next();
    return replace(name, real_dlvsym(handle, name, version));
}

/* ---- the hooks' own addresses, for platform/module_hooks.h (memory.h) ----
 * Hidden aliases: a reference to `dlsym` from inside an agent loaded late binds to the C
 * library's. */
extern __typeof__(dlsym) ag_hook_dlsym AG_ALIAS_OF(dlsym);
extern __typeof__(dlvsym) ag_hook_dlvsym AG_ALIAS_OF(dlvsym);

const struct ag_hook ag_dl_hooks[] = {
    {"dlsym", (void *)ag_hook_dlsym},
    {"dlvsym", (void *)ag_hook_dlvsym},
    {NULL, NULL},
};

void *ag_hook_for(const char *name)
{
    const struct ag_hook *const lists[] = {ag_mem_hooks, ag_dl_hooks};
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
        for (const struct ag_hook *h = lists[i]; h->name; h++)
            if (strcmp(h->name, name) == 0)
                return h->fn;
    return NULL;
}
