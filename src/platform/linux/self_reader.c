/* The reader over this process's own memory. Reads go through process_vm_readv on our own pid,
 * which reports an unmapped address as EFAULT instead of faulting; where a seccomp policy forbids
 * that call, /proc/self/mem (pread fails with EIO on unmapped pages) does the same job. */
#include "reader/reader_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/error.h"

struct self_state {
    int mem_fd; /* /proc/self/mem, opened only when process_vm_readv is refused; -1 before */
    bool use_mem;
};

static int self_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    struct self_state *st = rd->priv;
    size_t done = 0;
    while (done < len) {
        ssize_t n;
        uint64_t at = addr + done;
        if (!st->use_mem) {
            struct iovec local = {(char *)buf + done, len - done};
            struct iovec remote = {(void *)(uintptr_t)at, len - done};
            n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
            if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
                st->mem_fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
                if (st->mem_fd >= 0 && st->mem_fd < 3) {
                    /* In scry's agent, fds 0-2 are the program's even when it closed them. */
                    int high = fcntl(st->mem_fd, F_DUPFD_CLOEXEC, 3);
                    close(st->mem_fd);
                    st->mem_fd = high;
                }
                if (st->mem_fd < 0)
                    return err_fail(SCRY_E_READ_FAILED,
                                    "cannot read own memory: process_vm_readv and /proc/self/mem "
                                    "are both refused");
                st->use_mem = true;
                continue;
            }
        } else {
            if (at > (uint64_t)LLONG_MAX)
                return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx", len,
                                (unsigned long long)addr);
            n = pread(st->mem_fd, (char *)buf + done, len - done, (off_t)at);
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx: 0x%llx is not mapped",
                            len, (unsigned long long)addr, (unsigned long long)at);
        done += (size_t)n;
    }
    return 0;
}

static int self_threads(struct rd_reader *rd) { return rd_threads_proc(rd, getpid()); }

static void self_close(struct rd_reader *rd)
{
    struct self_state *st = rd->priv;
    if (st && st->mem_fd >= 0)
        close(st->mem_fd);
    free(st);
}

static const struct rd_ops self_ops = {
    .read = self_read,
    .threads = self_threads,
    .close = self_close,
};

int rd_open_self(struct rd_reader **out)
{
    *out = NULL;
    struct rd_reader *rd = rd_alloc(RD_SELF, &self_ops);
    struct self_state *st = calloc(1, sizeof(*st));
    int ret = 0;
    if (!rd || !st) {
        free(st);
        free(rd);
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate a reader");
    }
    st->mem_fd = -1;
    rd->priv = st;
    rd->pid = getpid();
    ret = rd_maps_read(0, &rd->arena, &rd->maps, &rd->nmaps);
    if (ret < 0)
        goto out;
    rd_set_exe_from_link(rd, "/proc/self/exe");
    *out = rd;
    rd = NULL;
out:
    rd_close(rd);
    return ret;
}
