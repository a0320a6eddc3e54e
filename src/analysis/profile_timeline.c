/* Memory timelines: a process's or a line's points appended and reduced to at most a number of
 * points, and, when the profile is finished, the footprint of all processes together (each
 * process's timeline swept as a step function) and every timeline rebased on the program's
 * start. */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile_internal.h"
#include "common/error.h"
#include "common/grow.h"

int prof_timeline_append(struct prof_timeline *dst, const struct prof_point *pts, size_t n)
{
    if (grow_array(&dst->pts, &dst->cap, dst->n + n, sizeof(*dst->pts)))
        return -SCRY_E_NO_MEMORY;
    if (n)
        memcpy(dst->pts + dst->n, pts, n * sizeof(*pts));
    dst->n += n;
    return 0;
}

static int cmp_point(const void *a, const void *b)
{
    const struct prof_point *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

void prof_timeline_reduce(struct prof_timeline *tl, size_t max)
{
    if (tl->n > 1)
        qsort(tl->pts, tl->n, sizeof(*tl->pts), cmp_point);
    if (max == 0 || tl->n <= max)
        return;
    size_t run = (tl->n + max - 1) / max, out = 0;
    for (size_t i = 0; i < tl->n; i += run) {
        struct prof_point m = tl->pts[i];
        for (size_t k = i + 1; k < i + run && k < tl->n; k++) {
            m.t = tl->pts[k].t; /* sorted: the later time */
            if (tl->pts[k].bytes > m.bytes)
                m.bytes = tl->pts[k].bytes;
        }
        tl->pts[out++] = m;
    }
    tl->n = out;
}

void prof_timeline_free(struct prof_timeline *tl)
{
    free(tl->pts);
    memset(tl, 0, sizeof(*tl));
}

/* One change of a process's footprint (a timeline point) or its end, for the sweep. */
struct mevent {
    int64_t t;
    int end; /* 0: a point, 1: the process ended; points at a time come before ends */
    uint32_t part;
    uint64_t bytes;
};

static int cmp_mevent(const void *a, const void *b)
{
    const struct mevent *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->part < y->part ? -1 : x->part > y->part;
}

/* The footprint of all processes together: each process's timeline read as a step function
 * (its last point's value until the next point, 0 before its first point and after it ended),
 * summed at every time a process's footprint changed, and a last point when the last process
 * ended. */
static int sum_footprints(struct prof_memory *mem)
{
    size_t n = 0;
    for (size_t i = 0; i < mem->nparts; i++)
        n += mem->parts[i].tl.n + 1;
    struct mevent *ev = malloc((n + 1) * sizeof(*ev));
    uint64_t *cur = calloc(mem->nparts + 1, sizeof(*cur));
    if (!ev || !cur) {
        free(ev);
        free(cur);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    }
    size_t k = 0;
    for (size_t i = 0; i < mem->nparts; i++) {
        const struct prof_mpart *mp = &mem->parts[i];
        for (size_t j = 0; j < mp->tl.n; j++)
            ev[k++] = (struct mevent){mp->tl.pts[j].t, 0, (uint32_t)i, mp->tl.pts[j].bytes};
        if (mp->end != INT64_MAX)
            ev[k++] = (struct mevent){mp->end, 1, (uint32_t)i, 0};
    }
    if (k > 1)
        qsort(ev, k, sizeof(*ev), cmp_mevent);
    uint64_t sum = 0, at_group = 0; /* at_group: the sum before the events at this time */
    int err = 0;
    for (size_t i = 0; i < k && !err; i++) {
        if (i == 0 || ev[i].t != ev[i - 1].t)
            at_group = sum;
        sum -= cur[ev[i].part];
        cur[ev[i].part] = ev[i].end ? 0 : ev[i].bytes;
        sum += cur[ev[i].part];
        bool last_at_t = i + 1 == k || ev[i + 1].t != ev[i].t || ev[i + 1].end;
        if (!ev[i].end && last_at_t) {
            struct prof_point pt = {ev[i].t, sum};
            if (prof_timeline_append(&mem->footprint, &pt, 1))
                err = -SCRY_E_NO_MEMORY;
            if (sum > mem->max_footprint)
                mem->max_footprint = sum;
        }
    }
    /* The run ends with the last process: a point then, with what was held until that end,
     * so that the timeline spans the whole run and not only up to its last memory sample. */
    const struct prof_timeline *fp = &mem->footprint;
    if (!err && k > 0 && ev[k - 1].end && fp->n > 0 && ev[k - 1].t > fp->pts[fp->n - 1].t) {
        struct prof_point pt = {ev[k - 1].t, at_group};
        if (prof_timeline_append(&mem->footprint, &pt, 1))
            err = -SCRY_E_NO_MEMORY;
    }
    free(ev);
    free(cur);
    return err;
}

/* Absolute times -> nanoseconds since the program's start (never negative). */
static void rebase(struct prof_timeline *tl, int64_t origin)
{
    for (size_t i = 0; i < tl->n; i++)
        tl->pts[i].t = tl->pts[i].t > origin ? tl->pts[i].t - origin : 0;
}

/* Timelines reduced to PROF_MAX_POINTS and rebased; the whole program's footprint summed. */
void prof_finish_memory(struct profile *p)
{
    struct prof_memory *mem = &p->mem;
    int64_t origin = prof_unix_ns(p->start_time_absolute);
    for (size_t i = 0; i < p->nlines; i++) {
        prof_timeline_reduce(&p->lines[i].timeline, PROF_MAX_POINTS);
        rebase(&p->lines[i].timeline, origin);
    }
    mem->max_footprint = mem->part_max_footprint;
    if (sum_footprints(mem) != 0)
        prof_timeline_free(&mem->footprint); /* out of memory: no timeline rather than a wrong one */
    prof_timeline_reduce(&mem->footprint, PROF_MAX_POINTS);
    rebase(&mem->footprint, origin);
    for (size_t i = 0; i < mem->nparts; i++)
        prof_timeline_free(&mem->parts[i].tl);
    mem->nparts = 0;
}
