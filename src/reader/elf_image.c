/* Symbols, sections, load addresses and build ids of an ELF file, read with libelf. The file is
 * untrusted (a core may name any file, and fuzzers feed us anything): every offset and size that
 * comes from it is checked against the file's size before use, even where libelf checked too. */
#include "reader/elf_image.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "platform/infile.h"
#include "reader/reader_impl.h"

struct elf_symtab {
    Elf_Data *data;
    size_t strndx; /* section index of the string table */
    size_t count;
    struct hashmap index; /* name hash -> symbol index + 1 */
    bool indexed;
};

struct elf_image {
    int fd; /* -1 for an image in memory */
    Elf *elf;
    const uint8_t *raw;
    size_t raw_size;
    GElf_Ehdr ehdr;
    size_t phnum;
    struct elf_symtab dynsym, symtab;
};

static bool range_ok(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

static int open_common(struct elf_image *img, const char *what)
{
    size_t size = 0;
    if (elf_kind(img->elf) != ELF_K_ELF)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: not an ELF file", what);
    img->raw = (const uint8_t *)elf_rawfile(img->elf, &size);
    img->raw_size = size;
    if (!img->raw || size < EI_NIDENT)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: not an ELF file (too short)", what);
    if (img->raw[EI_CLASS] != ELFCLASS64 || img->raw[EI_DATA] != ELFDATA2LSB)
        return err_fail(SCRY_E_NOT_PYTHON, "%s: not a 64-bit little-endian ELF file", what);
    if (!gelf_getehdr(img->elf, &img->ehdr))
        return err_fail(SCRY_E_NOT_PYTHON, "%s: bad ELF header: %s", what, elf_errmsg(-1));
    if (elf_getphdrnum(img->elf, &img->phnum) != 0)
        img->phnum = 0;
    if (img->phnum && (img->ehdr.e_phentsize != sizeof(Elf64_Phdr) ||
                       !range_ok(img->ehdr.e_phoff, (uint64_t)img->phnum * sizeof(Elf64_Phdr),
                                 size)))
        return err_fail(SCRY_E_NOT_PYTHON,
                        "%s: truncated: the program headers extend past the end of the file", what);
    return 0;
}

int elf_open(const char *path, struct elf_image **out)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    struct elf_image *img = calloc(1, sizeof(*img));
    if (!img)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate an ELF image");
    int ret = 0;
    /* The path may come from a core's file notes: never a FIFO or a device. */
    uint64_t size;
    ret = infile_open(path, "ELF file", 0, &img->fd, &size);
    if (ret)
        goto out;
    img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
    if (!img->elf) {
        ret = err_fail(SCRY_E_NOT_PYTHON, "'%s': not an ELF file (%s)", path, elf_errmsg(-1));
        goto out;
    }
    ret = open_common(img, path);
    if (ret < 0)
        goto out;
    *out = img;
    img = NULL;
out:
    elf_close(img);
    return ret;
}

int elf_open_mem(const void *data, size_t size, struct elf_image **out)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    struct elf_image *img = calloc(1, sizeof(*img));
    if (!img)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate an ELF image");
    int ret = 0;
    img->fd = -1;
    img->elf = elf_memory((char *)data, size);
    if (!img->elf) {
        ret = err_fail(SCRY_E_NOT_PYTHON, "not an ELF file (%s)", elf_errmsg(-1));
        goto out;
    }
    ret = open_common(img, "ELF image");
    if (ret < 0)
        goto out;
    *out = img;
    img = NULL;
out:
    elf_close(img);
    return ret;
}

void elf_close(struct elf_image *img)
{
    if (!img)
        return;
    hm_free(&img->dynsym.index);
    hm_free(&img->symtab.index);
    if (img->elf)
        elf_end(img->elf);
    if (img->fd >= 0)
        close(img->fd);
    free(img);
}

/* The section's header, if its file contents lie inside the file. */
static bool section_header(struct elf_image *img, Elf_Scn *scn, GElf_Shdr *sh)
{
    if (!gelf_getshdr(scn, sh))
        return false;
    if (sh->sh_type == SHT_NOBITS)
        return true;
    return range_ok(sh->sh_offset, sh->sh_size, img->raw_size);
}

static void find_symtab(struct elf_image *img, struct elf_symtab *tab, Elf64_Word type)
{
    Elf_Scn *scn = NULL;
    size_t shnum = 0;
    if (elf_getshdrnum(img->elf, &shnum) != 0)
        return;
    while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!section_header(img, scn, &sh) || sh.sh_type != type)
            continue;
        if (sh.sh_link == 0 || sh.sh_link >= shnum || sh.sh_entsize != sizeof(Elf64_Sym))
            continue;
        Elf_Scn *strscn = elf_getscn(img->elf, sh.sh_link);
        GElf_Shdr strsh;
        if (!strscn || !section_header(img, strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!data || !data->d_buf)
            continue;
        tab->data = data;
        tab->strndx = sh.sh_link;
        tab->count = data->d_size / sizeof(Elf64_Sym);
        return;
    }
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ULL;
    return h ? h : 1;
}

static bool usable(const GElf_Sym *sym)
{
    return sym->st_shndx != SHN_UNDEF && sym->st_name != 0;
}

static void index_symtab(struct elf_image *img, struct elf_symtab *tab)
{
    tab->indexed = true;
    for (size_t i = 1; i < tab->count; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(tab->data, (int)i, &sym) || !usable(&sym))
            continue;
        const char *name = elf_strptr(img->elf, tab->strndx, sym.st_name);
        if (!name || !*name)
            continue;
        uint64_t key = name_hash(name), prev;
        if (hm_get(&tab->index, key, &prev)) {
            /* Keep the first global definition over local ones of the same name. */
            GElf_Sym old;
            if (!gelf_getsym(tab->data, (int)(prev - 1), &old) ||
                GELF_ST_BIND(old.st_info) != STB_LOCAL || GELF_ST_BIND(sym.st_info) == STB_LOCAL)
                continue;
        }
        if (hm_put(&tab->index, key, i + 1) < 0) {
            hm_free(&tab->index); /* out of memory: fall back to linear scans */
            return;
        }
    }
}

static bool lookup(struct elf_image *img, struct elf_symtab *tab, Elf64_Word type,
                   const char *name, uint64_t *value, uint64_t *size)
{
    if (!tab->data && !tab->indexed)
        find_symtab(img, tab, type);
    if (!tab->data)
        return false;
    if (!tab->indexed)
        index_symtab(img, tab);
    GElf_Sym sym;
    uint64_t idx;
    if (tab->index.cap) {
        if (hm_get(&tab->index, name_hash(name), &idx) && gelf_getsym(tab->data, (int)(idx - 1), &sym)) {
            const char *s = elf_strptr(img->elf, tab->strndx, sym.st_name);
            if (s && strcmp(s, name) == 0)
                goto found;
        } else if (tab->index.count > 0) {
            return false;
        }
    }
    /* A hash collision, or no index: scan. */
    for (size_t i = 1; i < tab->count; i++) {
        if (!gelf_getsym(tab->data, (int)i, &sym) || !usable(&sym))
            continue;
        const char *s = elf_strptr(img->elf, tab->strndx, sym.st_name);
        if (s && strcmp(s, name) == 0)
            goto found;
    }
    return false;
found:
    if (value)
        *value = sym.st_value;
    if (size)
        *size = sym.st_size;
    return true;
}

bool elf_symbol(struct elf_image *img, const char *name, uint64_t *value, uint64_t *size)
{
    if (!img || !name || !*name)
        return false;
    return lookup(img, &img->dynsym, SHT_DYNSYM, name, value, size) ||
           lookup(img, &img->symtab, SHT_SYMTAB, name, value, size);
}

/* The function symbol of tab whose range holds vaddr (else the nearest below it). */
static bool func_at(struct elf_image *img, struct elf_symtab *tab, Elf64_Word type, uint64_t vaddr,
                    const char **name, uint64_t *start, bool *inside)
{
    if (!tab->data && !tab->indexed)
        find_symtab(img, tab, type);
    bool found = false;
    GElf_Sym best = {0};
    for (size_t i = 1; tab->data && i < tab->count; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(tab->data, (int)i, &sym) || !usable(&sym) ||
            GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value > vaddr)
            continue;
        bool in = vaddr < sym.st_value + (sym.st_size ? sym.st_size : 1);
        if (!found || (in && !*inside) || (in == *inside && sym.st_value > best.st_value)) {
            best = sym;
            found = true;
            *inside = in;
        }
    }
    if (!found)
        return false;
    const char *s = elf_strptr(img->elf, tab->strndx, best.st_name);
    if (!s)
        return false;
    *name = s;
    *start = best.st_value;
    return true;
}

bool elf_symbol_at(struct elf_image *img, uint64_t vaddr, const char **name, uint64_t *start)
{
    bool in1 = false, in2 = false;
    const char *n1 = NULL, *n2 = NULL;
    uint64_t s1 = 0, s2 = 0;
    bool f1 = img && func_at(img, &img->symtab, SHT_SYMTAB, vaddr, &n1, &s1, &in1);
    bool f2 = img && func_at(img, &img->dynsym, SHT_DYNSYM, vaddr, &n2, &s2, &in2);
    /* A symbol that holds the address wins (.symtab first: it has the static functions), then
     * the nearest below. */
    bool take1 = f1 && (in1 || !f2 || (!in2 && s1 >= s2));
    if (!take1 && !f2)
        return false;
    *name = take1 ? n1 : n2;
    *start = take1 ? s1 : s2;
    return true;
}

bool elf_section(struct elf_image *img, const char *name, uint64_t *addr, uint64_t *size)
{
    size_t shstrndx;
    if (!img || elf_getshdrstrndx(img->elf, &shstrndx) != 0)
        return false;
    Elf_Scn *strscn = elf_getscn(img->elf, shstrndx);
    GElf_Shdr strsh;
    if (!strscn || !section_header(img, strscn, &strsh) || strsh.sh_type != SHT_STRTAB)
        return false;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh))
            continue;
        const char *s = elf_strptr(img->elf, shstrndx, sh.sh_name);
        if (s && strcmp(s, name) == 0) {
            if (addr)
                *addr = sh.sh_addr;
            if (size)
                *size = sh.sh_size;
            return true;
        }
    }
    return false;
}

static bool get_phdr(struct elf_image *img, size_t i, GElf_Phdr *ph)
{
    return i < img->phnum && i <= INT32_MAX && gelf_getphdr(img->elf, (int)i, ph) != NULL;
}

uint64_t elf_first_load_vaddr(struct elf_image *img)
{
    for (size_t i = 0; i < img->phnum; i++) {
        GElf_Phdr ph;
        if (!get_phdr(img, i, &ph) || ph.p_type != PT_LOAD)
            continue;
        uint64_t align = ph.p_align;
        if (align > 1 && (align & (align - 1)) == 0)
            return ph.p_vaddr & ~(align - 1);
        return ph.p_vaddr;
    }
    return 0;
}

int elf_read_vaddr(struct elf_image *img, uint64_t vaddr, void *buf, size_t len)
{
    uint8_t *dst = buf;
    size_t done = 0;
    while (done < len) {
        uint64_t at = vaddr + done;
        if (at < vaddr)
            goto fail;
        bool found = false;
        for (size_t i = 0; i < img->phnum && !found; i++) {
            GElf_Phdr ph;
            if (!get_phdr(img, i, &ph) || ph.p_type != PT_LOAD)
                continue;
            if (at < ph.p_vaddr || at - ph.p_vaddr >= ph.p_memsz)
                continue;
            uint64_t delta = at - ph.p_vaddr;
            size_t want = len - done;
            if (delta < ph.p_filesz) {
                if (!range_ok(ph.p_offset, ph.p_filesz, img->raw_size))
                    goto fail; /* a segment past the end of the file */
                uint64_t avail = ph.p_filesz - delta;
                size_t n = want < avail ? want : (size_t)avail;
                memcpy(dst + done, img->raw + ph.p_offset + delta, n);
                done += n;
            } else {
                uint64_t avail = ph.p_memsz - delta;
                size_t n = want < avail ? want : (size_t)avail;
                memset(dst + done, 0, n);
                done += n;
            }
            found = true;
        }
        if (!found)
            goto fail;
    }
    return 0;
fail:
    return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at link-time address 0x%llx: "
                    "not in the file's loadable segments", len, (unsigned long long)vaddr);
}

int elf_type(struct elf_image *img) { return img->ehdr.e_type; }

/* Copies the GNU build id from a block of notes; returns its length, or 0 if there is none. */
static size_t build_id_in_notes(const uint8_t *notes, size_t len, uint64_t align, uint8_t *buf,
                                size_t size)
{
    struct cursor c;
    struct rd_note n;
    cur_init(&c, notes, len);
    while (rd_note_next(&c, align == 8 ? 8 : 4, &n)) {
        if (!rd_note_is(&n, "GNU", NT_GNU_BUILD_ID))
            continue;
        size_t copied = n.descsz < size ? n.descsz : size;
        memcpy(buf, n.desc, copied);
        return copied;
    }
    return 0;
}

size_t elf_build_id(struct elf_image *img, uint8_t *buf, size_t size)
{
    for (size_t i = 0; i < img->phnum; i++) {
        GElf_Phdr ph;
        if (!get_phdr(img, i, &ph) || ph.p_type != PT_NOTE ||
            !range_ok(ph.p_offset, ph.p_filesz, img->raw_size))
            continue;
        size_t len = build_id_in_notes(img->raw + ph.p_offset, ph.p_filesz, ph.p_align, buf, size);
        if (len)
            return len;
    }
    /* No program headers (a relocatable or stripped-down file): look at the note sections. */
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(img->elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!section_header(img, scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        size_t len = build_id_in_notes(img->raw + sh.sh_offset, sh.sh_size, sh.sh_addralign, buf,
                                       size);
        if (len)
            return len;
    }
    return 0;
}
