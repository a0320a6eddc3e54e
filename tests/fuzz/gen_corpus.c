/* Writes the seed corpora for the fuzz targets from the unit tests' ELF and minidump writers:
 *   cc -std=c11 -D_GNU_SOURCE -Itests/unit tests/fuzz/gen_corpus.c -o /tmp/gen && /tmp/gen
 * run from the repository root. The cores name files that exist on any Debian system, so that
 * fuzzing also reaches the reads from disk. */
#include "elfgen.h"
#include "mdgen.h"

static void put(const char *path, const struct eg_buf *b)
{
    if (eg_write_file(path, b->p, b->len) < 0)
        perror(path);
}

static uint8_t page0[4096], anon[8192];

static void core(const char *path, uint64_t page_size, bool with_psinfo, bool with_auxv)
{
    memset(page0, 0xaa, sizeof(page0));
    memcpy(page0, "\177ELF", 4);
    snprintf((char *)anon + 4096, 64, "/bin/true");
    static const struct eg_thread threads[] = {{1234, UINT64_MAX}, {1240, 7}};
    struct eg_file files[] = {
        {0x400000, 0x401000, 0, "/bin/true"},
        {0x401000, 0x403000, 4096 / page_size, "/bin/true"},
        {0x500000, 0x501000, 4096 / page_size, "/bin/sh"},
    };
    struct eg_load loads[] = {
        {0x400000, 4096, page0, 4096, PF_R},
        {0x401000, 8192, NULL, 0, PF_R | PF_X},
        {0x600000, 8192, anon, 8192, PF_R | PF_W},
    };
    struct eg_core c = {0};
    c.threads = threads;
    c.nthreads = 2;
    c.psinfo_pid = with_psinfo ? 1234 : 0;
    c.fname = "true";
    c.files = files;
    c.nfiles = 3;
    c.page_size = page_size;
    c.execfn = with_auxv ? 0x601000 : 0;
    c.loads = loads;
    c.nloads = 3;
    struct eg_buf b;
    eg_make_core(&b, &c);
    put(path, &b);
    eg_free(&b);
}

int main(void)
{
    struct eg_buf b;
    eg_make_dyn(&b, ET_DYN, 0, 8);
    put("tests/fuzz/corpus/elf/dyn.so", &b);
    eg_free(&b);
    eg_make_dyn(&b, ET_EXEC, 0x400123, 0);
    put("tests/fuzz/corpus/elf/exec", &b);
    eg_free(&b);
    struct mdg md = mdg_build(9);
    if (eg_write_file("tests/fuzz/corpus/minidump/amd64.dmp", md.p, md.len) < 0)
        perror("tests/fuzz/corpus/minidump/amd64.dmp");
    free(md.p);
    core("tests/fuzz/corpus/core/gcore-page1", 1, true, true);
    core("tests/fuzz/corpus/core/kernel-page4096", 4096, true, true);
    core("tests/fuzz/corpus/core/no-psinfo-no-auxv", 4096, false, false);
    const char *maps =
        "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/python3.11\n"
        "00651000-00652000 rw-p 00051000 08:02 173521      /usr/bin/python3.11\n"
        "01d51000-01d72000 rw-p 00000000 00:00 0           [heap]\n"
        "7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 \n"
        "7f0a20000000-7f0a20400000 r--p 00000000 08:02 42  /opt/my dir/lib with spaces.so\n"
        "7f0a20400000-7f0a20401000 r--p 00400000 08:02 43  /tmp/gone.so (deleted)\n"
        "7ffd4b1d2000-7ffd4b1f3000 rw-p 00000000 00:00 0   [stack]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";
    struct eg_buf m = {0};
    eg_add(&m, maps, strlen(maps));
    put("tests/fuzz/corpus/maps/maps.txt", &m);
    eg_free(&m);
    const char *stat = "1234 (a) b) (c) S 1 1234 1234 0 -1 4194560 123 0 0 0 5 3 0 0 20 0 1\n";
    eg_add(&m, stat, strlen(stat));
    put("tests/fuzz/corpus/maps/stat.txt", &m);
    eg_free(&m);
    return 0;
}
