/* platform/module_hooks.h for ELF objects (Linux): symbol interposition only works for a
 * preloaded library, so for an agent loaded late (`scry record --pid --memory`, agent/attach.c)
 * the hooks are put in the way the dynamic loader itself binds calls: every loaded object's
 * relocation entries for the hooked functions
 * (R_X86_64_JUMP_SLOT: its PLT slots; R_X86_64_GLOB_DAT: its GOT entries, what taking the
 * function's address reads) are pointed at the hooks, and the values found there are saved so
 * that detach puts every one back. Objects left alone: the agent itself (its hooks call the real
 * functions, resolved with dlsym(RTLD_NEXT) at load), the dynamic loader, the vDSO. Entries are
 * written with one aligned 8-byte store each, so that a thread calling through one sees either
 * the old function or the hook; pages of PT_GNU_RELRO are made writable for the store and read-only
 * again after it. x86-64 only (the relocation types are the architecture's). */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "platform/module_hooks.h"

#define MAX_PATCHED 8192

struct patched {
    _Atomic uintptr_t *slot;
    uintptr_t old;
    bool relro;
};

static struct patched patched[MAX_PATCHED];
static size_t npatched;
static uintptr_t self_base;

static int set_slot(_Atomic uintptr_t *slot, uintptr_t v, bool relro)
{
    long page = sysconf(_SC_PAGESIZE);
    void *pg = (void *)((uintptr_t)slot & ~(uintptr_t)(page - 1));
    if (relro && mprotect(pg, (size_t)page, PROT_READ | PROT_WRITE) != 0)
        return -1;
    atomic_store(slot, v);
    if (relro)
        mprotect(pg, (size_t)page, PROT_READ);
    return 0;
}

static pf_hook_lookup lookup; /* the caller's hook for a name, else NULL */

#if defined(__x86_64__)

/* A dynamic-section pointer: the loader relocated most of them in place, the vDSO's and a few
 * others' are still link-time addresses. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
    return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

static bool in_relro(const struct dl_phdr_info *info, uintptr_t at)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_GNU_RELRO && at >= lo && at < lo + ph->p_memsz)
            return true;
    }
    return false;
}

static void patch_table(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t n,
                        const ElfW(Sym) *syms, const char *strs)
{
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const char *name = strs + syms[ELF64_R_SYM(rel[i].r_info)].st_name;
        void *hook = lookup(name);
        if (!hook || npatched == MAX_PATCHED)
            continue;
        _Atomic uintptr_t *slot = (_Atomic uintptr_t *)(info->dlpi_addr + rel[i].r_offset);
        bool relro = in_relro(info, (uintptr_t)slot);
        uintptr_t old = atomic_load(slot);
        if (old == (uintptr_t)hook)
            continue;
        if (set_slot(slot, (uintptr_t)hook, relro) != 0) {
            log_debug("agent: cannot patch %s in %s", name, info->dlpi_name);
            continue;
        }
        patched[npatched++] = (struct patched){slot, old, relro};
    }
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (info->dlpi_addr == self_base || strstr(name, "ld-linux") || strstr(name, "linux-vdso") ||
        strstr(name, "/ld-"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const ElfW(Sym) *syms = NULL;
    const char *strs = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmpsz = 0, relasz = 0;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            syms = (const ElfW(Sym) *)dyn_ptr(info, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strs = (const char *)dyn_ptr(info, d->d_un.d_ptr);
            break;
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)dyn_ptr(info, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmpsz = d->d_un.d_val;
            break;
        case DT_RELA:
            rela = (const ElfW(Rela) *)dyn_ptr(info, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!syms || !strs)
        return 0;
    if (jmprel)
        patch_table(info, jmprel, jmpsz / sizeof(ElfW(Rela)), syms, strs);
    if (rela)
        patch_table(info, rela, relasz / sizeof(ElfW(Rela)), syms, strs);
    return 0;
}

int pf_hooks_install(pf_hook_lookup hook_for, const void *own)
{
    Dl_info self;
    if (!dladdr(own, &self) || !self.dli_fbase)
        return -1;
    self_base = (uintptr_t)self.dli_fbase;
    lookup = hook_for;
    dl_iterate_phdr(patch_object, NULL);
    log_debug("agent: %zu relocation entries point at the memory hooks", npatched);
    return npatched ? 0 : -1;
}

#else

int pf_hooks_install(pf_hook_lookup hook_for, const void *own)
{
    (void)hook_for;
    (void)own;
    log_warn("agent: memory hooks for a running process are made for x86-64 only");
    return -1;
}

#endif

void pf_hooks_remove(void)
{
    /* Newest first: an entry patched twice (it cannot be, but) ends with its first value. */
    while (npatched > 0) {
        struct patched *p = &patched[--npatched];
        if (atomic_load(p->slot) != p->old)
            (void)set_slot(p->slot, p->old, p->relro);
    }
}
