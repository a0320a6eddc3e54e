/* The writer's spilled record arrays (snap_spill.h): blocks written with pwrite at the end of the
 * snapshot's temporary file and read back with pread at close, when the walker has let its copy
 * of the target's memory go. */
#include "snapshot/snap_spill.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/error.h"
#include "common/grow.h"

void snap_spill_init(struct snap_spill *s, size_t rec, int fd, uint64_t *file_end)
{
    memset(s, 0, sizeof(*s));
    s->fd = fd;
    s->file_end = file_end;
    s->rec = rec;
    s->per_block = SNAP_SPILL_BLOCK / rec;
}

static int write_all_at(int fd, const uint8_t *p, size_t len, uint64_t off)
{
    while (len) {
        ssize_t r = pwrite(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static int read_all_at(int fd, uint8_t *p, size_t len, uint64_t off)
{
    while (len) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO; /* short: the file was cut under us */
        p += r;
        len -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int snap_spill_flush(struct snap_spill *s)
{
    if (s->err)
        return -SCRY_E_IO;
    if (!s->buf || !s->n)
        return 0;
    if (grow_array(&s->blocks, &s->blocks_alloc, s->nblocks + 1, sizeof(*s->blocks)))
        return -SCRY_E_NO_MEMORY;
    struct snap_spill_block *b = &s->blocks[s->nblocks];
    b->n = s->n;
    b->mem = NULL;
    b->off = 0;
    if (s->fd < 0) {
        b->mem = s->buf; /* a full block's memory is the list's now; the next push allocates */
        s->buf = NULL;
    } else {
        b->off = *s->file_end;
        if ((s->err = write_all_at(s->fd, s->buf, s->n * s->rec, b->off)) != 0)
            return -SCRY_E_IO;
        *s->file_end += s->n * s->rec;
    }
    s->nblocks++;
    s->n = 0;
    return 0;
}

int snap_spill_room(struct snap_spill *s)
{
    int err = snap_spill_flush(s);
    if (err)
        return err;
    if (!s->buf && !(s->buf = malloc(SNAP_SPILL_BLOCK))) /* the first, or the last went to memory */
        return -SCRY_E_NO_MEMORY;
    return 0;
}

void *snap_spill_load(struct snap_spill *s, size_t i, void *scratch, size_t *n)
{
    struct snap_spill_block *b = &s->blocks[i];
    *n = b->n;
    if (b->mem)
        return b->mem;
    if ((s->err = read_all_at(s->fd, scratch, b->n * s->rec, b->off)) != 0)
        return NULL;
    return scratch;
}

int snap_spill_store(struct snap_spill *s, size_t i, const void *recs)
{
    struct snap_spill_block *b = &s->blocks[i];
    if (b->mem)
        return 0;
    if ((s->err = write_all_at(s->fd, recs, b->n * s->rec, b->off)) != 0)
        return -SCRY_E_IO;
    return 0;
}

void snap_spill_drop(struct snap_spill *s, size_t i)
{
    free(s->blocks[i].mem);
    s->blocks[i].mem = NULL;
}

size_t snap_spill_held(const struct snap_spill *s)
{
    size_t held = s->buf ? SNAP_SPILL_BLOCK : 0;
    for (size_t i = 0; i < s->nblocks; i++)
        held += s->blocks[i].mem ? SNAP_SPILL_BLOCK : 0;
    return held + s->blocks_alloc * sizeof(*s->blocks);
}

void snap_spill_free(struct snap_spill *s)
{
    for (size_t i = 0; i < s->nblocks; i++)
        free(s->blocks[i].mem);
    free(s->blocks);
    free(s->buf);
    memset(s, 0, sizeof(*s));
    s->fd = -1;
}
