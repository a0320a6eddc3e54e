/* Record arrays that the snapshot writer fills during a walk and reads back at close, kept in
 * blocks of 1 MiB that go to the snapshot's own temporary file as they fill (docs/PERFORMANCE.md,
 * "the dumper's memory"): while the walker holds its copy of the target's memory, the writer
 * holds one block per array instead of every object and reference. Without a file to spill to
 * (the output is a FIFO or a device, written in place) the blocks stay in memory.
 *
 * A block is read back whole, may be changed and put back (the close maps addresses to indexes
 * in place, then reads the blocks a second time). Not thread-safe. */
#ifndef SCRY_SNAPSHOT_SNAP_SPILL_H
#define SCRY_SNAPSHOT_SNAP_SPILL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SNAP_SPILL_BLOCK (1u << 20)

struct snap_spill_block {
    uint64_t off; /* in the file */
    void *mem;    /* or here, when there is no file */
    size_t n;     /* records */
};

struct snap_spill {
    int fd;             /* -1: blocks stay in memory */
    uint64_t *file_end; /* where the next block goes; shared by the arrays of one file */
    size_t rec;         /* bytes per record */
    size_t per_block;
    uint8_t *buf; /* the block being filled */
    size_t n;
    struct snap_spill_block *blocks;
    size_t nblocks, blocks_alloc;
    uint64_t total; /* records pushed */
    int err;        /* errno of the first failed write or read, sticky */
};

/* fd: a file open for reading and writing (its contents from *file_end on are ours), or -1. */
void snap_spill_init(struct snap_spill *s, size_t rec, int fd, uint64_t *file_end);
/* Moves the block being filled out (to the file, or to the list in memory). 0 or a negative
 * enum scry_err (-SCRY_E_IO with s->err set, -SCRY_E_NO_MEMORY). */
int snap_spill_flush(struct snap_spill *s);
/* The same, then room for the next record. */
int snap_spill_room(struct snap_spill *s);

/* Appends one record of s->rec bytes. */
static inline int snap_spill_push(struct snap_spill *s, const void *rec)
{
    if (s->n == s->per_block || !s->buf) {
        int err = snap_spill_room(s);
        if (err)
            return err;
    }
    memcpy(s->buf + s->n * s->rec, rec, s->rec);
    s->n++;
    s->total++;
    return 0;
}

/* Block i's records (*n of them): the block's own memory, or scratch (SNAP_SPILL_BLOCK bytes)
 * read from the file. NULL on a read error (s->err). Call snap_spill_flush first. */
void *snap_spill_load(struct snap_spill *s, size_t i, void *scratch, size_t *n);
/* Writes block i back after a change to what snap_spill_load returned (nothing to do in
 * memory). 0 or -SCRY_E_IO. */
int snap_spill_store(struct snap_spill *s, size_t i, const void *recs);
/* Frees block i's memory once read for the last time (nothing for a block in the file). */
void snap_spill_drop(struct snap_spill *s, size_t i);
/* Bytes of memory the spill holds now: its blocks in memory, the block being filled. */
size_t snap_spill_held(const struct snap_spill *s);
void snap_spill_free(struct snap_spill *s);

#endif
