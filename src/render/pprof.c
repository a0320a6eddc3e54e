/* pprof export (see pprof.h). Sample types, in this order: samples/count, python/nanoseconds,
 * native/nanoseconds, system/nanoseconds and the sum of the three (wall/nanoseconds, or
 * cpu/nanoseconds for a --use-virtual-time profile: the default shown), then with memory
 * alloc_space/bytes and inuse_space/bytes (n_malloc_mb and n_growth_mb: what the line
 * allocated and what it kept). CPU samples come from the call stacks when the profile has them
 * (one sample per distinct stack, leaf first), else one per line (a one-frame stack); memory
 * samples are one per line that allocated, with its line as the only frame. One Function per
 * (file, qualname, first line), one Location per (function, line), no mappings: Python frames
 * have no addresses. A push's two parts (pprof.h) hold the time types or the memory types
 * alone. */
#include "render/pprof.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/hashmap.h"
#include "render/protobuf.h"

/* Profile fields. */
enum {
    P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_LOCATION = 4, P_FUNCTION = 5, P_STRING_TABLE = 6,
    P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11, P_PERIOD = 12, P_COMMENT = 13,
    P_DEFAULT_SAMPLE_TYPE = 14,
};

enum { V_SAMPLES, V_PYTHON, V_NATIVE, V_SYSTEM, V_TOTAL, V_ALLOC, V_INUSE, V_MAX };

struct pstr {
    const char *s;
    size_t len;
};

struct pfunc {
    uint64_t name, file; /* string indexes */
    int64_t first_line;
};

struct pbuild {
    struct pstr *strs;
    size_t nstrs, cap_strs;
    struct hashmap str_index; /* hash -> index + 1 (collisions: linear scan) */
    struct pfunc *funcs;      /* id = index + 1 */
    size_t nfuncs, cap_funcs;
    struct hashmap func_index;
    uint64_t *locs; /* (function id << 32 | line); id = index + 1 */
    size_t nlocs, cap_locs;
    struct hashmap loc_index;
    struct strbuf samples; /* encoded Sample fields (each with its key) */
    size_t first, nvalues; /* the sample types written: V_* first .. first + nvalues */
    bool oom;
};

static uint64_t hash_bytes(const char *s, size_t len, uint64_t seed)
{
    uint64_t h = 1469598103934665603ULL ^ seed;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    h = hm_hash64(h);
    return h ? h : 1;
}

static uint64_t intern(struct pbuild *b, const char *s, size_t len)
{
    uint64_t h = hash_bytes(s, len, 0), v;
    if (hm_get(&b->str_index, h, &v)) {
        const struct pstr *p = &b->strs[v - 1];
        if (p->len == len && memcmp(p->s, s, len) == 0)
            return v - 1;
        for (size_t i = 0; i < b->nstrs; i++)
            if (b->strs[i].len == len && memcmp(b->strs[i].s, s, len) == 0)
                return i;
    }
    if (grow_array(&b->strs, &b->cap_strs, b->nstrs + 1, sizeof(*b->strs))) {
        b->oom = true;
        return 0;
    }
    b->strs[b->nstrs] = (struct pstr){s, len};
    if (!hm_has(&b->str_index, h) && hm_put(&b->str_index, h, b->nstrs + 1) != 0)
        b->oom = true;
    return b->nstrs++;
}

static uint64_t internz(struct pbuild *b, const char *s)
{
    return intern(b, s, strlen(s));
}

static uint64_t function_id(struct pbuild *b, const char *file, size_t file_len,
                            const char *func, size_t func_len, uint32_t first_line)
{
    struct pfunc f = {intern(b, func, func_len), intern(b, file, file_len), first_line};
    uint64_t h = hm_hash64(f.name * 0x9E3779B97F4A7C15ULL ^ hm_hash64(f.file) ^
                           ((uint64_t)first_line << 17)), v;
    if (!h || h == UINT64_MAX)
        h = 1;
    if (hm_get(&b->func_index, h, &v)) {
        const struct pfunc *g = &b->funcs[v - 1];
        if (g->name == f.name && g->file == f.file && g->first_line == f.first_line)
            return v;
        for (size_t i = 0; i < b->nfuncs; i++)
            if (b->funcs[i].name == f.name && b->funcs[i].file == f.file &&
                b->funcs[i].first_line == f.first_line)
                return i + 1;
    }
    if (grow_array(&b->funcs, &b->cap_funcs, b->nfuncs + 1, sizeof(*b->funcs))) {
        b->oom = true;
        return 1;
    }
    b->funcs[b->nfuncs++] = f;
    if (!hm_has(&b->func_index, h) && hm_put(&b->func_index, h, b->nfuncs) != 0)
        b->oom = true;
    return b->nfuncs;
}

static uint64_t location_id(struct pbuild *b, uint64_t func_id, uint32_t line)
{
    uint64_t key = func_id << 32 | line, v;
    if (hm_get(&b->loc_index, key, &v))
        return v;
    if (grow_array(&b->locs, &b->cap_locs, b->nlocs + 1, sizeof(*b->locs))) {
        b->oom = true;
        return 1;
    }
    b->locs[b->nlocs++] = key;
    if (hm_put(&b->loc_index, key, b->nlocs) != 0)
        b->oom = true;
    return b->nlocs;
}

static void add_sample(struct pbuild *b, const int64_t *locs, size_t nlocs, const int64_t *vals)
{
    struct strbuf s = STRBUF_INIT;
    pb_packed(&s, 1, locs, nlocs);
    pb_packed(&s, 2, vals + b->first, b->nvalues);
    pb_bytes(&b->samples, P_SAMPLE, s.buf, s.len);
    sb_release(&s);
}

static int64_t ns(double sec)
{
    return (int64_t)llround(sec * 1e9);
}

static void value_type(struct strbuf *out, uint32_t field, uint64_t type, uint64_t unit)
{
    struct strbuf m = STRBUF_INIT;
    pb_uint(&m, 1, type);
    pb_uint(&m, 2, unit);
    pb_bytes(out, field, m.buf, m.len);
    sb_release(&m);
}

static void time_values(int64_t *v, double samples, double py, double nat, double sys)
{
    v[V_SAMPLES] = (int64_t)llround(samples);
    v[V_PYTHON] = ns(py);
    v[V_NATIVE] = ns(nat);
    v[V_SYSTEM] = ns(sys);
    v[V_TOTAL] = v[V_PYTHON] + v[V_NATIVE] + v[V_SYSTEM];
}

static void add_cpu_samples(struct pbuild *b, const struct pdoc *d)
{
    int64_t vals[V_MAX] = {0};
    if (d->nstacks) {
        uint32_t maxd = 0;
        for (size_t i = 0; i < d->nstacks; i++)
            maxd = d->stacks[i].depth > maxd ? d->stacks[i].depth : maxd;
        int64_t *locs = malloc((maxd + 1) * sizeof(*locs));
        if (!locs) {
            b->oom = true;
            return;
        }
        for (size_t i = 0; i < d->nstacks; i++) {
            const struct pdoc_stack *s = &d->stacks[i];
            for (uint32_t j = 0; j < s->depth; j++) {
                const struct pdoc_frame *f = &d->frames[s->off + s->depth - 1 - j];
                uint32_t first = pdoc_first_line(d, f->file, f->file_len, f->func, f->func_len);
                uint64_t fid = function_id(b, f->file, f->file_len, f->func, f->func_len, first);
                locs[j] = (int64_t)location_id(b, fid, f->line);
            }
            time_values(vals, s->samples, s->python_sec, s->native_sec, s->sys_sec);
            if (vals[V_SAMPLES] || vals[V_TOTAL])
                add_sample(b, locs, s->depth, vals);
        }
        free(locs);
        return;
    }
    for (size_t i = 0; i < d->nlines; i++) {
        const struct pdoc_entry *l = &d->lines[i];
        time_values(vals, l->samples, l->python_sec, l->native_sec, l->sys_sec);
        if (!vals[V_SAMPLES] && !vals[V_TOTAL])
            continue;
        uint64_t fid = function_id(b, l->file, strlen(l->file), l->func, strlen(l->func),
                                   l->first_line);
        int64_t loc = (int64_t)location_id(b, fid, l->line);
        add_sample(b, &loc, 1, vals);
    }
}

static void add_memory_samples(struct pbuild *b, const struct pdoc *d)
{
    for (size_t i = 0; i < d->nlines; i++) {
        const struct pdoc_entry *l = &d->lines[i];
        int64_t vals[V_MAX] = {0};
        vals[V_ALLOC] = (int64_t)llround(l->malloc_bytes);
        vals[V_INUSE] = (int64_t)llround(l->kept_bytes);
        if (!vals[V_ALLOC] && !vals[V_INUSE])
            continue;
        uint64_t fid = function_id(b, l->file, strlen(l->file), l->func, strlen(l->func),
                                   l->first_line);
        int64_t loc = (int64_t)location_id(b, fid, l->line);
        add_sample(b, &loc, 1, vals);
    }
}

int pprof_write(const struct pdoc *d, const struct pprof_opts *o, struct strbuf *out)
{
    struct pbuild b = {.str_index = HASHMAP_INIT, .func_index = HASHMAP_INIT,
                       .loc_index = HASHMAP_INIT};
    struct strbuf msg = STRBUF_INIT, m = STRBUF_INIT;
    int err = 0;
    internz(&b, ""); /* string_table[0] must be "" */
    const char *total = d->virtual_time ? "cpu" : "wall";
    static const char *const kinds[V_MAX] = {"samples", "python", "native", "system", NULL,
                                              "alloc_space", "inuse_space"};
    static const char *const units[V_MAX] = {"count", "nanoseconds", "nanoseconds",
                                              "nanoseconds", "nanoseconds", "bytes", "bytes"};
    /* The memory part always has its two types (a profile without memory: no samples). */
    bool times = o->part != PPROF_MEMORY;
    bool memory = o->part == PPROF_MEMORY || (o->part == PPROF_ALL && d->memory);
    b.first = times ? 0 : V_ALLOC;
    b.nvalues = (memory ? V_MAX : V_ALLOC) - b.first;
    uint64_t type_idx[V_MAX] = {0};
    for (size_t i = b.first; i < b.first + b.nvalues; i++) {
        type_idx[i] = internz(&b, i == V_TOTAL ? total : kinds[i]);
        value_type(&msg, P_SAMPLE_TYPE, type_idx[i], internz(&b, units[i]));
    }
    if (times)
        add_cpu_samples(&b, d);
    if (memory)
        add_memory_samples(&b, d);
    sb_add(&msg, b.samples.buf, b.samples.len);
    for (size_t i = 0; i < b.nlocs; i++) {
        struct strbuf line = STRBUF_INIT;
        sb_reset(&m);
        pb_uint(&m, 1, i + 1);
        pb_uint(&line, 1, b.locs[i] >> 32);
        pb_int(&line, 2, (int64_t)(b.locs[i] & 0xffffffffu));
        pb_bytes(&m, 4, line.buf, line.len);
        sb_release(&line);
        pb_bytes(&msg, P_LOCATION, m.buf, m.len);
    }
    for (size_t i = 0; i < b.nfuncs; i++) {
        const struct pfunc *f = &b.funcs[i];
        sb_reset(&m);
        pb_uint(&m, 1, i + 1);
        pb_uint(&m, 2, f->name);
        pb_uint(&m, 3, f->name);
        pb_uint(&m, 4, f->file);
        pb_int(&m, 5, f->first_line);
        pb_bytes(&msg, P_FUNCTION, m.buf, m.len);
    }
    uint64_t comment = internz(&b, o->exporter ? o->exporter : "scry");
    uint64_t program = d->program[0] ? internz(&b, d->program) : 0;
    /* The period: the sampling interval in ns; memory has no period of its own (its samples
     * are taken at thresholds), and names Go's heap profile's type for Pyroscope's sake. */
    uint64_t period_type = times ? type_idx[V_TOTAL] : internz(&b, "space");
    uint64_t period_unit = internz(&b, times ? "nanoseconds" : "bytes");
    for (size_t i = 0; i < b.nstrs; i++)
        pb_bytes(&msg, P_STRING_TABLE, b.strs[i].s, b.strs[i].len);
    if (d->start_time_absolute > 0)
        pb_int(&msg, P_TIME_NANOS, ns(d->start_time_absolute));
    pb_int(&msg, P_DURATION_NANOS, ns(d->elapsed_sec));
    value_type(&msg, P_PERIOD_TYPE, period_type, period_unit);
    if (times)
        pb_int(&msg, P_PERIOD, ns(d->sampling_rate_sec));
    int64_t comments[2] = {(int64_t)comment, (int64_t)program};
    pb_packed(&msg, P_COMMENT, comments, program ? 2 : 1);
    pb_uint(&msg, P_DEFAULT_SAMPLE_TYPE, type_idx[times ? V_TOTAL : V_ALLOC]);
    if (b.oom) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory writing the pprof profile");
        goto out;
    }
    if (o->raw)
        sb_add(out, msg.buf, msg.len);
    else
        err = pb_gzip(msg.buf, msg.len, out);
out:
    sb_release(&msg);
    sb_release(&m);
    sb_release(&b.samples);
    hm_free(&b.str_index);
    hm_free(&b.func_index);
    hm_free(&b.loc_index);
    free(b.strs);
    free(b.funcs);
    free(b.locs);
    return err;
}
