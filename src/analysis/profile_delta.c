/* pdoc_subtract (see profile_delta.h): prev's lines and stacks are indexed by a hash of their
 * identity (a collision is checked by comparing the identity itself, and falls back to a scan). */
#include "analysis/profile_delta.h"

#include <stdint.h>
#include <string.h>

#include "common/error.h"
#include "common/hashmap.h"

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t key_of(uint64_t h)
{
    h = hm_hash64(h);
    return h == 0 || h == UINT64_MAX ? 1 : h;
}

static uint64_t line_key(const struct pdoc_entry *e)
{
    uint64_t h = 1469598103934665603ULL;
    h = fnv(h, e->file, strlen(e->file) + 1);
    h = fnv(h, e->func, strlen(e->func) + 1);
    return key_of(fnv(h, &e->line, sizeof(e->line)));
}

static bool same_line(const struct pdoc_entry *a, const struct pdoc_entry *b)
{
    return a->line == b->line && strcmp(a->file, b->file) == 0 && strcmp(a->func, b->func) == 0;
}

static uint64_t stack_key(const struct pdoc *d, const struct pdoc_stack *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (uint32_t i = 0; i < s->depth; i++) {
        const struct pdoc_frame *f = &d->frames[s->off + i];
        h = fnv(h, f->file, f->file_len);
        h = fnv(h, "", 1);
        h = fnv(h, f->func, f->func_len);
        h = fnv(h, "", 1);
        h = fnv(h, &f->line, sizeof(f->line));
    }
    return key_of(fnv(h, &s->depth, sizeof(s->depth)));
}

static bool same_frame(const struct pdoc_frame *a, const struct pdoc_frame *b)
{
    return a->line == b->line && a->file_len == b->file_len && a->func_len == b->func_len &&
           memcmp(a->file, b->file, a->file_len) == 0 && memcmp(a->func, b->func, a->func_len) == 0;
}

static bool same_stack(const struct pdoc *da, const struct pdoc_stack *a, const struct pdoc *db,
                       const struct pdoc_stack *b)
{
    if (a->depth != b->depth)
        return false;
    for (uint32_t i = 0; i < a->depth; i++)
        if (!same_frame(&da->frames[a->off + i], &db->frames[b->off + i]))
            return false;
    return true;
}

static double less(double a, double b)
{
    return a > b ? a - b : 0;
}

/* The time kinds and samples of an entry or a stack, less an earlier one's. */
static void less_times(double *py, double *nat, double *sys, double *samples, double opy,
                       double onat, double osys, double osamples)
{
    *py = less(*py, opy);
    *nat = less(*nat, onat);
    *sys = less(*sys, osys);
    *samples = less(*samples, osamples);
}

int pdoc_subtract(struct pdoc *cur, const struct pdoc *prev)
{
    struct hashmap lines = HASHMAP_INIT, stacks = HASHMAP_INIT;
    int err = 0;
    for (size_t i = 0; i < prev->nlines && !err; i++)
        if (!hm_has(&lines, line_key(&prev->lines[i])))
            err = hm_put(&lines, line_key(&prev->lines[i]), i);
    for (size_t i = 0; i < prev->nstacks && !err; i++)
        if (!hm_has(&stacks, stack_key(prev, &prev->stacks[i])))
            err = hm_put(&stacks, stack_key(prev, &prev->stacks[i]), i);
    if (err) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory comparing two profiles");
        goto out;
    }
    for (size_t i = 0; i < cur->nlines; i++) {
        struct pdoc_entry *e = &cur->lines[i];
        const struct pdoc_entry *o = NULL;
        uint64_t v;
        if (hm_get(&lines, line_key(e), &v) && same_line(&prev->lines[v], e))
            o = &prev->lines[v];
        for (size_t j = 0; !o && hm_has(&lines, line_key(e)) && j < prev->nlines; j++)
            if (same_line(&prev->lines[j], e))
                o = &prev->lines[j];
        if (!o)
            continue;
        less_times(&e->python_sec, &e->native_sec, &e->sys_sec, &e->samples, o->python_sec,
                   o->native_sec, o->sys_sec, o->samples);
        e->malloc_bytes = less(e->malloc_bytes, o->malloc_bytes);
    }
    for (size_t i = 0; i < cur->nstacks; i++) {
        struct pdoc_stack *s = &cur->stacks[i];
        const struct pdoc_stack *o = NULL;
        uint64_t v, k = stack_key(cur, s);
        if (hm_get(&stacks, k, &v) && same_stack(prev, &prev->stacks[v], cur, s))
            o = &prev->stacks[v];
        for (size_t j = 0; !o && hm_has(&stacks, k) && j < prev->nstacks; j++)
            if (same_stack(prev, &prev->stacks[j], cur, s))
                o = &prev->stacks[j];
        if (!o)
            continue;
        less_times(&s->python_sec, &s->native_sec, &s->sys_sec, &s->samples, o->python_sec,
                   o->native_sec, o->sys_sec, o->samples);
    }
    cur->n_samples = less(cur->n_samples, prev->n_samples);
    cur->sampled_sec = less(cur->sampled_sec, prev->sampled_sec);
out:
    hm_free(&lines);
    hm_free(&stacks);
    return err;
}
