/* What every reader's fuzz target does with a reader that opened: reads at and around each
 * mapping's ends, looks mappings up, reads past the address space, lists the threads and asks
 * for the executable and the pid, each path through the reader's bounds checks. */
#ifndef SCRY_TESTS_FUZZ_READER_EXERCISE_H
#define SCRY_TESTS_FUZZ_READER_EXERCISE_H

#include <stdint.h>

#include "reader/reader.h"

static inline void fuzz_exercise_reader(struct rd_reader *rd)
{
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
}

#endif
