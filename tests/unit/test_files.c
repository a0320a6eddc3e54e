/* The file helpers: outfile (unpredictable temporary name, O_EXCL|O_NOFOLLOW, mode 0600, rename
 * over the target) and infile (regular files only, O_NONBLOCK, size caps). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "platform/infile.h"
#include "platform/outfile.h"
#include "testlib.h"

static const char *path_in(const char *dir, const char *name)
{
    static char buf[4][1024];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 1024, "%s/%s", dir, name);
    return p;
}

static const char *fresh_dir(const char *name)
{
    const char *d = path_in(tl_tmpdir(), name);
    CHECK_EQ(mkdir(d, 0700), 0);
    return d;
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static char *read_text(const char *path)
{
    char *data = NULL;
    size_t len;
    if (infile_read_all(path, "test file", 0, &data, &len) != 0)
        return NULL;
    return data;
}

static void test_outfile_replaces_a_symlink(void)
{
    const char *d = fresh_dir("symlink");
    const char *victim = path_in(tl_tmpdir(), "victim");
    write_text(victim, "precious");
    const char *target = path_in(d, "out.json");
    CHECK_EQ(symlink(victim, target), 0);
    mode_t old = umask(0);
    CHECK_EQ(outfile_write_all(target, "new", 3, OUTFILE_PRIVATE), 0);
    umask(old);
    struct stat st;
    CHECK_EQ(lstat(target, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0600);
    char *t = read_text(target), *v = read_text(victim);
    CHECK_STR(t, "new");
    CHECK_STR(v, "precious");
    free(t);
    free(v);
    CHECK_EQ(entries(d), 1); /* nothing left behind */
}

/* outfile_write_all_at: through a directory's O_PATH descriptor, by name; the directory's path
 * is not resolved again (a rename of it does not matter), and a link at the name is replaced. */
static void test_outfile_write_all_at(void)
{
    const char *d = fresh_dir("at");
    const char *victim = path_in(tl_tmpdir(), "victim-at");
    write_text(victim, "precious");
    CHECK_EQ(symlink(victim, path_in(d, "control")), 0);
    int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(fd >= 0);
    char moved[1024], ctl[1100];
    snprintf(moved, sizeof(moved), "%s/at-moved", tl_tmpdir());
    snprintf(ctl, sizeof(ctl), "%s/control", moved);
    CHECK_EQ(rename(d, moved), 0);
    mode_t old = umask(0);
    CHECK_EQ(outfile_write_all_at(fd, d, "control", "off\n", 4, OUTFILE_PRIVATE), 0);
    umask(old);
    struct stat st;
    CHECK_EQ(lstat(ctl, &st), 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK_EQ(st.st_mode & 07777, 0600);
    char *t = read_text(ctl), *v = read_text(victim);
    CHECK_STR(t, "off\n");
    CHECK_STR(v, "precious");
    free(t);
    free(v);
    CHECK_EQ(entries(moved), 1);
    CHECK_EQ(outfile_write_all_at(fd, d, "a/b", "x", 1, OUTFILE_PRIVATE), -SCRY_E_IO);
    close(fd);
}

static void test_outfile_temporary_names(void)
{
    const char *d = fresh_dir("names");
    const char *target = path_in(d, "snap.heap");
    struct outfile a, b;
    CHECK_EQ(outfile_open(&a, target, OUTFILE_PRIVATE), 0);
    CHECK_EQ(outfile_open(&b, target, OUTFILE_PRIVATE), 0);
    /* Two writers of one target get two different hidden files next to it, neither named after
     * the pid. */
    CHECK(strcmp(a.tmp, b.tmp) != 0);
    CHECK(strncmp(a.tmp, d, strlen(d)) == 0 && a.tmp[strlen(d) + 1] == '.');
    char pid[32];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    CHECK(strstr(a.tmp + strlen(d), pid) == NULL);
    CHECK_EQ(entries(d), 2);
    CHECK_EQ(outfile_write(&a, "a", 1), 0);
    outfile_abort(&b);
    outfile_abort(&b); /* twice is fine */
    CHECK_EQ(entries(d), 1);
    CHECK_EQ(outfile_commit(&a), 0);
    CHECK_EQ(entries(d), 1);
    CHECK(access(target, F_OK) == 0);
}

static void test_outfile_errors(void)
{
    struct outfile o;
    CHECK_EQ(outfile_open(&o, "/nonexistent-dir/x.json", OUTFILE_PRIVATE), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "does not exist") != NULL);
    CHECK_EQ(outfile_open(&o, tl_tmpdir(), OUTFILE_PRIVATE), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "directory") != NULL);
    /* A device is written in place, never replaced. */
    CHECK_EQ(outfile_write_all("/dev/null", "x", 1, OUTFILE_PRIVATE), 0);
    struct stat st;
    CHECK_EQ(stat("/dev/null", &st), 0);
    CHECK(S_ISCHR(st.st_mode));
}

/* outfile_write_new: a new private file that stays (the browser's page): unpredictable names,
 * never an existing file or link, nothing left behind on failure. */
static void test_outfile_write_new(void)
{
    const char *d = fresh_dir("new");
    char a[1024], b[1024];
    CHECK_EQ(outfile_write_new(d, "scry-profile-", ".html", "<p>", 3, a, sizeof(a)), 0);
    CHECK_EQ(outfile_write_new(d, "scry-profile-", ".html", "", 0, b, sizeof(b)), 0);
    CHECK(strcmp(a, b) != 0);
    CHECK(strncmp(a, d, strlen(d)) == 0);
    const char *base = a + strlen(d) + 1;
    CHECK(strncmp(base, "scry-profile-", 13) == 0 && strlen(base) == 13 + 12 + 5);
    CHECK(strcmp(a + strlen(a) - 5, ".html") == 0);
    struct stat st;
    CHECK_EQ(lstat(a, &st), 0);
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600 && st.st_size == 3);
    CHECK_EQ(entries(d), 2);
    /* A directory that does not exist: an io_error naming it, nothing created. */
    err_clear();
    CHECK_EQ(outfile_write_new(path_in(d, "missing"), "p-", ".html", "x", 1, a, sizeof(a)),
             -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "missing") != NULL);
    /* A name that does not fit the buffer is refused, not cut. */
    char tiny[16];
    CHECK_EQ(outfile_write_new(d, "scry-profile-", ".html", "x", 1, tiny, sizeof(tiny)),
             -SCRY_E_IO);
    CHECK_EQ(entries(d), 2);
}

static void test_infile_refuses_what_is_not_a_regular_file(void)
{
    const char *d = fresh_dir("inputs");
    const char *fifo = path_in(d, "fifo");
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    int fd;
    uint64_t size;
    /* Without O_NONBLOCK this open would wait for a writer forever. */
    CHECK_EQ(infile_open(fifo, "profile", 0, &fd, &size), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "is a FIFO, not a regular file") != NULL);
    CHECK_EQ(infile_open("/dev/zero", "profile", 0, &fd, &size), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "character device") != NULL);
    CHECK_EQ(infile_open(d, "snapshot", 0, &fd, &size), -SCRY_E_IO);
    CHECK(strstr(err_last_message(), "directory") != NULL);
    CHECK_EQ(infile_open(path_in(d, "missing"), "core", 0, &fd, &size), -SCRY_E_IO);
}

static void test_infile_caps(void)
{
    const char *d = fresh_dir("caps");
    const char *f = path_in(d, "ten");
    write_text(f, "0123456789");
    char *data;
    size_t len;
    CHECK_EQ(infile_read_all(f, "profile", 10, &data, &len), 0);
    CHECK_EQ(len, 10);
    CHECK_STR(data, "0123456789");
    free(data);
    CHECK_EQ(infile_read_all(f, "profile", 9, &data, &len), -SCRY_E_TOO_LARGE);
    CHECK(strstr(err_last_message(), "10 bytes") != NULL);
    CHECK_STR(err_code_name(SCRY_E_TOO_LARGE), "too_large");
    int fd;
    uint64_t size;
    CHECK_EQ(infile_open(f, "profile", 0, &fd, &size), 0);
    CHECK_EQ(size, 10);
    CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

static const struct tl_test tests[] = {
    TL(test_outfile_replaces_a_symlink),
    TL(test_outfile_write_all_at),
    TL(test_outfile_temporary_names),
    TL(test_outfile_errors),
    TL(test_outfile_write_new),
    TL(test_infile_refuses_what_is_not_a_regular_file),
    TL(test_infile_caps),
};

TL_MAIN(tests)
