/* Fuzz target: an arbitrary file opened as an ELF core, then every read path of the core reader
 * (mappings, threads, reads at and around every mapping, host paths). The input goes to a memfd
 * because rd_open_core takes a path. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/error.h"
#include "reader/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-core", MFD_CLOEXEC);
        if (fd < 0)
            return 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    struct rd_reader *rd = NULL;
    if (rd_open_core(path, size % 3 == 0 ? "/nonexistent/exe" : NULL, &rd) < 0)
        return 0;
    size_t nm;
    const struct rd_mapping *m = rd_mappings(rd, &nm);
    uint8_t buf[256];
    for (size_t i = 0; i < nm && i < 64; i++) {
        rd_read(rd, m[i].start, buf, 1);
        rd_read(rd, m[i].start, buf, sizeof(buf));
        rd_read(rd, m[i].end - 4, buf, 8);
        rd_find_mapping(rd, m[i].start);
        rd_find_mapping(rd, m[i].end);
        char host[256];
        rd_host_path(rd, m[i].path, host, sizeof(host));
    }
    uint64_t v;
    rd_read_u64(rd, 0, &v);
    rd_read_u64(rd, UINT64_MAX - 3, &v);
    const struct rd_thread *th;
    size_t nth;
    rd_threads(rd, &th, &nth);
    for (size_t i = 0; i < nth; i++)
        v += (uint64_t)th[i].tid + (uint64_t)th[i].state;
    const char *exe = rd_exe_path(rd);
    if (exe) {
        char host[256];
        rd_host_path(rd, exe, host, sizeof(host));
    }
    rd_pid(rd);
    rd_pause(rd);
    rd_resume(rd);
    rd_close(rd);
    return 0;
}
