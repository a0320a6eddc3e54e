// SPDX-License-Identifier: GPL-2.0
/* scry record --pid PID --allocations: uprobes on the C library's malloc, calloc, realloc and
 * free in one process (docs/allocations.md). Allocations are sampled by bytes exactly as the
 * agent samples them (src/agent/strata.h): each thread's stream of allocated bytes is cut into
 * windows of W bytes with one point at a uniformly random offset in each; a block carrying k
 * points is a sample of k * W bytes, a block of W bytes or more is always a sample of its size.
 * For each sample the thread's Python stack is copied raw (the thread state's span, the cframe
 * word, then each frame along `previous`) into the ring buffer; user space reads those copies with
 * cpython/frame_walk.c. Frees are reported only for sampled blocks (the `live` set), so that a
 * reused address is never credited to an old sample. GPL: bpf_probe_read_user needs it. */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "alloc_record.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct ar_config cfg = {};

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 16 << 20);
} rb SEC(".maps");

/* tid -> its PyThreadState (0: none), filled by user space from the interpreter's thread list
 * every 0.2 s, and by find_tstate for a thread met in between */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 8192);
    __type(key, __u32);
    __type(value, __u64);
} tstates SEC(".maps");

struct strata {
    __s64 until; /* bytes until the next point */
    __u64 tail;  /* bytes of the current window after its point */
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct strata);
} stratas SEC(".maps");

/* A call in flight (entry seen, return not yet): what its return must do. */
struct pending {
    __u64 size, weight, old;
    __u32 old_live; /* realloc: old was a sampled block */
    __u32 pad;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, struct pending);
} pendings SEC(".maps");

/* An mmap in flight that may be an arena's: its length (tid -> length). */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, __u64);
} mmaps SEC(".maps");

/* the addresses of the sampled blocks (and arenas) still allocated; allocated as they come (preallocated,
 * 2^20 entries would hold some 64 MiB of kernel memory for nothing) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1 << 20);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, __u64);
    __type(value, __u8);
} live SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct ar_alloc);
} scratch SEC(".maps");

/* counters (enum ar_stat), summed over CPUs by user space */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, AR_ST__N);
    __type(key, __u32);
    __type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 what)
{
    __u64 *v = bpf_map_lookup_elem(&stats, &what);
    if (v)
        *v += 1;
}

static __always_inline int ours(void)
{
    return (bpf_get_current_pid_tgid() >> 32) == cfg.tgid;
}

static __always_inline __u64 below(__u64 w)
{
    __u64 r = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();
    return r % w;
}

/* The bytes n stand for in the thread's stream (src/agent/strata.h, ag_strata_bytes). */
static __always_inline __u64 sampled_bytes(__u32 tid, __u64 n)
{
    __u64 w = cfg.window;
    if (!w)
        return 0;
    if (n >= w)
        return n;
    struct strata *s = bpf_map_lookup_elem(&stratas, &tid);
    if (!s) {
        struct strata fresh = {0, 0};
        bpf_map_update_elem(&stratas, &tid, &fresh, BPF_NOEXIST);
        s = bpf_map_lookup_elem(&stratas, &tid);
        if (!s)
            return 0;
    }
    if ((s->until -= (__s64)n) > 0)
        return 0;
    __u64 k = 0;
    if (!s->tail) { /* the stream's first window starts with these bytes */
        __u64 o = below(w);
        s->until += (__s64)o + 1;
        s->tail = w - o;
    }
    /* at most three rounds: n < w, and two windows' distances add up to more than w */
    for (int i = 0; i < 4 && s->until <= 0; i++) {
        __u64 o = below(w);
        k++;
        s->until += (__s64)(s->tail + o);
        s->tail = w - o;
    }
    return k * w;
}

static __always_inline void enter(__u64 size, __u64 old)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct pending p = {.size = size, .old = old};
    if (old && bpf_map_lookup_elem(&live, &old))
        p.old_live = 1;
    p.weight = size ? sampled_bytes(tid, size) : 0;
    if (p.weight || p.old_live)
        bpf_map_update_elem(&pendings, &tid, &p, BPF_ANY);
}

static __always_inline void emit_free(__u64 addr)
{
    if (bpf_map_delete_elem(&live, &addr) != 0)
        return; /* not a sampled block (or already reported) */
    struct ar_head *h = bpf_ringbuf_reserve(&rb, sizeof(*h), 0);
    if (!h) {
        count(AR_ST_RING_FULL);
        return;
    }
    h->time_ns = bpf_ktime_get_ns();
    h->tid = (__u32)bpf_get_current_pid_tgid();
    h->kind = AR_FREE;
    h->addr = addr;
    bpf_ringbuf_submit(h, 0);
}

/* The thread state of a thread that user space has not listed yet (one started since its last
 * look): the main interpreter's list is walked from its head, where new threads are put, and
 * what is found (0: none, a thread without Python or not yet bound) is remembered until user
 * space's next look replaces or removes it. */
static __always_inline __u64 find_tstate(__u32 tid)
{
    __u64 ts = 0, found = 0;
    if (!cfg.interp ||
        bpf_probe_read_user(&ts, 8, (const void *)(cfg.interp + cfg.is_threads_head)) != 0)
        return 0;
    for (int i = 0; i < AR_THREAD_WALK && ts; i++) {
        __u64 native = 0;
        if (bpf_probe_read_user(&native, 8, (const void *)(ts + cfg.ts_native_thread_id)) != 0)
            break;
        if (native == tid) {
            found = ts;
            break;
        }
        if (bpf_probe_read_user(&ts, 8, (const void *)(ts + cfg.ts_next)) != 0)
            break;
    }
    bpf_map_update_elem(&tstates, &tid, &found, BPF_ANY);
    return found;
}

/* Copies the calling thread's Python stack: its thread state's span, the cframe word (3.11,
 * 3.12) and each frame along `previous`, as raw bytes. */
static __always_inline void copy_stack(struct ar_alloc *e, __u32 tid)
{
    __u64 *known = bpf_map_lookup_elem(&tstates, &tid);
    __u64 ts = known ? *known : find_tstate(tid);
    __u64 lo = cfg.ts_lo, span = cfg.ts_hi - cfg.ts_lo;
    e->tstate = 0;
    e->cframe = e->cframe_frame = 0;
    e->nframes = 0;
    e->flags = 0;
    if (!ts) {
        e->flags = AR_NO_TSTATE;
        return;
    }
    e->tstate = ts;
    if (span > AR_TSTATE_BYTES || span < 8 ||
        bpf_probe_read_user(e->tstate_bytes, span,
                            (const void *)(ts + lo)) != 0) {
        e->flags = AR_FAULT;
        return;
    }
    __u64 frame = 0;
    __u64 off = cfg.ts_cframe ? cfg.ts_cframe - lo : cfg.ts_current_frame - lo;
    if (off > AR_TSTATE_BYTES - 8) {
        e->flags = AR_FAULT;
        return;
    }
    __builtin_memcpy(&frame, &e->tstate_bytes[off & (AR_TSTATE_BYTES - 1)], 8);
    if (cfg.ts_cframe) {
        e->cframe = frame;
        frame = 0;
        if (e->cframe && bpf_probe_read_user(&frame, 8,
                                             (const void *)(e->cframe + cfg.cframe_current)) != 0) {
            e->flags = AR_FAULT;
            return;
        }
        e->cframe_frame = frame;
    }
    __u32 fb = cfg.frame_bytes;
    __u64 prev = cfg.fr_previous;
    if (fb == 0 || fb > AR_FRAME_BYTES || prev > AR_FRAME_BYTES - 8)
        return;
    for (int i = 0; i < AR_MAX_FRAMES; i++) {
        if (!frame)
            return;
        struct ar_frame_copy *f = &e->frames[i];
        f->addr = frame;
        if (bpf_probe_read_user(f->bytes, fb, (const void *)frame)) {
            e->flags |= AR_FAULT;
            return;
        }
        e->nframes = i + 1;
        __builtin_memcpy(&frame, &f->bytes[prev & (AR_FRAME_BYTES - 1)], 8);
    }
    if (frame)
        e->flags |= AR_DEPTH;
}

/* Sends the record of a sampled block (or an arena: flags AR_ARENA) with the thread's stack,
 * and keeps its address among the live ones, so that its free is reported. */
static __always_inline void send(__u32 tid, __u64 ret, __u64 size, __u64 weight, __u32 flags)
{
    __u8 one = 1;
    if (bpf_map_update_elem(&live, &ret, &one, BPF_ANY) != 0) {
        count(AR_ST_LIVE_FULL);
        return;
    }
    __u32 zero = 0;
    struct ar_alloc *e = bpf_map_lookup_elem(&scratch, &zero);
    if (!e)
        return;
    e->h.time_ns = bpf_ktime_get_ns();
    e->h.tid = tid;
    e->h.kind = AR_ALLOC;
    e->h.addr = ret;
    e->size = size;
    e->weight = weight;
    copy_stack(e, tid);
    e->flags |= flags;
    /* a record is mostly its frames: send 8, 16, 32 or all 48 slots (sizes the verifier sees
     * as constants), the copied ones first */
    __u32 n = e->nframes;
    long out;
    if (n <= 8)
        out = bpf_ringbuf_output(&rb, e, AR_RECORD_BYTES(8), 0);
    else if (n <= 16)
        out = bpf_ringbuf_output(&rb, e, AR_RECORD_BYTES(16), 0);
    else if (n <= 32)
        out = bpf_ringbuf_output(&rb, e, AR_RECORD_BYTES(32), 0);
    else
        out = bpf_ringbuf_output(&rb, e, sizeof(*e), 0);
    if (out != 0) {
        count(AR_ST_RING_FULL);
        bpf_map_delete_elem(&live, &ret); /* never reported: its free must not be either */
        return;
    }
    count(flags & AR_ARENA ? AR_ST_ARENAS : AR_ST_SAMPLES);
}

static __always_inline void leave(__u64 ret)
{
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct pending *pp = bpf_map_lookup_elem(&pendings, &tid);
    if (!pp)
        return;
    struct pending p = *pp;
    bpf_map_delete_elem(&pendings, &tid);
    /* realloc: the old block is gone when it moved, or was freed by a size of 0 */
    if (p.old_live && (ret ? ret != p.old : p.size == 0))
        emit_free(p.old);
    if (!p.weight || !ret)
        return;
    if (p.old_live && ret == p.old)
        bpf_map_delete_elem(&live, &ret); /* resized in place: the new sample replaces it */
    send(tid, ret, p.size, p.weight, 0);
}

SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
    if (ours())
        enter(size, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 n, __u64 each)
{
    /* both under 2^32: the product fits (a larger count fails in calloc anyway) */
    if (ours() && !(n >> 32) && !(each >> 32))
        enter(n * each, 0);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, __u64 old, __u64 size)
{
    if (ours())
        enter(size, old);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_return, __u64 ret)
{
    if (ours())
        leave(ret);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 addr)
{
    if (ours() && addr)
        emit_free(addr);
    return 0;
}

/* pymalloc's arenas: mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_PRIVATE |
 * MAP_ANONYMOUS, -1, 0) from the C library's mmap (which malloc's own mappings also go
 * through: a length other than the arena's is not one), and munmap of a whole arena. */
#define AR_PROT_RW 3       /* PROT_READ | PROT_WRITE */
#define AR_MAP_PRIV_ANON 0x22 /* MAP_PRIVATE | MAP_ANONYMOUS */

SEC("uprobe")
int BPF_KPROBE(mmap_enter, __u64 addr, __u64 len, __u64 prot, __u64 flags, __s64 fd)
{
    if (!ours() || !cfg.arena_size || addr || len != cfg.arena_size || prot != AR_PROT_RW ||
        (flags & 0xffffffff) != AR_MAP_PRIV_ANON)
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    bpf_map_update_elem(&mmaps, &tid, &len, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mmap_return, __u64 ret)
{
    if (!ours())
        return 0;
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    __u64 *lenp = bpf_map_lookup_elem(&mmaps, &tid);
    if (!lenp)
        return 0;
    __u64 len = *lenp;
    bpf_map_delete_elem(&mmaps, &tid);
    if (ret && ret < (__u64)-4096) /* MAP_FAILED and -errno are no arena */
        send(tid, ret, len, 0, AR_ARENA);
    return 0;
}

SEC("uprobe")
int BPF_KPROBE(munmap_enter, __u64 addr)
{
    if (ours() && addr)
        emit_free(addr);
    return 0;
}
