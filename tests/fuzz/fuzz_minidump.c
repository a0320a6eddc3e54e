/* Fuzz target: an arbitrary file opened as a Windows minidump (rd_open_minidump_mem), then every
 * read path of the reader (mappings, threads, reads at and around every range) and the search
 * for python3XY.dll's _PyRuntime through its PE exports (py_runtime_open_pe). */
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "cpython/runtime.h"
#include "reader/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd_reader *rd = NULL;
    if (rd_open_minidump_mem(data, size, "fuzz.dmp", &rd) < 0)
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
    }
    uint64_t v;
    rd_read_u64(rd, 0, &v);
    rd_read_u64(rd, UINT64_MAX - 3, &v);
    const struct rd_thread *th;
    size_t nth;
    rd_threads(rd, &th, &nth);
    for (size_t i = 0; i < nth; i++)
        v += (uint64_t)th[i].tid + (uint64_t)th[i].state;
    rd_exe_path(rd);
    rd_pid(rd);
    struct py_runtime rt;
    py_runtime_open_pe(rd, &rt);
    rd_close(rd);
    return 0;
}
