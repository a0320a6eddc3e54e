/* Aggregation tables for the agent: interned strings, files, functions and lines. Everything
 * grows by doubling; failures to grow drop the sample (counted) rather than the program. */
#include "agent/stats.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"

const char *ag_rule_name(enum ag_rule r)
{
    static const char *const names[] = {"profiled",           "not_a_file",     "excluded",
                                        "not_in_profile_only", "system_library", "outside_program"};
    return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

static uint64_t fnv1a(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* A non-zero hash key that is not the map's tombstone. */
static uint64_t key_of(uint64_t h)
{
    h = hm_hash64(h);
    return h == 0 || h == UINT64_MAX ? 1 : h;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    return grow_array(arr, cap, need, elem) == 0;
}

void ag_stats_init(struct ag_stats *st)
{
    memset(st, 0, sizeof(*st));
    st->native_stacks.item_size = sizeof(uint32_t);
    st->combined_stacks.item_size = sizeof(struct ag_citem);
    st->alloc_stacks.item_size = sizeof(struct ag_sframe);
}

static void chains_free(struct ag_chains *c)
{
    hm_free(&c->by_key);
    free(c->chains);
    free(c->items);
}

void ag_stats_free(struct ag_stats *st)
{
    for (size_t i = 0; i < st->strings.n; i++)
        free(st->strings.strs[i]);
    free(st->strings.strs);
    hm_free(&st->strings.by_hash);
    hm_free(&st->file_by_name);
    hm_free(&st->func_by_key);
    hm_free(&st->line_by_key);
    free(st->files);
    free(st->funcs);
    free(st->lines);
    hm_free(&st->stack_by_key);
    free(st->stacks);
    free(st->sframes);
    hm_free(&st->nframe_by_addr);
    free(st->nframes);
    chains_free(&st->native_stacks);
    chains_free(&st->combined_stacks);
    chains_free(&st->alloc_stacks);
    memset(st, 0, sizeof(*st));
}

static int intern(struct ag_strtab *t, const char *s, uint32_t *out)
{
    size_t len = strlen(s);
    /* Open addressing over salted hashes: a collision moves on to the next salt. */
    for (uint64_t salt = 0;; salt++) {
        uint64_t k = key_of(fnv1a(s, len, salt * 0x9e3779b97f4a7c15ULL)), v;
        if (hm_get(&t->by_hash, k, &v)) {
            if (strcmp(t->strs[v - 1], s) == 0) {
                *out = (uint32_t)(v - 1);
                return 0;
            }
            continue;
        }
        if (!grow((void **)&t->strs, &t->cap, t->n + 1, sizeof(char *)))
            return -SCRY_E_NO_MEMORY;
        char *copy = strdup(s);
        if (!copy || hm_put(&t->by_hash, k, t->n + 1)) {
            free(copy);
            return -SCRY_E_NO_MEMORY;
        }
        t->strs[t->n] = copy;
        *out = (uint32_t)t->n++;
        return 0;
    }
}

int ag_stats_intern(struct ag_stats *st, const char *s, uint32_t *out)
{
    return intern(&st->strings, s, out);
}

const char *ag_stats_str(const struct ag_stats *st, uint32_t id)
{
    return id < st->strings.n ? st->strings.strs[id] : "";
}

int ag_stats_file(struct ag_stats *st, const char *name, enum ag_rule (*filter)(const char *),
                  uint32_t *out)
{
    uint32_t sid;
    uint64_t v;
    int err = intern(&st->strings, name, &sid);
    if (err)
        return err;
    if (hm_get(&st->file_by_name, (uint64_t)sid + 1, &v)) {
        *out = (uint32_t)(v - 1);
        return 0;
    }
    if (!grow((void **)&st->files, &st->files_cap, st->nfiles + 1, sizeof(*st->files)) ||
        hm_put(&st->file_by_name, (uint64_t)sid + 1, st->nfiles + 1))
        return -SCRY_E_NO_MEMORY;
    st->files[st->nfiles] = (struct ag_file){.name = sid, .rule = filter(name)};
    *out = (uint32_t)st->nfiles++;
    return 0;
}

int ag_stats_func(struct ag_stats *st, const char *qualname, uint32_t file, int32_t firstline,
                  uint32_t *out)
{
    uint32_t sid;
    int err = intern(&st->strings, qualname, &sid);
    if (err)
        return err;
    uint64_t base = ((uint64_t)sid << 32) ^ ((uint64_t)file << 8) ^ (uint32_t)firstline;
    for (uint64_t salt = 0;; salt++) {
        uint64_t k = key_of(base + salt * 0x9e3779b97f4a7c15ULL), v;
        if (hm_get(&st->func_by_key, k, &v)) {
            const struct ag_func *f = &st->funcs[v - 1];
            if (f->name == sid && f->file == file && f->firstline == firstline) {
                *out = (uint32_t)(v - 1);
                return 0;
            }
            continue;
        }
        if (!grow((void **)&st->funcs, &st->funcs_cap, st->nfuncs + 1, sizeof(*st->funcs)) ||
            hm_put(&st->func_by_key, k, st->nfuncs + 1))
            return -SCRY_E_NO_MEMORY;
        st->funcs[st->nfuncs] = (struct ag_func){sid, file, firstline};
        *out = (uint32_t)st->nfuncs++;
        return 0;
    }
}

/* The line (file, func, line), made (all zero) when it is new; NULL when out of memory. */
static struct ag_line *line_at(struct ag_stats *st, uint32_t file, uint32_t func, int32_t line)
{
    uint64_t base = ((uint64_t)file << 40) ^ ((uint64_t)func << 20) ^ (uint32_t)line;
    for (uint64_t salt = 0;; salt++) {
        uint64_t k = key_of(base + salt * 0x9e3779b97f4a7c15ULL), v;
        if (hm_get(&st->line_by_key, k, &v)) {
            struct ag_line *l = &st->lines[v - 1];
            if (l->file != file || l->func != func || l->line != line)
                continue;
            return l;
        }
        if (!grow((void **)&st->lines, &st->lines_cap, st->nlines + 1, sizeof(*st->lines)) ||
            hm_put(&st->line_by_key, k, st->nlines + 1))
            return NULL;
        st->lines[st->nlines] = (struct ag_line){.file = file, .func = func, .line = line};
        return &st->lines[st->nlines++];
    }
}

int ag_stats_add(struct ag_stats *st, uint32_t file, uint32_t func, int32_t line, enum ag_cat cat,
                 double sec)
{
    struct ag_line *l = line_at(st, file, func, line);
    if (!l)
        return -SCRY_E_NO_MEMORY;
    l->sec[cat] += sec;
    l->samples++;
    return 0;
}

int ag_stats_add_gpu(struct ag_stats *st, uint32_t file, uint32_t func, int32_t line, double sec,
                     double load, double mem_mb)
{
    struct ag_line *l = line_at(st, file, func, line);
    if (!l)
        return -SCRY_E_NO_MEMORY;
    l->gpu_sec += sec;
    l->gpu_load_sec += load * sec;
    l->gpu_mem_mb_sec += mem_mb * sec;
    if (mem_mb > l->gpu_peak_mb)
        l->gpu_peak_mb = mem_mb;
    st->gpu_sec += sec;
    st->gpu_load_sec += load * sec;
    return 0;
}

int ag_stats_stack(struct ag_stats *st, const struct ag_sframe *frames, uint32_t depth,
                   uint32_t *out)
{
    *out = 0;
    uint64_t base = fnv1a(frames, depth * sizeof(*frames), depth);
    for (uint64_t salt = 0;; salt++) {
        uint64_t k = key_of(base + salt * 0x9e3779b97f4a7c15ULL), v;
        if (hm_get(&st->stack_by_key, k, &v)) {
            const struct ag_stack *x = &st->stacks[v - 1];
            if (x->depth == depth &&
                memcmp(&st->sframes[x->off], frames, depth * sizeof(*frames)) == 0) {
                *out = (uint32_t)v;
                return 0;
            }
            continue;
        }
        if (st->nstacks >= AG_MAX_STACKS) {
            st->stacks_overflow++;
            return 0;
        }
        if (!grow((void **)&st->stacks, &st->stacks_cap, st->nstacks + 1, sizeof(*st->stacks)) ||
            !grow((void **)&st->sframes, &st->sframes_cap, st->nsframes + depth,
                  sizeof(*st->sframes)) ||
            hm_put(&st->stack_by_key, k, st->nstacks + 1))
            return -SCRY_E_NO_MEMORY;
        memcpy(&st->sframes[st->nsframes], frames, depth * sizeof(*frames));
        st->stacks[st->nstacks] = (struct ag_stack){.off = (uint32_t)st->nsframes, .depth = depth};
        st->nsframes += depth;
        *out = (uint32_t)++st->nstacks;
        return 0;
    }
}

bool ag_stats_nframe_find(const struct ag_stats *st, uint64_t addr, uint32_t *out)
{
    uint64_t v;
    if (addr == 0 || addr == UINT64_MAX || !hm_get(&st->nframe_by_addr, addr, &v))
        return false;
    *out = (uint32_t)(v - 1);
    return true;
}

int ag_stats_nframe(struct ag_stats *st, uint64_t addr, const struct ag_nframe *f, uint32_t *out)
{
    if (!grow((void **)&st->nframes, &st->nframes_cap, st->nnframes + 1, sizeof(*st->nframes)) ||
        (addr != 0 && addr != UINT64_MAX && hm_put(&st->nframe_by_addr, addr, st->nnframes + 1)))
        return -SCRY_E_NO_MEMORY;
    st->nframes[st->nnframes] = *f;
    *out = (uint32_t)st->nnframes++;
    return 0;
}

int ag_chains_hit(struct ag_chains *c, const void *items, uint32_t n)
{
    uint32_t unused;
    return ag_chains_hit_at(c, items, n, &unused);
}

int ag_chains_hit_at(struct ag_chains *c, const void *items, uint32_t n, uint32_t *at)
{
    *at = 0;
    size_t bytes = (size_t)n * c->item_size;
    uint64_t base = fnv1a(items, bytes, n);
    for (uint64_t salt = 0;; salt++) {
        uint64_t k = key_of(base + salt * 0x9e3779b97f4a7c15ULL), v;
        if (hm_get(&c->by_key, k, &v)) {
            struct ag_chain *x = &c->chains[v - 1];
            if (x->depth == n && memcmp(c->items + (size_t)x->off * c->item_size, items, bytes) == 0) {
                x->hits++;
                *at = (uint32_t)v;
                return 0;
            }
            continue;
        }
        if (c->n >= AG_MAX_STACKS) {
            c->overflow++;
            return 0;
        }
        if (!grow((void **)&c->chains, &c->cap, c->n + 1, sizeof(*c->chains)) ||
            !grow((void **)&c->items, &c->cap_items, (c->nitems + n) * c->item_size, 1) ||
            hm_put(&c->by_key, k, c->n + 1))
            return -SCRY_E_NO_MEMORY;
        memcpy(c->items + c->nitems * c->item_size, items, bytes);
        c->chains[c->n++] = (struct ag_chain){.off = (uint32_t)c->nitems, .depth = n, .hits = 1};
        c->nitems += n;
        *at = (uint32_t)c->n;
        return 0;
    }
}
