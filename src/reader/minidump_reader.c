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

#include "common/cursor.h"
#include "common/error.h"
#include "platform/infile.h"

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

/* [off, off + len) of the file as a cursor; failed when it does not lie inside the file. */
static struct cursor md_sub(const struct md_state *st, uint64_t off, uint64_t len)
{
    struct cursor file;
    cur_init(&file, st->data, st->size);
    if (off > SIZE_MAX || len > SIZE_MAX)
        return cur_sub(&file, st->size + 1, 0);
    return cur_sub(&file, (size_t)off, (size_t)len);
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
    struct cursor c = md_sub(st, rva, 4);
    uint32_t bytes = cur_u32(&c);
    if (!cur_ok(&c) || bytes % 2 || bytes > 65536)
        return NULL;
    c = md_sub(st, (uint64_t)rva + 4, bytes);
    if (!cur_ok(&c))
        return NULL;
    size_t n = bytes / 2, o = 0;
    char *s = arena_alloc(&rd->arena, n * 3 + 1);
    if (!s)
        return NULL;
    while (cur_remaining(&c) >= 2) {
        uint32_t u = cur_u16(&c);
        if (u >= 0xd800 && u < 0xdc00 && cur_remaining(&c) >= 2) {
            struct cursor peek = c;
            uint32_t lo = cur_u16(&peek);
            if (lo >= 0xdc00 && lo < 0xe000) {
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                c = peek;
            }
        }
        if (u >= 0xd800 && u < 0xe000)
            u = '?';
        if (u < 0x80) {
            s[o++] = (char)u;
        } else if (u < 0x800) {
            s[o++] = (char)(0xc0 | u >> 6);
            s[o++] = (char)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            s[o++] = (char)(0xe0 | u >> 12);
            s[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
            s[o++] = (char)(0x80 | (u & 0x3f));
        } else { /* 4 bytes from two units: n * 3 has room */
            s[o++] = (char)(0xf0 | u >> 18);
            s[o++] = (char)(0x80 | ((u >> 12) & 0x3f));
            s[o++] = (char)(0x80 | ((u >> 6) & 0x3f));
            s[o++] = (char)(0x80 | (u & 0x3f));
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
static unsigned md_prot(const struct cursor *info, uint64_t ninfo, uint32_t entry_size,
                        uint64_t addr)
{
    for (uint64_t i = 0; i < ninfo; i++) {
        struct cursor e = *info;
        cur_seek(&e, (size_t)(i * entry_size));
        uint64_t base = cur_u64(&e);
        cur_skip(&e, 16); /* AllocationBase, AllocationProtect, alignment */
        uint64_t size = cur_u64(&e);
        cur_skip(&e, 4); /* State */
        uint32_t p = cur_u32(&e) & 0xff;
        if (!cur_ok(&e))
            break;
        if (addr < base || addr - base >= size)
            continue;
        unsigned prot = 0;
        if (p & 0xf0) /* PAGE_EXECUTE* */
            prot |= RD_PROT_X;
        if (p & (0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80)) /* READONLY, READWRITE, WRITECOPY */
            prot |= RD_PROT_R;
        if (p & (0x04 | 0x08 | 0x40 | 0x80))
            prot |= RD_PROT_W;
        return prot;
    }
    return RD_PROT_R;
}

struct md_dir {
    uint64_t off, size;
    bool found;
};

/* The stream of a type as a cursor (failed when the dump has none). */
static struct cursor md_stream(const struct md_state *st, const struct md_dir *d, unsigned type)
{
    if (!d[type].found)
        return md_sub(st, st->size + 1, 0);
    return md_sub(st, d[type].off, d[type].size);
}

static int md_memory(struct md_state *st, const struct md_dir *d)
{
    struct cursor m = md_stream(st, d, MD_MEMORY64_LIST);
    bool full = cur_ok(&m);
    if (!full)
        m = md_stream(st, d, MD_MEMORY_LIST);
    if (!cur_ok(&m))
        return md_bad(st, "the dump has no memory list: write it with full memory (procdump -ma, "
                          "MiniDumpWithFullMemory)%s",
                      NULL);
    /* Memory64List: count, BaseRva, then (start, size) with the bytes one after another from
     * BaseRva. MemoryList: count, then (start, size, rva). */
    uint64_t n = full ? cur_u64(&m) : cur_u32(&m);
    uint64_t off = full ? cur_u64(&m) : 0;
    if (!cur_ok(&m))
        return md_bad(st, "the memory list is truncated%s", NULL);
    if (n > cur_remaining(&m) / 16)
        return md_bad(st, "the memory list claims more ranges than it holds%s", NULL);
    st->ranges = calloc(n ? (size_t)n : 1, sizeof(*st->ranges));
    if (!st->ranges)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's memory list");
    for (uint64_t i = 0; i < n; i++) {
        uint64_t start = cur_u64(&m), size, at;
        if (full) {
            size = cur_u64(&m);
            at = off;
            off += size < st->size ? size : st->size; /* checked below before it can wrap */
        } else {
            size = cur_u32(&m);
            at = cur_u32(&m);
        }
        struct cursor bytes = md_sub(st, at, size);
        if (!cur_ok(&bytes))
            return md_bad(st, "truncated: the dump's memory runs past the end of the file%s",
                          NULL);
        if (start + size < start)
            return md_bad(st, "a memory range wraps around the address space%s", NULL);
        st->ranges[st->nranges++] = (struct md_range){start, size, at};
    }
    qsort(st->ranges, st->nranges, sizeof(*st->ranges), range_cmp);
    for (size_t i = 1; i < st->nranges; i++)
        if (st->ranges[i].start < st->ranges[i - 1].start + st->ranges[i - 1].size)
            return md_bad(st, "memory ranges overlap%s", NULL);
    return 0;
}

/* The mappings: each memory range, named after the module it lies in, with its protection. */
static int md_mappings(struct rd_reader *rd, struct md_state *st, const struct md_dir *d)
{
    struct cursor ml = md_stream(st, d, MD_MODULE_LIST);
    uint32_t nmod = cur_u32(&ml);
    if (!cur_ok(&ml))
        return md_bad(st, "the dump has no module list%s", NULL);
    if (nmod > cur_remaining(&ml) / MD_MODULE_SIZE)
        return md_bad(st, "the module list claims more modules than it holds%s", NULL);
    struct md_module *mods = calloc(nmod ? nmod : 1, sizeof(*mods));
    if (!mods)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's module list");
    for (uint32_t i = 0; i < nmod; i++) {
        struct cursor e = cur_sub(&ml, 4 + (size_t)i * MD_MODULE_SIZE, MD_MODULE_SIZE);
        mods[i].base = cur_u64(&e);
        mods[i].size = cur_u32(&e);
        cur_skip(&e, 8); /* CheckSum, TimeDateStamp */
        mods[i].name = cur_ok(&e) ? md_string(rd, st, cur_u32(&e)) : NULL;
        if (!mods[i].name) {
            free(mods);
            return md_bad(st, "a module's name lies outside the file%s", NULL);
        }
    }
    if (nmod)
        rd->exe_path = mods[0].name; /* the process's executable comes first */

    /* MemoryInfoList: SizeOfHeader, SizeOfEntry, NumberOfEntries, then the entries. */
    struct cursor il = md_stream(st, d, MD_MEMORY_INFO_LIST), info;
    uint32_t hsize = cur_u32(&il), entry = cur_u32(&il);
    uint64_t ninfo = cur_u64(&il);
    cur_init(&info, NULL, 0);
    if (cur_ok(&il) && hsize >= 16 && hsize <= il.len && entry >= 48 &&
        ninfo <= (il.len - hsize) / entry)
        info = cur_sub(&il, hsize, (size_t)ninfo * entry);
    else
        ninfo = 0;

    rd->maps = calloc(st->nranges ? st->nranges : 1, sizeof(*rd->maps));
    if (!rd->maps) {
        free(mods);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's mappings");
    }
    for (size_t i = 0; i < st->nranges; i++) {
        struct rd_mapping *m = &rd->maps[rd->nmaps++];
        m->start = st->ranges[i].start;
        m->end = st->ranges[i].start + st->ranges[i].size;
        m->prot = md_prot(&info, ninfo, entry, m->start);
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
    return 0;
}

/* The threads: ids, and whether each sits on a system call (its RIP just after a `syscall`
 * instruction, 0f 05: blocked in the kernel, as --core's 'S'). */
static int md_thread_list(struct rd_reader *rd, struct md_state *st, const struct md_dir *d)
{
    struct cursor tl = md_stream(st, d, MD_THREAD_LIST);
    uint32_t n = cur_u32(&tl);
    if (!cur_ok(&tl))
        return md_bad(st, "the dump has no thread list%s", NULL);
    if (n > cur_remaining(&tl) / MD_THREAD_SIZE)
        return md_bad(st, "the thread list claims more threads than it holds%s", NULL);
    rd->threads = calloc(n ? n : 1, sizeof(*rd->threads));
    if (!rd->threads)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate the minidump's thread list");
    for (uint32_t i = 0; i < n; i++) {
        struct cursor e = cur_sub(&tl, 4 + (size_t)i * MD_THREAD_SIZE, MD_THREAD_SIZE);
        struct rd_thread *t = &rd->threads[rd->nthreads++];
        t->tid = (int)cur_u32(&e);
        t->state = 'R';
        cur_seek(&e, 40); /* ThreadContext's location */
        uint32_t ctx_size = cur_u32(&e), ctx_rva = cur_u32(&e);
        struct cursor ctx = md_sub(st, ctx_rva, ctx_size);
        cur_seek(&ctx, MD_CONTEXT_RIP);
        uint64_t rip = cur_u64(&ctx);
        uint8_t ins[2];
        if (cur_ok(&e) && cur_ok(&ctx) && rip >= 2 && md_read(rd, rip - 2, ins, 2) == 0 &&
            ins[0] == 0x0f && ins[1] == 0x05)
            t->state = 'S';
        err_clear();
    }
    qsort(rd->threads, rd->nthreads, sizeof(*rd->threads), tid_cmp);
    return 0;
}

static int md_parse(struct rd_reader *rd, struct md_state *st)
{
    struct cursor h = md_sub(st, 0, 32);
    uint32_t magic = cur_u32(&h), version = cur_u32(&h), nstreams = cur_u32(&h);
    uint32_t dir_rva = cur_u32(&h);
    if (!cur_ok(&h) || magic != MD_SIGNATURE)
        return md_bad(st, "not a minidump: no MDMP header%s", NULL);
    if ((version & 0xffff) != 0xa793)
        return md_bad(st, "not a minidump: unknown format version%s", NULL);
    struct cursor dir = md_sub(st, dir_rva, (uint64_t)nstreams * 12);
    if (!cur_ok(&dir))
        return md_bad(st, "truncated: the stream directory runs past the end of the file%s",
                      NULL);
    struct md_dir d[32] = {{0}};
    for (uint32_t i = 0; i < nstreams; i++) {
        uint32_t type = cur_u32(&dir), size = cur_u32(&dir), rva = cur_u32(&dir);
        if (type >= 32 || d[type].found)
            continue; /* streams scry does not read; the first of each kind */
        struct cursor body = md_sub(st, rva, size);
        if (!cur_ok(&body)) {
            char what[32];
            snprintf(what, sizeof(what), "%u", type);
            return md_bad(st, "truncated: stream of type %s runs past the end of the file", what);
        }
        d[type] = (struct md_dir){rva, size, true};
    }

    /* The processor: 64-bit x86 only. */
    struct cursor si = md_stream(st, d, MD_SYSTEM_INFO);
    uint16_t arch = cur_u16(&si);
    if (!cur_ok(&si))
        return md_bad(st, "the dump has no system info stream%s", NULL);
    if (arch != MD_ARCH_AMD64)
        return err_fail_hint(SCRY_E_UNSUPPORTED_PYTHON,
                             "scry reads 64-bit (x64) Windows Pythons only: 32-bit and ARM64 "
                             "Python are not supported",
                             "'%s' is the dump of a %s process, which scry does not read",
                             st->what,
                             arch == MD_ARCH_X86 ? "32-bit x86" : arch == 12 ? "ARM64" : "non-x64");

    /* MiscInfo: SizeOfInfo, Flags1 (bit 0: ProcessId is valid), ProcessId. */
    struct cursor mi = md_stream(st, d, MD_MISC_INFO);
    cur_skip(&mi, 4);
    uint32_t flags = cur_u32(&mi), pid = cur_u32(&mi);
    if (cur_ok(&mi) && (flags & 1))
        rd->pid = (int)pid;

    int ret = md_memory(st, d);
    if (!ret)
        ret = md_mappings(rd, st, d);
    if (!ret)
        ret = md_thread_list(rd, st, d);
    return ret;
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
