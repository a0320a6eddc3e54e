/* `scry record --native`: the native call chain of a thread of another process, unwound with
 * libunwind's ptrace support while the thread is stopped (rd_pause), and each address named
 * from the ELF file mapped there (module, nearest function symbol, offset). libunwind is loaded
 * with dlopen, as the agent does, so that scry runs without it; --native is refused then. */
#include "record/record_native.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind-ptrace.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "reader/eh_frame.h"
#include "reader/elf_image.h"

#define RN_STR2(x) #x
#define RN_STR(x) RN_STR2(x)

static struct {
    bool tried, ok;
    unw_accessors_t *accessors;
    __typeof__(_UPT_create) *upt_create;
    __typeof__(_UPT_destroy) *upt_destroy;
    __typeof__(unw_create_addr_space) *create_as;
    __typeof__(unw_destroy_addr_space) *destroy_as;
    __typeof__(unw_set_caching_policy) *set_policy;
    __typeof__(unw_init_remote) *init_remote;
    __typeof__(unw_step) *step;
    __typeof__(unw_get_reg) *get_reg;
    char why[256];
} lib;

/* A module (an ELF file mapped by the target), opened once. */
struct rn_module {
    char *path; /* as the target sees it */
    struct elf_image *elf; /* NULL when it could not be opened: frames get no symbol */
    uint64_t load_base, first_vaddr;
    /* The interpreter's eval loop where no symbol names it (a local clone): link-time range
     * from the unwind tables, empty elsewhere */
    uint64_t eval_start, eval_end;
};

struct rn_name {
    const char *module, *symbol;
    uint64_t offset;
    bool eval;
};

struct rn_proc {
    struct rd_reader *rd;
    unw_addr_space_t as;
    struct rn_module *mods;
    size_t nmods;
    struct hashmap names; /* lookup address -> struct rn_name * */
};

int rn_available(void)
{
    if (!lib.tried) {
        lib.tried = true;
        /* The generic (remote) libunwind first, global: libunwind-ptrace's own symbols need it. */
        void *gen = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_GLOBAL);
        void *pt = gen ? dlopen("libunwind-ptrace.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
        if (!pt) {
            snprintf(lib.why, sizeof(lib.why), "%s", dlerror());
        } else {
            lib.accessors = dlsym(pt, "_UPT_accessors");
            lib.upt_create = (__typeof__(_UPT_create) *)dlsym(pt, "_UPT_create");
            lib.upt_destroy = (__typeof__(_UPT_destroy) *)dlsym(pt, "_UPT_destroy");
            lib.create_as = (__typeof__(unw_create_addr_space) *)dlsym(
                gen, RN_STR(unw_create_addr_space));
            lib.destroy_as = (__typeof__(unw_destroy_addr_space) *)dlsym(
                gen, RN_STR(unw_destroy_addr_space));
            lib.set_policy = (__typeof__(unw_set_caching_policy) *)dlsym(
                gen, RN_STR(unw_set_caching_policy));
            lib.init_remote = (__typeof__(unw_init_remote) *)dlsym(gen, RN_STR(unw_init_remote));
            lib.step = (__typeof__(unw_step) *)dlsym(gen, RN_STR(unw_step));
            lib.get_reg = (__typeof__(unw_get_reg) *)dlsym(gen, RN_STR(unw_get_reg));
            lib.ok = lib.accessors && lib.upt_create && lib.upt_destroy && lib.create_as &&
                     lib.destroy_as && lib.set_policy && lib.init_remote && lib.step &&
                     lib.get_reg;
            if (!lib.ok)
                snprintf(lib.why, sizeof(lib.why), "libunwind lacks a function scry needs");
        }
    }
    if (!lib.ok)
        return err_fail_hint(SCRY_E_NOT_FOUND,
                             "install libunwind (Debian: libunwind-dev, which has "
                             "libunwind-ptrace.so.0), or record without --native",
                             "--native needs libunwind's ptrace support: %s", lib.why);
    return 0;
}

struct rn_proc *rn_proc_new(struct rd_reader *rd)
{
    struct rn_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->rd = rd;
    p->as = lib.create_as(lib.accessors, 0);
    if (!p->as) {
        free(p);
        return NULL;
    }
    lib.set_policy(p->as, UNW_CACHE_GLOBAL);
    return p;
}

void rn_proc_free(struct rn_proc *p)
{
    if (!p)
        return;
    lib.destroy_as(p->as);
    for (size_t i = 0; i < p->nmods; i++) {
        elf_close(p->mods[i].elf);
        free(p->mods[i].path);
    }
    free(p->mods);
    uint64_t k, v;
    for (size_t it = 0; hm_next(&p->names, &it, &k, &v);)
        free((void *)(uintptr_t)v);
    hm_free(&p->names);
    free(p);
}

int rn_unwind(struct rn_proc *p, int tid, uint64_t *ips, size_t max, size_t *n)
{
    *n = 0;
    void *upt = lib.upt_create(tid);
    if (!upt)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    unw_cursor_t c;
    int err = 0;
    if (lib.init_remote(&c, p->as, upt) != 0) {
        err = err_fail(SCRY_E_READ_FAILED, "cannot unwind thread %d", tid);
        goto out;
    }
    while (*n < max) {
        unw_word_t ip = 0;
        if (lib.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip == 0)
            break;
        ips[(*n)++] = ip;
        if (lib.step(&c) <= 0)
            break;
    }
out:
    lib.upt_destroy(upt);
    return err;
}

static int elf_reader(void *ctx, uint64_t addr, void *buf, size_t len)
{
    return elf_read_vaddr(ctx, addr, buf, len);
}

static const char *elf_name_at(void *ctx, uint64_t addr)
{
    const char *name;
    uint64_t start;
    return elf_symbol_at(ctx, addr, &name, &start) && start == addr ? name : NULL;
}

/* An interpreter module (it defines PyEval_EvalCode) whose eval loop is a function no symbol
 * names: the loop's range from the unwind tables (reader/eh_frame.h). */
static void find_unnamed_eval_loop(struct rn_module *mod)
{
    uint64_t v, size, hdr, hdr_size;
    if (!elf_symbol(mod->elf, "PyEval_EvalCode", &v, &size) ||
        !elf_section(mod->elf, ".eh_frame_hdr", &hdr, &hdr_size))
        return;
    if (elf_symbol(mod->elf, "_PyEval_EvalFrameDefault", &v, &size) && size >= EHF_EVAL_LOOP_MIN)
        return; /* the symbol is the loop itself */
    ehf_eval_loop(elf_reader, mod->elf, hdr, elf_name_at, &mod->eval_start, &mod->eval_end);
}

/* The module mapped at addr, opened on first use. */
static struct rn_module *module_at(struct rn_proc *p, uint64_t addr)
{
    const struct rd_mapping *m = rd_find_mapping(p->rd, addr);
    if (!m || m->path[0] != '/')
        return NULL;
    for (size_t i = 0; i < p->nmods; i++)
        if (!strcmp(p->mods[i].path, m->path))
            return &p->mods[i];
    struct rn_module *grown = realloc(p->mods, (p->nmods + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    p->mods = grown;
    struct rn_module *mod = &p->mods[p->nmods];
    *mod = (struct rn_module){.path = strdup(m->path)};
    if (!mod->path)
        return NULL;
    p->nmods++;
    /* The load base: the start of the file's mapping at offset 0. */
    size_t nmaps;
    const struct rd_mapping *maps = rd_mappings(p->rd, &nmaps);
    for (size_t i = 0; i < nmaps; i++)
        if (maps[i].offset == 0 && !strcmp(maps[i].path, m->path)) {
            mod->load_base = maps[i].start;
            break;
        }
    char host[4096];
    if (mod->load_base && elf_open(rd_host_path(p->rd, m->path, host, sizeof(host)),
                                   &mod->elf) == 0) {
        mod->first_vaddr = elf_first_load_vaddr(mod->elf);
        find_unnamed_eval_loop(mod);
    } else
        mod->elf = NULL;
    return mod;
}

int rn_name(struct rn_proc *p, uint64_t ip, bool leaf, const char **module, const char **symbol,
            uint64_t *offset, bool *eval)
{
    /* A return address is looked up one byte back: a call at the end of a function is not taken
     * for the next one. */
    uint64_t addr = leaf ? ip : ip - 1;
    uint64_t v;
    struct rn_name *nm;
    if (hm_get(&p->names, addr, &v)) {
        nm = (struct rn_name *)(uintptr_t)v;
    } else {
        nm = calloc(1, sizeof(*nm));
        if (!nm)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        struct rn_module *mod = module_at(p, addr);
        nm->module = mod ? mod->path : "[unknown]";
        nm->symbol = "";
        nm->offset = mod ? ip - mod->load_base : ip;
        const char *sym;
        uint64_t start;
        if (mod && mod->elf &&
            elf_symbol_at(mod->elf, addr - mod->load_base + mod->first_vaddr, &sym, &start)) {
            nm->symbol = sym;
            nm->offset = ip - (start - mod->first_vaddr + mod->load_base);
            nm->eval = !strcmp(sym, "_PyEval_EvalFrameDefault");
        }
        if (mod && mod->elf) {
            /* The clone is the eval loop: named as such, its offset from the clone's start */
            uint64_t link = addr - mod->load_base + mod->first_vaddr;
            if (link >= mod->eval_start && link < mod->eval_end) {
                nm->eval = true;
                nm->symbol = "_PyEval_EvalFrameDefault";
                nm->offset = ip - (mod->eval_start - mod->first_vaddr + mod->load_base);
            }
        }
        if (hm_put(&p->names, addr, (uint64_t)(uintptr_t)nm) < 0) {
            free(nm);
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        }
    }
    *module = nm->module;
    *symbol = nm->symbol;
    *offset = nm->offset;
    *eval = nm->eval;
    return 0;
}
