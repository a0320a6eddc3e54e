/* The layout of each CPython version scry reads: the tables generated per version from the
 * interpreters' headers (layout_311.c ... layout_315.c, by tests/tools/gen_layouts.py; declared
 * in layout_tables.h; layout_313t.c for 3.13's free-threaded build) and the reader of _Py_DebugOffsets for 3.13-3.15, which starts from the
 * version's fixed table and fills in what the target's block gives.
 * tests/e2e/test_layout_headers.py checks every number against each installed interpreter's
 * headers and the committed files against the generator. Facts and sources:
 * shared/reference/cpython-internals.md sections 3.2-3.9. */
#include "layout.h"

#include <string.h>

#include "common/error.h"
#include "cpython/layout_tables.h"

const struct py_layout *py_layout_table(int minor)
{
    switch (minor) {
    case 11:
        return &py_layout_311;
    case 12:
        return &py_layout_312;
    default:
        return NULL;
    }
}

const struct py_layout *py_debug_layout_fixed(int minor, bool free_threaded,
                                              const struct py_dbg_field **fields,
                                              size_t *nfields, const int **gil)
{
    if (free_threaded) {
        if (minor != 13)
            return NULL;
        *fields = py_dbg_fields_313t;
        *nfields = py_dbg_nfields_313t;
        *gil = py_dbg_gil_313t;
        return &py_layout_fixed_313t;
    }
    switch (minor) {
    case 13:
        *fields = py_dbg_fields_313;
        *nfields = py_dbg_nfields_313;
        *gil = py_dbg_gil_313;
        return &py_layout_fixed_313;
    case 14:
        *fields = py_dbg_fields_314;
        *nfields = py_dbg_nfields_314;
        *gil = py_dbg_gil_314;
        return &py_layout_fixed_314;
    case 15:
        *fields = py_dbg_fields_315;
        *nfields = py_dbg_nfields_315;
        *gil = py_dbg_gil_315;
        return &py_layout_fixed_315;
    default:
        return NULL;
    }
}

size_t py_debug_offsets_size(int minor, bool free_threaded)
{
    if (free_threaded)
        return minor == 13 ? py_dbg_size_313t : 0;
    switch (minor) {
    case 13:
        return py_dbg_size_313;
    case 14:
        return py_dbg_size_314;
    case 15:
        return py_dbg_size_315;
    default:
        return 0;
    }
}

static uint64_t block_u64(const uint8_t *block, int idx)
{
    uint64_t v;
    memcpy(&v, block + (size_t)idx * 8, 8);
    return v;
}

int py_layout_from_debug_offsets(int minor, bool free_threaded, const uint8_t *block, size_t len,
                                 struct py_layout *out)
{
    const struct py_dbg_field *fields;
    size_t nfields;
    const int *gil;
    const struct py_layout *fixed =
        py_debug_layout_fixed(minor, free_threaded, &fields, &nfields, &gil);
    if (!fixed)
        return err_fail(SCRY_E_INTERNAL, "no _Py_DebugOffsets layout for 3.%d%s", minor,
                        free_threaded ? "t" : "");
    if (len < py_debug_offsets_size(minor, free_threaded) || memcmp(block, "xdebugpy", 8) != 0)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON, "_Py_DebugOffsets block is missing or short");

    *out = *fixed;
    for (size_t i = 0; i < nfields; i++) {
        uint64_t v = block_u64(block, fields[i].idx);
        uint64_t size = block_u64(block, fields[i].size_idx);
        /* A struct over 1 MiB or a field past its struct's end means the block is not what this
         * version's header says: refuse rather than read garbage. */
        if (size == 0 || size > (1u << 20) || (fields[i].idx != fields[i].size_idx && v >= size))
            return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                            "_Py_DebugOffsets of this Python 3.%d do not have the expected shape "
                            "(field %s = %llu, struct size %llu)",
                            minor, fields[i].name, (unsigned long long)v,
                            (unsigned long long)size);
        memcpy((uint8_t *)out + fields[i].layout_off, &v, sizeof(v));
    }
    uint64_t gil_start = block_u64(block, gil[0]);
    uint64_t gil_locked = block_u64(block, gil[1]);
    uint64_t gil_holder = block_u64(block, gil[2]);
    if (gil_locked < gil_start || gil_holder < gil_start || gil_locked - gil_start > 4096 ||
        gil_holder - gil_start > 4096)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "_Py_DebugOffsets GIL fields of this Python 3.%d are inconsistent", minor);

    out->gil_locked = gil_locked - gil_start;
    out->gil_last_holder = gil_holder - gil_start;
    return 0;
}

bool py_heap_layout_windows(int minor, struct py_heap_layout *out)
{
    if (minor != 13)
        return false;
    *out = py_heap_layout_313;
    out->ts_context = 200; /* after thread_id and native_thread_id, 4 bytes each */
    return true;
}

const struct py_heap_layout *py_heap_layout_table(int minor, bool free_threaded)
{
    if (free_threaded)
        return minor == 13 ? &py_heap_layout_313t : NULL;
    switch (minor) {
    case 11:
        return &py_heap_layout_311;
    case 12:
        return &py_heap_layout_312;
    case 13:
        return &py_heap_layout_313;
    case 14:
        return &py_heap_layout_314;
    case 15:
        return &py_heap_layout_315;
    default:
        return NULL;
    }
}
