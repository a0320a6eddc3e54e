/* A tiny in-test ELF writer: builds small ET_DYN/ET_EXEC images with symbols, sections and
 * segments, and ET_CORE files with the notes scry reads, so that the ELF and core readers are
 * tested (and their fuzz corpora seeded) without a compiler or gdb. Header-only: every function is
 * static inline so that each test binary takes what it uses. */
#ifndef SCRY_TESTS_ELFGEN_H
#define SCRY_TESTS_ELFGEN_H

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif

struct eg_buf {
    uint8_t *p;
    size_t len, cap;
};

/* Appends n bytes (zeros when d is NULL); returns their offset. */
static inline size_t eg_add(struct eg_buf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p)
            abort();
        b->cap = cap;
    }
    size_t off = b->len;
    if (d)
        memcpy(b->p + off, d, n);
    else
        memset(b->p + off, 0, n);
    b->len += n;
    return off;
}

static inline void eg_pad(struct eg_buf *b, size_t align)
{
    while (b->len % align)
        eg_add(b, NULL, 1);
}

static inline void eg_free(struct eg_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static inline size_t eg_note(struct eg_buf *b, const char *name, uint32_t type, const void *desc,
                             size_t descsz)
{
    uint32_t hdr[3] = {(uint32_t)strlen(name) + 1, (uint32_t)descsz, type};
    size_t off = eg_add(b, hdr, sizeof(hdr));
    eg_add(b, name, strlen(name) + 1);
    eg_pad(b, 4);
    eg_add(b, desc, descsz);
    eg_pad(b, 4);
    return off;
}

static inline int eg_write_file(const char *path, const void *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, d, n);
    close(fd);
    return w == (ssize_t)n ? 0 : -1;
}

static inline void eg_sym(struct eg_buf *str, struct eg_buf *tab, const char *name,
                          uint64_t value, uint64_t size, int bind, uint16_t shndx)
{
    Elf64_Sym s = {0};
    s.st_name = (uint32_t)eg_add(str, name, strlen(name) + 1);
    s.st_value = value;
    s.st_size = size;
    s.st_info = (unsigned char)ELF64_ST_INFO(bind, STT_OBJECT);
    s.st_shndx = shndx;
    eg_add(tab, &s, sizeof(s));
}

/* Layout of the image eg_make_dyn writes (link-time addresses). */
#define EG_SEG2_VADDR 0x2300u
#define EG_SEG2_FILESZ 0x40u
#define EG_SEG2_MEMSZ 0x100u
#define EG_SEG2_BYTE(i) ((uint8_t)((i) * 3 + 1))

/* An ELF image: sections .note.gnu.build-id .dynstr .dynsym .strtab .symtab .PyRuntime .bss
 * .shstrtab; PT_LOAD 1 at first_vaddr over the headers, PT_LOAD 2 at 0x2300 with 0x40 bytes in the
 * file and 0x100 in memory; PT_NOTE with a 20-byte build id 0..19. extra adds sym_0..sym_N-1
 * (values 0x10000 + 8 * i) to .dynsym. */
static inline void eg_make_dyn(struct eg_buf *out, uint16_t type, uint64_t first_vaddr,
                               size_t extra)
{
    struct eg_buf dynstr = {0}, dynsym = {0}, strtab = {0}, symtab = {0}, shstr = {0}, note = {0};
    eg_add(&dynstr, "", 1);
    eg_add(&strtab, "", 1);
    eg_add(&dynsym, NULL, sizeof(Elf64_Sym));
    eg_add(&symtab, NULL, sizeof(Elf64_Sym));
    eg_sym(&dynstr, &dynsym, "undef_import", 0, 0, STB_GLOBAL, SHN_UNDEF);
    eg_sym(&dynstr, &dynsym, "Py_Version", 0x2300, 4, STB_GLOBAL, 6);
    eg_sym(&dynstr, &dynsym, "_PyRuntime", 0x2310, 0x30, STB_GLOBAL, 6);
    char name[32];
    for (size_t i = 0; i < extra; i++) {
        snprintf(name, sizeof(name), "sym_%zu", i);
        eg_sym(&dynstr, &dynsym, name, 0x10000 + 8 * i, 8, STB_GLOBAL, 6);
    }
    eg_sym(&strtab, &symtab, "local_only", 0x2320, 8, STB_LOCAL, 6);
    eg_sym(&strtab, &symtab, "_PyRuntime", 0x9999, 8, STB_LOCAL, 6);
    eg_sym(&strtab, &symtab, "static_dup", 0x1, 8, STB_LOCAL, 6);
    eg_sym(&strtab, &symtab, "static_dup", 0x2, 8, STB_GLOBAL, 6);
    /* Functions, for elf_symbol_at: one only in .symtab (static), one exported. */
    eg_sym(&strtab, &symtab, "local_func", 0x3000, 0x40, STB_LOCAL, 6);
    ((Elf64_Sym *)(void *)(symtab.p + symtab.len))[-1].st_info = ELF64_ST_INFO(STB_LOCAL, STT_FUNC);
    eg_sym(&dynstr, &dynsym, "exported_func", 0x3100, 0x20, STB_GLOBAL, 6);
    ((Elf64_Sym *)(void *)(dynsym.p + dynsym.len))[-1].st_info =
        ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    uint8_t id[20];
    for (int i = 0; i < 20; i++)
        id[i] = (uint8_t)i;
    eg_note(&note, "GNU", NT_GNU_BUILD_ID, id, sizeof(id));

    const char *names[] = {"", ".note.gnu.build-id", ".dynstr", ".dynsym", ".strtab", ".symtab",
                           ".PyRuntime", ".bss", ".shstrtab"};
    uint32_t name_off[9];
    for (int i = 0; i < 9; i++)
        name_off[i] = (uint32_t)eg_add(&shstr, names[i], strlen(names[i]) + 1);

    struct eg_buf *b = out;
    memset(b, 0, sizeof(*b));
    eg_add(b, NULL, sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr));
    eg_pad(b, 8);
    size_t note_off = eg_add(b, note.p, note.len);
    size_t dynstr_off = eg_add(b, dynstr.p, dynstr.len);
    eg_pad(b, 8);
    size_t dynsym_off = eg_add(b, dynsym.p, dynsym.len);
    size_t strtab_off = eg_add(b, strtab.p, strtab.len);
    eg_pad(b, 8);
    size_t symtab_off = eg_add(b, symtab.p, symtab.len);
    eg_pad(b, 16);
    size_t seg2_off = b->len;
    for (unsigned i = 0; i < EG_SEG2_FILESZ; i++) {
        uint8_t v = EG_SEG2_BYTE(i);
        eg_add(b, &v, 1);
    }
    size_t shstr_off = eg_add(b, shstr.p, shstr.len);
    eg_pad(b, 8);
    Elf64_Shdr sh[9];
    memset(sh, 0, sizeof(sh));
    struct {
        uint32_t type;
        size_t off, size;
        uint64_t addr;
        uint32_t link, entsize;
    } d[9] = {
        {0, 0, 0, 0, 0, 0},
        {SHT_NOTE, note_off, note.len, first_vaddr + note_off, 0, 0},
        {SHT_STRTAB, dynstr_off, dynstr.len, 0, 0, 0},
        {SHT_DYNSYM, dynsym_off, dynsym.len, 0, 2, sizeof(Elf64_Sym)},
        {SHT_STRTAB, strtab_off, strtab.len, 0, 0, 0},
        {SHT_SYMTAB, symtab_off, symtab.len, 0, 4, sizeof(Elf64_Sym)},
        {SHT_PROGBITS, seg2_off, EG_SEG2_FILESZ, EG_SEG2_VADDR, 0, 0},
        {SHT_NOBITS, seg2_off + EG_SEG2_FILESZ, EG_SEG2_MEMSZ - EG_SEG2_FILESZ,
         EG_SEG2_VADDR + EG_SEG2_FILESZ, 0, 0},
        {SHT_STRTAB, shstr_off, shstr.len, 0, 0, 0},
    };
    for (int i = 1; i < 9; i++) {
        sh[i].sh_name = name_off[i];
        sh[i].sh_type = d[i].type;
        sh[i].sh_offset = d[i].off;
        sh[i].sh_size = d[i].size;
        sh[i].sh_addr = d[i].addr;
        sh[i].sh_link = d[i].link;
        sh[i].sh_entsize = d[i].entsize;
        sh[i].sh_addralign = 8;
        if (d[i].type == SHT_NOTE)
            sh[i].sh_addralign = 4;
        if (d[i].type == SHT_SYMTAB || d[i].type == SHT_DYNSYM)
            sh[i].sh_info = 1;
    }
    size_t shoff = eg_add(b, sh, sizeof(sh));

    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = type;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_shoff = shoff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 3;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 9;
    eh.e_shstrndx = 8;
    memcpy(b->p, &eh, sizeof(eh));
    Elf64_Phdr ph[3] = {{0}};
    ph[0].p_type = PT_LOAD;
    ph[0].p_flags = PF_R;
    ph[0].p_offset = 0;
    ph[0].p_vaddr = ph[0].p_paddr = first_vaddr;
    ph[0].p_filesz = ph[0].p_memsz = seg2_off;
    ph[0].p_align = 0x1000;
    ph[1].p_type = PT_LOAD;
    ph[1].p_flags = PF_R | PF_W;
    ph[1].p_offset = seg2_off;
    ph[1].p_vaddr = ph[1].p_paddr = EG_SEG2_VADDR;
    ph[1].p_filesz = EG_SEG2_FILESZ;
    ph[1].p_memsz = EG_SEG2_MEMSZ;
    ph[1].p_align = 0x1000;
    ph[2].p_type = PT_NOTE;
    ph[2].p_flags = PF_R;
    ph[2].p_offset = note_off;
    ph[2].p_vaddr = first_vaddr + note_off;
    ph[2].p_filesz = ph[2].p_memsz = note.len;
    ph[2].p_align = 4;
    memcpy(b->p + sizeof(eh), ph, sizeof(ph));
    eg_free(&dynstr);
    eg_free(&dynsym);
    eg_free(&strtab);
    eg_free(&symtab);
    eg_free(&shstr);
    eg_free(&note);
}

/* ---- cores ---- */

struct eg_load {
    uint64_t vaddr, memsz;
    const uint8_t *data; /* filesz bytes */
    uint64_t filesz;
    uint32_t flags;
};

struct eg_file {
    uint64_t start, end, ofs; /* ofs in units of the note's page size */
    const char *path;
};

struct eg_thread {
    int tid;
    uint64_t orig_rax;
};

struct eg_core {
    uint16_t machine; /* 0: EM_X86_64 */
    const struct eg_thread *threads;
    size_t nthreads;
    int psinfo_pid; /* 0: no NT_PRPSINFO */
    const char *fname;
    const struct eg_file *files;
    size_t nfiles;
    uint64_t page_size;
    bool no_file_note;
    uint64_t execfn; /* 0: no NT_AUXV */
    const struct eg_load *loads;
    size_t nloads;
};

static inline void eg_make_core(struct eg_buf *out, const struct eg_core *c)
{
    struct eg_buf notes = {0};
    for (size_t i = 0; i < c->nthreads; i++) {
        uint8_t pr[336] = {0};
        int32_t tid = c->threads[i].tid;
        memcpy(pr + 32, &tid, 4);
        memcpy(pr + 112 + 15 * 8, &c->threads[i].orig_rax, 8);
        eg_note(&notes, "CORE", NT_PRSTATUS, pr, sizeof(pr));
    }
    if (c->psinfo_pid) {
        uint8_t ps[136] = {0};
        int32_t pid = c->psinfo_pid;
        memcpy(ps + 24, &pid, 4);
        if (c->fname)
            strncpy((char *)ps + 40, c->fname, 16);
        strcpy((char *)ps + 56, "prog --flag");
        eg_note(&notes, "CORE", NT_PRPSINFO, ps, sizeof(ps));
    }
    if (c->execfn) {
        uint64_t auxv[] = {6 /* AT_PAGESZ */, 4096, 31 /* AT_EXECFN */, c->execfn, 0, 0};
        eg_note(&notes, "CORE", NT_AUXV, auxv, sizeof(auxv));
    }
    if (!c->no_file_note) {
        struct eg_buf nf = {0};
        uint64_t hdr[2] = {c->nfiles, c->page_size};
        eg_add(&nf, hdr, sizeof(hdr));
        for (size_t i = 0; i < c->nfiles; i++) {
            uint64_t e[3] = {c->files[i].start, c->files[i].end, c->files[i].ofs};
            eg_add(&nf, e, sizeof(e));
        }
        for (size_t i = 0; i < c->nfiles; i++)
            eg_add(&nf, c->files[i].path, strlen(c->files[i].path) + 1);
        eg_note(&notes, "CORE", NT_FILE, nf.p, nf.len);
        eg_free(&nf);
    }
    struct eg_buf *b = out;
    memset(b, 0, sizeof(*b));
    size_t phnum = 1 + c->nloads;
    eg_add(b, NULL, sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr));
    size_t note_off = eg_add(b, notes.p, notes.len);
    Elf64_Phdr *ph = calloc(phnum, sizeof(*ph));
    ph[0].p_type = PT_NOTE;
    ph[0].p_offset = note_off;
    ph[0].p_filesz = notes.len;
    ph[0].p_align = 4;
    for (size_t i = 0; i < c->nloads; i++) {
        eg_pad(b, 16);
        size_t off = eg_add(b, c->loads[i].data, c->loads[i].filesz);
        ph[1 + i].p_type = PT_LOAD;
        ph[1 + i].p_flags = c->loads[i].flags;
        ph[1 + i].p_offset = off;
        ph[1 + i].p_vaddr = c->loads[i].vaddr;
        ph[1 + i].p_filesz = c->loads[i].filesz;
        ph[1 + i].p_memsz = c->loads[i].memsz;
        ph[1 + i].p_align = 1;
    }
    Elf64_Ehdr eh = {0};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_CORE;
    eh.e_machine = c->machine ? c->machine : EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = (uint16_t)phnum;
    memcpy(b->p, &eh, sizeof(eh));
    memcpy(b->p + sizeof(eh), ph, phnum * sizeof(*ph));
    free(ph);
    eg_free(&notes);
}

#endif
