/* Fuzz target: an arbitrary file opened as an ELF core, then every read path of the core reader
 * (mappings, threads, reads at and around every mapping, host paths). The input goes to a memfd
 * because rd_open_core takes a path. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/error.h"
#include "reader/reader.h"
#include "reader_exercise.h"

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
    fuzz_exercise_reader(rd);
    rd_pause(rd);
    rd_resume(rd);
    rd_close(rd);
    return 0;
}
