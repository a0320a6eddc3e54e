/* What scry reads of a free-threaded CPython (3.13t) to find its objects and size its blocks:
 * the mimalloc that CPython vendors (Objects/mimalloc), as its release build (MI_DEBUG 0: no
 * padding, no free-list keys, plain `next` pointers) compiles it on a 64-bit machine, where
 * CPython keeps its heaps, and the free-threaded object header. From include/python3.13t/
 * internal/mimalloc/mimalloc/types.h, pycore_mimalloc.h, pycore_tstate.h, pycore_interp.h and
 * object.h; tests/tools/mimalloc_offsets.c checks every number against those headers
 * (tests/e2e/test_layout_headers.py), and the heap walk's e2e suites against the live 3.13.15t.
 *
 * Users: the agent's block sizes (src/agent/mimalloc_sizes.c, through agent/mimalloc_layout.h)
 * and the heap walker's object discovery (src/cpython/heap_mimalloc.c).
 *
 * Facts checked against 3.13.15t's headers (and its live interpreter by the dump suites):
 *   segments: 32 MiB, aligned to their size; a segment's header holds one 96-byte mi_slice_t
 *     (which is mi_page_t) per 64 KiB slice; a page's blocks start at the segment plus its slice
 *     index times 64 KiB, plus 3 blocks (blocks <= 64 bytes) or 1 (<= 512 bytes);
 *   a block is free when it is on its page's `free`, `local_free` or `xthread_free` list (the
 *     last tagged in its low 2 bits) or on its heap's `thread_delayed_free` list; blocks past
 *     `capacity` were never handed out;
 *   each thread state (_PyThreadStateImpl) has four heaps: 0 PyMem, 1 non-GC objects, 2 GC
 *     objects, 3 GC objects with the two-word pre-header (managed dict and weakref) before the
 *     object; exited threads' pages go to the interpreter's abandoned pool, whose segment lists
 *     (`abandoned`, tagged in the bits below the segment size, and `abandoned_visited`) are
 *     chained by `abandoned_next`; there a page's heap is its `tag` (bits 3-6 of byte 8);
 *   the object header is 32 bytes: ob_tid, _padding, ob_mutex, ob_gc_bits (byte 11: 1 tracked,
 *     8 frozen), ob_ref_local (u32 at 12, UINT32_MAX when immortal), ob_ref_shared (at 16,
 *     the count shifted left by 2), ob_type (at 24). */
#ifndef SCRY_CPYTHON_MIMALLOC_LAYOUT_H
#define SCRY_CPYTHON_MIMALLOC_LAYOUT_H

#define PY_MI_SEGMENT_SHIFT 25          /* MI_SEGMENT_SHIFT: 32 MiB segments, aligned so */
#define PY_MI_SLICE_SHIFT 16            /* MI_SEGMENT_SLICE_SHIFT: 64 KiB slices */
#define PY_MI_SEG_SEGMENT_SIZE 32       /* offsetof(mi_segment_t, segment_size) */
#define PY_MI_SEG_ABANDONED_NEXT 176    /* offsetof(mi_segment_t, abandoned_next) */
#define PY_MI_SEG_SLICE_ENTRIES 248     /* offsetof(mi_segment_t, slice_entries) */
#define PY_MI_SEG_SLICES 264            /* offsetof(mi_segment_t, slices) */
#define PY_MI_SLICE_SIZE 96             /* sizeof(mi_slice_t), which is mi_page_t */
#define PY_MI_PAGE_SLICE_COUNT 0        /* offsetof(mi_page_t, slice_count) */
#define PY_MI_PAGE_SLICE_OFFSET 4       /* offsetof(mi_page_t, slice_offset) */
#define PY_MI_PAGE_TAG_BYTE 8           /* the byte of mi_page_t's bit-field `tag` */
#define PY_MI_PAGE_TAG_SHIFT 3          /* ... and its lowest bit; 4 bits wide */
#define PY_MI_PAGE_CAPACITY 10          /* offsetof(mi_page_t, capacity), uint16_t */
#define PY_MI_PAGE_FREE 16              /* offsetof(mi_page_t, free) */
#define PY_MI_PAGE_USED 24              /* offsetof(mi_page_t, used), uint32_t */
#define PY_MI_PAGE_XBLOCK_SIZE 28       /* offsetof(mi_page_t, xblock_size), uint32_t */
#define PY_MI_PAGE_LOCAL_FREE 32        /* offsetof(mi_page_t, local_free) */
#define PY_MI_PAGE_XTHREAD_FREE 40      /* offsetof(mi_page_t, xthread_free) */
#define PY_MI_PAGE_NEXT 56              /* offsetof(mi_page_t, next) */
#define PY_MI_HUGE_BLOCK_SIZE 0x80000000u /* MI_HUGE_BLOCK_SIZE */
#define PY_MI_SMALL_OBJ_SIZE_MAX 16384u /* MI_SMALL_OBJ_SIZE_MAX */
#define PY_MI_HEAP_SIZE 3064            /* sizeof(mi_heap_t) */
#define PY_MI_HEAP_PAGES 1040           /* offsetof(mi_heap_t, pages): MI_BIN_FULL + 1 queues */
#define PY_MI_HEAP_DELAYED_FREE 2840    /* offsetof(mi_heap_t, thread_delayed_free) */
#define PY_MI_HEAP_THREAD_ID 2848       /* offsetof(mi_heap_t, thread_id): pthread_self() */
#define PY_MI_QUEUE_SIZE 24             /* sizeof(mi_page_queue_t); `first` is at 0 */
#define PY_MI_BIN_FULL 74               /* MI_BIN_FULL */
#define PY_MI_POOL_ABANDONED 64         /* offsetof(mi_abandoned_pool_t, abandoned) */
#define PY_MI_POOL_VISITED 0            /* offsetof(mi_abandoned_pool_t, abandoned_visited) */

/* Where CPython keeps its heaps */
#define PY_MI_INTERP_POOL 10816 /* offsetof(PyInterpreterState, mimalloc.abandoned_pool) */
#define PY_MI_TSTATE 352        /* offsetof(_PyThreadStateImpl, mimalloc) */
#define PY_MI_TS_HEAPS 8        /* offsetof(struct _mimalloc_thread_state, heaps) */
#define PY_MI_TS_INITIALIZED 13872 /* offsetof(struct _mimalloc_thread_state, initialized) */
#define PY_MI_HEAP_GC 2         /* _Py_MIMALLOC_HEAP_GC */
#define PY_MI_HEAP_GC_PRE 3     /* _Py_MIMALLOC_HEAP_GC_PRE: the object 2 words into its block */

/* The free-threaded object header */
#define PY_FT_OB_GC_BITS 11     /* offsetof(PyObject, ob_gc_bits) */
#define PY_FT_OB_REF_LOCAL 12   /* offsetof(PyObject, ob_ref_local), uint32_t */
#define PY_FT_OB_REF_SHARED 16  /* offsetof(PyObject, ob_ref_shared): the count << 2, flags */
#define PY_FT_GC_TRACKED 1u     /* _PyGC_BITS_TRACKED */
#define PY_FT_GC_FROZEN 8u      /* _PyGC_BITS_FROZEN (gc.freeze) */

#endif
