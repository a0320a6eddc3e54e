/* Builds small Windows minidumps for the tests (test_minidump.c) and the fuzz corpus
 * (gen_corpus.c): a header, a stream directory, SystemInfo, MiscInfo (the pid), a module list
 * (python.exe, python313.dll), a thread list with AMD64 contexts, a Memory64List and a
 * MemoryInfoList, laid out as Microsoft documents them. */
#ifndef SCRY_TESTS_MDGEN_H
#define SCRY_TESTS_MDGEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MDG_DLL_BASE 0x180000000ull
#define MDG_DLL_SIZE 0x3000u
#define MDG_HEAP_BASE 0x10000ull
#define MDG_HEAP_SIZE 0x1000u
#define MDG_SYSCALL_AT 0x100u /* offset in the DLL's image of a `syscall` instruction */
#define MDG_BYTE(addr) ((uint8_t)((addr) * 7 + 1))

struct mdg {
    uint8_t *p;
    size_t len, cap;
};

static void mdg_put(struct mdg *b, size_t off, const void *data, size_t n)
{
    if (off + n > b->cap) {
        size_t cap = (off + n) * 2;
        b->p = realloc(b->p, cap);
        memset(b->p + b->cap, 0, cap - b->cap);
        b->cap = cap;
    }
    memcpy(b->p + off, data, n);
    if (off + n > b->len)
        b->len = off + n;
}

static void mdg_u16(struct mdg *b, size_t off, uint16_t v) { mdg_put(b, off, &v, 2); }
static void mdg_u32(struct mdg *b, size_t off, uint32_t v) { mdg_put(b, off, &v, 4); }
static void mdg_u64(struct mdg *b, size_t off, uint64_t v) { mdg_put(b, off, &v, 8); }

/* Appends a MINIDUMP_STRING of ASCII s; returns its offset. */
static uint32_t mdg_string(struct mdg *b, const char *s)
{
    size_t off = (b->len + 3) & ~(size_t)3, n = strlen(s);
    mdg_u32(b, off, (uint32_t)(2 * n));
    for (size_t i = 0; i < n; i++)
        mdg_u16(b, off + 4 + 2 * i, (uint16_t)(unsigned char)s[i]);
    mdg_u16(b, off + 4 + 2 * n, 0);
    return (uint32_t)off;
}

/* The whole dump; arch 9 is AMD64, 0 x86. Free b.p when done. */
static struct mdg mdg_build(uint16_t arch)
{
    struct mdg b = {0};
    enum { NSTREAMS = 6, DIR = 32 };
    mdg_u32(&b, 0, 0x504d444d);
    mdg_u32(&b, 4, 0xa793);
    mdg_u32(&b, 8, NSTREAMS);
    mdg_u32(&b, 12, DIR);
    size_t off = DIR + NSTREAMS * 12, s = 0;
#define MDG_STREAM(type, size)                                                                     \
    do {                                                                                           \
        mdg_u32(&b, DIR + s * 12, type);                                                           \
        mdg_u32(&b, DIR + s * 12 + 4, (uint32_t)(size));                                           \
        mdg_u32(&b, DIR + s * 12 + 8, (uint32_t)off);                                              \
        s++;                                                                                       \
    } while (0)
    /* SystemInfo (56 bytes): ProcessorArchitecture first. */
    MDG_STREAM(7, 56);
    mdg_u16(&b, off, arch);
    mdg_u32(&b, off + 52, 0);
    off += 56;
    /* MiscInfo: SizeOfInfo, Flags1 (1: the pid is there), ProcessId. */
    MDG_STREAM(15, 24);
    mdg_u32(&b, off, 24);
    mdg_u32(&b, off + 4, 1);
    mdg_u32(&b, off + 8, 4242);
    mdg_u32(&b, off + 20, 0);
    off += 24;
    /* ModuleList: two MINIDUMP_MODULEs of 108 bytes; names after everything else. */
    size_t mods = off;
    MDG_STREAM(4, 4 + 2 * 108);
    mdg_u32(&b, off, 2);
    mdg_u64(&b, off + 4, 0x140000000ull);
    mdg_u32(&b, off + 4 + 8, 0x2000);
    mdg_u64(&b, off + 4 + 108, MDG_DLL_BASE);
    mdg_u32(&b, off + 4 + 108 + 8, MDG_DLL_SIZE);
    off += 4 + 2 * 108;
    /* ThreadList: two MINIDUMP_THREADs of 48 bytes, contexts of 0x4d0 bytes after them. */
    size_t thr = off;
    MDG_STREAM(3, 4 + 2 * 48);
    mdg_u32(&b, off, 2);
    off += 4 + 2 * 48;
    static const uint32_t tids[2] = {100, 50};
    static const uint64_t rips[2] = {MDG_DLL_BASE + MDG_SYSCALL_AT + 2, MDG_DLL_BASE + 0x200};
    for (int i = 0; i < 2; i++) {
        size_t e = thr + 4 + (size_t)i * 48;
        mdg_u32(&b, e, tids[i]);
        mdg_u32(&b, e + 40, 0x4d0);
        mdg_u32(&b, e + 44, (uint32_t)off);
        mdg_u64(&b, off + 0xf8, rips[i]);
        mdg_u32(&b, off + 0x4d0 - 4, 0);
        off += 0x4d0;
    }
    /* MemoryInfoList: header 16 bytes, two entries of 48. */
    MDG_STREAM(16, 16 + 2 * 48);
    mdg_u32(&b, off, 16);
    mdg_u32(&b, off + 4, 48);
    mdg_u64(&b, off + 8, 2);
    mdg_u64(&b, off + 16, MDG_HEAP_BASE);
    mdg_u64(&b, off + 16 + 24, MDG_HEAP_SIZE);
    mdg_u32(&b, off + 16 + 32, 0x1000);
    mdg_u32(&b, off + 16 + 36, 0x04); /* PAGE_READWRITE */
    mdg_u64(&b, off + 64, MDG_DLL_BASE);
    mdg_u64(&b, off + 64 + 24, MDG_DLL_SIZE);
    mdg_u32(&b, off + 64 + 32, 0x1000);
    mdg_u32(&b, off + 64 + 36, 0x20); /* PAGE_EXECUTE_READ */
    off += 16 + 2 * 48;
    /* Module names. */
    b.len = off;
    mdg_u32(&b, mods + 4 + 20, mdg_string(&b, "C:\\Python\\python.exe"));
    mdg_u32(&b, mods + 4 + 108 + 20, mdg_string(&b, "C:\\Python\\python313.dll"));
    off = (b.len + 7) & ~(size_t)7;
    /* Memory64List last: the DLL's image, then the heap page, their bytes at BaseRva. */
    MDG_STREAM(9, 16 + 2 * 16);
    size_t base = off + 16 + 2 * 16;
    mdg_u64(&b, off, 2);
    mdg_u64(&b, off + 8, base);
    mdg_u64(&b, off + 16, MDG_DLL_BASE);
    mdg_u64(&b, off + 24, MDG_DLL_SIZE);
    mdg_u64(&b, off + 32, MDG_HEAP_BASE);
    mdg_u64(&b, off + 40, MDG_HEAP_SIZE);
    for (uint64_t a = 0; a < MDG_DLL_SIZE; a++) {
        uint8_t v = MDG_BYTE(MDG_DLL_BASE + a);
        if (a == MDG_SYSCALL_AT)
            v = 0x0f;
        else if (a == MDG_SYSCALL_AT + 1)
            v = 0x05;
        mdg_put(&b, base + a, &v, 1);
    }
    for (uint64_t a = 0; a < MDG_HEAP_SIZE; a++) {
        uint8_t v = MDG_BYTE(MDG_HEAP_BASE + a);
        mdg_put(&b, base + MDG_DLL_SIZE + a, &v, 1);
    }
#undef MDG_STREAM
    return b;
}

#endif
