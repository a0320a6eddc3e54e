/* Dynamic symbol look-ups in this process's loaded objects (self_symbols.h): the object's
 * PT_DYNAMIC gives its symbol and string tables and its GNU or SysV hash table. */
#include "reader/self_symbols.h"

#include <elf.h>
#include <link.h>
#include <string.h>

static uintptr_t dyn_ptr(uintptr_t base, uintptr_t p)
{
    /* glibc relocates these entries in place on most architectures, not on all. */
    return p < base ? base + p : p;
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* The default version of name (versym without the hidden bit) if there is one, else any
 * definition of it. */
static void *find_symbol(uintptr_t base, const ElfW(Sym) *symtab, const char *strtab,
                         const uint16_t *versym, const uint32_t *gnuhash, const uint32_t *hash,
                         const char *name)
{
    void *any = NULL;
    uint32_t first = 0, end = 0;
    const uint32_t *chain = NULL;
    uint32_t h = gnu_hash(name);
    if (gnuhash) {
        uint32_t nbuckets = gnuhash[0], symoffset = gnuhash[1], bloom_size = gnuhash[2];
        if (nbuckets == 0)
            return NULL;
        const uint32_t *buckets =
            (const uint32_t *)((const ElfW(Addr) *)(gnuhash + 4) + bloom_size);
        chain = buckets + nbuckets;
        first = buckets[h % nbuckets];
        if (first < symoffset)
            return NULL;
        chain -= symoffset;
        end = UINT32_MAX;
    } else if (hash) {
        end = hash[1]; /* nchain: every symbol */
    } else {
        return NULL;
    }
    for (uint32_t i = first; i < end; i++) {
        if (chain && (chain[i] | 1) != (h | 1)) {
            if (chain[i] & 1)
                break;
            continue;
        }
        const ElfW(Sym) *s = &symtab[i];
        if (s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
            strcmp(strtab + s->st_name, name) == 0) {
            void *addr = (void *)(base + s->st_value);
            if (!versym || !(versym[i] & 0x8000))
                return addr;
            any = addr;
        }
        if (chain && (chain[i] & 1))
            break;
    }
    return any;
}

static bool object_matches(const struct dl_phdr_info *info, const struct self_sym_query *q)
{
    if (q->file_prefix) {
        const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
        const char *file = slash ? slash + 1 : info->dlpi_name;
        return file && strncmp(file, q->file_prefix, strlen(q->file_prefix)) == 0;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        /* The mapping starts at the segment's page: compare from there. */
        uint64_t start = (info->dlpi_addr + ph->p_vaddr) & ~(uint64_t)4095;
        uint64_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        if (q->contains >= start && q->contains < end)
            return true;
    }
    return false;
}

static int look_in_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct self_sym_query *q = arg;
    if (!object_matches(info, q))
        return 0;
    uintptr_t base = info->dlpi_addr;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(base + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return q->file_prefix ? 0 : 1;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint16_t *versym = NULL;
    const uint32_t *gnuhash = NULL, *hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = dyn_ptr(base, dyn->d_un.d_ptr);
        switch (dyn->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)p; break;
        case DT_STRTAB: strtab = (const char *)p; break;
        case DT_VERSYM: versym = (const uint16_t *)p; break;
        case DT_GNU_HASH: gnuhash = (const uint32_t *)p; break;
        case DT_HASH: hash = (const uint32_t *)p; break;
        }
    }
    if (!symtab || !strtab)
        return q->file_prefix ? 0 : 1;
    bool all = true;
    for (size_t k = 0; k < q->n; k++) {
        if (!q->found[k])
            q->found[k] = find_symbol(base, symtab, strtab, versym, gnuhash, hash, q->names[k]);
        all = all && q->found[k];
    }
    /* An object picked by address is the only one looked in. */
    return all || !q->file_prefix;
}

bool self_symbols_find(struct self_sym_query *q)
{
    dl_iterate_phdr(look_in_object, q);
    for (size_t k = 0; k < q->n; k++)
        if (!q->found[k])
            return false;
    return true;
}
