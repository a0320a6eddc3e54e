/* The reader over an ELF core file (gcore or kernel). Memory comes from the PT_LOAD segments;
 * what the dumper left out (file-backed text and read-only data) is read from the files named in
 * NT_FILE, at file_ofs * page_size. Threads come from NT_PRSTATUS, the pid and name from
 * NT_PRPSINFO, the executable's name from AT_EXECFN in NT_AUXV. The core is untrusted: every
 * header and note is checked against the file's size through the cursor before use. */
#include "reader/reader_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/log.h"
#include "platform/infile.h"

#ifndef NT_FILE
#define NT_FILE 0x46494c45
#endif
#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#define CORE_AT_NULL 0
#define CORE_AT_EXECFN 31

/* struct elf_prstatus (x86-64 and aarch64 share the prefix up to pr_reg). */
#define PRSTATUS_PID 32
#define PRSTATUS_REG 112
#define X86_ORIG_RAX (PRSTATUS_REG + 15 * 8)
#define ARM64_PC (PRSTATUS_REG + 32 * 8)
/* struct elf_prpsinfo. */
#define PRPSINFO_PID 24
#define PRPSINFO_FNAME 40
#define PRPSINFO_PSARGS 56
#define PRPSINFO_SIZE 136

struct core_load {
    uint64_t vaddr, memsz, offset, filesz;
    unsigned prot;
};

struct core_file {
    uint64_t start, end, file_off; /* file_off in bytes */
    const char *path;              /* as the target saw it (in the reader's arena) */
    int checked;                   /* 0: not yet, 1: the file covers the mapping, -1: it does not */
};

struct core_fd {
    const char *host_path;
    int fd;
    uint64_t size;
};

struct core_state {
    int fd;
    Elf *elf;
    const uint8_t *raw;
    size_t raw_size;
    int machine;
    struct core_load *loads; /* sorted by vaddr */
    size_t nloads;
    struct core_file *files; /* sorted by start */
    size_t nfiles;
    struct core_fd *fds;
    size_t nfds, cap_fds;
    struct rd_thread *threads;
    uint64_t *pcs; /* aarch64: each thread's pc */
    size_t nthreads, cap_threads;
    uint64_t execfn;
    bool have_execfn;
    char fname[17];
    int psinfo_pid;
};

static bool range_ok(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* The last load with vaddr <= addr (its index + 1), 0 if none. */
static size_t load_upper(const struct core_state *st, uint64_t addr)
{
    size_t lo = 0, hi = st->nloads;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->loads[mid].vaddr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const struct core_load *find_load(const struct core_state *st, uint64_t addr)
{
    size_t i = load_upper(st, addr);
    if (i == 0)
        return NULL;
    const struct core_load *ld = &st->loads[i - 1];
    return addr - ld->vaddr < ld->memsz ? ld : NULL;
}

static struct core_file *find_file(struct core_state *st, uint64_t addr)
{
    size_t lo = 0, hi = st->nfiles;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->files[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    struct core_file *f = &st->files[lo - 1];
    return addr < f->end ? f : NULL;
}

static const char *file_host_path(const struct rd_reader *rd, const struct core_file *f)
{
    if (rd->exe_override && rd->exe_target && strcmp(f->path, rd->exe_target) == 0)
        return rd->exe_override;
    return f->path;
}

static int open_backing(struct rd_reader *rd, const char *host, struct core_fd **out)
{
    struct core_state *st = rd->priv;
    for (size_t i = 0; i < st->nfds; i++) {
        if (strcmp(st->fds[i].host_path, host) == 0) {
            *out = &st->fds[i];
            return st->fds[i].fd >= 0 ? 0 : -1;
        }
    }
    if (grow_array(&st->fds, &st->cap_fds, st->nfds + 1, sizeof(*st->fds)))
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a file table");
    struct core_fd *cf = &st->fds[st->nfds++];
    cf->host_path = host;
    cf->size = 0;
    /* O_NONBLOCK: a path in the core may name a FIFO or a device; only regular files are read. */
    cf->fd = open(host, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (cf->fd >= 0 && (fstat(cf->fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
        close(cf->fd);
        cf->fd = -1;
    } else if (cf->fd >= 0) {
        cf->size = (uint64_t)sb.st_size;
    }
    *out = cf;
    return cf->fd >= 0 ? 0 : -1;
}

static int read_from_file(struct rd_reader *rd, struct core_file *f, uint64_t at, uint8_t *dst,
                          size_t n)
{
    const char *host = file_host_path(rd, f);
    struct core_fd *cf = NULL;
    int ret = open_backing(rd, host, &cf);
    if (ret < -1)
        return ret;
    if (ret < 0)
        return err_fail(SCRY_E_READ_FAILED,
                        "cannot read 0x%llx: it is not in the core and '%s' cannot be opened",
                        (unsigned long long)at, host);
    uint64_t need = f->file_off + (f->end - f->start);
    if (f->checked == 0) {
        /* The last page of a mapping may run past the end of the file. */
        uint64_t rounded = (cf->size + 4095) & ~(uint64_t)4095;
        f->checked = need >= f->file_off && rounded >= need && cf->size > f->file_off ? 1 : -1;
        if (f->checked < 0)
            log_info("'%s' (%llu bytes) is shorter than its mapping at 0x%llx in the core "
                     "(needs %llu bytes): not the file the process had mapped?",
                     host, (unsigned long long)cf->size, (unsigned long long)f->start,
                     (unsigned long long)need);
    }
    if (f->checked < 0)
        return err_fail(SCRY_E_READ_FAILED,
                        "cannot read 0x%llx: '%s' (%llu bytes) is shorter than its mapping in the "
                        "core (%llu bytes): is it the same file?",
                        (unsigned long long)at, host, (unsigned long long)cf->size,
                        (unsigned long long)need);
    uint64_t off = f->file_off + (at - f->start);
    size_t done = 0;
    while (done < n) {
        if (off + done >= cf->size) {
            memset(dst + done, 0, n - done); /* past the end, inside the last page */
            break;
        }
        ssize_t r = pread(cf->fd, dst + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return err_fail(SCRY_E_READ_FAILED, "cannot read 0x%llx from '%s': %s",
                            (unsigned long long)at, host, strerror(errno));
        if (r == 0) {
            memset(dst + done, 0, n - done);
            break;
        }
        done += (size_t)r;
    }
    return 0;
}

static int core_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    struct core_state *st = rd->priv;
    uint8_t *dst = buf;
    size_t done = 0;
    while (done < len) {
        uint64_t at = addr + done;
        size_t want = len - done;
        size_t li = load_upper(st, at);
        const struct core_load *ld = li ? &st->loads[li - 1] : NULL;
        if (ld && at - ld->vaddr >= ld->memsz)
            ld = NULL;
        if (ld && at - ld->vaddr < ld->filesz) {
            uint64_t delta = at - ld->vaddr;
            uint64_t avail = ld->filesz - delta;
            size_t n = want < avail ? want : (size_t)avail;
            memcpy(dst + done, st->raw + ld->offset + delta, n);
            done += n;
            continue;
        }
        struct core_file *f = find_file(st, at);
        if (!f)
            return err_fail(SCRY_E_READ_FAILED,
                            "cannot read %zu bytes at 0x%llx: 0x%llx is not in the core", len,
                            (unsigned long long)addr, (unsigned long long)at);
        uint64_t avail = f->end - at;
        /* Stop where the next dumped segment starts: the core's copy wins over the file. */
        if (li < st->nloads && st->loads[li].vaddr > at && st->loads[li].vaddr - at < avail)
            avail = st->loads[li].vaddr - at;
        size_t n = want < avail ? want : (size_t)avail;
        int ret = read_from_file(rd, f, at, dst + done, n);
        if (ret < 0)
            return ret;
        done += n;
    }
    return 0;
}

static int core_threads(struct rd_reader *rd)
{
    (void)rd;
    return 0;
}

static void core_close(struct rd_reader *rd)
{
    struct core_state *st = rd->priv;
    if (!st)
        return;
    for (size_t i = 0; i < st->nfds; i++)
        if (st->fds[i].fd >= 0)
            close(st->fds[i].fd);
    free(st->fds);
    free(st->loads);
    free(st->files);
    free(st->threads);
    free(st->pcs);
    if (st->elf)
        elf_end(st->elf);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}

static const struct rd_ops core_ops = {
    .read = core_read,
    .threads = core_threads,
    .close = core_close,
};

static int add_thread(struct core_state *st, int tid, char state, uint64_t pc)
{
    size_t cap_pcs = st->cap_threads; /* parallel arrays: one capacity */
    if (grow_array(&st->pcs, &cap_pcs, st->nthreads + 1, sizeof(*st->pcs)) ||
        grow_array(&st->threads, &st->cap_threads, st->nthreads + 1, sizeof(*st->threads)))
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the thread list");
    st->threads[st->nthreads].tid = tid;
    st->threads[st->nthreads].state = state;
    st->pcs[st->nthreads] = pc;
    st->nthreads++;
    return 0;
}

static int parse_nt_file(struct rd_reader *rd, const struct rd_note *n, const char *core_path)
{
    struct core_state *st = rd->priv;
    struct cursor c;
    cur_init(&c, n->desc, n->descsz);
    uint64_t count = cur_u64(&c);
    uint64_t page_size = cur_u64(&c);
    if (!cur_ok(&c) || page_size == 0 || count > cur_remaining(&c) / 24)
        return err_fail(SCRY_E_BAD_CORE,
                        "'%s': bad NT_FILE note (%llu entries, page size %llu, %zu bytes)",
                        core_path, (unsigned long long)count, (unsigned long long)page_size,
                        n->descsz);
    struct core_file *files = calloc(count ? count : 1, sizeof(*files));
    if (!files)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate %llu file mappings",
                        (unsigned long long)count);
    int ret = 0;
    for (uint64_t i = 0; i < count; i++) {
        files[i].start = cur_u64(&c);
        files[i].end = cur_u64(&c);
        uint64_t ofs = cur_u64(&c);
        if (__builtin_mul_overflow(ofs, page_size, &files[i].file_off) ||
            files[i].end <= files[i].start) {
            ret = err_fail(SCRY_E_BAD_CORE, "'%s': NT_FILE entry %llu is malformed", core_path,
                           (unsigned long long)i);
            goto out;
        }
    }
    for (uint64_t i = 0; i < count; i++) {
        const char *name = cur_cstr(&c);
        if (!name) {
            ret = err_fail(SCRY_E_BAD_CORE, "'%s': NT_FILE note: path %llu runs past the note",
                           core_path, (unsigned long long)i);
            goto out;
        }
        files[i].path = arena_strdup(&rd->arena, name);
        if (!files[i].path) {
            ret = err_fail(SCRY_E_NO_MEMORY, "cannot copy a path");
            goto out;
        }
    }
    free(st->files);
    st->files = files;
    st->nfiles = count;
    files = NULL;
out:
    free(files);
    return ret;
}

static int parse_notes(struct rd_reader *rd, const uint8_t *data, size_t size, size_t align,
                       size_t seg, const char *core_path)
{
    struct core_state *st = rd->priv;
    struct cursor c;
    cur_init(&c, data, size);
    struct rd_note n;
    bool have_file = false;
    int ret = 0;
    while (rd_note_next(&c, align, &n)) {
        if (rd_note_is(&n, "CORE", NT_PRSTATUS)) {
            size_t need = st->machine == EM_X86_64 ? X86_ORIG_RAX + 8 : ARM64_PC + 8;
            if (n.descsz < need)
                return err_fail(SCRY_E_BAD_CORE, "'%s': NT_PRSTATUS note of %zu bytes, expected "
                                "at least %zu", core_path, n.descsz, need);
            struct cursor d;
            cur_init(&d, n.desc, n.descsz);
            cur_seek(&d, PRSTATUS_PID);
            int tid = (int)cur_u32(&d);
            char state = 'R';
            uint64_t pc = 0;
            if (st->machine == EM_X86_64) {
                cur_seek(&d, X86_ORIG_RAX);
                state = cur_u64(&d) != UINT64_MAX ? 'S' : 'R';
            } else {
                cur_seek(&d, ARM64_PC);
                pc = cur_u64(&d);
            }
            ret = add_thread(st, tid, state, pc);
            if (ret < 0)
                return ret;
        } else if (rd_note_is(&n, "CORE", NT_PRPSINFO)) {
            if (n.descsz < PRPSINFO_SIZE)
                return err_fail(SCRY_E_BAD_CORE, "'%s': NT_PRPSINFO note of %zu bytes, expected "
                                "%d", core_path, n.descsz, PRPSINFO_SIZE);
            struct cursor d;
            cur_init(&d, n.desc, n.descsz);
            cur_seek(&d, PRPSINFO_PID);
            st->psinfo_pid = (int)cur_u32(&d);
            cur_seek(&d, PRPSINFO_FNAME);
            cur_read(&d, st->fname, 16);
            st->fname[16] = 0;
        } else if (rd_note_is(&n, "CORE", NT_FILE) && !have_file) {
            ret = parse_nt_file(rd, &n, core_path);
            if (ret < 0)
                return ret;
            have_file = true;
        } else if (rd_note_is(&n, "CORE", NT_AUXV)) {
            struct cursor d;
            cur_init(&d, n.desc, n.descsz);
            while (cur_remaining(&d) >= 16) {
                uint64_t type = cur_u64(&d), val = cur_u64(&d);
                if (type == CORE_AT_NULL)
                    break;
                if (type == CORE_AT_EXECFN) {
                    st->execfn = val;
                    st->have_execfn = true;
                }
            }
        }
    }
    if (!cur_ok(&c))
        return err_fail(SCRY_E_BAD_CORE, "'%s': note at offset %zu of segment %zu claims a size "
                        "that runs past the segment (%zu bytes)", core_path, c.fail_off, seg,
                        size);
    return 0;
}

static int cmp_load(const void *pa, const void *pb)
{
    const struct core_load *a = pa, *b = pb;
    return (a->vaddr > b->vaddr) - (a->vaddr < b->vaddr);
}

static int cmp_file(const void *pa, const void *pb)
{
    const struct core_file *a = pa, *b = pb;
    return (a->start > b->start) - (a->start < b->start);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Mappings: the union of PT_LOAD and NT_FILE ranges, cut where either changes, so that each
 * mapping lies in at most one segment and one file entry. */
static int build_mappings(struct rd_reader *rd)
{
    struct core_state *st = rd->priv;
    size_t nb = 2 * (st->nloads + st->nfiles);
    uint64_t *b = malloc((nb ? nb : 1) * sizeof(*b));
    struct rd_mapping *maps = NULL;
    size_t *mload = NULL, *mfile = NULL, nmaps = 0;
    int ret = 0;
    if (!b)
        goto oom;
    size_t k = 0;
    for (size_t i = 0; i < st->nloads; i++) {
        b[k++] = st->loads[i].vaddr;
        b[k++] = st->loads[i].vaddr + st->loads[i].memsz;
    }
    for (size_t i = 0; i < st->nfiles; i++) {
        b[k++] = st->files[i].start;
        b[k++] = st->files[i].end;
    }
    if (nb)
        qsort(b, nb, sizeof(*b), cmp_u64);
    maps = calloc(nb ? nb : 1, sizeof(*maps));
    mload = calloc(nb ? nb : 1, sizeof(*mload));
    mfile = calloc(nb ? nb : 1, sizeof(*mfile));
    if (!maps || !mload || !mfile)
        goto oom;
    for (size_t i = 0; i + 1 < nb; i++) {
        uint64_t s = b[i], e = b[i + 1];
        if (s == e)
            continue;
        const struct core_load *ld = find_load(st, s);
        const struct core_file *f = find_file(st, s);
        if (!ld && !f)
            continue;
        size_t li = ld ? (size_t)(ld - st->loads) + 1 : 0;
        size_t fi = f ? (size_t)(f - st->files) + 1 : 0;
        if (nmaps > 0 && maps[nmaps - 1].end == s && mload[nmaps - 1] == li &&
            mfile[nmaps - 1] == fi) {
            maps[nmaps - 1].end = e;
            continue;
        }
        struct rd_mapping *m = &maps[nmaps];
        m->start = s;
        m->end = e;
        m->prot = ld ? ld->prot : RD_PROT_R;
        m->path = "";
        m->offset = 0;
        if (f) {
            m->path = f->path;
            if (rd->exe_override && rd->exe_target && strcmp(f->path, rd->exe_target) == 0)
                m->path = rd->exe_override;
            m->offset = f->file_off + (s - f->start);
        }
        mload[nmaps] = li;
        mfile[nmaps] = fi;
        nmaps++;
    }
    rd->maps = maps;
    rd->nmaps = nmaps;
    maps = NULL;
    goto out;
oom:
    ret = err_fail(SCRY_E_NO_MEMORY, "cannot allocate the mapping table");
out:
    free(b);
    free(maps);
    free(mload);
    free(mfile);
    return ret;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Reads a NUL-terminated string from the core's memory. */
static char *read_core_string(struct rd_reader *rd, uint64_t addr)
{
    char buf[4096];
    size_t i;
    for (i = 0; i + 1 < sizeof(buf); i++) {
        if (core_read(rd, addr + i, &buf[i], 1) < 0)
            return NULL;
        if (!buf[i])
            break;
    }
    buf[i] = 0;
    return i ? arena_strdup(&rd->arena, buf) : NULL;
}

/* The executable as the core names it: AT_EXECFN matched against NT_FILE, then the process name,
 * then the lowest file mapping (the executable is mapped below the libraries). */
static const char *pick_exe(struct rd_reader *rd)
{
    struct core_state *st = rd->priv;
    const char *execfn = NULL;
    if (st->have_execfn) {
        execfn = read_core_string(rd, st->execfn);
        err_clear();
    }
    if (execfn) {
        for (size_t i = 0; i < st->nfiles; i++)
            if (strcmp(st->files[i].path, execfn) == 0)
                return st->files[i].path;
        const char *base = base_name(execfn);
        for (size_t i = 0; i < st->nfiles; i++)
            if (strcmp(base_name(st->files[i].path), base) == 0)
                return st->files[i].path;
    }
    if (st->fname[0]) {
        for (size_t i = 0; i < st->nfiles; i++)
            if (strncmp(base_name(st->files[i].path), st->fname, strlen(st->fname)) == 0)
                return st->files[i].path;
    }
    if (st->nfiles > 0)
        return st->files[0].path;
    return execfn;
}

static const char *type_name(int type)
{
    switch (type) {
    case ET_NONE: return "an ELF file of no type";
    case ET_REL: return "an ELF relocatable object";
    case ET_EXEC: return "an ELF executable";
    case ET_DYN: return "an ELF shared object or PIE executable";
    default: return "an ELF file of unknown type";
    }
}

int rd_open_core(const char *core_path, const char *exe_override, struct rd_reader **out)
{
    *out = NULL;
    elf_version(EV_CURRENT);
    struct rd_reader *rd = rd_alloc(RD_CORE, &core_ops);
    struct core_state *st = calloc(1, sizeof(*st));
    int ret = 0;
    if (!rd || !st) {
        free(rd);
        free(st);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a reader");
    }
    st->fd = -1;
    rd->priv = st;
    uint64_t core_size;
    ret = infile_open(core_path, "core", 0, &st->fd, &core_size);
    if (ret)
        goto out;
    st->elf = elf_begin(st->fd, ELF_C_READ_MMAP, NULL);
    if (!st->elf || elf_kind(st->elf) != ELF_K_ELF) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s' is not a core file: not an ELF file", core_path);
        goto out;
    }
    st->raw = (const uint8_t *)elf_rawfile(st->elf, &st->raw_size);
    if (!st->raw || st->raw_size < sizeof(Elf64_Ehdr)) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s' is not a core file: truncated ELF header",
                       core_path);
        goto out;
    }
    if (st->raw[EI_CLASS] != ELFCLASS64 || st->raw[EI_DATA] != ELFDATA2LSB) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s': not a 64-bit little-endian core", core_path);
        goto out;
    }
    GElf_Ehdr eh;
    if (!gelf_getehdr(st->elf, &eh)) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s': bad ELF header: %s", core_path, elf_errmsg(-1));
        goto out;
    }
    if (eh.e_type != ET_CORE) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s' is not a core file: %s", core_path,
                       type_name(eh.e_type));
        goto out;
    }
    if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s': core of an unsupported machine (e_machine %d)",
                       core_path, eh.e_machine);
        goto out;
    }
    st->machine = eh.e_machine;
    size_t phnum = 0;
    if (elf_getphdrnum(st->elf, &phnum) != 0) {
        ret = err_fail(SCRY_E_BAD_CORE, "'%s': bad program header count: %s", core_path,
                       elf_errmsg(-1));
        goto out;
    }
    if (phnum == 0 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
        !range_ok(eh.e_phoff, (uint64_t)phnum * sizeof(Elf64_Phdr), st->raw_size) ||
        phnum > INT32_MAX) {
        ret = err_fail(SCRY_E_BAD_CORE,
                       "'%s': truncated: the program headers (%zu) extend past the end of the file "
                       "(size %zu)", core_path, phnum, st->raw_size);
        goto out;
    }
    st->loads = calloc(phnum, sizeof(*st->loads));
    if (!st->loads) {
        ret = err_fail(SCRY_E_NO_MEMORY, "cannot allocate %zu segments", phnum);
        goto out;
    }
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(st->elf, (int)i, &ph)) {
            ret = err_fail(SCRY_E_BAD_CORE, "'%s': cannot read program header %zu", core_path, i);
            goto out;
        }
        if (ph.p_type != PT_LOAD && ph.p_type != PT_NOTE)
            continue;
        if (!range_ok(ph.p_offset, ph.p_filesz, st->raw_size)) {
            ret = err_fail(SCRY_E_BAD_CORE,
                           "'%s': truncated: segment %zu extends past the end of the file "
                           "(size %zu)", core_path, i, st->raw_size);
            goto out;
        }
        if (ph.p_type == PT_NOTE) {
            ret = parse_notes(rd, st->raw + ph.p_offset, ph.p_filesz, ph.p_align == 8 ? 8 : 4, i,
                              core_path);
            if (ret < 0)
                goto out;
            continue;
        }
        if (ph.p_memsz == 0)
            continue;
        if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr) {
            ret = err_fail(SCRY_E_BAD_CORE, "'%s': segment %zu has impossible sizes", core_path,
                           i);
            goto out;
        }
        struct core_load *ld = &st->loads[st->nloads++];
        ld->vaddr = ph.p_vaddr;
        ld->memsz = ph.p_memsz;
        ld->offset = ph.p_offset;
        ld->filesz = ph.p_filesz;
        ld->prot = ((ph.p_flags & PF_R) ? RD_PROT_R : 0) | ((ph.p_flags & PF_W) ? RD_PROT_W : 0) |
                   ((ph.p_flags & PF_X) ? RD_PROT_X : 0);
    }
    if (st->nloads)
        qsort(st->loads, st->nloads, sizeof(*st->loads), cmp_load);
    if (st->nfiles)
        qsort(st->files, st->nfiles, sizeof(*st->files), cmp_file);

    rd->pid = st->psinfo_pid ? st->psinfo_pid : st->nthreads ? st->threads[0].tid : 0;
    rd->exe_target = pick_exe(rd);
    if (exe_override) {
        rd->exe_override = arena_strdup(&rd->arena, exe_override);
        if (!rd->exe_override) {
            ret = err_fail(SCRY_E_NO_MEMORY, "cannot copy a path");
            goto out;
        }
        rd->exe_path = rd->exe_override;
    } else {
        rd->exe_path = rd->exe_target;
    }
    ret = build_mappings(rd);
    if (ret < 0)
        goto out;
    if (st->machine == EM_AARCH64) {
        /* No orig_x0 in NT_PRSTATUS: a thread in a system call stopped just after its svc #0. */
        for (size_t i = 0; i < st->nthreads; i++) {
            uint32_t insn = 0;
            if (st->pcs[i] >= 4 && core_read(rd, st->pcs[i] - 4, &insn, 4) == 0 &&
                insn == 0xd4000001)
                st->threads[i].state = 'S';
        }
        err_clear();
    }
    if (st->nthreads) {
        rd->threads = malloc(st->nthreads * sizeof(*rd->threads));
        if (!rd->threads) {
            ret = err_fail(SCRY_E_NO_MEMORY, "cannot allocate the thread list");
            goto out;
        }
        memcpy(rd->threads, st->threads, st->nthreads * sizeof(*rd->threads));
        rd->nthreads = st->nthreads;
    }
    *out = rd;
    rd = NULL;
out:
    rd_close(rd);
    return ret;
}
