/* platform/infile.h on Linux (POSIX calls): regular files only, with a size cap. */
#include "platform/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "common/grow.h"

static const char *kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

int infile_open(const char *path, const char *what, uint64_t max, int *fd, uint64_t *size)
{
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0)
        return err_fail(SCRY_E_IO, "cannot open the %s %s: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        int e = errno;
        close(f);
        return err_fail(SCRY_E_IO, "cannot read the %s %s: %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return err_fail_hint(SCRY_E_IO, "give the path of a regular file (copy a pipe's data "
                                        "to a file first)",
                             "the %s %s is %s, not a regular file", what, path, kind(st.st_mode));
    }
    if (max && (uint64_t)st.st_size > max) {
        close(f);
        return err_fail(SCRY_E_TOO_LARGE, "the %s %s has %llu bytes, more than the %llu scry reads",
                        what, path, (unsigned long long)st.st_size, (unsigned long long)max);
    }
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0)
        fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    *size = (uint64_t)st.st_size;
    return 0;
}

int infile_read_all(const char *path, const char *what, uint64_t max, char **data, size_t *len)
{
    int fd;
    uint64_t size;
    int err = infile_open(path, what, max, &fd, &size);
    if (err)
        return err;
    /* The file may grow while it is read (a profile still being written): never past max. */
    size_t cap = (size_t)size + 1, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading the %s %s", what, path);
    }
    for (;;) {
        if (n == cap) {
            if (max && n > max) {
                free(buf);
                close(fd);
                return err_fail(SCRY_E_TOO_LARGE, "the %s %s grew past the %llu bytes scry reads",
                                what, path, (unsigned long long)max);
            }
            size_t alloc = cap + 1; /* the byte after cap holds the terminating NUL */
            if (grow_array(&buf, &alloc, cap * 2 + 1, 1)) {
                free(buf);
                close(fd);
                return err_fail(SCRY_E_NO_MEMORY, "out of memory reading the %s %s", what, path);
            }
            cap = alloc - 1;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return err_fail(SCRY_E_IO, "cannot read the %s %s: %s", what, path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}
