/* What the allocation recorder's BPF program (alloc_record.bpf.c) and its user space
 * (src/ebpf/record_alloc.c) share: the records of the ring buffer and the bounds of the memory
 * copied for a stack. The BPF side interprets nothing of CPython beyond following a frame's
 * `previous` pointer; every offset comes from scry's layout tables through the program's
 * read-only configuration, and user space walks the copies with cpython/frame_walk.c. */
#ifndef SCRY_BPF_ALLOC_RECORD_H
#define SCRY_BPF_ALLOC_RECORD_H

#include <linux/types.h>

#define AR_MAX_FRAMES 48    /* frames copied per sample, innermost first */
#define AR_FRAME_BYTES 128  /* bytes copied per frame (PY_FW_MAX_FRAME_BYTES) */
#define AR_TSTATE_BYTES 512 /* bytes copied of the thread state (PY_FW_MAX_TSTATE_SPAN) */
#define AR_THREAD_WALK 64   /* thread states looked at for a thread not yet in the map */

enum ar_kind {
    AR_ALLOC = 1, /* a sampled block: addr, size, weight, the stack copies */
    AR_FREE = 2,  /* a sampled block freed (free, realloc that moved or shrank it to 0) */
};

enum ar_flags {
    AR_NO_TSTATE = 1,   /* the thread had no known Python thread state */
    AR_FAULT = 2,       /* a copy failed: the stack ends there */
    AR_DEPTH = 4,       /* the chain went on past AR_MAX_FRAMES */
    AR_ARENA = 8,       /* not a sample: a mapping of an arena's size (pymalloc's), whole */
};

/* The program's counters (its `stats` map), summed over CPUs by user space. */
enum ar_stat {
    AR_ST_SAMPLES,   /* samples sent */
    AR_ST_RING_FULL, /* records lost: the ring buffer was full */
    AR_ST_LIVE_FULL, /* samples not taken: the set of live sampled blocks was full */
    AR_ST_ARENAS,    /* arena mappings sent */
    AR_ST__N
};

struct ar_head {
    __u64 time_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
    __u32 tid;
    __u32 kind; /* enum ar_kind */
    __u64 addr;
};

struct ar_frame_copy {
    __u64 addr;
    __u8 bytes[AR_FRAME_BYTES];
};

struct ar_alloc {
    struct ar_head h;
    __u64 size, weight;
    __u64 tstate;       /* the thread state the copies start from, 0: none known */
    __u64 cframe;       /* 3.11, 3.12: the cframe whose current-frame word was copied */
    __u64 cframe_frame; /* that word */
    __u32 nframes;
    __u32 flags; /* enum ar_flags */
    __u8 tstate_bytes[AR_TSTATE_BYTES]; /* [tstate + ts_lo, tstate + ts_hi) */
    struct ar_frame_copy frames[AR_MAX_FRAMES]; /* the record may end after nframes of them */
};

/* The bytes of a record with room for n frames. */
#define AR_RECORD_BYTES(n) (__builtin_offsetof(struct ar_alloc, frames) + \
                            (n) * sizeof(struct ar_frame_copy))

/* The program's read-only configuration, set by user space before loading. */
struct ar_config {
    __u32 tgid;
    __u32 frame_bytes;      /* bytes of each frame the walk reads (<= AR_FRAME_BYTES) */
    __u64 window;           /* sampling window W in bytes */
    __u64 ts_lo, ts_hi;     /* the thread-state span the walk reads */
    __u64 ts_cframe;        /* 3.11, 3.12: offset of tstate->cframe, else 0 */
    __u64 cframe_current;   /* offset of cframe->current_frame */
    __u64 ts_current_frame; /* 3.13+: offset of tstate->current_frame */
    __u64 fr_previous;      /* offset of frame->previous */
    /* A thread not yet in the thread-state map is looked up in the main interpreter's list:
     * its address (0: no lookup) and the offsets of the list's head, a thread state's next and
     * its native thread id. */
    __u64 interp, is_threads_head, ts_next, ts_native_thread_id;
    /* The length of Python's small-object arenas (pymalloc: 1 MiB; 0: none recorded), mapped
     * whole by mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0). */
    __u64 arena_size;
};

#endif
