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

/* The innermost frame of a stack (SNAP_NONE: none), or NULL. */
static const struct snap_alloc_frame *innermost(const struct snap *s, uint32_t st)
{
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

/* Lines being summed: by (file, line). */
struct line_acc {
    const struct snap *s;
    struct hashmap by_key;
    struct aj_line *v;
    size_t n, cap;
};

/* The line of a stack's innermost frame, added if new; NULL when out of memory. */
static struct aj_line *acc_line(struct line_acc *acc, uint32_t stack)
{
    const struct snap_alloc_frame *f = innermost(acc->s, stack);
    uint32_t file = f ? f->file : 0, func = f ? f->func : 0, line = f ? f->line : 0;
    uint64_t key = ((uint64_t)file << 32 | line) + 1, at;
    if (!hm_get(&acc->by_key, key, &at)) {
        if (grow_array(&acc->v, &acc->cap, acc->n + 1, sizeof(*acc->v)) != 0 ||
            hm_put(&acc->by_key, key, acc->n + 1))
            return NULL;
        acc->v[acc->n++] = (struct aj_line){.file = file, .func = func, .line = line};
        at = acc->n;
    }
    return &acc->v[at - 1];
}

/* Adds one sample. */
static int acc_sample(struct line_acc *acc, uint32_t i)
{
    const struct snap_alloc_sample *b = &acc->s->alloc_samples[i];
    struct aj_line *l = acc_line(acc, b->stack);
    if (!l)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    l->bytes += b->weight;
    l->samples++;
    /* Exact only when the block was counted at its size: one of the window or more allocated
     * whole. A block that realloc grew (its samples moved with it) is that large too, but each
     * of its growth's points weighs the window: sampled. */
    if (b->size < acc->s->alloc_window || b->weight != b->size)
        l->small++;
    return 0;
}

/* Adds object o's bytes if an arena credits it (alloc_join.h). */
static int acc_arena_object(struct line_acc *acc, const struct aj_join *j, uint32_t o)
{
    uint32_t ar = j->arena_of ? j->arena_of[o] : SNAP_NONE;
    if (ar == SNAP_NONE)
        return 0;
    struct aj_line *l = acc_line(acc, acc->s->arenas[ar].stack);
    if (!l)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    l->bytes += acc->s->objects[o].size;
    l->arena_bytes += acc->s->objects[o].size;
    return 0;
}

/* The lines summed, with their errors, largest first (or the error, nothing kept). */
static int acc_finish(struct line_acc *acc, int err, struct aj_line **out, size_t *n)
{
    hm_free(&acc->by_key);
    if (err) {
        free(acc->v);
        return err;
    }
    for (size_t i = 0; i < acc->n; i++)
        acc->v[i].error = (uint64_t)((double)acc->s->alloc_window * sqrt((double)acc->v[i].small));
    if (acc->n > 1)
        qsort(acc->v, acc->n, sizeof(*acc->v), cmp_line);
    *out = acc->v;
    *n = acc->n;
    return 0;
}

typedef bool (*aj_pred)(const struct aj_join *j, uint32_t object, const void *arg);

/* Adds the samples whose object satisfies pred. */
static int acc_samples_where(struct line_acc *acc, const struct aj_join *j, aj_pred pred,
                             const void *arg)
{
    int err = 0;
    for (uint32_t i = 0; i < acc->s->nalloc_samples && !err; i++)
        if (pred(j, j->object[i], arg))
            err = acc_sample(acc, i);
    return err;
}

/* The samples whose object satisfies pred, by allocating line, largest first. */
static int lines_where(const struct aj_join *j, aj_pred pred, const void *arg,
                       struct aj_line **out, size_t *n)
{
    struct line_acc acc = {.s = j->a->s};
    return acc_finish(&acc, acc_samples_where(&acc, j, pred, arg), out, n);
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

/* The arena that holds an address, or SNAP_NONE. */
static uint32_t arena_at(const struct snap *s, uint64_t addr)
{
    uint32_t k = first_at_or_above(s->arenas, s->narenas, sizeof(*s->arenas), addr + 1);
    if (k == 0 || addr - s->arenas[k - 1].addr >= s->arenas[k - 1].size)
        return SNAP_NONE;
    return k - 1;
}

/* Which objects the arenas credit (alloc_join.h), and the dominator tree's children. */
static int build_arenas(struct aj_join *j)
{
    const struct snap *s = j->a->s;
    const struct heap_analysis *a = j->a;
    uint8_t *held = calloc((size_t)s->nobjects + 1, 1);
    j->arena_of = malloc(((size_t)s->nobjects + 1) * sizeof(*j->arena_of));
    j->arena_credit = calloc((size_t)s->narenas + 1, sizeof(*j->arena_credit));
    j->kid_first = calloc((size_t)a->n + 2, sizeof(*j->kid_first));
    j->kids = malloc(((size_t)a->n + 1) * sizeof(*j->kids));
    if (!held || !j->arena_of || !j->arena_credit || !j->kid_first || !j->kids) {
        free(held);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < s->nalloc_samples; i++)
        if (j->object[i] != SNAP_NONE)
            held[j->object[i]] = 1;
    for (uint32_t o = 0; o < s->nobjects; o++) {
        const struct snap_object *ob = &s->objects[o];
        uint32_t ar = held[o] || ob->size > AJ_ARENA_OBJECT ? SNAP_NONE : arena_at(s, ob->addr);
        j->arena_of[o] = ar;
        if (ar != SNAP_NONE) {
            j->arena_credit[ar] += ob->size;
            j->arena_objects++;
            j->arena_bytes += ob->size;
        }
    }
    free(held);
    /* children by immediate dominator: counts, then starts, then the lists */
    for (uint32_t o = 0; o < a->n; o++)
        if (a->idom[o] < a->n)
            j->kid_first[a->idom[o] + 1]++;
    for (uint32_t o = 0; o < a->n; o++)
        j->kid_first[o + 1] += j->kid_first[o];
    j->kid_first[a->n + 1] = j->kid_first[a->n];
    uint32_t *next = malloc(((size_t)a->n + 1) * sizeof(*next));
    if (!next)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    memcpy(next, j->kid_first, (size_t)a->n * sizeof(*next));
    for (uint32_t o = 0; o < a->n; o++)
        if (a->idom[o] < a->n)
            j->kids[next[a->idom[o]]++] = o;
    free(next);
    return 0;
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
    int err = s->narenas ? build_arenas(out) : 0;
    return err ? err
               : lines_where(out, unmatched, NULL, &out->unmatched_lines, &out->nunmatched_lines);
}

void aj_free(struct aj_join *j)
{
    free(j->object);
    free(j->unmatched_lines);
    free(j->arena_of);
    free(j->arena_credit);
    free(j->kid_first);
    free(j->kids);
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

/* Adds the arena-credited objects of holder's dominator subtree, holder included. */
static int acc_arena_subtree(struct line_acc *acc, const struct aj_join *j, uint32_t holder)
{
    if (!j->arena_of || holder >= j->a->n)
        return 0;
    uint32_t *todo = malloc(((size_t)j->a->n + 1) * sizeof(*todo));
    if (!todo)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    size_t top = 0;
    int err = 0;
    todo[top++] = holder;
    while (top && !err) { /* each object is pushed once: the tree has no cycle */
        uint32_t o = todo[--top];
        err = acc_arena_object(acc, j, o);
        for (uint32_t k = j->kid_first[o]; k < j->kid_first[o + 1]; k++)
            todo[top++] = j->kids[k];
    }
    free(todo);
    return err;
}

int aj_lines_retained_by(const struct aj_join *j, uint32_t holder, struct aj_line **out, size_t *n)
{
    struct line_acc acc = {.s = j->a->s};
    int err = acc_samples_where(&acc, j, dominated_by, &holder);
    if (!err)
        err = acc_arena_subtree(&acc, j, holder);
    if (!(err = acc_finish(&acc, err, out, n)) && holder < j->a->n)
        cap_lines(*out, *n, j->a->retained[holder]);
    return err;
}

int aj_lines_of_objects(const struct aj_join *j, const uint8_t *member, struct aj_line **out,
                        size_t *n)
{
    struct line_acc acc = {.s = j->a->s};
    int err = acc_samples_where(&acc, j, member_of, member);
    for (uint32_t o = 0; !err && j->arena_of && o < j->a->n; o++)
        if (member[o])
            err = acc_arena_object(&acc, j, o);
    err = acc_finish(&acc, err, out, n);
    uint64_t shallow = 0;
    for (uint32_t o = 0; !err && o < j->a->n; o++)
        if (member[o])
            shallow += j->a->s->objects[o].size;
    if (!err)
        cap_lines(*out, *n, shallow);
    return err;
}

/* Adds w along stack st of the snapshot (outermost frame first; "<no Python frame>" for none). */
static int add_stack(struct stk_tree *t, const struct snap *s, uint32_t st, double w,
                     struct strbuf *text)
{
    uint32_t node = STK_ROOT, f;
    int err = 0;
    if (st == SNAP_NONE || s->alloc_stacks[st].depth == 0) {
        static const char none[] = "<no Python frame>";
        if (!(err = stk_frame(t, none, sizeof(none) - 1, &f)) &&
            !(err = stk_child(t, node, f, &node)))
            err = stk_add(t, node, w, 0);
        return err;
    }
    const struct snap_alloc_stack *k = &s->alloc_stacks[st];
    for (uint32_t d = 0; d < k->depth && !err; d++) {
        const struct snap_alloc_frame *fr = &s->alloc_frames[k->first + d];
        sb_reset(text);
        sb_addf(text, "%s (%s:%u)", snap_string(s, fr->func), snap_string(s, fr->file), fr->line);
        if (!(err = stk_frame(t, sb_str(text), text->len, &f)))
            err = stk_child(t, node, f, &node);
    }
    return err ? err : stk_add(t, node, w, 0);
}

int aj_add_stacks(const struct aj_join *j, struct stk_tree *t)
{
    const struct snap *s = j->a->s;
    struct strbuf text = STRBUF_INIT;
    int err = 0;
    for (uint32_t i = 0; i < s->nalloc_samples && !err; i++)
        if (j->object[i] != SNAP_NONE)
            err = add_stack(t, s, s->alloc_samples[i].stack,
                            (double)s->alloc_samples[i].weight, &text);
    for (uint32_t i = 0; j->arena_credit && i < s->narenas && !err; i++)
        if (j->arena_credit[i])
            err = add_stack(t, s, s->arenas[i].stack, (double)j->arena_credit[i], &text);
    sb_release(&text);
    return err;
}
