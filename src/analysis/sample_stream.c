/* The sample stream's merge (sample_stream.h): parts' streams checked, their samples' stacks
 * interned into one table (keyed in the profile's merge index), times made absolute, then
 * relative to the program's start. */
#include "analysis/sample_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/strbuf.h"

static bool is_count(const json_t *v, int64_t max)
{
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= max;
}

int prof_ss_check(const json_t *part, size_t nfiles, size_t nfuncs, size_t nstacks,
                  char *msg, size_t size)
{
    const json_t *ss = json_object_get(part, "sample_stream");
    if (!ss)
        return 0;
    const json_t *threads = json_object_get(ss, "threads");
    const json_t *samples = json_object_get(ss, "samples");
    if (!json_is_object(ss) || !is_count(json_object_get(ss, "stride"), INT64_MAX) ||
        json_integer_value(json_object_get(ss, "stride")) < 1 ||
        !is_count(json_object_get(ss, "seen"), INT64_MAX) || !json_is_array(threads) ||
        !json_is_array(samples)) {
        snprintf(msg, size, "\"sample_stream\" is not {stride >= 1, seen, threads, samples}");
        return -SCRY_E_BAD_PROFILE;
    }
    size_t nthreads = json_array_size(threads);
    for (size_t i = 0; i < nthreads; i++) {
        const json_t *t = json_array_get(threads, i);
        if (!json_is_array(t) || json_array_size(t) != 2 ||
            !is_count(json_array_get(t, 0), INT32_MAX) || !json_is_string(json_array_get(t, 1))) {
            snprintf(msg, size, "sample_stream.threads[%zu] is not [tid, name]", i);
            return -SCRY_E_BAD_PROFILE;
        }
    }
    for (size_t i = 0; i < json_array_size(samples); i++) {
        const json_t *s = json_array_get(samples, i), *st = json_array_get(s, 7);
        if (!json_is_array(s) || json_array_size(s) != 8 ||
            !is_count(json_array_get(s, 0), INT64_MAX / 2000) ||
            !is_count(json_array_get(s, 1), (int64_t)nthreads - 1) ||
            !is_count(json_array_get(s, 2), 2) ||
            !is_count(json_array_get(s, 3), INT64_MAX / 2000) ||
            !is_count(json_array_get(s, 4), (int64_t)nfiles - 1) ||
            !is_count(json_array_get(s, 5), (int64_t)nfuncs - 1) ||
            !is_count(json_array_get(s, 6), 100000000) || !json_is_integer(st) ||
            json_integer_value(st) < -1 || json_integer_value(st) >= (int64_t)nstacks) {
            snprintf(msg, size,
                     "sample_stream.samples[%zu] is not [us, thread index, kind 0-2, weight us, "
                     "file index, function index, line, stack index or -1]",
                     i);
            return -SCRY_E_BAD_PROFILE;
        }
    }
    return 0;
}

static int no_memory(void)
{
    return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
}

/* The index of the stream's stack with these frames, added when new. */
static int intern_stack(struct profile *p, const struct prof_sframe *fr, uint32_t depth,
                        uint32_t *out)
{
    struct prof_sstream *ss = &p->ss;
    struct strbuf key = STRBUF_INIT;
    sb_addch(&key, 'q');
    for (uint32_t i = 0; i < depth; i++)
        sb_addf(&key, "%u,%u,%u;", fr[i].file, fr[i].func, fr[i].line);
    if (!p->index && !(p->index = json_object()))
        return sb_release(&key), no_memory();
    json_t *v = json_object_get(p->index, sb_str(&key));
    int err = 0;
    if (v) {
        *out = (uint32_t)json_integer_value(v);
    } else if (grow_array(&ss->stacks, &ss->cap_stacks, ss->nstacks + 1, sizeof(*ss->stacks)) ||
               grow_array(&ss->frames, &ss->cap_frames, ss->nframes + depth,
                          sizeof(*ss->frames)) ||
               json_object_set_new(p->index, sb_str(&key), json_integer((json_int_t)ss->nstacks))) {
        err = no_memory();
    } else {
        memcpy(&ss->frames[ss->nframes], fr, depth * sizeof(*fr));
        ss->stacks[ss->nstacks] = (struct prof_ssstack){(uint32_t)ss->nframes, depth};
        ss->nframes += depth;
        *out = (uint32_t)ss->nstacks++;
    }
    sb_release(&key);
    return err;
}

int prof_ss_merge(struct profile *p, const json_t *part, int64_t pid, double start_sec,
                  const uint32_t *fmap, const uint32_t *umap, const size_t *stack_pos)
{
    const json_t *js = json_object_get(part, "sample_stream");
    if (!js)
        return 0;
    struct prof_sstream *ss = &p->ss;
    ss->on = true;
    const json_t *threads = json_object_get(js, "threads");
    const json_t *samples = json_object_get(js, "samples");
    uint64_t stride = (uint64_t)json_integer_value(json_object_get(js, "stride"));
    size_t base = ss->nthreads;
    size_t nt = json_array_size(threads), ns = json_array_size(samples);
    if (grow_array(&ss->threads, &ss->cap_threads, base + nt, sizeof(*ss->threads)) ||
        grow_array(&ss->samples, &ss->cap_samples, ss->nsamples + ns, sizeof(*ss->samples)))
        return no_memory();
    for (size_t i = 0; i < nt; i++) {
        const json_t *t = json_array_get(threads, i);
        const char *name = arena_strdup(&p->arena, json_string_value(json_array_get(t, 1)));
        if (!name)
            return no_memory();
        ss->threads[base + i] = (struct prof_ssthread){
            pid, json_integer_value(json_array_get(t, 0)), name, stride};
    }
    ss->nthreads = base + nt;
    double start_ns = start_sec * 1e9;
    for (size_t i = 0; i < ns; i++) {
        const json_t *s = json_array_get(samples, i);
        int64_t st = json_integer_value(json_array_get(s, 7));
        struct prof_sframe one = {fmap[json_integer_value(json_array_get(s, 4))],
                                  umap[json_integer_value(json_array_get(s, 5))],
                                  (uint32_t)json_integer_value(json_array_get(s, 6))};
        const struct prof_sframe *fr = &one;
        uint32_t depth = 1, idx = 0;
        if (st >= 0 && stack_pos) {
            const struct prof_stack *x = &p->stacks[stack_pos[st]];
            fr = &p->sframes[x->off];
            depth = x->depth;
        }
        int err = intern_stack(p, fr, depth, &idx);
        if (err)
            return err;
        ss->samples[ss->nsamples++] = (struct prof_sssample){
            .t = (int64_t)(start_ns + 1000.0 * (double)json_integer_value(json_array_get(s, 0))),
            .weight_ns = 1000 * (uint64_t)json_integer_value(json_array_get(s, 3)),
            .thread = (uint32_t)(base + (size_t)json_integer_value(json_array_get(s, 1))),
            .stack = idx,
            .kind = (uint8_t)json_integer_value(json_array_get(s, 2)),
        };
    }
    return 0;
}

static int cmp_sample(const void *a, const void *b)
{
    const struct prof_sssample *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

void prof_ss_finish(struct prof_sstream *ss, int64_t origin_ns)
{
    for (size_t i = 0; i < ss->nsamples; i++)
        ss->samples[i].t = ss->samples[i].t > origin_ns ? ss->samples[i].t - origin_ns : 0;
    if (ss->nsamples > 1)
        qsort(ss->samples, ss->nsamples, sizeof(*ss->samples), cmp_sample);
}

void prof_ss_free(struct prof_sstream *ss)
{
    free(ss->threads);
    free(ss->samples);
    free(ss->stacks);
    free(ss->frames);
    memset(ss, 0, sizeof(*ss));
}
