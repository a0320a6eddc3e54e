/* Unit tests for the minidump reader (minidump_reader.c) on dumps built in the test (mdgen.h):
 * mappings named after their modules with their protections, reads inside and across ranges,
 * threads and their syscall state, the pid and the executable; every truncation and byte flips
 * of the header and directory give bad_minidump, never a crash; a 32-bit dump is refused. */
#include <stdlib.h>

#include "common/error.h"
#include "mdgen.h"
#include "reader/reader.h"
#include "testlib.h"

static void test_minidump_reads(void)
{
    struct mdg b = mdg_build(9);
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_minidump_mem(b.p, b.len, "t.dmp", &rd), 0);
    if (!rd) {
        free(b.p);
        return;
    }
    CHECK_EQ(rd_kind(rd), RD_MINIDUMP);
    CHECK_EQ(rd_pid(rd), 4242);
    CHECK_STR(rd_exe_path(rd), "C:\\Python\\python.exe");
    size_t n;
    const struct rd_mapping *m = rd_mappings(rd, &n);
    CHECK_EQ(n, 2);
    CHECK_EQ_U64(m[0].start, MDG_HEAP_BASE);
    CHECK_STR(m[0].path, "");
    CHECK_EQ(m[0].prot, RD_PROT_R | RD_PROT_W);
    CHECK_EQ_U64(m[1].start, MDG_DLL_BASE);
    CHECK_EQ_U64(m[1].end, MDG_DLL_BASE + MDG_DLL_SIZE);
    CHECK_EQ_U64(m[1].offset, 0);
    CHECK_STR(m[1].path, "C:\\Python\\python313.dll");
    CHECK_EQ(m[1].prot, RD_PROT_R | RD_PROT_X);
    CHECK(rd_find_mapping(rd, MDG_DLL_BASE + 5) == &m[1]);

    uint8_t buf[64];
    CHECK_EQ(rd_read(rd, MDG_HEAP_BASE + 10, buf, sizeof(buf)), 0);
    for (size_t i = 0; i < sizeof(buf); i++)
        CHECK_EQ(buf[i], MDG_BYTE(MDG_HEAP_BASE + 10 + i));
    CHECK_EQ(rd_read(rd, MDG_DLL_BASE + MDG_DLL_SIZE - 8, buf, 8), 0);
    CHECK_EQ(buf[7], MDG_BYTE(MDG_DLL_BASE + MDG_DLL_SIZE - 1));
    CHECK_EQ(rd_read(rd, MDG_DLL_BASE + MDG_DLL_SIZE - 8, buf, 16), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, MDG_HEAP_BASE - 1, buf, 2), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, 0, buf, 1), -SCRY_E_READ_FAILED);

    const struct rd_thread *t;
    size_t nt;
    CHECK_EQ(rd_threads(rd, &t, &nt), 0);
    CHECK_EQ(nt, 2);
    if (nt == 2) {
        CHECK_EQ(t[0].tid, 50);
        CHECK_EQ(t[0].state, 'R');
        CHECK_EQ(t[1].tid, 100);
        CHECK_EQ(t[1].state, 'S'); /* its RIP follows a syscall instruction */
    }
    rd_close(rd);
    free(b.p);
}

static void test_minidump_damaged(void)
{
    struct mdg b = mdg_build(9);
    struct rd_reader *rd = NULL;
    /* Every prefix short of the whole file: bad_minidump (a copy each, so that ASan sees any
     * read past its end). */
    for (size_t len = 0; len < b.len; len += len < 2048 ? 1 : 97) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, b.p, len);
        int ret = rd_open_minidump_mem(copy, len, "t.dmp", &rd);
        if (ret != -SCRY_E_BAD_MINIDUMP)
            tl_fail(__FILE__, __LINE__, "a dump cut at %zu bytes: %d, want bad_minidump", len,
                    ret);
        if (!ret)
            rd_close(rd);
        free(copy);
    }
    /* Bytes of the header and directory flipped: an error or a reader, never a crash. */
    for (size_t i = 0; i < 32 + 6 * 12; i++) {
        uint8_t *copy = malloc(b.len);
        memcpy(copy, b.p, b.len);
        copy[i] ^= 0xa5;
        if (rd_open_minidump_mem(copy, b.len, "t.dmp", &rd) == 0)
            rd_close(rd);
        free(copy);
    }
    memcpy(b.p, "XDMP", 4);
    CHECK_EQ(rd_open_minidump_mem(b.p, b.len, "t.dmp", &rd), -SCRY_E_BAD_MINIDUMP);
    CHECK(strstr(err_last_message(), "not a minidump") != NULL);
    free(b.p);

    /* No Memory64List: the message says to write the dump with full memory. */
    b = mdg_build(9);
    for (size_t i = 0; i < 6; i++)
        if (b.p[32 + i * 12] == 9)
            b.p[32 + i * 12] = 31;
    CHECK_EQ(rd_open_minidump_mem(b.p, b.len, "t.dmp", &rd), -SCRY_E_BAD_MINIDUMP);
    CHECK(strstr(err_last_message(), "no memory list") != NULL);
    free(b.p);
}

static void test_minidump_32bit(void)
{
    struct mdg b = mdg_build(0);
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_minidump_mem(b.p, b.len, "t.dmp", &rd), -SCRY_E_UNSUPPORTED_PYTHON);
    CHECK(strstr(err_last_message(), "32-bit") != NULL);
    CHECK(strstr(err_last_hint(), "32-bit") != NULL);
    free(b.p);
}

static void test_minidump_file(void)
{
    struct rd_reader *rd = NULL;
    char path[512];
    snprintf(path, sizeof(path), "%s/missing.dmp", tl_tmpdir());
    CHECK_EQ(rd_open_minidump(path, &rd), -SCRY_E_IO);
    struct mdg b = mdg_build(9);
    snprintf(path, sizeof(path), "%s/t.dmp", tl_tmpdir());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fwrite(b.p, 1, b.len, f);
        fclose(f);
        CHECK_EQ(rd_open_minidump(path, &rd), 0);
        uint8_t v = 0;
        CHECK_EQ(rd_read(rd, MDG_HEAP_BASE, &v, 1), 0);
        CHECK_EQ(v, MDG_BYTE(MDG_HEAP_BASE));
        rd_close(rd);
    }
    free(b.p);
}

static const struct tl_test tests[] = {
    TL(test_minidump_reads),
    TL(test_minidump_damaged),
    TL(test_minidump_32bit),
    TL(test_minidump_file),
};

TL_MAIN(tests)
