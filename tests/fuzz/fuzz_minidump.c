/* Fuzz target: an arbitrary file opened as a Windows minidump (rd_open_minidump_mem), then every
 * read path of the reader (mappings, threads, reads at and around every range) and the search
 * for python3XY.dll's _PyRuntime through its PE exports (py_runtime_open_pe). */
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "cpython/runtime.h"
#include "reader/reader.h"
#include "reader_exercise.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd_reader *rd = NULL;
    if (rd_open_minidump_mem(data, size, "fuzz.dmp", &rd) < 0)
        return 0;
    fuzz_exercise_reader(rd);
    struct py_runtime rt;
    py_runtime_open_pe(rd, &rt);
    rd_close(rd);
    return 0;
}
