/* The struct py_layout of every supported version for the unit tests over synthetic memory
 * images (test_frame_walk.c, test_heap_walk.c): 3.11 and 3.12 from their tables, 3.13, 3.14 and
 * 3.15 from the real _Py_DebugOffsets blocks of pyenv's 3.13.0, 3.14.10 and 3.15.2 (read from
 * _PyRuntime in the running interpreters, ctypes.string_at), through py_layout_from_debug_offsets
 * as a target's would be. */
#ifndef SCRY_TEST_LAYOUTS_H
#define SCRY_TEST_LAYOUTS_H

#include <stdint.h>

#include "cpython/layout.h"

/* ---- the real _Py_DebugOffsets blocks -------------------------------------------------------- */

static const uint64_t dbg_313[73] = {
    0x7970677562656478, 51183856, 0, 283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656,
    7640, 7648, 16, 7752, 0, 7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56,
    72, 70, 208, 112, 120, 128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168, 32, 24, 16,
    40, 24, 16, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 240, 200};

static const uint64_t dbg_314[95] = {
    0x7970677562656478, 51251952, 0, 316616, 784, 808, 225864, 7280, 7272, 7344, 7360, 7408,
    7688, 7672, 7680, 16, 7784, 0, 7800, 7792, 7992, 0, 832, 0, 8, 16, 72, 152, 160, 232, 32,
    88, 8, 0, 56, 80, 74, 64, 0, 216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0, 16, 8, 416,
    24, 88, 168, 40, 32, 16, 40, 24, 16, 200, 24, 40, 32, 48, 32, 40, 24, 16, 32, 16, 24, 40,
    16, 32, 64, 32, 16, 40, 264, 192, 160, 24, 72, 67, 0, 8, 24, 304, 8076, 0, 4, 512};

static const uint64_t dbg_315[111] = {
    0x7970677562656478, 51315440, 0, 346568, 912, 936, 226240, 7272, 7264, 7336, 7352, 7400,
    7592, 7576, 7584, 16, 7736, 0, 7752, 7744, 7944, 0, 888, 0, 8, 16, 72, 80, 88, 96, 176,
    184, 256, 32, 36, 40, 136, 288, 0, 88, 8, 0, 56, 80, 74, 64, 0, 216, 112, 120, 128, 136,
    68, 52, 96, 104, 208, 0, 16, 8, 424, 24, 88, 168, 32, 288, 944, 888, 40, 32, 16, 40, 24,
    16, 200, 24, 40, 32, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 56, 176,
    112, 120, 1120, 104, 160, 24, 72, 67, 0, 8, 24, 344, 8028, 0, 4, 512};

static struct py_layout layouts[16];

/* The layout of minor version 11-15 as scry would load it from a target. */
static inline const struct py_layout *layout(int minor)
{
    if (minor <= 12)
        return py_layout_table(minor);
    const uint64_t *b = minor == 13 ? dbg_313 : minor == 14 ? dbg_314 : dbg_315;
    size_t n = minor == 13 ? 73 : minor == 14 ? 95 : 111;
    if (py_layout_from_debug_offsets(minor, false, (const uint8_t *)b, n * 8,
                                     &layouts[minor]) != 0)
        return NULL;
    return &layouts[minor];
}

static const int minors[] = {11, 12, 13, 14, 15};
/* Runs the statement after it once per supported version, with L that version's layout. */
#define FOR_EACH_VERSION(L)                                                                        \
    for (size_t vi_ = 0; vi_ < sizeof(minors) / sizeof(minors[0]); vi_++)                          \
        for (const struct py_layout *L = layout(minors[vi_]); L; L = NULL)

#endif
