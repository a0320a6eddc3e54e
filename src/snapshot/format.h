/* On-disk numbers of the heap snapshot format (docs/snapshot-format.md). These values are stored
 * in files: never renumber one, never reuse a retired one. The in-memory enums of other modules
 * (hw_edge_kind) are mapped to these by the code that feeds the writer. */
#ifndef SCRY_SNAPSHOT_FORMAT_H
#define SCRY_SNAPSHOT_FORMAT_H

#include <stdint.h>

#define SNAP_MAGIC "SCRYSNAP"
#define SNAP_MAJOR 1
#define SNAP_MINOR 1      /* a file without allocation samples */
#define SNAP_MINOR_ALOC 2 /* with an ALOC chunk (1.2) */
#define SNAP_MINOR_BUFS 3 /* with a BUFS chunk (1.3) */
#define SNAP_MINOR_ARNA 4 /* with an ARNA chunk (1.4) */

#define SNAP_HEADER_SIZE 64
#define SNAP_HEADER_CRC_OFF 60
#define SNAP_DIR_ENTRY_SIZE 24
#define SNAP_MAX_CHUNKS 1024
#define SNAP_CHUNK_ALIGN 8

/* Four ASCII letters as a little-endian u32. */
#define SNAP_FOURCC(a, b, c, d)                                                                    \
    ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

enum snap_chunk_type {
    SNAP_CHUNK_META = SNAP_FOURCC('M', 'E', 'T', 'A'),
    SNAP_CHUNK_STRS = SNAP_FOURCC('S', 'T', 'R', 'S'),
    SNAP_CHUNK_OBJS = SNAP_FOURCC('O', 'B', 'J', 'S'),
    SNAP_CHUNK_EDGE = SNAP_FOURCC('E', 'D', 'G', 'E'),
    SNAP_CHUNK_ROOT = SNAP_FOURCC('R', 'O', 'O', 'T'),
    SNAP_CHUNK_LOCS = SNAP_FOURCC('L', 'O', 'C', 'S'),
    SNAP_CHUNK_CONT = SNAP_FOURCC('C', 'O', 'N', 'T'),
    SNAP_CHUNK_INFR = SNAP_FOURCC('I', 'N', 'F', 'R'), /* 1.1 */
    SNAP_CHUNK_ALOC = SNAP_FOURCC('A', 'L', 'O', 'C'), /* 1.2: live allocation samples */
    SNAP_CHUNK_BUFS = SNAP_FOURCC('B', 'U', 'F', 'S'), /* 1.3: objects' own native blocks */
    SNAP_CHUNK_ARNA = SNAP_FOURCC('A', 'R', 'N', 'A'), /* 1.4: Python's arenas and their stacks */
};

/* Edge kinds (u8 on disk). The values equal cpython/heap_walk.h's hw_edge_kind on purpose; the
 * dump glue checks that with a static assertion rather than this module including cpython/. */
enum snap_edge_kind {
    SNAP_EDGE_ATTR = 0,
    SNAP_EDGE_DICT_KEY = 1,
    SNAP_EDGE_DICT_VALUE = 2,
    SNAP_EDGE_INDEX = 3,
    SNAP_EDGE_CELL = 4,
    SNAP_EDGE_LOCAL = 5,
    SNAP_EDGE_INTERNAL = 6,
    SNAP_EDGE_WEAK = 7,
};
#define SNAP_EDGE_KIND_MAX 7
/* Or'd into a kind given to the writer (never stored in EDGE): the reference was inferred by a
 * conservative scan. The writer lists such edges in the INFR chunk (1.1). Equal to
 * HW_EDGE_INFERRED. */
#define SNAP_EDGE_INFERRED 0x80

/* Object flags (u32 on disk); equal to hw_object_flags. */
enum snap_object_flags {
    SNAP_OBJ_GC_TRACKED = 1 << 0,
    SNAP_OBJ_IMMORTAL = 1 << 1,
    SNAP_OBJ_TYPE = 1 << 2,
};

/* META flags. */
enum snap_meta_flags {
    SNAP_META_CONTENTS = 1 << 0,
    /* (1.2+) the allocation samples are of the C allocator's blocks only (recorded from outside
     * with eBPF): Python's small objects carry no sample */
    SNAP_META_C_SAMPLES_ONLY = 1 << 1,
};

#define SNAP_META_SIZE_1_0 72
#define SNAP_OBJ_SIZE 24
#define SNAP_ROOT_SIZE 8
#define SNAP_LOC_SIZE 12
#define SNAP_CONT_SIZE 8
/* ALOC (1.2): a header, then the samples, the stacks and their frames. */
#define SNAP_ALOC_HEADER_SIZE 32
#define SNAP_ALOC_SAMPLE_SIZE 32
#define SNAP_ALOC_STACK_SIZE 8
#define SNAP_ALOC_FRAME_SIZE 12
/* BUFS (1.3): address, size, owning object, reserved. */
#define SNAP_BUF_SIZE 24
/* ARNA (1.4): address, size, stack, reserved. */
#define SNAP_ARNA_SIZE 24

#endif
