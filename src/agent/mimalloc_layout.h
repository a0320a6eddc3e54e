/* The layout of the mimalloc that CPython 3.13 vendors (Objects/mimalloc), as its free-threaded
 * release build (MI_DEBUG 0: no padding, no free-list keys) compiles it on a 64-bit machine:
 * what src/agent/mimalloc_sizes.c reads. From include/python3.13t/internal/mimalloc/mimalloc/
 * types.h; tests/tools/mimalloc_offsets.c checks every number against those headers
 * (tests/e2e/test_layout_headers.py). */
#ifndef SCRY_AGENT_MIMALLOC_LAYOUT_H
#define SCRY_AGENT_MIMALLOC_LAYOUT_H

#define AG_MI_SEGMENT_SHIFT 25          /* MI_SEGMENT_SHIFT: 32 MiB segments, aligned so */
#define AG_MI_SLICE_SHIFT 16            /* MI_SEGMENT_SLICE_SHIFT: 64 KiB slices */
#define AG_MI_SEG_SEGMENT_SIZE 32       /* offsetof(mi_segment_t, segment_size) */
#define AG_MI_SEG_SLICES 264            /* offsetof(mi_segment_t, slices) */
#define AG_MI_SLICE_SIZE 96             /* sizeof(mi_slice_t), which is mi_page_t */
#define AG_MI_PAGE_SLICE_OFFSET 4       /* offsetof(mi_page_t, slice_offset) */
#define AG_MI_PAGE_XBLOCK_SIZE 28       /* offsetof(mi_page_t, xblock_size) */
#define AG_MI_HUGE_BLOCK_SIZE 0x80000000u /* MI_HUGE_BLOCK_SIZE */
#define AG_MI_SMALL_OBJ_SIZE_MAX 16384u /* MI_SMALL_OBJ_SIZE_MAX */

#endif
