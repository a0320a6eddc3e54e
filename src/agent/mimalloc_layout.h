/* What the agent reads of the mimalloc that CPython 3.13t vendors (src/agent/mimalloc_sizes.c):
 * the numbers are cpython/mimalloc_layout.h's, which the heap walker shares and
 * tests/tools/mimalloc_offsets.c checks against the headers. */
#ifndef SCRY_AGENT_MIMALLOC_LAYOUT_H
#define SCRY_AGENT_MIMALLOC_LAYOUT_H

#include "cpython/mimalloc_layout.h"

#define AG_MI_SEGMENT_SHIFT PY_MI_SEGMENT_SHIFT
#define AG_MI_SLICE_SHIFT PY_MI_SLICE_SHIFT
#define AG_MI_SEG_SEGMENT_SIZE PY_MI_SEG_SEGMENT_SIZE
#define AG_MI_SEG_SLICES PY_MI_SEG_SLICES
#define AG_MI_SLICE_SIZE PY_MI_SLICE_SIZE
#define AG_MI_PAGE_SLICE_OFFSET PY_MI_PAGE_SLICE_OFFSET
#define AG_MI_PAGE_XBLOCK_SIZE PY_MI_PAGE_XBLOCK_SIZE
#define AG_MI_HUGE_BLOCK_SIZE PY_MI_HUGE_BLOCK_SIZE
#define AG_MI_SMALL_OBJ_SIZE_MAX PY_MI_SMALL_OBJ_SIZE_MAX

#endif
