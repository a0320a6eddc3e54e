/* Where a sample is charged: resolves the code objects of a sample's frames to files, functions
 * and lines (the filter decides which files are profiled), finds the frame that owns the sample
 * (or the @profile function around it), and adds its weight to the statistics, the sample stream
 * (--timeline) and the GPU's figures. Collector thread only (collector_internal.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/collector_internal.h"
#include "agent/gpu.h"
#include "common/grow.h"
#include "common/hashmap.h"
#include "cpython/file_filter.h"
#include "cpython/frames.h"
#include "cpython/linetable.h"
#include "cpython/objects.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"

/* What the collector knows of a code object, by address. */
struct ag_code {
    uint64_t addr, filename_obj, qualname_obj;
    int32_t firstlineno;
    uint32_t file, func;
    const struct py_code_info *ci;
    size_t dec_seen; /* @profile: the decorated functions it was compared with (a prefix) */
    bool decorated;
};

static struct py_code_cache code_cache;
static struct hashmap code_by_addr; /* address -> index + 1 into codes */
static struct ag_code *codes;
static size_t ncodes, codes_cap;
static char cwd[4096]; /* the directory the program started in */

void ag_col_codes_init(void)
{
    if (!getcwd(cwd, sizeof(cwd)))
        cwd[0] = 0;
    py_code_cache_init(&code_cache);
}

/* Keeps the code-object cache (a forked child has the same objects). */
void ag_col_codes_forget(void)
{
    hm_clear(&code_by_addr);
    ncodes = 0;
}

/* ---- the filter (docs/agent-protocol.md; the rules are cpython/file_filter.c's) ---- */

static struct py_filter filter;

_Static_assert((int)PY_RULE_OUTSIDE_PROGRAM == (int)AG_RULE_OUTSIDE_PROGRAM &&
                   (int)PY_RULE_SYSTEM_LIBRARY == (int)AG_RULE_SYSTEM_LIBRARY &&
                   (int)PY_RULE_NOT_IN_PROFILE_ONLY == (int)AG_RULE_NOT_IN_PROFILE_ONLY &&
                   (int)PY_RULE_EXCLUDED == (int)AG_RULE_EXCLUDED &&
                   (int)PY_RULE_NOT_A_FILE == (int)AG_RULE_NOT_A_FILE &&
                   (int)PY_RULE_PROFILED == (int)AG_RULE_PROFILED,
               "enum ag_rule follows enum py_rule");

static enum ag_rule filter_file(const char *path)
{
    filter.profile_all = ag_cfg.profile_all;
    filter.system_libraries = ag_cfg.system_libraries;
    filter.program_path = ag_cfg.program_path;
    filter.profile_only = ag_cfg.profile_only;
    filter.profile_exclude = ag_cfg.profile_exclude;
    return (enum ag_rule)py_filter_classify(&filter, path);
}

/* sys.prefix, sys.base_prefix and sys.exec_prefix, once the interpreter has set them. */
void ag_col_read_prefixes(uint64_t interp)
{
    py_filter_read_prefixes(&filter, &ag_rt, interp);
}

/* ---- code objects ---- */

/* co_filename made absolute against the directory the program started in (relative names come
 * from relative sys.path entries). Returns false if it does not fit. */
static bool absolute_name(const char *name, char *out, size_t size)
{
    int n;
    if (name[0] == '/' || name[0] == '<' || !cwd[0])
        n = snprintf(out, size, "%s", name);
    else
        n = snprintf(out, size, "%s/%s", cwd, name);
    return n >= 0 && (size_t)n < size;
}

/* The collector's entry for the code object of frame f, or NULL if it is gone or changed. */
static const struct ag_code *resolve(const struct ag_frame *f)
{
    uint64_t v;
    if (hm_get(&code_by_addr, f->code, &v)) {
        const struct ag_code *c = &codes[v - 1];
        if (c->filename_obj == f->filename && c->qualname_obj == f->qualname &&
            c->firstlineno == f->firstlineno)
            return c;
        /* Memory reused by another code object since we saw it: read it afresh. */
        py_code_forget(&code_cache, f->code);
        hm_del(&code_by_addr, f->code);
    }
    const struct py_code_info *ci;
    if (py_code_resolve(&ag_rt, &code_cache, f->code, &ci) != 0)
        return NULL;
    if (ci->filename_obj != f->filename || ci->qualname_obj != f->qualname ||
        ci->firstlineno != f->firstlineno) {
        py_code_forget(&code_cache, f->code);
        return NULL;
    }
    if (grow_array(&codes, &codes_cap, ncodes + 1, sizeof(*codes)) != 0)
        return NULL;
    char path[8192];
    if (!absolute_name(ci->filename, path, sizeof(path)))
        return NULL;
    struct ag_code *c = &codes[ncodes];
    *c = (struct ag_code){.addr = f->code,
                          .filename_obj = ci->filename_obj,
                          .qualname_obj = ci->qualname_obj,
                          .firstlineno = ci->firstlineno,
                          .ci = ci};
    if (ag_stats_file(&ag_col_stats, path, filter_file, &c->file) ||
        ag_stats_func(&ag_col_stats, ci->qualname, c->file, ci->firstlineno, &c->func) ||
        hm_put(&code_by_addr, f->code, ncodes + 1))
        return NULL;
    ncodes++;
    return c;
}

static int frame_line(const struct ag_code *c, int32_t lasti)
{
    const struct py_code_info *ci = c->ci;
    int line = ci->linetable ? py_linetable_frame_line(ci->linetable, ci->linetable_len,
                                                       ci->firstlineno, lasti)
                             : -1;
    return line < 0 ? ci->firstlineno : line; /* malformed there: the code's first line */
}

struct ag_pychain ag_col_pychain;

/* @profile: whether the code object is one of the first ndec decorated functions (each is
 * compared once: the table only grows). */
static bool code_decorated(const struct ag_code *code, size_t ndec)
{
    struct ag_code *c = codes + (code - codes);
    if (c->dec_seen < ndec) {
        c->decorated = c->decorated || ag_decorated_in(c->dec_seen, ndec, c->ci->filename,
                                                       c->ci->qualname, c->firstlineno);
        c->dec_seen = ndec;
    }
    return c->decorated;
}

/* Finds the first frame whose file is profiled (and, with stacks or chain, all of them: in
 * ag_col_pychain; interned in ag_col_stats.stacks with stacks only). Its line belongs to the
 * outermost of the profiled frames around it that run that same line of that file: a generator
 * expression, comprehension or lambda called from the line that holds it runs on its caller's
 * line, and charging the caller whichever frame a sample caught keeps a line's function the same
 * in every sample (its memory record takes the function of its first sample). When the program
 * decorated functions with @profile, a sample with one on its stack is charged to the innermost
 * one's current line instead, whatever its file's rule: time in undecorated code it calls is its
 * calling line's, as line_profiler and Scalene count it (samples with none go where they went: the
 * merge keeps only decorated functions' lines, the totals keep everything). */
struct ag_attr ag_col_attribute(const struct ag_sample *s, bool chain_wanted)
{
    struct ag_sframe *chain = ag_col_pychain.f;
    uint8_t *group = ag_col_pychain.group;
    uint32_t n = 0;
    bool want_chain = ag_cfg.stacks || chain_wanted;
    size_t ndec = ag_decorated_count();
    struct ag_attr a = {.kind = AG_ATTR_NONE}, dec = {.kind = AG_ATTR_NONE};
    bool owner_open = false; /* the next profiled frame may still own a's line */
    for (uint32_t i = 0; i < s->depth; i++) {
        const struct ag_code *c = resolve(&s->frames[i]);
        if (!c)
            continue;
        if (a.kind == AG_ATTR_NONE) {
            a.kind = AG_ATTR_EXCLUDED;
            a.file = c->file;
        }
        if (ndec && dec.kind == AG_ATTR_NONE && code_decorated(c, ndec))
            dec = (struct ag_attr){AG_ATTR_LINE, c->file, c->func,
                                   frame_line(c, s->frames[i].lasti), 0};
        if (ag_col_stats.files[c->file].rule == AG_RULE_PROFILED) {
            int line = frame_line(c, s->frames[i].lasti);
            if (a.kind != AG_ATTR_LINE) {
                a = (struct ag_attr){AG_ATTR_LINE, c->file, c->func, line, 0};
                owner_open = true;
            } else if (owner_open && c->file == a.file && line == a.line) {
                a.func = c->func;
            } else {
                owner_open = false;
            }
            if (want_chain || n == 0) {
                group[n] = s->group[i];
                chain[n++] = (struct ag_sframe){c->file, c->func, line};
            }
        }
        if (!want_chain && a.kind == AG_ATTR_LINE && !owner_open &&
            (!ndec || dec.kind == AG_ATTR_LINE))
            break;
    }
    ag_col_pychain.n = n;
    if (n > 0) {
        for (uint32_t i = 0; i < n / 2; i++) { /* outermost first */
            struct ag_sframe t = chain[i];
            chain[i] = chain[n - 1 - i];
            chain[n - 1 - i] = t;
            uint8_t g = group[i];
            group[i] = group[n - 1 - i];
            group[n - 1 - i] = g;
        }
        if (!ag_cfg.stacks || ag_stats_stack(&ag_col_stats, chain, n, &a.stack))
            a.stack = 0;
    }
    if (dec.kind == AG_ATTR_LINE) {
        dec.stack = a.stack; /* the whole stack, down to the undecorated callee */
        a = dec;
    }
    return a;
}

/* Where and when the samples being charged were taken (the sample stream, sstream.h). */
static struct {
    uint64_t t_ns;
    int tid;
} charged_at;

void ag_col_charging_at(uint64_t t_ns, int tid)
{
    charged_at.t_ns = t_ns;
    charged_at.tid = tid;
}

bool ag_sstream_on;
size_t ag_sstream_max = SST_DEFAULT_MAX;
struct sst_stream ag_sstream;

/* The kernel's name of thread tid (its comm: 15 bytes at most), "" when it cannot be read or no
 * file may be opened (the program started with fd 0-2 closed). */
static void thread_comm(int tid, char *out, size_t size)
{
    out[0] = 0;
    if (!ag_low_fds_closed)
        pf_thread_name(0, tid, out, size);
}

/* A charge to a line, into the sample stream (--timeline), at charged_at. */
static void stream_note(const struct ag_attr *a, enum ag_cat cat, uint64_t weight_ns)
{
    bool added;
    size_t th = sst_thread(&ag_sstream, charged_at.tid, &added);
    if (added)
        thread_comm(charged_at.tid, ag_sstream.threads[th].name, 16);
    sst_add(&ag_sstream, charged_at.t_ns, th, cat, weight_ns, a->file, a->func, a->line,
            a->stack ? (int32_t)(a->stack - 1) : -1);
}

/* The GPU's reading (gpu.c) charged with each sample: the one published before the previous
 * tick, so never one newer than the samples charged now (taken since that tick's drain), and a
 * line that ends as the GPU's activity changes does not get the next line's figures. */
static struct {
    bool valid;
    struct ag_gpu_reading r;
} gpu_seen, gpu_next;

void ag_col_gpu_tick(void)
{
    gpu_seen = gpu_next;
    gpu_next.valid = ag_gpu_read(&gpu_next.r);
}

void ag_col_charge(const struct ag_attr *a, enum ag_cat cat, uint64_t weight_ns)
{
    double sec = (double)weight_ns / 1e9;
    if (ag_sstream_on && a->kind == AG_ATTR_LINE && sec > 0)
        stream_note(a, cat, weight_ns);
    if (a->kind == AG_ATTR_NONE || sec <= 0) {
        ag_col_stats.unattributed++;
        return;
    }
    if (a->kind == AG_ATTR_EXCLUDED && cat == AG_SYS) {
        /* A thread waiting where no profiled code is on its stack (an idle pool worker, a
         * library's helper thread) would only dilute the profile: its waiting is not counted. */
        ag_col_stats.files[a->file].excluded_idle_sec += sec;
        return;
    }
    ag_col_stats.total_sec[cat] += sec;
    ag_col_stats.samples++;
    if (a->kind == AG_ATTR_EXCLUDED)
        ag_col_stats.files[a->file].excluded_sec += sec;
    else if (ag_stats_add(&ag_col_stats, a->file, a->func, a->line, cat, sec))
        ag_col_stats.dropped++;
    else if (gpu_seen.valid)
        ag_stats_add_gpu(&ag_col_stats, a->file, a->func, a->line, sec, gpu_seen.r.load,
                         gpu_seen.r.mem_mb);
    if (a->stack) {
        struct ag_stack *st = &ag_col_stats.stacks[a->stack - 1];
        st->sec[cat] += sec;
        st->samples++;
    }
}

struct ag_attr ag_col_process(const struct ag_sample *s, enum ag_cat cat)
{
    struct ag_attr a = {.kind = AG_ATTR_NONE};
    ag_col_pychain.n = 0;
    if (s->depth > 0)
        a = ag_col_attribute(s, false);
    ag_col_charge(&a, cat, s->weight_ns);
    return a;
}

/* <interpreter shutdown> is profiled unless --profile-exclude names it or --profile-only does
 * not (the other rules are about real files). */
enum ag_rule ag_col_shutdown_rule(const char *name)
{
    filter_file(name); /* the options into the filter */
    return (enum ag_rule)py_filter_pseudo(&filter, name);
}
