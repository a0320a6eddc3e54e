/* The sample stream (sstream.h): kept whole up to its bound, then decimated uniformly. */
#include "common/sstream.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

void sst_reset(struct sst_stream *tl, size_t max)
{
    free(tl->s);
    free(tl->threads);
    memset(tl, 0, sizeof(*tl));
    tl->max = max == 0 ? SST_DEFAULT_MAX : max < SST_MIN_MAX ? SST_MIN_MAX : max;
    tl->stride = 1;
}

size_t sst_thread(struct sst_stream *tl, int64_t tid, bool *added)
{
    *added = false;
    if (tl->last_thread < tl->nthreads && tl->threads[tl->last_thread].tid == tid)
        return tl->last_thread;
    for (size_t i = 0; i < tl->nthreads; i++)
        if (tl->threads[i].tid == tid)
            return tl->last_thread = i;
    if (grow_array(&tl->threads, &tl->cap_threads, tl->nthreads + 1, sizeof(*tl->threads)))
        return SIZE_MAX;
    tl->threads[tl->nthreads] = (struct sst_thread){.tid = tid};
    *added = true;
    return tl->last_thread = tl->nthreads++;
}

/* Full: keeps every second sample (those whose sequence number is a multiple of the doubled
 * stride, since the kept ones were the multiples of the stride). */
static void decimate(struct sst_stream *tl)
{
    size_t k = 0;
    for (size_t i = 0; i < tl->n; i += 2)
        tl->s[k++] = tl->s[i];
    tl->n = k;
    tl->stride *= 2;
}

void sst_add(struct sst_stream *tl, uint64_t t_ns, size_t th, int cat, uint64_t weight_ns,
             uint32_t file, uint32_t func, int32_t line, int32_t stack)
{
    if (!tl->max)
        sst_reset(tl, 0);
    uint64_t seq = tl->seen++;
    if (seq % tl->stride)
        return;
    if (tl->n == tl->max) {
        decimate(tl);
        if (seq % tl->stride)
            return;
    }
    if (th == SIZE_MAX || grow_array(&tl->s, &tl->cap, tl->n + 1, sizeof(*tl->s))) {
        tl->lost++;
        return;
    }
    tl->s[tl->n++] = (struct sst_sample){t_ns,  weight_ns,    file,         func,
                                         line,  stack,        (uint32_t)th, (uint8_t)cat};
}
