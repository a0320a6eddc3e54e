/* The join of allocation samples with a snapshot's objects (alloc_join.h). */
#include "analysis/alloc_join.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/hashmap.h"
#include "common/strbuf.h"

_Static_assert(offsetof(struct snap_object, addr) == 0 && offsetof(struct snap_buffer, addr) == 0,
               "records searched by the address they start with");

/* The first of n records (stride bytes each, sorted by the address they start with) whose
 * address is addr or more; n when none is. */
static uint32_t first_at_or_above(const void *records, uint32_t n, size_t stride, uint64_t addr)
{
    const uint8_t *base = records;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint64_t at;
        memcpy(&at, base + (size_t)mid * stride, sizeof(at));
        if (at < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The largest block that can hold `owned` bytes of one object or buffer (alloc_join.h). */
static uint64_t block_limit(uint64_t owned)
{
    uint64_t limit = owned + AJ_SIZE_SLACK;
    return owned < AJ_PAGE ? limit : (limit + AJ_PAGE - 1) / AJ_PAGE * AJ_PAGE;
}

/* The object whose header lies at one of the starts a block can have, else SNAP_NONE. */
static uint32_t object_at_block(const struct snap *s, const struct snap_alloc_sample *b)
{
    uint32_t lo = first_at_or_above(s->objects, s->nobjects, sizeof(*s->objects), b->addr);
    for (uint32_t i = lo; i < s->nobjects && s->objects[i].addr - b->addr <= AJ_MAX_HEADER; i++) {
        uint64_t off = s->objects[i].addr - b->addr;
        if (off % 16 == 0 && off < b->size && block_limit(s->objects[i].size) >= b->size)
            return i;
    }
    return SNAP_NONE;
}

/* The owner of the object's buffer that the block holds (alloc_join.h), else SNAP_NONE. */
static uint32_t owner_of_block(const struct snap *s, const struct snap_alloc_sample *b)
{
    uint32_t lo = first_at_or_above(s->buffers, s->nbuffers, sizeof(*s->buffers), b->addr);
    for (uint32_t i = lo; i < s->nbuffers && s->buffers[i].addr - b->addr <= AJ_MAX_HEADER; i++) {
        const struct snap_buffer *f = &s->buffers[i];
        if (f->addr - b->addr < b->size && block_limit(f->size) >= b->size)
            return f->object;
    }
    return SNAP_NONE;
}

/* The innermost frame of sample i's stack, or NULL. */
static const struct snap_alloc_frame *innermost(const struct snap *s, uint32_t i)
{
    uint32_t st = s->alloc_samples[i].stack;
    if (st == SNAP_NONE || s->alloc_stacks[st].depth == 0)
        return NULL;
    return &s->alloc_frames[s->alloc_stacks[st].first + s->alloc_stacks[st].depth - 1];
}

static int cmp_line(const void *x, const void *y)
{
    const struct aj_line *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

typedef bool (*aj_pred)(const struct aj_join *j, uint32_t object, const void *arg);

/* The samples whose object satisfies pred, by allocating line, largest first. */
static int lines_where(const struct aj_join *j, aj_pred pred, const void *arg,
                       struct aj_line **out, size_t *n)
{
    const struct snap *s = j->a->s;
    struct hashmap by_key = {0};
    struct aj_line *v = NULL;
    size_t nv = 0, cap = 0;
    int err = 0;
    for (uint32_t i = 0; i < s->nalloc_samples && !err; i++) {
        if (!pred(j, j->object[i], arg))
            continue;
        const struct snap_alloc_frame *f = innermost(s, i);
        uint32_t file = f ? f->file : 0, func = f ? f->func : 0, line = f ? f->line : 0;
        uint64_t key = ((uint64_t)file << 32 | line) + 1, at;
        if (!hm_get(&by_key, key, &at)) {
            if (grow_array(&v, &cap, nv + 1, sizeof(*v)) != 0 || hm_put(&by_key, key, nv + 1)) {
                err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
                break;
            }
            v[nv++] = (struct aj_line){.file = file, .func = func, .line = line};
            at = nv;
        }
        struct aj_line *l = &v[at - 1];
        const struct snap_alloc_sample *b = &s->alloc_samples[i];
        l->bytes += b->weight;
        l->samples++;
        if (b->size < s->alloc_window)
            l->small++;
    }
    hm_free(&by_key);
    if (err) {
        free(v);
        return err;
    }
    for (size_t i = 0; i < nv; i++)
        v[i].error = (uint64_t)((double)s->alloc_window * sqrt((double)v[i].small));
    if (nv > 1)
        qsort(v, nv, sizeof(*v), cmp_line);
    *out = v;
    *n = nv;
    return 0;
}

static bool unmatched(const struct aj_join *j, uint32_t o, const void *arg)
{
    (void)j, (void)arg;
    return o == SNAP_NONE;
}

static bool dominated_by(const struct aj_join *j, uint32_t o, const void *arg)
{
    const struct heap_analysis *a = j->a;
    uint32_t holder = *(const uint32_t *)arg;
    for (uint32_t steps = 0; o < a->n && steps <= a->n; steps++) {
        if (o == holder)
            return true;
        o = a->idom[o];
    }
    return false;
}

static bool member_of(const struct aj_join *j, uint32_t o, const void *arg)
{
    return o < j->a->n && ((const uint8_t *)arg)[o] != 0;
}

int aj_build(const struct heap_analysis *a, struct aj_join *out)
{
    memset(out, 0, sizeof(*out));
    const struct snap *s = a->s;
    out->a = a;
    if (!s->has_allocations)
        return err_fail(SCRY_E_NO_ALLOCATIONS,
                        "this snapshot has no allocation samples: take it of a program under "
                        "scry run, with scry run --heap-at-exit, or with scry record "
                        "--allocations --dump");
    out->object = malloc(((size_t)s->nalloc_samples + 1) * sizeof(*out->object));
    if (!out->object)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (uint32_t i = 0; i < s->nalloc_samples; i++) {
        const struct snap_alloc_sample *b = &s->alloc_samples[i];
        uint32_t o = object_at_block(s, b);
        if (o == SNAP_NONE && (o = owner_of_block(s, b)) != SNAP_NONE) {
            out->in_buffers++;
            out->in_buffers_bytes += b->weight;
        }
        out->object[i] = o;
        out->samples++;
        if (o == SNAP_NONE) {
            out->unmatched++;
            out->unmatched_bytes += b->weight;
        } else {
            out->matched++;
            out->matched_bytes += b->weight;
        }
    }
    return lines_where(out, unmatched, NULL, &out->unmatched_lines, &out->nunmatched_lines);
}

void aj_free(struct aj_join *j)
{
    free(j->object);
    free(j->unmatched_lines);
    memset(j, 0, sizeof(*j));
}

/* Scales the lines (largest first) so that their bytes add up to at most cap, each error at
 * most cap (alloc_join.h); the order is kept. */
static void cap_lines(struct aj_line *v, size_t n, uint64_t cap)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i].bytes;
    for (size_t i = 0; i < n; i++) {
        if (sum > cap)
            v[i].bytes = (uint64_t)((double)v[i].bytes * ((double)cap / (double)sum));
        if (v[i].error > cap)
            v[i].error = cap;
    }
}

int aj_lines_retained_by(const struct aj_join *j, uint32_t holder, struct aj_line **out, size_t *n)
{
    int err = lines_where(j, dominated_by, &holder, out, n);
    if (!err && holder < j->a->n)
        cap_lines(*out, *n, j->a->retained[holder]);
    return err;
}

int aj_lines_of_objects(const struct aj_join *j, const uint8_t *member, struct aj_line **out,
                        size_t *n)
{
    int err = lines_where(j, member_of, member, out, n);
    uint64_t shallow = 0;
    for (uint32_t o = 0; !err && o < j->a->n; o++)
        if (member[o])
            shallow += j->a->s->objects[o].size;
    if (!err)
        cap_lines(*out, *n, shallow);
    return err;
}

int aj_add_stacks(const struct aj_join *j, struct stk_tree *t)
{
    const struct snap *s = j->a->s;
    struct strbuf text = STRBUF_INIT;
    int err = 0;
    uint32_t unknown = SNAP_NONE;
    for (uint32_t i = 0; i < s->nalloc_samples && !err; i++) {
        if (j->object[i] == SNAP_NONE)
            continue;
        uint32_t st = s->alloc_samples[i].stack, node = STK_ROOT, f;
        double w = (double)s->alloc_samples[i].weight;
        if (st == SNAP_NONE || s->alloc_stacks[st].depth == 0) {
            static const char none[] = "<no Python frame>";
            if (unknown == SNAP_NONE && (err = stk_frame(t, none, sizeof(none) - 1, &unknown)))
                break;
            if (!(err = stk_child(t, node, unknown, &node)))
                err = stk_add(t, node, w, 0);
            continue;
        }
        const struct snap_alloc_stack *k = &s->alloc_stacks[st];
        for (uint32_t d = 0; d < k->depth && !err; d++) {
            const struct snap_alloc_frame *fr = &s->alloc_frames[k->first + d];
            sb_reset(&text);
            sb_addf(&text, "%s (%s:%u)", snap_string(s, fr->func), snap_string(s, fr->file),
                    fr->line);
            if (!(err = stk_frame(t, sb_str(&text), text.len, &f)))
                err = stk_child(t, node, f, &node);
        }
        if (!err)
            err = stk_add(t, node, w, 0);
    }
    sb_release(&text);
    return err;
}
