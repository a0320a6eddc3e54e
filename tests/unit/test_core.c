/* Unit tests for the readers: ELF cores generated in the test (elfgen.h) with NT_PRSTATUS,
 * NT_PRPSINFO, NT_FILE (gdb's page size 1 and the kernel's 4096), NT_AUXV and PT_LOADs over a
 * real file on disk; damaged cores; the self reader on our own memory; the pid reader on a forked
 * child, including stopping and resuming it. */
#include <elf.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "elfgen.h"
#include "reader/reader.h"
#include "testlib.h"

#define PAGE 4096u
#define PROG_BYTE(i) ((uint8_t)((i) * 7 + 3))
#define PROG2_BYTE(i) ((uint8_t)((i) * 5 + 11))
#define LIB_BYTE(i) ((uint8_t)((i) * 13 + 5))

static char prog_path[512], prog2_path[512], lib_path[512];

/* The files the cores map: prog (3 pages), a moved copy with other bytes, libfoo.so (2 pages). */
static void write_files(void)
{
    static uint8_t buf[3 * PAGE];
    snprintf(prog_path, sizeof(prog_path), "%s/prog", tl_tmpdir());
    snprintf(prog2_path, sizeof(prog2_path), "%s/prog-moved", tl_tmpdir());
    snprintf(lib_path, sizeof(lib_path), "%s/libfoo.so", tl_tmpdir());
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = PROG_BYTE(i);
    CHECK_EQ(eg_write_file(prog_path, buf, sizeof(buf)), 0);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = PROG2_BYTE(i);
    CHECK_EQ(eg_write_file(prog2_path, buf, sizeof(buf)), 0);
    for (size_t i = 0; i < 2 * PAGE; i++)
        buf[i] = LIB_BYTE(i);
    CHECK_EQ(eg_write_file(lib_path, buf, 2 * PAGE), 0);
}

/* Target memory in the test cores:
 *   0x400000-0x401000 prog page 0, dumped (filled with 0xaa so that core and file differ)
 *   0x401000-0x403000 prog pages 1-2, not dumped (PT_LOAD with p_filesz 0, kernel style)
 *   0x500000-0x501000 libfoo.so page 1, no PT_LOAD at all (gdb style)
 *   0x600000-0x602000 anonymous RW, dumped: a u64 at 0x600010, AT_EXECFN's string at 0x601000 */
static uint8_t page0[PAGE], anon[2 * PAGE];

static void make_core(struct eg_buf *b, uint64_t page_size, const char *execfn_str)
{
    memset(page0, 0xaa, sizeof(page0));
    memset(anon, 0, sizeof(anon));
    uint64_t magic = 0x1122334455667788ULL;
    memcpy(anon + 0x10, &magic, 8);
    snprintf((char *)anon + PAGE, PAGE, "%s", execfn_str);
    static struct eg_thread threads[] = {{1234, UINT64_MAX}, {1240, 7}};
    uint64_t unit = page_size;
    struct eg_file files[] = {
        {0x400000, 0x401000, 0, prog_path},
        {0x401000, 0x403000, PAGE / unit, prog_path},
        {0x500000, 0x501000, PAGE / unit, lib_path},
    };
    struct eg_load loads[] = {
        {0x400000, PAGE, page0, PAGE, PF_R},
        {0x401000, 2 * PAGE, NULL, 0, PF_R | PF_X},
        {0x600000, 2 * PAGE, anon, 2 * PAGE, PF_R | PF_W},
    };
    struct eg_core c = {0};
    c.threads = threads;
    c.nthreads = 2;
    c.psinfo_pid = 1234;
    c.fname = "prog";
    c.files = files;
    c.nfiles = 3;
    c.page_size = page_size;
    c.execfn = 0x601000;
    c.loads = loads;
    c.nloads = 3;
    eg_make_core(b, &c);
}

static const char *write_core(const char *name, const void *data, size_t len)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tl_tmpdir(), name);
    CHECK_EQ(eg_write_file(path, data, len), 0);
    return path;
}

static void check_core(uint64_t page_size)
{
    write_files();
    struct eg_buf b;
    make_core(&b, page_size, prog_path);
    const char *path = write_core("core.1", b.p, b.len);
    struct rd_reader *rd = NULL;
    int ret = rd_open_core(path, NULL, &rd);
    CHECK_EQ(ret, 0);
    if (ret < 0) {
        fprintf(stderr, "  %s\n", err_last_message());
        goto out;
    }
    CHECK_EQ(rd_kind(rd), RD_CORE);
    CHECK_EQ(rd_pid(rd), 1234);
    CHECK_STR(rd_exe_path(rd), prog_path);

    const struct rd_thread *th;
    size_t nth;
    CHECK_EQ(rd_threads(rd, &th, &nth), 0);
    CHECK_EQ(nth, 2);
    if (nth == 2) {
        CHECK_EQ(th[0].tid, 1234);
        CHECK_EQ(th[0].state, 'R');
        CHECK_EQ(th[1].tid, 1240);
        CHECK_EQ(th[1].state, 'S');
    }

    /* From the segment data: the core's copy wins over the file. */
    uint64_t v = 0;
    CHECK_EQ(rd_read_u64(rd, 0x600010, &v), 0);
    CHECK_EQ_U64(v, 0x1122334455667788ULL);
    uint8_t buf[64];
    CHECK_EQ(rd_read(rd, 0x400ff8, buf, 8), 0);
    CHECK_EQ(buf[0], 0xaa);
    /* Not dumped: from prog on disk at file offset 0x1000 + delta; a read across the boundary
     * takes the first half from the core and the second from the file. */
    CHECK_EQ(rd_read(rd, 0x401000 + 100, buf, 16), 0);
    CHECK_EQ(buf[0], PROG_BYTE(PAGE + 100));
    CHECK_EQ(buf[15], PROG_BYTE(PAGE + 115));
    CHECK_EQ(rd_read(rd, 0x400ffc, buf, 8), 0);
    CHECK_EQ(buf[3], 0xaa);
    CHECK_EQ(buf[4], PROG_BYTE(PAGE));
    CHECK_EQ(rd_read(rd, 0x402ff8, buf, 8), 0);
    CHECK_EQ(buf[7], PROG_BYTE(3 * PAGE - 1));
    CHECK_EQ(rd_read(rd, 0x500010, buf, 4), 0);
    CHECK_EQ(buf[0], LIB_BYTE(PAGE + 0x10));
    /* Unmapped addresses and reads running off a mapping. */
    CHECK_EQ(rd_read(rd, 0x700000, buf, 1), -SCRY_E_READ_FAILED);
    CHECK(strstr(err_last_message(), "0x700000") != NULL);
    CHECK_EQ(rd_read(rd, 0x402ffc, buf, 8), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, 0x601ffc, buf, 8), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, 0, buf, 8), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, UINT64_MAX - 3, buf, 8), -SCRY_E_READ_FAILED);

    size_t nm;
    const struct rd_mapping *m = rd_mappings(rd, &nm);
    CHECK_EQ(nm, 4);
    if (nm == 4) {
        CHECK_EQ_U64(m[0].start, 0x400000);
        CHECK_EQ_U64(m[0].end, 0x401000);
        CHECK_STR(m[0].path, prog_path);
        CHECK_EQ_U64(m[0].offset, 0);
        CHECK_EQ(m[0].prot, RD_PROT_R);
        CHECK_EQ_U64(m[1].start, 0x401000);
        CHECK_EQ_U64(m[1].end, 0x403000);
        CHECK_EQ_U64(m[1].offset, PAGE);
        CHECK_EQ(m[1].prot, RD_PROT_R | RD_PROT_X);
        CHECK_STR(m[2].path, lib_path);
        CHECK_EQ(m[2].prot, RD_PROT_R);
        CHECK_EQ_U64(m[2].offset, PAGE);
        CHECK_STR(m[3].path, "");
        CHECK_EQ(m[3].prot, RD_PROT_R | RD_PROT_W);
    }
    const struct rd_mapping *f = rd_find_mapping(rd, 0x402fff);
    CHECK(f && f->start == 0x401000);
    CHECK(rd_find_mapping(rd, 0x403000) == NULL);
    CHECK(rd_find_mapping(rd, 0x3fffff) == NULL);
    char host[512];
    CHECK_STR(rd_host_path(rd, lib_path, host, sizeof(host)), lib_path);
    /* Pausing a core does nothing. */
    CHECK_EQ(rd_pause(rd), 0);
    rd_resume(rd);
out:
    rd_close(rd);
    eg_free(&b);
}

static void test_core_page_size_1(void) { check_core(1); }
static void test_core_page_size_4096(void) { check_core(PAGE); }

static void test_core_exe_override(void)
{
    write_files();
    struct eg_buf b;
    /* AT_EXECFN names a relative path: matched to the NT_FILE entry by its base name. */
    make_core(&b, PAGE, "./prog");
    const char *path = write_core("core.2", b.p, b.len);
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_core(path, NULL, &rd), 0);
    if (rd)
        CHECK_STR(rd_exe_path(rd), prog_path);
    rd_close(rd);
    rd = NULL;
    CHECK_EQ(rd_open_core(path, prog2_path, &rd), 0);
    if (!rd)
        goto out;
    CHECK_STR(rd_exe_path(rd), prog2_path);
    char host[512];
    CHECK_STR(rd_host_path(rd, prog_path, host, sizeof(host)), prog2_path);
    CHECK_STR(rd_host_path(rd, lib_path, host, sizeof(host)), lib_path);
    uint8_t buf[4];
    CHECK_EQ(rd_read(rd, 0x401010, buf, 4), 0);
    CHECK_EQ(buf[0], PROG2_BYTE(PAGE + 0x10));
    CHECK_EQ(rd_read(rd, 0x500010, buf, 4), 0);
    CHECK_EQ(buf[0], LIB_BYTE(PAGE + 0x10));
    /* The executable's mappings carry the path the caller can open. */
    const struct rd_mapping *m = rd_find_mapping(rd, 0x401000);
    CHECK(m && strcmp(m->path, prog2_path) == 0);
out:
    rd_close(rd);
    eg_free(&b);
}

static void test_core_missing_or_short_file(void)
{
    write_files();
    struct eg_buf b;
    make_core(&b, PAGE, prog_path);
    const char *path = write_core("core.3", b.p, b.len);
    /* The library shrinks after the dump: reads from it fail, the rest still works. */
    CHECK_EQ(eg_write_file(lib_path, "x", 1), 0);
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_core(path, NULL, &rd), 0);
    if (rd) {
        uint8_t buf[4];
        CHECK_EQ(rd_read(rd, 0x500010, buf, 4), -SCRY_E_READ_FAILED);
        CHECK(strstr(err_last_message(), "shorter") != NULL);
        CHECK_EQ(rd_read(rd, 0x401010, buf, 4), 0);
        rd_close(rd);
    }
    unlink(lib_path);
    rd = NULL;
    CHECK_EQ(rd_open_core(path, NULL, &rd), 0);
    if (rd) {
        uint8_t buf[4];
        CHECK_EQ(rd_read(rd, 0x500010, buf, 4), -SCRY_E_READ_FAILED);
        rd_close(rd);
    }
    eg_free(&b);
}

static void expect_bad_core(const void *data, size_t len, const char *needle)
{
    const char *path = write_core("bad.core", data, len);
    struct rd_reader *rd = NULL;
    int ret = rd_open_core(path, NULL, &rd);
    CHECK_EQ(ret, -SCRY_E_BAD_CORE);
    CHECK(rd == NULL);
    if (needle && !strstr(err_last_message(), needle))
        tl_fail(__FILE__, __LINE__, "message \"%s\" lacks \"%s\"", err_last_message(), needle);
    rd_close(rd);
}

static void test_bad_cores(void)
{
    write_files();
    struct eg_buf b;
    make_core(&b, PAGE, prog_path);
    /* Truncated inside the last segment. */
    expect_bad_core(b.p, b.len - 100, "truncated: segment 3 extends past the end of the file");
    expect_bad_core(b.p, 40, NULL);
    expect_bad_core(b.p, 0, "not an ELF file");
    uint8_t rnd[4096];
    srand(42);
    for (size_t i = 0; i < sizeof(rnd); i++)
        rnd[i] = (uint8_t)rand();
    expect_bad_core(rnd, sizeof(rnd), "not an ELF file");
    /* An executable is not a core. */
    struct eg_buf exe;
    eg_make_dyn(&exe, ET_EXEC, 0x400000, 0);
    expect_bad_core(exe.p, exe.len, "not a core file: an ELF executable");
    eg_free(&exe);
    /* A note whose size lies: descsz of the first note made huge. */
    Elf64_Phdr note;
    memcpy(&note, b.p + sizeof(Elf64_Ehdr), sizeof(note));
    uint32_t huge = 0x7ffffff0;
    uint8_t *copy = malloc(b.len);
    memcpy(copy, b.p, b.len);
    memcpy(copy + note.p_offset + 4, &huge, 4);
    expect_bad_core(copy, b.len, "runs past");
    /* A wrong machine. */
    memcpy(copy, b.p, b.len);
    uint16_t arm32 = EM_ARM;
    memcpy(copy + offsetof(Elf64_Ehdr, e_machine), &arm32, 2);
    expect_bad_core(copy, b.len, "unsupported machine");
    free(copy);
    /* NT_FILE with a count larger than its note. */
    struct eg_file files[] = {{0x400000, 0x401000, 0, prog_path}};
    struct eg_core c = {0};
    c.files = files;
    c.nfiles = 1;
    c.page_size = PAGE;
    struct eg_buf nf;
    eg_make_core(&nf, &c);
    for (size_t i = 0; i + 16 <= nf.len; i++) {
        uint64_t v;
        memcpy(&v, nf.p + i, 8);
        if (v == 1 && memcmp(nf.p + i + 8, &(uint64_t){PAGE}, 8) == 0) {
            uint64_t lie = 1000000;
            memcpy(nf.p + i, &lie, 8);
            break;
        }
    }
    expect_bad_core(nf.p, nf.len, "NT_FILE");
    eg_free(&nf);
    eg_free(&b);
}

/* Random damage to a valid core: every outcome is fine except a crash (run under ASan). */
static void test_core_mutations(void)
{
    write_files();
    struct eg_buf b;
    make_core(&b, 1, prog_path);
    uint8_t *copy = malloc(b.len);
    char path[512];
    snprintf(path, sizeof(path), "%s/mutant.core", tl_tmpdir());
    srand(7);
    int opened = 0;
    /* Mutate the headers and notes only: the segment data is just bytes. */
    size_t hot = b.len < 2048 ? b.len : 2048;
    for (int iter = 0; iter < 600; iter++) {
        memcpy(copy, b.p, b.len);
        int flips = 1 + rand() % 6;
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)rand() % hot;
            copy[at] = (uint8_t)(rand() % 4 == 0 ? 0xff : rand());
        }
        size_t len = rand() % 10 == 0 ? (size_t)rand() % b.len : b.len;
        eg_write_file(path, copy, len);
        struct rd_reader *rd = NULL;
        if (rd_open_core(path, NULL, &rd) == 0) {
            opened++;
            size_t nm;
            const struct rd_mapping *m = rd_mappings(rd, &nm);
            uint8_t buf[64];
            for (size_t i = 0; i < nm; i++) {
                rd_read(rd, m[i].start, buf, sizeof(buf));
                rd_read(rd, m[i].end - 8, buf, 16);
                rd_find_mapping(rd, m[i].start);
            }
            const struct rd_thread *th;
            size_t nth;
            rd_threads(rd, &th, &nth);
            char host[256];
            if (rd_exe_path(rd))
                rd_host_path(rd, rd_exe_path(rd), host, sizeof(host));
            rd_close(rd);
        }
    }
    CHECK(opened > 0); /* some mutants stay valid: the readers were exercised */
    free(copy);
    eg_free(&b);
}

static void test_self_reader(void)
{
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_self(&rd), 0);
    if (!rd)
        return;
    CHECK_EQ(rd_kind(rd), RD_SELF);
    CHECK_EQ(rd_pid(rd), getpid());
    static volatile uint64_t known = 0xfeedfacecafebeefULL;
    uint64_t v = 0;
    CHECK_EQ(rd_read_u64(rd, (uint64_t)(uintptr_t)&known, &v), 0);
    CHECK_EQ_U64(v, 0xfeedfacecafebeefULL);
    uint32_t v32 = 0;
    CHECK_EQ(rd_read_u32(rd, (uint64_t)(uintptr_t)&known, &v32), 0);
    CHECK_EQ_U64(v32, 0xcafebeefu);
    /* An address that was mapped and no longer is. */
    void *page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(page != MAP_FAILED);
    uint64_t gone = (uint64_t)(uintptr_t)page;
    munmap(page, PAGE);
    uint8_t buf[16];
    CHECK_EQ(rd_read(rd, gone, buf, sizeof(buf)), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read(rd, 0, buf, 8), -SCRY_E_READ_FAILED);
    CHECK_EQ(rd_read_u64(rd, 8, &v), -SCRY_E_READ_FAILED);
    CHECK_EQ_U64(v, 0);
    /* The mappings include the page holding `known`, and our executable. */
    const struct rd_mapping *m = rd_find_mapping(rd, (uint64_t)(uintptr_t)&known);
    CHECK(m != NULL && (m->prot & RD_PROT_R));
    CHECK(rd_exe_path(rd) != NULL);
    size_t nm;
    const struct rd_mapping *all = rd_mappings(rd, &nm);
    int sorted = nm > 3;
    for (size_t i = 1; i < nm; i++)
        sorted &= all[i - 1].start <= all[i].start;
    CHECK(sorted);
    const struct rd_thread *th;
    size_t nth;
    CHECK_EQ(rd_threads(rd, &th, &nth), 0);
    CHECK(nth >= 1 && th[0].tid == getpid());
    rd_close(rd);
}

static volatile uint64_t child_value = 0;

static void test_pid_reader(void)
{
    child_value = 0xabcdef0123456789ULL;
    int to_child[2], from_child[2];
    CHECK_EQ(pipe(to_child), 0);
    CHECK_EQ(pipe(from_child), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(to_child[1]);
        close(from_child[0]);
        char c;
        /* Tell the parent we are ready, wait for a byte, answer it, and exit. */
        if (write(from_child[1], "r", 1) != 1)
            _exit(1);
        if (read(to_child[0], &c, 1) != 1)
            _exit(2);
        c++;
        if (write(from_child[1], &c, 1) != 1)
            _exit(3);
        _exit(0);
    }
    close(to_child[0]);
    close(from_child[1]);
    char c = 0;
    CHECK_EQ(read(from_child[0], &c, 1), 1);
    struct rd_reader *rd = NULL;
    int ret = rd_open_pid(pid, &rd);
    CHECK_EQ(ret, 0);
    if (ret < 0)
        fprintf(stderr, "  %s\n", err_last_message());
    if (rd) {
        CHECK_EQ(rd_kind(rd), RD_PID);
        CHECK_EQ(rd_pid(rd), pid);
        uint64_t v = 0;
        CHECK_EQ(rd_read_u64(rd, (uint64_t)(uintptr_t)&child_value, &v), 0);
        CHECK_EQ_U64(v, 0xabcdef0123456789ULL);
        uint8_t buf[8];
        CHECK_EQ(rd_read(rd, 8, buf, 8), -SCRY_E_READ_FAILED);
        const struct rd_thread *th;
        size_t nth;
        /* The child wrote its byte just before blocking in read(2): wait for it to block. */
        for (int tries = 0; tries < 400; tries++) {
            if (rd_threads(rd, &th, &nth) < 0 || (nth == 1 && th[0].state == 'S'))
                break;
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        CHECK_EQ(rd_threads(rd, &th, &nth), 0);
        CHECK_EQ(nth, 1);
        if (nth == 1) {
            CHECK_EQ(th[0].tid, pid);
            CHECK_EQ(th[0].state, 'S'); /* blocked in read(2) */
        }
        char host[512];
        CHECK(strncmp(rd_host_path(rd, "/usr/lib/x.so", host, sizeof(host)), "/proc/", 6) == 0);
        CHECK(rd_exe_path(rd) != NULL);
        CHECK_EQ(rd_pause(rd), 0);
        /* While stopped: the state is 't' (tracing stop), and reads still work. */
        char path[64], stat[512] = {0};
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        FILE *fp = fopen(path, "r");
        if (fp) {
            if (!fgets(stat, sizeof(stat), fp))
                stat[0] = 0;
            fclose(fp);
        }
        char *paren = strrchr(stat, ')');
        CHECK(paren && paren[1] == ' ' && paren[2] == 't');
        CHECK_EQ(rd_read_u64(rd, (uint64_t)(uintptr_t)&child_value, &v), 0);
        CHECK_EQ(rd_pause(rd), 0); /* twice is harmless */
        rd_resume(rd);
        rd_resume(rd);
    }
    /* After the resume the child still runs: it answers. */
    c = 'a';
    CHECK_EQ(write(to_child[1], &c, 1), 1);
    c = 0;
    CHECK_EQ(read(from_child[0], &c, 1), 1);
    CHECK_EQ(c, 'b');
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rd_close(rd);
    close(to_child[1]);
    close(from_child[0]);
}

static char proc_state(pid_t pid)
{
    char path[64], stat[512] = {0};
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    if (!fgets(stat, sizeof(stat), fp))
        stat[0] = 0;
    fclose(fp);
    char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) { got_usr1 = sig; }

/* A signal that reaches scry while a target is stopped detaches the target first; a handler the
 * program had installed still runs afterwards (here the "scry" process survives the signal, so
 * only our handler, not the kernel's detach-on-exit, can have let the target go). */
static void test_pid_signal_detaches(void)
{
    pid_t target = fork();
    if (target == 0) {
        for (;;) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    int sync[2];
    CHECK_EQ(pipe(sync), 0);
    pid_t tracer = fork();
    if (tracer == 0) {
        close(sync[0]);
        struct sigaction sa = {0};
        sa.sa_handler = on_usr1;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR1, &sa, NULL);
        struct rd_reader *rd = NULL;
        char c = 'p';
        if (rd_open_pid(target, &rd) < 0 || rd_pause(rd) < 0)
            c = 'e';
        if (write(sync[1], &c, 1) != 1)
            _exit(1);
        while (!got_usr1) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        c = 'd';
        if (write(sync[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause(); /* still alive, still the tracer of nothing */
    }
    close(sync[1]);
    char c = 0;
    CHECK_EQ(read(sync[0], &c, 1), 1);
    CHECK_EQ(c, 'p');
    CHECK_EQ(proc_state(target), 't');
    kill(tracer, SIGUSR1);
    CHECK_EQ(read(sync[0], &c, 1), 1);
    CHECK_EQ(c, 'd');
    char st = 0;
    for (int tries = 0; tries < 200; tries++) {
        st = proc_state(target);
        if (st != 't')
            break;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(st == 'S' || st == 'R');
    kill(tracer, SIGKILL);
    kill(target, SIGKILL);
    waitpid(tracer, NULL, 0);
    waitpid(target, NULL, 0);
    close(sync[0]);
}

static void test_pid_gone(void)
{
    struct rd_reader *rd = NULL;
    CHECK_EQ(rd_open_pid(0x3ffffff0, &rd), -SCRY_E_NO_SUCH_PROCESS);
    CHECK(strstr(err_last_message(), "1073741808") != NULL);
    CHECK(rd == NULL);
    CHECK_EQ(rd_open_pid(-5, &rd), -SCRY_E_NO_SUCH_PROCESS);
    /* A zombie (exited, not yet reaped) is gone too. */
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK_EQ(rd_open_pid(pid, &rd), -SCRY_E_NO_SUCH_PROCESS);
    waitpid(pid, NULL, 0);
    CHECK_EQ(rd_open_pid(pid, &rd), -SCRY_E_NO_SUCH_PROCESS);
}

static const struct tl_test tests[] = {
    TL(test_core_page_size_1),
    TL(test_core_page_size_4096),
    TL(test_core_exe_override),
    TL(test_core_missing_or_short_file),
    TL(test_bad_cores),
    TL(test_core_mutations),
    TL(test_self_reader),
    TL(test_pid_reader),
    TL(test_pid_signal_detaches),
    TL(test_pid_gone),
};

TL_MAIN(tests)
