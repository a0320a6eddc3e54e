/* platform/outfile.h on Linux (POSIX calls): output files through an unpredictable temporary
 * name, then rename. */
#include "platform/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "platform/random.h"

/* 12 characters of [a-z0-9] from getrandom (72 bits less a little); falls back on the clock and
 * the pid mixed together only where getrandom is missing: O_EXCL keeps even that safe, an
 * attacker who guesses the name can only make the creation fail. */
static void random_suffix(char *out, size_t n)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[32];
    if (n > sizeof(r))
        n = sizeof(r);
    if (pf_random(r, n, 1) != (ssize_t)n) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned long long x = (unsigned long long)ts.tv_nsec ^
                               ((unsigned long long)ts.tv_sec << 20) ^
                               ((unsigned long long)getpid() << 40);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r[i] = (unsigned char)x;
        }
    }
    for (size_t i = 0; i < n; i++)
        out[i] = chars[r[i] % (sizeof(chars) - 1)];
    out[n] = 0;
}

/* 1 or 2 if path (links followed) is the very file our stdout or stderr is, else -1. */
static int same_as_stdio(const char *path)
{
    struct stat p, f;
    if (stat(path, &p) != 0)
        return -1;
    for (int fd = 1; fd <= 2; fd++)
        if (fstat(fd, &f) == 0 && f.st_dev == p.st_dev && f.st_ino == p.st_ino)
            return fd;
    return -1;
}

int fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return high;
}

int outfile_open(struct outfile *of, const char *path, mode_t mode)
{
    of->fd = -1;
    of->path = of->tmp = NULL;
    if (!path || !*path)
        return err_fail(SCRY_E_IO, "the output path is empty");
    struct stat st;
    int own = same_as_stdio(path);
    if (own >= 0) {
        /* -o /dev/stdout and the like: our own output, written in place (replacing the link
         * would replace /dev/stdout itself). */
        of->fd = fcntl(own, F_DUPFD_CLOEXEC, 3);
        if (of->fd < 0)
            return err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(errno));
        if (!(of->path = strdup(path))) {
            outfile_abort(of);
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        }
        return 0;
    }
    if (lstat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return err_fail_hint(SCRY_E_IO, "give the path of a file to write",
                                 "cannot write %s: it is a directory", path);
        if ((S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) &&
            (st.st_uid == geteuid() || st.st_uid == 0)) {
            /* Named on purpose (/dev/null, one's own pipe): written in place, never replaced.
             * Another user's FIFO in a shared folder is replaced like any file: opening it
             * would wait for that user's reader. */
            of->fd = fd_above_stdio(open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC));
            if (of->fd < 0)
                return err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(errno));
            if (!(of->path = strdup(path))) {
                outfile_abort(of);
                return err_fail(SCRY_E_NO_MEMORY, "out of memory");
            }
            return 0;
        }
    }
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    if (!*base)
        return err_fail_hint(SCRY_E_IO, "give the path of a file to write",
                             "cannot write %s: it names a directory", path);
    size_t n = strlen(path) + 32;
    of->path = strdup(path);
    of->tmp = malloc(n);
    if (!of->path || !of->tmp) {
        outfile_abort(of);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    int e = EEXIST;
    for (int tries = 0; tries < 64 && e == EEXIST; tries++) {
        char suffix[13];
        random_suffix(suffix, 12);
        /* A dot file next to the target: hidden from ls and from globs on the target's name. */
        snprintf(of->tmp, n, "%.*s.%s.scry-%s", (int)dirlen, path, base, suffix);
        if (strlen(of->tmp) - dirlen > NAME_MAX) /* a long target name: keep the suffix only */
            snprintf(of->tmp, n, "%.*s.scry-%s", (int)dirlen, path, suffix);
        of->fd = open(of->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        e = of->fd < 0 ? errno : 0;
        if (of->fd >= 0 && (of->fd = fd_above_stdio(of->fd)) < 0) {
            e = errno;
            unlink(of->tmp);
            break;
        }
    }
    if (of->fd < 0) {
        free(of->tmp); /* nothing of ours to unlink */
        of->tmp = NULL;
        outfile_abort(of);
        if (e == ENOENT)
            return err_fail_hint(SCRY_E_IO, "create the directory first, or write somewhere else",
                                 "cannot write %s: its directory does not exist", path);
        return err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(e));
    }
    /* Exactly the mode asked for, whatever the umask made of the 0600 at creation. */
    if (fchmod(of->fd, mode) != 0) {
        e = errno;
        outfile_abort(of);
        return err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

int outfile_write_fd(int fd, const void *buf, size_t len, const char *name)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return err_fail(SCRY_E_IO, "cannot write %s: %s", name, strerror(n < 0 ? errno : EIO));
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int outfile_write(struct outfile *of, const void *buf, size_t len)
{
    return outfile_write_fd(of->fd, buf, len, of->path);
}

int outfile_commit(struct outfile *of)
{
    int err = 0;
    if (of->tmp && fsync(of->fd) != 0)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", of->path, strerror(errno));
    int fd = of->fd;
    of->fd = -1;
    if (close(fd) != 0 && !err)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", of->path, strerror(errno));
    if (!err && of->tmp) {
        if (rename(of->tmp, of->path) != 0) {
            err = err_fail(SCRY_E_IO, "cannot replace %s: %s", of->path, strerror(errno));
        } else {
            free(of->tmp); /* renamed: nothing left to unlink */
            of->tmp = NULL;
        }
    }
    outfile_abort(of);
    return err;
}

void outfile_abort(struct outfile *of)
{
    if (of->fd >= 0)
        close(of->fd);
    of->fd = -1;
    if (of->tmp)
        unlink(of->tmp);
    free(of->tmp);
    free(of->path);
    of->tmp = of->path = NULL;
}

int outfile_write_all(const char *path, const void *buf, size_t len, mode_t mode)
{
    struct outfile of;
    int err = outfile_open(&of, path, mode);
    if (!err)
        err = outfile_write(&of, buf, len);
    if (err) {
        outfile_abort(&of);
        return err;
    }
    return outfile_commit(&of);
}

int outfile_write_all_at(int dirfd, const char *dir, const char *name, const void *buf,
                         size_t len, mode_t mode)
{
    char shown[PATH_MAX + NAME_MAX + 2], tmp[NAME_MAX + 1];
    snprintf(shown, sizeof(shown), "%s/%s", dir, name);
    if (!*name || strchr(name, '/') || strlen(name) + 20 > NAME_MAX)
        return err_fail(SCRY_E_IO, "cannot write %s: not a plain file name", shown);
    int fd = -1, e = EEXIST;
    for (int tries = 0; tries < 64 && e == EEXIST; tries++) {
        char suffix[13];
        random_suffix(suffix, 12);
        snprintf(tmp, sizeof(tmp), ".%s.scry-%s", name, suffix);
        fd = fd_above_stdio(openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                                                   O_CLOEXEC, 0600));
        e = fd < 0 ? errno : 0;
    }
    if (fd < 0)
        return err_fail(SCRY_E_IO, "cannot write %s: %s", shown, strerror(e));
    int err = 0;
    if (fchmod(fd, mode) != 0)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", shown, strerror(errno));
    if (!err)
        err = outfile_write_fd(fd, buf, len, shown);
    if (!err && fsync(fd) != 0)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", shown, strerror(errno));
    if (close(fd) != 0 && !err)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", shown, strerror(errno));
    if (!err && renameat(dirfd, tmp, dirfd, name) != 0)
        err = err_fail(SCRY_E_IO, "cannot replace %s: %s", shown, strerror(errno));
    if (err)
        unlinkat(dirfd, tmp, 0);
    return err;
}

int outfile_write_new(const char *dir, const char *prefix, const char *suffix, const void *buf,
                      size_t len, char *path, size_t size)
{
    int fd = -1, e = EEXIST;
    for (int tries = 0; tries < 64 && e == EEXIST; tries++) {
        char rnd[13];
        random_suffix(rnd, 12);
        if ((size_t)snprintf(path, size, "%s/%s%s%s", dir, prefix, rnd, suffix) >= size)
            return err_fail(SCRY_E_IO, "the directory %s has too long a name", dir);
        fd = fd_above_stdio(open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                 OUTFILE_PRIVATE));
        e = fd < 0 ? errno : 0;
    }
    if (fd < 0)
        return err_fail(SCRY_E_IO, "cannot create a file in %s: %s", dir, strerror(e));
    int err = outfile_write_fd(fd, buf, len, path);
    if (close(fd) != 0 && !err)
        err = err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(errno));
    if (err)
        unlink(path);
    return err;
}
