/* The reader of a Windows minidump (MDMP), as MiniDumpWriteDump writes it (procdump -ma, Task
 * Manager, Windows Error Reporting): the header and its stream directory, the system info (only
 * 64-bit x86 is read), the thread list (ids, contexts), the module list (names, bases, sizes:
 * given as the paths of the mappings inside each module), the full memory (Memory64List, or the
 * smaller MemoryList) and the memory info list (protections). Written from Microsoft's
 * documentation of the format (minidumpapiset.h). Portable C: every offset and size is checked
 * against the file's size, and a dump that lies gets bad_minidump, never a wild read. */
#include "reader/reader_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/infile.h"

enum {
    MD_SIGNATURE = 0x504d444d, /* "MDMP" */
    MD_THREAD_LIST = 3,
    MD_MODULE_LIST = 4,
    MD_MEMORY_LIST = 5,
    MD_SYSTEM_INFO = 7,
    MD_MEMORY64_LIST = 9,
    MD_MISC_INFO = 15,
    MD_MEMORY_INFO_LIST = 16,
    MD_ARCH_AMD64 = 9,
    MD_ARCH_X86 = 0,
    MD_THREAD_SIZE = 48,
    MD_MODULE_SIZE = 108,
    MD_CONTEXT_RIP = 0xf8,  /* CONTEXT.Rip on AMD64 */
    MD_MEM_COMMIT = 0x1000,
};

/* One range of the target's memory held in the dump. */
struct md_range {
    uint64_t start, size;
    uint64_t file_off;
};

struct md_module {
    uint64_t base, size;
    const char *name; /* UTF-8, in the reader's arena */
};

struct md_state {
    const uint8_t *data; /* the whole file */
    size_t size;
    bool owned;          /* data is malloc'd by the reader */
    struct md_range *ranges; /* sorted by start */
    size_t nranges;
    const char *what;    /* the file's name, for messages */
};

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* True when [off, off + len) lies inside the file. */
static bool in_file(const struct md_state *st, uint64_t off, uint64_t len)
{
    return off <= st->size && len <= st->size - off;
}

static int md_bad(const struct md_state *st, const char *fmt, const char *detail)
{
    char msg[256];
    snprintf(msg, sizeof(msg), fmt, detail ? detail : "");
    return err_fail(SCRY_E_BAD_MINIDUMP, "'%s': %s", st->what, msg);
}

static int md_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    struct md_state *st = rd->priv;
    uint8_t *out = buf;
    uint64_t a = addr;
    size_t left = len;
    while (left) {
        size_t lo = 0, hi = st->nranges;
        while (lo < hi) { /* the last range starting at or before a */
            size_t mid = lo + (hi - lo) / 2;
            if (st->ranges[mid].start <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        const struct md_range *r = lo ? &st->ranges[lo - 1] : NULL;
        if (!r || a - r->start >= r->size)
            return err_fail(SCRY_E_READ_FAILED,
                            "cannot read %zu bytes at 0x%llx: not in the minidump's memory", len,
                            (unsigned long long)addr);
        uint64_t in = a - r->start, n = r->size - in;
        if (n > left)
            n = left;
        memcpy(out, st->data + r->file_off + in, (size_t)n);
        out += n;
        a += n;
        left -= (size_t)n;
    }
    return 0;
}

static int md_threads(struct rd_reader *rd)
{
    (void)rd; /* the list was read when the dump was opened */
    return 0;
}

static void md_close(struct rd_reader *rd)
{
    struct md_state *st = rd->priv;
    if (!st)
        return;
    if (st->owned)
        free((void *)st->data);
    free(st->ranges);
    free(st);
}

static const struct rd_ops md_ops = {
    .read = md_read,
    .threads = md_threads,
    .close = md_close,
};

/* A MINIDUMP_STRING (UTF-16LE with its byte length first) at rva, as UTF-8 in the arena. Lone
 * surrogates become '?'. NULL if it does not fit in the file. */
static const char *md_string(struct rd_reader *rd, const struct md_state *st, uint32_t rva)
{
    if (!in_file(st, rva, 4))
        return NULL;
    uint32_t bytes = le32(st->data + rva);
    if (bytes % 2 || bytes > 65536 || !in_file(st, (uint64_t)rva + 4, bytes))
        return NULL;
    const uint8_t *p = st->data + rva + 4;
    size_t n = bytes / 2, o = 0;
    char *s = arena_alloc(&rd->arena, n * 3 + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = le16(p + 2 * i);
        if (c >= 0xd800 && c < 0xdc00 && i + 1 < n && le16(p + 2 * i + 2) >= 0xdc00 &&
            le16(p + 2 * i + 2) < 0xe000) {
            c = 0x10000 + ((c - 0xd800) << 10) + (le16(p + 2 * i + 2) - 0xdc00u);
            i++;
        } else if (c >= 0xd800 && c < 0xe000) {
            c = '?';
        }
        if (c < 0x80) {
            s[o++] = (char)c;
        } else if (c < 0x800) {
            s[o++] = (char)(0xc0 | c >> 6);
            s[o++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            s[o++] = (char)(0xe0 | c >> 12);
            s[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
            s[o++] = (char)(0x80 | (c & 0x3f));
        } else {
            /* 4 bytes: n * 3 has room, as this took two units */
            s[o++] = (char)(0xf0 | c >> 18);
            s[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
            s[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
            s[o++] = (char)(0x80 | (c & 0x3f));
        }
    }
    s[o] = 0;
    return s;
}

static int range_cmp(const void *a, const void *b)
{
    const struct md_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int map_cmp(const void *a, const void *b)
{
    const struct rd_mapping *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int tid_cmp(const void *a, const void *b)
{
    const struct rd_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The protection of addr from the memory info list (R if it has none). */
static unsigned md_prot(const struct md_state *st, const uint8_t *info, uint64_t ninfo,
                        uint32_t entry_size, uint64_t addr)
{
    for (uint64_t i = 0; info && i < ninfo; i++) {
        const uint8_t *e = info + i * entry_size;
        uint64_t base = le64(e), size = le64(e + 24);
        if (addr < base || addr - base >= size)
            continue;
        uint32_t p = le32(e + 36) & 0xff;
        unsigned prot = 0;
        if (p & 0xf0) /* PAGE_EXECUTE* */
            prot |= RD_PROT_X;
        if (p & (0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80)) /* READONLY, READWRITE, WRITECOPY */
            prot |= RD_PROT_R;
        if (p & (0x04 | 0x08 | 0x40 | 0x80))
            prot |= RD_PROT_W;
        return prot;
    }
    (void)st;
    return RD_PROT_R;
}

struct md_dir {
    uint64_t off, size;
    bool found;
};

static int md_parse(struct rd_reader *rd, struct md_state *st)
{
    if (st->size < 32 || le32(st->data) != MD_SIGNATURE)
        return md_bad(st, "not a minidump: no MDMP header%s", NULL);
    if ((le32(st->data + 4) & 0xffff) != 0xa793)
        return md_bad(st, "not a minidump: unknown format version%s", NULL);
    uint32_t nstreams = le32(st->data + 8), dir_rva = le32(st->data + 12);
    if (!in_file(st, dir_rva, (uint64_t)nstreams * 12))
        return md_bad(st, "truncated: the stream directory runs past the end of the file%s",
                      NULL);
    struct md_dir d[32] = {{0}};
    for (uint32_t i = 0; i < nstreams; i++) {
        const uint8_t *e = st->data + dir_rva + (size_t)i * 12;
        uint32_t type = le32(e), size = le32(e + 4), rva = le32(e + 8);
        if (type >= 32 || d[type].found)
            continue; /* streams scry does not read; the first of each kind */
        if (!in_file(st, rva, size)) {
            char what[32];
            snprintf(what, sizeof(what), "%u", type);
            return md_bad(st, "truncated: stream of type %s runs past the end of the file", what);
        }
        d[type] = (struct md_dir){rva, size, true};
    }

    /* The processor: 64-bit x86 only. */
    if (!d[MD_SYSTEM_INFO].found || d[MD_SYSTEM_INFO].size < 2)
        return md_bad(st, "the dump has no system info stream%s", NULL);
    uint16_t arch = le16(st->data + d[MD_SYSTEM_INFO].off);
    if (arch != MD_ARCH_AMD64)
        return err_fail_hint(SCRY_E_UNSUPPORTED_PYTHON,
                             "scry reads 64-bit (x64) Windows Pythons only: 32-bit and ARM64 "
                             "Python are not supported",
                             "'%s' is the dump of a %s process, which scry does not read",
                             st->what,
                             arch == MD_ARCH_X86 ? "32-bit x86" : arch == 12 ? "ARM64" : "non-x64");

    if (d[MD_MISC_INFO].found && d[MD_MISC_INFO].size >= 12 &&
        (le32(st->data + d[MD_MISC_INFO].off + 4) & 1))
        rd->pid = (int)le32(st->data + d[MD_MISC_INFO].off + 8);

    /* The memory: Memory64List (a full-memory dump), else MemoryList (stacks and a few more). */
    size_t cap;
    if (d[MD_MEMORY64_LIST].found) {
        const struct md_dir *m = &d[MD_MEMORY64_LIST];
        if (m->size < 16)
            return md_bad(st, "the memory list is truncated%s", NULL);
        uint64_t n = le64(st->data + m->off), base = le64(st->data + m->off + 8);
        if (n > (m->size - 16) / 16)
            return md_bad(st, "the memory list claims more ranges than it holds%s", NULL);
        cap = (size_t)n;
        st->ranges = calloc(cap ? cap : 1, sizeof(*st->ranges));
        if (!st->ranges)
            return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's memory list");
        uint64_t off = base;
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *e = st->data + m->off + 16 + i * 16;
            uint64_t start = le64(e), size = le64(e + 8);
            if (!in_file(st, off, size))
                return md_bad(st, "truncated: the memory of the full dump runs past the end of "
                                  "the file%s",
                              NULL);
            if (start + size < start)
                return md_bad(st, "a memory range wraps around the address space%s", NULL);
            st->ranges[st->nranges++] = (struct md_range){start, size, off};
            off += size;
        }
    } else if (d[MD_MEMORY_LIST].found) {
        const struct md_dir *m = &d[MD_MEMORY_LIST];
        if (m->size < 4)
            return md_bad(st, "the memory list is truncated%s", NULL);
        uint32_t n = le32(st->data + m->off);
        if (n > (m->size - 4) / 16)
            return md_bad(st, "the memory list claims more ranges than it holds%s", NULL);
        st->ranges = calloc(n ? n : 1, sizeof(*st->ranges));
        if (!st->ranges)
            return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's memory list");
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *e = st->data + m->off + 4 + (size_t)i * 16;
            uint64_t start = le64(e);
            uint32_t size = le32(e + 8), rva = le32(e + 12);
            if (!in_file(st, rva, size))
                return md_bad(st, "truncated: a memory range runs past the end of the file%s",
                              NULL);
            if (start + size < start)
                return md_bad(st, "a memory range wraps around the address space%s", NULL);
            st->ranges[st->nranges++] = (struct md_range){start, size, rva};
        }
    } else {
        return md_bad(st, "the dump has no memory list: write it with full memory (procdump -ma, "
                          "MiniDumpWithFullMemory)%s",
                      NULL);
    }
    qsort(st->ranges, st->nranges, sizeof(*st->ranges), range_cmp);
    for (size_t i = 1; i < st->nranges; i++)
        if (st->ranges[i].start < st->ranges[i - 1].start + st->ranges[i - 1].size)
            return md_bad(st, "memory ranges overlap%s", NULL);

    /* The modules. */
    if (!d[MD_MODULE_LIST].found || d[MD_MODULE_LIST].size < 4)
        return md_bad(st, "the dump has no module list%s", NULL);
    uint32_t nmod = le32(st->data + d[MD_MODULE_LIST].off);
    if (nmod > (d[MD_MODULE_LIST].size - 4) / MD_MODULE_SIZE)
        return md_bad(st, "the module list claims more modules than it holds%s", NULL);
    struct md_module *mods = calloc(nmod ? nmod : 1, sizeof(*mods));
    if (!mods)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's module list");
    for (uint32_t i = 0; i < nmod; i++) {
        const uint8_t *e = st->data + d[MD_MODULE_LIST].off + 4 + (size_t)i * MD_MODULE_SIZE;
        mods[i].base = le64(e);
        mods[i].size = le32(e + 8);
        mods[i].name = md_string(rd, st, le32(e + 20));
        if (!mods[i].name) {
            free(mods);
            return md_bad(st, "a module's name lies outside the file%s", NULL);
        }
    }
    if (nmod)
        rd->exe_path = mods[0].name; /* the process's executable comes first */

    /* The mappings: each memory range, named after the module it lies in. */
    const uint8_t *info = NULL;
    uint64_t ninfo = 0;
    uint32_t info_entry = 0;
    if (d[MD_MEMORY_INFO_LIST].found && d[MD_MEMORY_INFO_LIST].size >= 16) {
        const uint8_t *h = st->data + d[MD_MEMORY_INFO_LIST].off;
        uint32_t hsize = le32(h);
        info_entry = le32(h + 4);
        ninfo = le64(h + 8);
        if (hsize >= 16 && hsize <= d[MD_MEMORY_INFO_LIST].size && info_entry >= 48 &&
            ninfo <= (d[MD_MEMORY_INFO_LIST].size - hsize) / info_entry)
            info = h + hsize;
    }
    rd->maps = calloc(st->nranges ? st->nranges : 1, sizeof(*rd->maps));
    if (!rd->maps) {
        free(mods);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's mappings");
    }
    for (size_t i = 0; i < st->nranges; i++) {
        struct rd_mapping *m = &rd->maps[rd->nmaps++];
        m->start = st->ranges[i].start;
        m->end = st->ranges[i].start + st->ranges[i].size;
        m->prot = md_prot(st, info, ninfo, info_entry, m->start);
        m->path = "";
        for (uint32_t k = 0; k < nmod; k++)
            if (m->start >= mods[k].base && m->start - mods[k].base < mods[k].size) {
                m->path = mods[k].name;
                m->offset = m->start - mods[k].base; /* an image is mapped whole: base - 0 */
                break;
            }
    }
    free(mods);
    qsort(rd->maps, rd->nmaps, sizeof(*rd->maps), map_cmp);

    /* The threads: ids, and whether each sits on a system call (its RIP just after a
     * `syscall` instruction, 0f 05: blocked in the kernel, as --core's 'S'). */
    if (!d[MD_THREAD_LIST].found || d[MD_THREAD_LIST].size < 4)
        return md_bad(st, "the dump has no thread list%s", NULL);
    uint32_t nthr = le32(st->data + d[MD_THREAD_LIST].off);
    if (nthr > (d[MD_THREAD_LIST].size - 4) / MD_THREAD_SIZE)
        return md_bad(st, "the thread list claims more threads than it holds%s", NULL);
    rd->threads = calloc(nthr ? nthr : 1, sizeof(*rd->threads));
    if (!rd->threads)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's thread list");
    for (uint32_t i = 0; i < nthr; i++) {
        const uint8_t *e = st->data + d[MD_THREAD_LIST].off + 4 + (size_t)i * MD_THREAD_SIZE;
        struct rd_thread *t = &rd->threads[rd->nthreads++];
        t->tid = (int)le32(e);
        t->state = 'R';
        uint32_t ctx_size = le32(e + 40), ctx_rva = le32(e + 44);
        if (ctx_size >= MD_CONTEXT_RIP + 8 && in_file(st, ctx_rva, ctx_size)) {
            uint64_t rip = le64(st->data + ctx_rva + MD_CONTEXT_RIP);
            uint8_t ins[2];
            if (rip >= 2 && md_read(rd, rip - 2, ins, 2) == 0 && ins[0] == 0x0f && ins[1] == 0x05)
                t->state = 'S';
            err_clear();
        }
    }
    qsort(rd->threads, rd->nthreads, sizeof(*rd->threads), tid_cmp);
    return 0;
}

/* Opens a minidump held in memory (data stays the caller's and must outlive the reader). */
int rd_open_minidump_mem(const void *data, size_t size, const char *what, struct rd_reader **out)
{
    *out = NULL;
    struct rd_reader *rd = rd_alloc(RD_MINIDUMP, &md_ops);
    struct md_state *st = calloc(1, sizeof(*st));
    if (!rd || !st) {
        free(rd);
        free(st);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a reader");
    }
    rd->priv = st;
    st->data = data;
    st->size = size;
    st->what = arena_strdup(&rd->arena, what ? what : "minidump");
    if (!st->what) {
        rd_close(rd);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a reader");
    }
    int ret = md_parse(rd, st);
    if (ret) {
        rd_close(rd);
        return ret;
    }
    *out = rd;
    return 0;
}

int rd_open_minidump(const char *path, struct rd_reader **out)
{
    char *data = NULL;
    size_t len = 0;
    *out = NULL;
    int ret = infile_read_all(path, "minidump", 0, &data, &len);
    if (ret)
        return ret;
    ret = rd_open_minidump_mem(data, len, path, out);
    if (ret) {
        free(data);
        return ret;
    }
    ((struct md_state *)(*out)->priv)->owned = true;
    return 0;
}
