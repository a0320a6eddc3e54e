/* Merge of the agent's part files into one profile (docs/agent-protocol.md, "Part file").
 * A part is checked completely before anything of it is merged (profile_check.c), so a damaged
 * part is skipped whole and the others still make a profile. */
#include "analysis/profile_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/strbuf.h"

void prof_init(struct profile *p)
{
    memset(p, 0, sizeof(*p));
    p->arena = (struct arena)ARENA_INIT;
}

void prof_free(struct profile *p)
{
    for (size_t i = 0; i < p->nlines; i++)
        prof_timeline_free(&p->lines[i].timeline);
    for (size_t i = 0; i < p->mem.nparts; i++)
        prof_timeline_free(&p->mem.parts[i].tl);
    free(p->mem.parts);
    prof_timeline_free(&p->mem.footprint);
    free(p->files);
    free(p->funcs);
    free(p->lines);
    free(p->excluded);
    free(p->threads);
    free(p->decorated);
    free(p->stacks);
    free(p->sframes);
    free(p->nframes);
    free(p->native_stacks);
    free(p->native_items);
    free(p->combined_stacks);
    free(p->combined_items);
    prof_ss_free(&p->ss);
    if (p->index)
        json_decref(p->index);
    arena_free(&p->arena);
    memset(p, 0, sizeof(*p));
}

static int merge_threads(struct profile *p, const json_t *part, int64_t pid)
{
    const json_t *threads = json_object_get(part, "threads");
    if (threads)
        p->have_threads = true;
    for (size_t i = 0; i < json_array_size(threads); i++) {
        const json_t *t = json_array_get(threads, i);
        if (grow_array(&p->threads, &p->cap_threads, p->nthreads + 1, sizeof(*p->threads)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
        const char *name = arena_strdup(&p->arena, json_string_value(json_object_get(t, "name")));
        if (!name)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
        p->threads[p->nthreads++] = (struct prof_thread){
            .pid = pid,
            .native_id = json_integer_value(json_object_get(t, "native_id")),
            .thread_id = (uint64_t)json_integer_value(json_object_get(t, "thread_id")),
            .name = name,
            .samples = (uint64_t)json_integer_value(json_object_get(t, "samples")),
            .gil_samples = (uint64_t)json_integer_value(json_object_get(t, "gil_samples")),
        };
    }
    return 0;
}

/* Looks key up in the merge index; *found says whether it was there. */
static int index_get(struct profile *p, const char *key, size_t *pos, bool *found)
{
    if (!p->index && !(p->index = json_object()))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    json_t *v = json_object_get(p->index, key);
    *found = v != NULL;
    if (v)
        *pos = (size_t)json_integer_value(v);
    return 0;
}

static int index_put(struct profile *p, const char *key, size_t pos)
{
    if (json_object_set_new(p->index, key, json_integer((json_int_t)pos)) != 0)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    return 0;
}

static int intern_file(struct profile *p, const char *name, uint32_t *out)
{
    char *key = arena_printf(&p->arena, "f%s", name);
    if (!key)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    size_t pos;
    bool found;
    int err = index_get(p, key, &pos, &found);
    if (err)
        return err;
    if (!found) {
        if ((err = grow_array(&p->files, &p->cap_files, p->nfiles + 1, sizeof(*p->files))))
            return err;
        pos = p->nfiles;
        p->files[pos] = (struct prof_file){.name = arena_strdup(&p->arena, name)};
        if (!p->files[pos].name || (err = index_put(p, key, pos)))
            return err ? err : err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
        p->nfiles++;
    }
    *out = (uint32_t)pos;
    return 0;
}

static int intern_func(struct profile *p, const char *qualname, uint32_t file, uint32_t first,
                       uint32_t *out)
{
    char *key = arena_printf(&p->arena, "u%u:%u:%s", file, first, qualname);
    if (!key)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    size_t pos;
    bool found;
    int err = index_get(p, key, &pos, &found);
    if (err)
        return err;
    if (!found) {
        if ((err = grow_array(&p->funcs, &p->cap_funcs, p->nfuncs + 1, sizeof(*p->funcs))))
            return err;
        pos = p->nfuncs;
        p->funcs[pos] = (struct prof_func){
            .qualname = arena_strdup(&p->arena, qualname), .file = file, .first_line = first};
        if (!p->funcs[pos].qualname || (err = index_put(p, key, pos)))
            return err ? err : err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
        p->nfuncs++;
    }
    *out = (uint32_t)pos;
    return 0;
}

/* The merged line (file, line, func), made (all zero) when it is new. */
static int line_at(struct profile *p, uint32_t file, uint32_t line, uint32_t func,
                   struct prof_line **out)
{
    char key[64];
    snprintf(key, sizeof(key), "l%u:%u:%u", file, line, func);
    size_t pos;
    bool found;
    int err = index_get(p, key, &pos, &found);
    if (err)
        return err;
    if (!found) {
        if ((err = grow_array(&p->lines, &p->cap_lines, p->nlines + 1, sizeof(*p->lines))))
            return err;
        pos = p->nlines;
        p->lines[pos] = (struct prof_line){.file = file, .line = line, .func = func};
        if ((err = index_put(p, key, pos)))
            return err;
        p->nlines++;
    }
    *out = &p->lines[pos];
    return 0;
}

static int add_line(struct profile *p, uint32_t file, uint32_t line, uint32_t func, double py,
                    double nat, double sys, uint64_t samples)
{
    struct prof_line *l;
    int err = line_at(p, file, line, func, &l);
    if (err)
        return err;
    l->python_sec += py;
    l->native_sec += nat;
    l->sys_sec += sys;
    l->samples += samples;
    return 0;
}

/* Merges one stack (frames already in merged indexes). */
static int add_stack(struct profile *p, const struct prof_sframe *fr, uint32_t depth, double py,
                     double nat, double sys, uint64_t samples, uint64_t malloc_bytes,
                     size_t *at)
{
    struct strbuf key = STRBUF_INIT;
    sb_addch(&key, 's');
    for (uint32_t i = 0; i < depth; i++)
        sb_addf(&key, "%u,%u,%u;", fr[i].file, fr[i].func, fr[i].line);
    size_t pos;
    bool found;
    int err = index_get(p, sb_str(&key), &pos, &found);
    if (!err && !found) {
        err = grow_array(&p->stacks, &p->cap_stacks, p->nstacks + 1, sizeof(*p->stacks));
        if (!err)
            err = grow_array(&p->sframes, &p->cap_sframes, p->nsframes + depth,
                             sizeof(*p->sframes));
        if (!err) {
            pos = p->nstacks;
            memcpy(&p->sframes[p->nsframes], fr, depth * sizeof(*fr));
            p->stacks[pos] = (struct prof_stack){.off = (uint32_t)p->nsframes, .depth = depth};
            p->nsframes += depth;
            err = index_put(p, sb_str(&key), pos);
            if (!err)
                p->nstacks++;
        }
    }
    sb_release(&key);
    if (err)
        return err;
    *at = pos;
    struct prof_stack *st = &p->stacks[pos];
    st->python_sec += py;
    st->native_sec += nat;
    st->sys_sec += sys;
    st->samples += samples;
    st->malloc_bytes += malloc_bytes;
    return 0;
}

static int intern_nframe(struct profile *p, const json_t *f, uint32_t *out)
{
    const char *module = json_string_value(json_array_get(f, 0));
    const char *symbol = json_string_value(json_array_get(f, 1));
    uint64_t ip = (uint64_t)json_integer_value(json_array_get(f, 2));
    uint64_t offset = (uint64_t)json_integer_value(json_array_get(f, 3));
    /* Addresses differ between processes (ASLR): the same code is the same (module, symbol,
     * offset). */
    char *key = arena_printf(&p->arena, "n%s\x1f%s\x1f%llu", module, symbol,
                             (unsigned long long)offset);
    if (!key)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    size_t pos;
    bool found;
    int err = index_get(p, key, &pos, &found);
    if (err)
        return err;
    if (!found) {
        if ((err = grow_array(&p->nframes, &p->cap_nframes, p->nnframes + 1, sizeof(*p->nframes))))
            return err;
        pos = p->nnframes;
        p->nframes[pos] = (struct prof_nframe){.module = arena_strdup(&p->arena, module),
                                               .symbol = arena_strdup(&p->arena, symbol),
                                               .ip = ip,
                                               .offset = offset};
        if (!p->nframes[pos].module || !p->nframes[pos].symbol || (err = index_put(p, key, pos)))
            return err ? err : err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
        p->nnframes++;
    }
    *out = (uint32_t)pos;
    return 0;
}

/* Merges one chain of items (already in merged indexes) keyed by `key`. */
static int add_chain(struct profile *p, const char *key, struct prof_chain **chains, size_t *n,
                     size_t *cap, void **items, size_t *nitems, size_t *cap_items,
                     size_t item_size, const void *new_items, uint32_t depth, uint64_t hits)
{
    size_t pos;
    bool found;
    int err = index_get(p, key, &pos, &found);
    if (!err && !found) {
        err = grow_array(chains, cap, *n + 1, sizeof(**chains));
        if (!err)
            err = grow_array(items, cap_items, *nitems + depth, item_size);
        if (!err) {
            pos = *n;
            memcpy((char *)*items + *nitems * item_size, new_items, depth * item_size);
            (*chains)[pos] = (struct prof_chain){.off = (uint32_t)*nitems, .depth = depth};
            *nitems += depth;
            err = index_put(p, key, pos);
            if (!err)
                (*n)++;
        }
    }
    if (err)
        return err;
    (*chains)[pos].hits += hits;
    return 0;
}

static int merge_native(struct profile *p, const json_t *part, const uint32_t *fmap,
                        const uint32_t *umap)
{
    const json_t *frames = json_object_get(part, "native_frames");
    const json_t *nst = json_object_get(part, "native_stacks");
    const json_t *cst = json_object_get(part, "combined_stacks");
    if (!frames && !nst && !cst)
        return 0;
    p->have_native = true;
    p->native_stacks_overflow +=
        (uint64_t)json_integer_value(json_object_get(part, "native_stacks_overflow"));
    p->combined_stacks_overflow +=
        (uint64_t)json_integer_value(json_object_get(part, "combined_stacks_overflow"));
    size_t nn = json_array_size(frames);
    uint32_t *nmap = malloc((nn + 1) * sizeof(*nmap));
    if (!nmap)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    int err = 0;
    for (size_t i = 0; i < nn && !err; i++)
        err = intern_nframe(p, json_array_get(frames, i), &nmap[i]);
    struct strbuf key = STRBUF_INIT;
    for (size_t i = 0; i < json_array_size(nst) && !err; i++) {
        const json_t *c = json_array_get(nst, i), *its = json_array_get(c, 0);
        uint32_t chain[PROF_MAX_DEPTH], depth = (uint32_t)json_array_size(its);
        sb_reset(&key);
        sb_addch(&key, 'N');
        for (uint32_t k = 0; k < depth; k++) {
            chain[k] = nmap[json_integer_value(json_array_get(its, k))];
            sb_addf(&key, "%u;", chain[k]);
        }
        err = add_chain(p, sb_str(&key), &p->native_stacks, &p->nnative_stacks,
                        &p->cap_native_stacks, (void **)&p->native_items, &p->nnative_items,
                        &p->cap_native_items, sizeof(*p->native_items), chain, depth,
                        (uint64_t)json_integer_value(json_array_get(c, 1)));
    }
    for (size_t i = 0; i < json_array_size(cst) && !err; i++) {
        const json_t *c = json_array_get(cst, i), *its = json_array_get(c, 0);
        struct prof_citem chain[PROF_MAX_DEPTH];
        uint32_t depth = (uint32_t)json_array_size(its);
        sb_reset(&key);
        sb_addch(&key, 'C');
        for (uint32_t k = 0; k < depth; k++) {
            const json_t *x = json_array_get(its, k);
            if (json_array_size(x) == 1) {
                chain[k] = (struct prof_citem){
                    .native = true, .nframe = nmap[json_integer_value(json_array_get(x, 0))]};
                sb_addf(&key, "n%u;", chain[k].nframe);
            } else {
                chain[k] = (struct prof_citem){
                    .file = fmap[json_integer_value(json_array_get(x, 0))],
                    .func = umap[json_integer_value(json_array_get(x, 1))],
                    .line = (uint32_t)json_integer_value(json_array_get(x, 2))};
                sb_addf(&key, "p%u,%u,%u;", chain[k].file, chain[k].func, chain[k].line);
            }
        }
        err = add_chain(p, sb_str(&key), &p->combined_stacks, &p->ncombined_stacks,
                        &p->cap_combined_stacks, (void **)&p->combined_items,
                        &p->ncombined_items, &p->cap_combined_items, sizeof(*p->combined_items),
                        chain, depth, (uint64_t)json_integer_value(json_array_get(c, 1)));
    }
    sb_release(&key);
    free(nmap);
    return err;
}

static int add_excluded(struct profile *p, const char *file, const char *rule, double sec)
{
    for (size_t i = 0; i < p->nexcluded; i++)
        if (strcmp(p->excluded[i].file, file) == 0 && strcmp(p->excluded[i].rule, rule) == 0) {
            p->excluded[i].sec += sec;
            return 0;
        }
    int err = grow_array(&p->excluded, &p->cap_excluded, p->nexcluded + 1, sizeof(*p->excluded));
    if (err)
        return err;
    struct prof_excluded *e = &p->excluded[p->nexcluded];
    e->file = arena_strdup(&p->arena, file);
    e->rule = arena_strdup(&p->arena, rule);
    e->sec = sec;
    if (!e->file || !e->rule)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    p->nexcluded++;
    return 0;
}

static double num(const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    return v ? json_number_value(v) : dflt;
}

static int set_program(struct profile *p, const json_t *part)
{
    p->pid = json_integer_value(json_object_get(part, "pid"));
    const char *ver = json_string_value(json_object_get(part, "python_version"));
    p->python_version = ver ? arena_strdup(&p->arena, ver) : NULL;
    const json_t *argv = json_object_get(part, "argv");
    p->argc = json_array_size(argv);
    p->argv = arena_alloc(&p->arena, (p->argc + 1) * sizeof(*p->argv));
    if (!p->argv)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    for (size_t i = 0; i < p->argc; i++)
        if (!(p->argv[i] = arena_strdup(&p->arena, json_string_value(json_array_get(argv, i)))))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    p->start_time_absolute = num(part, "start_time_absolute", 0);
    p->main_thread_id = (uint64_t)json_integer_value(json_object_get(part, "main_thread_id"));
    return 0;
}

/* A part's [[ns since its start, bytes], ...] appended with absolute times. */
static int add_points(struct prof_timeline *dst, const json_t *tl, int64_t start_ns)
{
    for (size_t i = 0; i < json_array_size(tl); i++) {
        const json_t *pt = json_array_get(tl, i);
        struct prof_point x = {start_ns + json_integer_value(json_array_get(pt, 0)),
                               (uint64_t)json_integer_value(json_array_get(pt, 1))};
        int err = prof_timeline_append(dst, &x, 1);
        if (err)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    }
    return 0;
}

static uint64_t mcount(const json_t *m, const char *key)
{
    return (uint64_t)json_integer_value(json_object_get(m, key));
}

/* The process's footprint timeline, kept apart until prof_finish sums every process's. */
static int add_mpart(struct profile *p, const json_t *part, const json_t *m, int64_t start_ns)
{
    struct prof_memory *mem = &p->mem;
    int err = grow_array(&mem->parts, &mem->cap_parts, mem->nparts + 1, sizeof(*mem->parts));
    if (err)
        return err;
    struct prof_mpart *mp = &mem->parts[mem->nparts++];
    *mp = (struct prof_mpart){.end = INT64_MAX};
    if ((err = add_points(&mp->tl, json_object_get(m, "timeline"), start_ns)))
        return err;
    prof_timeline_reduce(&mp->tl, 0); /* sorted, for the sweep */
    /* After its end a process holds nothing; without an elapsed time its last value stays. */
    double elapsed = num(part, "elapsed_sec", 0);
    if (elapsed > 0) {
        mp->end = start_ns + prof_unix_ns(elapsed);
        if (mp->tl.n && mp->end < mp->tl.pts[mp->tl.n - 1].t)
            mp->end = mp->tl.pts[mp->tl.n - 1].t;
    }
    return 0;
}

/* The merged line of a part's line entry [file index, line, function index, ...]. */
static int entry_line(struct profile *p, const json_t *e, const uint32_t *fmap,
                      const uint32_t *umap, struct prof_line **out)
{
    return line_at(p, fmap[json_integer_value(json_array_get(e, 0))],
                   (uint32_t)json_integer_value(json_array_get(e, 1)),
                   umap[json_integer_value(json_array_get(e, 2))], out);
}

static int merge_memory_lines(struct profile *p, const json_t *ml, const uint32_t *fmap,
                              const uint32_t *umap, int64_t start_ns)
{
    for (size_t i = 0; i < json_array_size(ml); i++) {
        const json_t *e = json_array_get(ml, i);
        uint64_t v[17];
        for (size_t k = 3; k < 17; k++) /* growth_rises (15), max_live (16) may be absent: 0 */
            v[k] = (uint64_t)json_integer_value(json_array_get(e, k));
        struct prof_line *l;
        int err = entry_line(p, e, fmap, umap, &l);
        if (err)
            return err;
        l->malloc_bytes += v[3];
        l->python_bytes += v[4];
        l->malloc_samples += v[5];
        l->free_bytes += v[6];
        if (v[7] > l->peak_bytes)
            l->peak_bytes = v[7];
        l->hw_sum_bytes += v[8];
        l->execs += v[9];
        l->copy_bytes += v[10];
        l->leak_mallocs += v[11];
        l->leak_frees += v[12];
        l->live_bytes += v[14];
        if (json_array_size(e) > 15) {
            l->growth_known = true;
            if (v[15] > l->growth_rises)
                l->growth_rises = v[15];
        }
        /* The most one process held at once: a lower bound of what the processes held
         * together (their tops need not coincide), docs/json-schema.md. */
        if (json_array_size(e) > 16) {
            l->held_known = true;
            if (v[16] > l->max_held_bytes)
                l->max_held_bytes = v[16];
        }
        if ((err = add_points(&l->timeline, json_array_get(e, 13), start_ns)))
            return err;
    }
    return 0;
}

/* A GPU source over the parts: the same in every part, else "mixed". */
static const char *merge_source(struct profile *p, const char *have, const char *part)
{
    if (!part)
        return have;
    if (!have)
        return arena_strdup(&p->arena, part);
    return strcmp(have, part) == 0 ? have : "mixed";
}

/* The part's `gpu` (device, sources, note) and `gpu_lines`, summed into the lines. */
static int merge_gpu(struct profile *p, const json_t *part, const uint32_t *fmap,
                     const uint32_t *umap)
{
    const json_t *g = json_object_get(part, "gpu");
    if (!g)
        return 0;
    const char *note = json_string_value(json_object_get(g, "note"));
    if (note && (!p->gpu_note || !strstr(p->gpu_note, note)))
        p->gpu_note = p->gpu_note ? arena_printf(&p->arena, "%s; %s", p->gpu_note, note)
                                  : arena_strdup(&p->arena, note);
    const char *device = json_string_value(json_object_get(g, "device"));
    if (!device)
        return 0;
    p->gpu = true;
    if (!p->gpu_device)
        p->gpu_device = arena_strdup(&p->arena, device);
    p->gpu_util_source = merge_source(p, p->gpu_util_source,
                                      json_string_value(json_object_get(g, "utilization_source")));
    p->gpu_mem_source = merge_source(p, p->gpu_mem_source,
                                     json_string_value(json_object_get(g, "memory_source")));
    p->gpu_sampler_cpu_sec += num(g, "sampler_cpu_sec", 0);
    const json_t *gl = json_object_get(part, "gpu_lines");
    for (size_t i = 0; i < json_array_size(gl); i++) {
        const json_t *e = json_array_get(gl, i);
        struct prof_line *l;
        int err = entry_line(p, e, fmap, umap, &l);
        if (err)
            return err;
        l->gpu_sec += json_number_value(json_array_get(e, 3));
        l->gpu_load_sec += json_number_value(json_array_get(e, 4));
        l->gpu_mem_mb_sec += json_number_value(json_array_get(e, 5));
        double peak = json_number_value(json_array_get(e, 6));
        if (peak > l->gpu_peak_mb)
            l->gpu_peak_mb = peak;
    }
    return 0;
}

/* Sums and maxima of the part's `memory`; the window comes from the program's own part, else
 * from the first part with memory. */
static int merge_memory(struct profile *p, const json_t *part, const uint32_t *fmap,
                        const uint32_t *umap, bool primary)
{
    const json_t *m = json_object_get(part, "memory");
    if (!m)
        return 0;
    struct prof_memory *mem = &p->mem;
    bool first = !mem->on;
    if (primary || (first && !mem->window_from_primary)) {
        mem->window = mcount(m, "window");
        mem->copy_window = mcount(m, "copy_window");
        mem->window_from_primary = primary;
    }
    mem->alloc_samples += mcount(m, "alloc_samples");
    mem->copy_samples += mcount(m, "copy_samples");
    mem->malloc_bytes += mcount(m, "malloc_bytes");
    mem->free_bytes += mcount(m, "free_bytes");
    mem->python_bytes += mcount(m, "python_bytes");
    mem->copy_bytes += mcount(m, "copy_bytes");
    mem->native_malloc_bytes += mcount(m, "native_malloc_bytes");
    mem->startup_malloc_bytes += mcount(m, "startup_malloc_bytes");
    uint64_t mf = mcount(m, "max_footprint_bytes");
    if (first || mf > mem->part_max_footprint) {
        const json_t *at = json_object_get(m, "max_footprint_at");
        mem->part_max_footprint = mf;
        mem->have_at = json_is_array(at);
        mem->at_file = mem->have_at ? fmap[json_integer_value(json_array_get(at, 0))] : 0;
        mem->at_line = mem->have_at ? (uint32_t)json_integer_value(json_array_get(at, 1)) : 0;
        mem->max_footprint_python_fraction = num(m, "max_footprint_python_fraction", 0);
    }
    mem->on = true;
    int64_t start_ns = prof_unix_ns(num(part, "start_time_absolute", 0));
    int err = add_mpart(p, part, m, start_ns);
    if (!err)
        err = merge_memory_lines(p, json_object_get(part, "memory_lines"), fmap, umap, start_ns);
    return err;
}

/* One [file, qualname, first line] of a part's "decorated" (each function once). */
static int add_decorated(struct profile *p, const json_t *d)
{
    const char *file = json_string_value(json_array_get(d, 0));
    const char *name = json_string_value(json_array_get(d, 1));
    json_int_t first = json_integer_value(json_array_get(d, 2));
    if (!file || !name || first < 0 || first > UINT32_MAX)
        return 0;
    for (size_t i = 0; i < p->ndecorated; i++)
        if (p->decorated[i].first == first && strcmp(p->decorated[i].file, file) == 0 &&
            strcmp(p->decorated[i].name, name) == 0)
            return 0;
    if (grow_array(&p->decorated, &p->cap_decorated, p->ndecorated + 1, sizeof(*p->decorated)))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    struct prof_decorated *e = &p->decorated[p->ndecorated];
    if (!(e->file = arena_strdup(&p->arena, file)) || !(e->name = arena_strdup(&p->arena, name)))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    e->first = (uint32_t)first;
    p->ndecorated++;
    return 0;
}

static bool is_decorated(const struct profile *p, uint32_t func)
{
    const struct prof_func *f = &p->funcs[func];
    for (size_t i = 0; i < p->ndecorated; i++)
        if (p->decorated[i].first == f->first_line &&
            strcmp(p->decorated[i].name, f->qualname) == 0 &&
            strcmp(p->decorated[i].file, p->files[f->file].name) == 0)
            return true;
    return false;
}

/* @profile: only the decorated functions' lines are reported (the totals stay the whole
 * program's, so that their shares are of everything it did). */
static void keep_decorated(struct profile *p)
{
    if (!p->ndecorated)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < p->nlines; i++)
        if (is_decorated(p, p->lines[i].func))
            p->lines[kept++] = p->lines[i];
        else
            prof_timeline_free(&p->lines[i].timeline);
    p->nlines = kept;
}

int prof_add_part(struct profile *p, const json_t *part, const char *what, int64_t primary_pid)
{
    int err = prof_part_check(part, what);
    if (err)
        return err;
    int64_t pid = json_integer_value(json_object_get(part, "pid"));
    bool primary = primary_pid > 0 && pid == primary_pid;
    bool stand_in = !p->have_primary && p->nparts == 0;
    if (primary || stand_in) {
        /* The first part stands in for the program until the program's own part arrives. */
        if ((err = set_program(p, part)))
            return err;
        p->have_primary = primary;
    }
    double elapsed = num(part, "elapsed_sec", 0);
    if (elapsed > p->elapsed_sec)
        p->elapsed_sec = elapsed;
    if (primary || stand_in) {
        p->sampling_rate_sec = num(part, "sampling_rate_sec", p->sampling_rate_sec);
        p->off_sec = num(part, "profiling_off_sec", 0);
        p->virtual_time = json_is_true(json_object_get(part, "virtual_time"));
    }
    const json_t *dec = json_object_get(part, "decorated");
    for (size_t i = 0; i < json_array_size(dec) && !err; i++)
        err = add_decorated(p, json_array_get(dec, i));
    if (err)
        return err;
    p->memory_unsupported |= json_is_true(json_object_get(part, "memory_unsupported"));
    const json_t *rq = json_object_get(part, "run_queue");
    if (rq) {
        p->have_run_queue = true;
        p->run_queue_delay_sec += num(rq, "delay_sec", 0);
        p->run_queue_cpu_sec += num(rq, "cpu_sec", 0);
    }
    const json_t *totals = json_object_get(part, "totals");
    p->python_sec += num(totals, "python_sec", 0);
    p->native_sec += num(totals, "native_sec", 0);
    p->sys_sec += num(totals, "sys_sec", 0);
    p->samples += (uint64_t)json_integer_value(json_object_get(totals, "samples"));
    p->dropped += (uint64_t)json_integer_value(json_object_get(totals, "dropped"));

    /* Part indexes -> merged indexes. */
    const json_t *files = json_object_get(part, "files");
    const json_t *funcs = json_object_get(part, "functions");
    size_t nf = json_array_size(files), nu = json_array_size(funcs);
    uint32_t *fmap = malloc((nf + nu + 1) * sizeof(*fmap));
    if (!fmap)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    uint32_t *umap = fmap + nf;
    for (size_t i = 0; i < nf && !err; i++)
        err = intern_file(p, json_string_value(json_array_get(files, i)), &fmap[i]);
    for (size_t i = 0; i < nu && !err; i++) {
        const json_t *f = json_array_get(funcs, i);
        err = intern_func(p, json_string_value(json_array_get(f, 0)),
                          fmap[json_integer_value(json_array_get(f, 1))],
                          (uint32_t)json_integer_value(json_array_get(f, 2)), &umap[i]);
    }
    const json_t *lines = json_object_get(part, "lines");
    for (size_t i = 0; i < json_array_size(lines) && !err; i++) {
        const json_t *l = json_array_get(lines, i);
        err = add_line(p, fmap[json_integer_value(json_array_get(l, 0))],
                       (uint32_t)json_integer_value(json_array_get(l, 1)),
                       umap[json_integer_value(json_array_get(l, 2))],
                       json_number_value(json_array_get(l, 3)),
                       json_number_value(json_array_get(l, 4)),
                       json_number_value(json_array_get(l, 5)),
                       (uint64_t)json_integer_value(json_array_get(l, 6)));
    }
    const json_t *stacks = json_object_get(part, "stacks");
    if (stacks)
        p->have_stacks = true;
    size_t *stack_pos = calloc(json_array_size(stacks) + 1, sizeof(*stack_pos));
    if (!stack_pos)
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory merging the profile");
    p->stacks_overflow += (uint64_t)json_integer_value(json_object_get(part, "stacks_overflow"));
    for (size_t i = 0; i < json_array_size(stacks) && !err; i++) {
        const json_t *st = json_array_get(stacks, i), *fr = json_array_get(st, 0);
        struct prof_sframe chain[PROF_MAX_DEPTH];
        uint32_t depth = (uint32_t)json_array_size(fr);
        for (uint32_t f = 0; f < depth; f++) {
            const json_t *x = json_array_get(fr, f);
            chain[f] = (struct prof_sframe){fmap[json_integer_value(json_array_get(x, 0))],
                                            umap[json_integer_value(json_array_get(x, 1))],
                                            (uint32_t)json_integer_value(json_array_get(x, 2))};
        }
        const json_t *bytes = json_array_get(st, 5); /* absent: NULL, read as 0 */
        err = add_stack(p, chain, depth, json_number_value(json_array_get(st, 2)),
                        json_number_value(json_array_get(st, 3)),
                        json_number_value(json_array_get(st, 4)),
                        (uint64_t)json_integer_value(json_array_get(st, 1)),
                        (uint64_t)json_integer_value(bytes), &stack_pos[i]);
    }
    if (!err)
        err = prof_ss_merge(p, part, pid, num(part, "start_time_absolute", 0), fmap, umap,
                            stack_pos);
    free(stack_pos);
    if (!err)
        err = merge_native(p, part, fmap, umap);
    if (!err)
        err = merge_memory(p, part, fmap, umap, primary);
    if (!err)
        err = merge_gpu(p, part, fmap, umap);
    if (!err)
        err = merge_threads(p, part, pid);
    const json_t *excl = json_object_get(part, "excluded");
    for (size_t i = 0; i < json_array_size(excl) && !err; i++) {
        const json_t *e = json_array_get(excl, i);
        err = add_excluded(p, json_string_value(json_array_get(e, 0)),
                           json_string_value(json_array_get(e, 1)),
                           json_number_value(json_array_get(e, 2)));
    }
    free(fmap);
    if (!err)
        p->nparts++;
    return err;
}

int prof_add_part_text(struct profile *p, const char *text, size_t len, const char *what,
                       int64_t primary_pid)
{
    json_t *part = prof_part_parse(text, len, what);
    if (!part)
        return -SCRY_E_BAD_PROFILE;
    int err = prof_add_part(p, part, what, primary_pid);
    json_decref(part);
    return err;
}

static int cmp_line(const void *a, const void *b)
{
    const struct prof_line *x = a, *y = b;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->func != y->func)
        return x->func < y->func ? -1 : 1;
    return 0;
}

static int cmp_excluded(const void *a, const void *b)
{
    const struct prof_excluded *x = a, *y = b;
    if (x->sec != y->sec)
        return x->sec > y->sec ? -1 : 1;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->rule, y->rule);
}

bool prof_oversubscribed(const struct profile *p)
{
    return p->have_run_queue && p->run_queue_delay_sec >= PROF_OVERSUBSCRIBED_MIN_SEC &&
           p->run_queue_delay_sec >= PROF_OVERSUBSCRIBED_RATIO * p->run_queue_cpu_sec;
}

double prof_charged_sec(const struct profile *p)
{
    double s = 0;
    for (size_t i = 0; i < p->nlines; i++)
        s += p->lines[i].python_sec + p->lines[i].native_sec + p->lines[i].sys_sec;
    return s;
}

double prof_total_sec(const struct profile *p)
{
    return p->python_sec + p->native_sec + p->sys_sec;
}

static const char *make_note(struct profile *p)
{
    if (p->nparts == 0)
        return "no process wrote profile data (the program ended before the agent could write it, "
               "for example killed by SIGKILL, or it never ran a CPython 3.11+ interpreter): "
               "nothing was recorded";
    if (p->samples == 0 && p->off_sec > 0 && p->off_sec >= 0.99 * p->elapsed_sec)
        return arena_printf(&p->arena,
                            "profiling was off for the whole run (%.3f s): turn it on with "
                            "scry.start(), scry control PID on, or without --off; nothing was "
                            "recorded",
                            p->elapsed_sec);
    /* A program can allocate without being sampled on the CPU: memory lines are a profile. */
    if ((p->samples == 0 && !p->mem.on) || (p->nlines == 0 && prof_total_sec(p) <= 0))
        return arena_printf(&p->arena,
                            "the program ran for %.3f s, too short to sample at the sampling rate "
                            "(mean %g s): nothing was recorded",
                            p->elapsed_sec, p->sampling_rate_sec);
    if (p->samples == 0)
        return arena_printf(&p->arena,
                            "the program ran for %.3f s, too short to sample its CPU time at the "
                            "sampling rate (mean %g s): only its memory was recorded",
                            p->elapsed_sec, p->sampling_rate_sec);
    if (p->nlines > 0)
        return NULL;
    struct strbuf sb = STRBUF_INIT;
    sb_addf(&sb, "all %llu samples (%.3f s) were filtered out: none landed in a profiled file",
            (unsigned long long)p->samples, prof_total_sec(p));
    if (p->nexcluded) {
        sb_adds(&sb, "; the time went to");
        for (size_t i = 0; i < p->nexcluded && i < 5; i++)
            sb_addf(&sb, "%s %s (%s, %.3f s)", i ? "," : "", p->excluded[i].file,
                    p->excluded[i].rule, p->excluded[i].sec);
        if (p->nexcluded > 5)
            sb_addf(&sb, " and %zu more files", p->nexcluded - 5);
    }
    sb_adds(&sb, "; use --profile-all to profile every file, or --profile-only a,b to choose "
                 "files by name");
    const char *note = arena_strdup(&p->arena, sb_str(&sb));
    sb_release(&sb);
    return note;
}

void prof_finish(struct profile *p)
{
    keep_decorated(p);
    if (p->nlines > 1)
        qsort(p->lines, p->nlines, sizeof(*p->lines), cmp_line);
    if (p->nexcluded > 1)
        qsort(p->excluded, p->nexcluded, sizeof(*p->excluded), cmp_excluded);
    if (p->nexcluded > PROF_MAX_EXCLUDED)
        p->nexcluded = PROF_MAX_EXCLUDED;
    prof_finish_memory(p);
    prof_ss_finish(&p->ss, prof_unix_ns(p->start_time_absolute));
    /* Positions in the index are stale once sorted: no merge after finishing. */
    if (p->index) {
        json_decref(p->index);
        p->index = NULL;
    }
    p->note = make_note(p);
}

int prof_set_source(struct profile *p, size_t i, const char *text, size_t len)
{
    if (i >= p->nfiles)
        return err_fail(SCRY_E_INTERNAL, "no file %zu in the profile", i);
    if (strcmp(p->files[i].name, PROF_NATIVE_FILE) == 0 ||
        strcmp(p->files[i].name, PROF_SHUTDOWN_FILE) == 0)
        return 0; /* not a file, whatever the directory holds under that name */
    size_t n = 0;
    for (size_t k = 0; k < len; k++)
        if (text[k] == '\n')
            n++;
    if (len && text[len - 1] != '\n')
        n++;
    const char **lines = arena_alloc(&p->arena, (n + 1) * sizeof(*lines));
    if (!lines)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", p->files[i].name);
    size_t start = 0, k = 0;
    for (size_t j = 0; j < len; j++)
        if (text[j] == '\n' || j + 1 == len) {
            if (!(lines[k++] = arena_strndup(&p->arena, text + start, j + 1 - start)))
                return err_fail(SCRY_E_NO_MEMORY, "out of memory reading %s", p->files[i].name);
            start = j + 1;
        }
    p->files[i].src = lines;
    p->files[i].nsrc = n;
    p->files[i].src_read = true;
    return 0;
}
