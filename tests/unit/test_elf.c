/* Unit tests for src/reader/elf_image.c over ELF images generated in the test (elfgen.h): symbol
 * lookup through .dynsym then .symtab, sections, load addresses, reads by virtual address with
 * zero fill, build ids, and survival on damaged images. */
#include <elf.h>
#include <stdlib.h>

#include "common/error.h"
#include "elfgen.h"
#include "reader/elf_image.h"
#include "testlib.h"

static struct elf_image *open_dyn(struct eg_buf *b, uint16_t type, uint64_t first, size_t extra)
{
    eg_make_dyn(b, type, first, extra);
    struct elf_image *img = NULL;
    int ret = elf_open_mem(b->p, b->len, &img);
    CHECK_EQ(ret, 0);
    return img;
}

static void test_symbols(void)
{
    struct eg_buf b;
    struct elf_image *img = open_dyn(&b, ET_DYN, 0, 0);
    if (!img)
        goto out;
    uint64_t v = 0, s = 0;
    CHECK_EQ(elf_type(img), ET_DYN);
    CHECK(elf_symbol(img, "Py_Version", &v, &s));
    CHECK_EQ_U64(v, 0x2300);
    CHECK_EQ_U64(s, 4);
    /* .dynsym wins over a .symtab symbol of the same name. */
    CHECK(elf_symbol(img, "_PyRuntime", &v, &s));
    CHECK_EQ_U64(v, 0x2310);
    CHECK_EQ_U64(s, 0x30);
    CHECK(elf_symbol(img, "local_only", &v, NULL));
    CHECK_EQ_U64(v, 0x2320);
    /* A global definition wins over a local one of the same name. */
    CHECK(elf_symbol(img, "static_dup", &v, NULL));
    CHECK_EQ_U64(v, 0x2);
    CHECK(!elf_symbol(img, "undef_import", &v, &s));
    CHECK(!elf_symbol(img, "no_such_symbol", &v, &s));
    CHECK(!elf_symbol(img, "", &v, &s));
    CHECK(!elf_symbol(img, "Py_Versio", &v, &s));
out:
    elf_close(img);
    eg_free(&b);
}

/* Addresses to function symbols: the one that holds the address (.symtab's static functions
 * included), else the nearest function below it; objects never count. */
static void test_symbol_at(void)
{
    struct eg_buf b;
    struct elf_image *img = open_dyn(&b, ET_DYN, 0, 0);
    const char *name = NULL;
    uint64_t start = 0;
    if (!img)
        goto out;
    CHECK(elf_symbol_at(img, 0x3010, &name, &start));
    CHECK_STR(name, "local_func");
    CHECK_EQ_U64(start, 0x3000);
    CHECK(elf_symbol_at(img, 0x3000, &name, &start));
    CHECK_STR(name, "local_func");
    CHECK(elf_symbol_at(img, 0x3050, &name, &start)); /* past its end: the nearest below */
    CHECK_STR(name, "local_func");
    CHECK(elf_symbol_at(img, 0x3110, &name, &start));
    CHECK_STR(name, "exported_func");
    CHECK_EQ_U64(start, 0x3100);
    CHECK(elf_symbol_at(img, 0x9000, &name, &start));
    CHECK_STR(name, "exported_func");
    /* Below every function (only objects there): none. */
    CHECK(!elf_symbol_at(img, 0x2fff, &name, &start));
out:
    elf_close(img);
    eg_free(&b);
}

static void test_many_symbols(void)
{
    struct eg_buf b;
    struct elf_image *img = open_dyn(&b, ET_DYN, 0, 20000);
    if (!img)
        goto out;
    uint64_t v = 0;
    const size_t probe[] = {0, 1, 12345, 19999};
    for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
        char name[32];
        snprintf(name, sizeof(name), "sym_%zu", probe[i]);
        CHECK(elf_symbol(img, name, &v, NULL));
        CHECK_EQ_U64(v, 0x10000 + 8 * probe[i]);
    }
    CHECK(!elf_symbol(img, "sym_20000", &v, NULL));
    /* 20k lookups must be quick (an index, not a scan each time); the harness has no timer, so
     * this only shows up as a slow test if it regresses. */
    size_t found = 0;
    for (size_t i = 0; i < 20000; i++) {
        char name[32];
        snprintf(name, sizeof(name), "sym_%zu", i);
        found += elf_symbol(img, name, &v, NULL) && v == 0x10000 + 8 * i;
    }
    CHECK_EQ(found, 20000);
out:
    elf_close(img);
    eg_free(&b);
}

static void test_sections_and_loads(void)
{
    struct eg_buf b;
    struct elf_image *img = open_dyn(&b, ET_DYN, 0, 0);
    if (!img)
        goto out;
    uint64_t a = 0, s = 0;
    CHECK(elf_section(img, ".PyRuntime", &a, &s));
    CHECK_EQ_U64(a, 0x2300);
    CHECK_EQ_U64(s, 0x40);
    CHECK(elf_section(img, ".bss", &a, &s));
    CHECK_EQ_U64(a, 0x2340);
    CHECK(elf_section(img, ".dynsym", NULL, NULL));
    CHECK(!elf_section(img, ".nosuch", &a, &s));
    CHECK_EQ_U64(elf_first_load_vaddr(img), 0);
out:
    elf_close(img);
    eg_free(&b);

    img = open_dyn(&b, ET_EXEC, 0x400123, 0);
    if (img) {
        CHECK_EQ(elf_type(img), ET_EXEC);
        CHECK_EQ_U64(elf_first_load_vaddr(img), 0x400000);
        uint8_t magic[4];
        CHECK_EQ(elf_read_vaddr(img, 0x400123, magic, 4), 0);
        CHECK(memcmp(magic, ELFMAG, 4) == 0);
    }
    elf_close(img);
    eg_free(&b);
}

static void test_read_vaddr(void)
{
    struct eg_buf b;
    struct elf_image *img = open_dyn(&b, ET_DYN, 0, 0);
    if (!img)
        goto out;
    uint8_t buf[0x100];
    CHECK_EQ(elf_read_vaddr(img, 0, buf, 4), 0);
    CHECK(memcmp(buf, ELFMAG, 4) == 0);
    CHECK_EQ(elf_read_vaddr(img, EG_SEG2_VADDR, buf, EG_SEG2_FILESZ), 0);
    int ok = 1;
    for (unsigned i = 0; i < EG_SEG2_FILESZ; i++)
        ok &= buf[i] == EG_SEG2_BYTE(i);
    CHECK(ok);
    /* Straddling p_filesz: file bytes, then zeros up to p_memsz. */
    memset(buf, 0xee, sizeof(buf));
    CHECK_EQ(elf_read_vaddr(img, EG_SEG2_VADDR + 0x30, buf, 0x20), 0);
    CHECK_EQ(buf[0], EG_SEG2_BYTE(0x30));
    CHECK_EQ(buf[0xf], EG_SEG2_BYTE(0x3f));
    CHECK_EQ(buf[0x10], 0);
    CHECK_EQ(buf[0x1f], 0);
    CHECK_EQ(elf_read_vaddr(img, EG_SEG2_VADDR + EG_SEG2_MEMSZ - 8, buf, 8), 0);
    CHECK_EQ(buf[7], 0);
    /* Past p_memsz, in the gap between the segments, and wrapping around. */
    CHECK_EQ(elf_read_vaddr(img, EG_SEG2_VADDR + EG_SEG2_MEMSZ - 4, buf, 8), -SCRY_E_READ_FAILED);
    CHECK_EQ(elf_read_vaddr(img, 0x2000, buf, 1), -SCRY_E_READ_FAILED);
    CHECK_EQ(elf_read_vaddr(img, UINT64_MAX - 2, buf, 8), -SCRY_E_READ_FAILED);
    uint8_t id[64];
    CHECK_EQ(elf_build_id(img, id, sizeof(id)), 20);
    CHECK_EQ(id[0], 0);
    CHECK_EQ(id[19], 19);
    CHECK_EQ(elf_build_id(img, id, 4), 4);
out:
    elf_close(img);
    eg_free(&b);
}

static void test_open_file(void)
{
    struct eg_buf b;
    eg_make_dyn(&b, ET_DYN, 0, 0);
    char path[512];
    snprintf(path, sizeof(path), "%s/libtest.so", tl_tmpdir());
    CHECK_EQ(eg_write_file(path, b.p, b.len), 0);
    struct elf_image *img = NULL;
    CHECK_EQ(elf_open(path, &img), 0);
    if (img) {
        uint64_t v = 0;
        CHECK(elf_symbol(img, "_PyRuntime", &v, NULL));
        CHECK_EQ_U64(v, 0x2310);
        CHECK(elf_section(img, ".PyRuntime", NULL, NULL));
        elf_close(img);
    }
    img = NULL;
    snprintf(path, sizeof(path), "%s/does-not-exist", tl_tmpdir());
    CHECK_EQ(elf_open(path, &img), -SCRY_E_IO);
    CHECK(img == NULL);
    snprintf(path, sizeof(path), "%s/text.txt", tl_tmpdir());
    CHECK_EQ(eg_write_file(path, "hello, world\n", 13), 0);
    CHECK_EQ(elf_open(path, &img), -SCRY_E_NOT_PYTHON);
    CHECK(strstr(err_last_message(), "not an ELF file") != NULL);
    /* 32-bit and big-endian images are refused. */
    b.p[EI_CLASS] = ELFCLASS32;
    CHECK(elf_open_mem(b.p, b.len, &img) < 0);
    b.p[EI_CLASS] = ELFCLASS64;
    b.p[EI_DATA] = ELFDATA2MSB;
    CHECK(elf_open_mem(b.p, b.len, &img) < 0);
    CHECK(elf_open_mem(b.p, 0, &img) < 0);
    eg_free(&b);
}

/* Exercises every lookup on an image that may be broken; must not crash (run under ASan). */
static void poke(const uint8_t *data, size_t len)
{
    struct elf_image *img = NULL;
    if (elf_open_mem(data, len, &img) < 0)
        return;
    uint64_t v, s;
    uint8_t buf[64], id[32];
    elf_symbol(img, "_PyRuntime", &v, &s);
    elf_symbol(img, "local_only", &v, &s);
    elf_section(img, ".PyRuntime", &v, &s);
    elf_read_vaddr(img, elf_first_load_vaddr(img), buf, sizeof(buf));
    elf_read_vaddr(img, EG_SEG2_VADDR + 0x20, buf, sizeof(buf));
    elf_build_id(img, id, sizeof(id));
    elf_type(img);
    elf_close(img);
}

static void test_damaged_images(void)
{
    struct eg_buf b;
    eg_make_dyn(&b, ET_DYN, 0, 0);
    /* Every truncation. */
    for (size_t len = 0; len < b.len; len += 7) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.p, len);
        poke(copy, len);
        free(copy);
    }
    /* Random corruption of headers and tables. */
    uint8_t *copy = malloc(b.len);
    srand(1234);
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(copy, b.p, b.len);
        int flips = 1 + rand() % 8;
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)rand() % b.len;
            if (rand() % 2)
                copy[at] ^= (uint8_t)(1u << (rand() % 8));
            else
                copy[at] = (uint8_t)(rand() % 3 == 0 ? 0xff : rand());
        }
        poke(copy, b.len);
    }
    free(copy);
    CHECK(1); /* reaching here without a crash is the test */
    eg_free(&b);
}

static const struct tl_test tests[] = {
    TL(test_symbols),    TL(test_symbol_at),  TL(test_many_symbols), TL(test_sections_and_loads),
    TL(test_read_vaddr), TL(test_open_file), TL(test_damaged_images),
};

TL_MAIN(tests)
