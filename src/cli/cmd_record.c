/* `scry record --pid PID`: a sampling CPU profiler from outside the process, in the manner of
 * py-spy record, that writes the profile `scry run` writes. At every tick each Python thread's
 * scheduler state (/proc) and stack (process_vm_readv, cpython/frames.c) are read; the wall time
 * since the thread's previous sample is charged at its first profiled frame: system when the
 * thread is off the CPU, native when it runs on a call that may be into C (the CALL family:
 * from outside there is no program counter), else python. Each process's statistics become a
 * part document (docs/agent-protocol.md, "Part file") merged by analysis/profile.c, so every
 * view and export works on the result unchanged (docs/json-schema.md, "A recorded profile"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/progress.h"
#include "common/sanitize.h"
#include "common/sstream.h"
#include "ebpf/record_alloc.h"
#include "platform/outfile.h"
#include "push/push.h"
#include "record/record_memory.h"
#include "record/record_native.h"
#include "record/sampling.h"
#include "render/profile_json.h"

const char cmd_record_usage[] =
    "usage: scry record --pid PID [options]\n"
    "       scry record --pid PID --allocations (--dump FILE | -o FILE) [--duration S] [--json]\n"
    "                   [--quiet]\n"
    "\n"
    "Samples a running Python process from outside (it needs no restart and loads nothing) and\n"
    "writes the profile `scry run` writes: python, native and system time per line and function,\n"
    "with call stacks, so that scry view, flamegraph and the exports work on it. Recording ends\n"
    "after --duration, on Ctrl-C or SIGTERM, or when the process exits; the profile is written\n"
    "then, and scry exits 0.\n"
    "\n";

#define NATIVE_DEPTH 64  /* native frames kept per chain, from the innermost */
#define MAX_CHAINS 10000 /* distinct native / combined chains kept per process */

struct rec_opts {
    int pid;
    struct smp_opts s;
    const char *outfile;
    bool memory;
    struct record_memory_opts mem; /* --heap-at-end, --allocation-sampling-window */
    bool timeline;        /* --timeline: the sample stream */
    bool quiet;           /* --quiet: no progress line, no informational lines */
    struct push_cfg push; /* push.url NULL: no --push */
};

/* The sampler's hooks' context: the options, and with --push the sender and when to push. */
struct rec_run {
    const struct rec_opts *o;
    struct smp_set *set;
    struct pusher *ps;
    struct push_delta delta;
    const struct profile_json_opts *jo;
    double next_push; /* CLOCK_MONOTONIC seconds */
    uint64_t samples, start_ns; /* for the progress line */
};

struct rec_line {
    uint32_t file, func;
    int32_t line;
    double sec[3];
    uint64_t samples;
};

struct rec_stack {
    json_t *frames; /* [[file, func, line], ...] outermost first */
    double sec[3];
    uint64_t samples;
};

/* A process's statistics in the part's own terms (smp_proc's user state). */
struct rec_data {
    /* Interned tables: key -> row index, rows in json arrays / C arrays. */
    json_t *line_idx, *stack_idx, *excl;
    struct rec_line *lines;
    size_t nlines, cap_lines;
    struct rec_stack *stacks;
    size_t nstacks, cap_stacks;
    double total[3];
    /* --native: the unwinder, native frames [module, symbol, ip, offset] by key, and the
     * distinct native and combined chains (key -> [items, hits]). */
    struct rn_proc *rn;
    json_t *nframe_idx, *nframes, *native_chains, *combined_chains;
    uint64_t native_overflow, combined_overflow;
    struct sst_stream ss; /* --timeline */
};

/* ---- options ---- */

static int parse(int argc, char **argv, struct rec_opts *o, bool *help)
{
    memset(o, 0, sizeof(*o));
    smp_opts_init(&o->s);
    o->outfile = "scry-profile.json";
    o->push.interval_sec = 10;
    o->push.tags = calloc((size_t)argc + 1, sizeof(*o->push.tags));
    if (!o->push.tags)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    *help = false;
    struct opt_parser p;
    opt_begin(&p, OC_RECORD, argc, argv, OP_STOP_AT_OPERAND);
    int c;
    while ((c = opt_next(&p)) > 0) {
        if (smp_parse_option(c, &p, &o->s, &o->pid))
            continue;
        int err = push_take_option(c, p.arg, p.num, &o->push);
        if (err <= 0) {
            if (err)
                return err;
            continue;
        }
        switch (c) {
        case OPT_OUTFILE:
            o->outfile = p.arg;
            break;
        case OPT_BLOCKING:
            o->s.blocking = true;
            break;
        case OPT_NATIVE:
            o->s.native = true;
            break;
        case OPT_MEMORY:
            o->memory = true;
            break;
        case OPT_HEAP_AT_END:
            o->mem.heap_at_end = p.arg;
            break;
        case OPT_ALLOCATION_SAMPLING_WINDOW:
            o->mem.window = (unsigned long long)p.ival;
            break;
        case OPT_TIMELINE:
            o->timeline = true;
            break;
        case OPT_QUIET:
            o->quiet = true;
            break;
        case OPT_HELP:
            *help = true;
            return 0;
        default: /* --allocations abbreviated (cmd_record takes it only in full) */
            return cli_option_error('?', argv);
        }
    }
    if (c < 0)
        return c;
    if (opt_operand(&p) < argc)
        return cli_usage("unexpected argument '%s'", argv[opt_operand(&p)]);
    if (!o->pid)
        return cli_usage("scry record needs --pid PID");
    if (!o->memory && (o->mem.heap_at_end || o->mem.window))
        return cli_usage("--heap-at-end and --allocation-sampling-window need --memory (the "
                         "allocation samples are the agent's)");
    if (o->memory && (o->s.native || o->s.blocking || o->s.subprocesses || o->s.idle ||
                      o->timeline || o->push.url))
        return cli_usage("--memory profiles from inside the process: not with --native, "
                         "--blocking, --subprocesses, --idle, --timeline or --push");
    return push_check_options(&o->push);
}

/* ---- tables ---- */

static int charge_line(struct smp_proc *pr, uint32_t file, uint32_t func, int line, int cat,
                       double sec)
{
    struct rec_data *d = pr->user;
    char key[64];
    snprintf(key, sizeof(key), "%u:%u:%d", file, func, line);
    json_t *v = json_object_get(d->line_idx, key);
    size_t i;
    if (v) {
        i = (size_t)json_integer_value(v);
    } else {
        if (grow_array(&d->lines, &d->cap_lines, d->nlines + 1, sizeof(*d->lines)) ||
            json_object_set_new(d->line_idx, key, json_integer((json_int_t)d->nlines)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        i = d->nlines++;
        d->lines[i] = (struct rec_line){.file = file, .func = func, .line = line};
    }
    d->lines[i].sec[cat] += sec;
    d->lines[i].samples++;
    return 0;
}

/* The stack's profiled frames (given innermost first) as one distinct stack. */
static int charge_stack(struct smp_proc *pr, const uint32_t (*fr)[3], size_t n, int cat,
                        double sec, size_t *at)
{
    struct rec_data *d = pr->user;
    struct strbuf key = STRBUF_INIT;
    for (size_t k = n; k-- > 0;)
        sb_addf(&key, "%u:%u:%u;", fr[k][0], fr[k][1], fr[k][2]);
    const char *ks = sb_str(&key);
    json_t *v = json_object_get(d->stack_idx, ks);
    size_t i;
    int err = 0;
    if (v) {
        i = (size_t)json_integer_value(v);
    } else {
        json_t *frames = json_array();
        for (size_t k = n; frames && k-- > 0;)
            json_array_append_new(frames, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                    (int)fr[k][2]));
        if (!frames ||
            grow_array(&d->stacks, &d->cap_stacks, d->nstacks + 1, sizeof(*d->stacks)) ||
            json_object_set_new(d->stack_idx, ks, json_integer((json_int_t)d->nstacks))) {
            json_decref(frames);
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
            goto out;
        }
        i = d->nstacks++;
        d->stacks[i] = (struct rec_stack){.frames = frames};
    }
    d->stacks[i].sec[cat] += sec;
    d->stacks[i].samples++;
    *at = i;
out:
    sb_release(&key);
    return err;
}

static void charge_excluded(struct smp_proc *pr, uint32_t file, double sec)
{
    struct rec_data *d = pr->user;
    const char *name = json_string_value(json_array_get(pr->files, file));
    json_t *v = json_object_get(d->excl, name);
    json_object_set_new(d->excl, name, json_real((v ? json_real_value(v) : 0) + sec));
}

/* Counts one hit of the chain (items: a JSON array, stolen) in chains, keyed by its text. */
static int chain_hit(json_t *chains, json_t *items, uint64_t *overflow)
{
    char *key = json_dumps(items, JSON_COMPACT);
    int err = 0;
    if (!key) {
        json_decref(items);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    json_t *c = json_object_get(chains, key);
    if (c) {
        json_array_set_new(c, 1, json_integer(json_integer_value(json_array_get(c, 1)) + 1));
        json_decref(items);
    } else if (json_object_size(chains) >= MAX_CHAINS) {
        (*overflow)++;
        json_decref(items);
    } else if (json_object_set_new(chains, key, json_pack("[oi]", items, 1))) {
        err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    free(key);
    return err;
}

/* The native frame of ips[i] (innermost first) as an index into the part's native_frames. */
static int nframe_index(struct smp_proc *pr, const uint64_t *ips, size_t i, size_t *out,
                        bool *eval)
{
    struct rec_data *d = pr->user;
    const char *module, *symbol;
    uint64_t offset;
    int err = rn_name(d->rn, ips[i], i == 0, &module, &symbol, &offset, eval);
    if (err)
        return err;
    char key[8192];
    snprintf(key, sizeof(key), "%s\x1f%s\x1f%llu", module, symbol, (unsigned long long)offset);
    return smp_intern(d->nframe_idx, d->nframes, key,
                  json_pack("[ssII]", module, symbol, (json_int_t)ips[i], (json_int_t)offset), out);
}

/* --native: the running thread's native chain (it is stopped), and the combined stack in which
 * each call of the eval loop is replaced by the profiled Python frames it runs (the agent's
 * rules, docs/agent-protocol.md: the k-th eval-loop frame from the leaf runs the frames of group
 * k; frames under the outermost eval loop are left out; groups the chain lacks come first). */
static int charge_native(struct smp_proc *pr, const struct py_frame *frames, size_t n, int64_t tid)
{
    struct rec_data *d = pr->user;
    uint64_t ips[NATIVE_DEPTH];
    size_t nips, idx[NATIVE_DEPTH];
    bool eval[NATIVE_DEPTH];
    int err = rn_unwind(d->rn, (int)tid, ips, NATIVE_DEPTH, &nips);
    if (err || nips == 0)
        return 0; /* a thread that cannot be unwound has no chain this time */
    size_t outermost_eval = SIZE_MAX, nevals = 0;
    for (size_t i = 0; i < nips; i++) {
        if ((err = nframe_index(pr, ips, i, &idx[i], &eval[i])))
            return err;
        if (eval[i]) {
            outermost_eval = i;
            nevals++;
        }
    }
    json_t *nat = json_array();
    for (size_t i = nips; nat && i-- > 0;)
        json_array_append_new(nat, json_integer((json_int_t)idx[i]));
    if (!nat)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if ((err = chain_hit(d->native_chains, nat, &d->native_overflow)))
        return err;

    /* The profiled Python frames, with their group, innermost first. */
    uint32_t fr[SMP_MAX_DEPTH][3];
    uint8_t grp[SMP_MAX_DEPTH];
    size_t nprof = 0;
    uint32_t first_file;
    if ((err = smp_profiled_frames(pr, frames, n, fr, grp, &nprof, &first_file)))
        return err;
    if (nprof == 0)
        return 0;
    json_t *items = json_array();
    if (!items)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    /* Groups the chain has no eval-loop frame for, outermost first. */
    for (size_t k = nprof; k-- > 0;)
        if (grp[k] >= nevals)
            json_array_append_new(items, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                   (int)fr[k][2]));
    size_t from = outermost_eval != SIZE_MAX ? outermost_eval : nips - 1;
    size_t g = nevals;
    for (size_t i = from + 1; i-- > 0;) {
        if (!eval[i]) {
            json_array_append_new(items, json_pack("[I]", (json_int_t)idx[i]));
            continue;
        }
        g--; /* the g-th eval-loop call from the leaf runs group g */
        for (size_t k = nprof; k-- > 0;)
            if (grp[k] == g)
                json_array_append_new(items, json_pack("[iii]", (int)fr[k][0], (int)fr[k][1],
                                                       (int)fr[k][2]));
    }
    if (json_array_size(items) == 0 || json_array_size(items) > PROF_MAX_DEPTH) {
        json_decref(items);
        return 0;
    }
    return chain_hit(d->combined_chains, items, &d->combined_overflow);
}

/* ---- the sampler's hooks ---- */

/* --timeline: one charge of the sample (at its line and stack) into the process's stream, at
 * the time the thread was read. */
static void stream_note(struct smp_proc *pr, const struct smp_sample *s, int cat, double sec,
                        size_t stack)
{
    struct rec_data *d = pr->user;
    bool added;
    size_t th = sst_thread(&d->ss, s->thread->tid, &added);
    /* A thread read before threading registered it has its name from a later sample. */
    if (th != SIZE_MAX && (added || !d->ss.threads[th].name[0]))
        snprintf(d->ss.threads[th].name, sizeof(d->ss.threads[th].name), "%s", s->thread->name);
    sst_add(&d->ss, s->thread->wall_ns, th, cat, (uint64_t)(sec * 1e9 + 0.5), s->fr[0][0],
            s->fr[0][1], (int32_t)s->fr[0][2], (int32_t)stack);
}

/* One thread's interval at the first profiled frame of its stack: its cpu seconds as python or
 * native, its off seconds as system; a stack with none of your code counts in the totals (off
 * the CPU only with --idle) and says which file took the time. */
static int rec_sample(void *ctx, struct smp_proc *pr, const struct smp_sample *s)
{
    const struct rec_opts *o = ((const struct rec_run *)ctx)->o;
    ((struct rec_run *)ctx)->samples++;
    struct rec_data *d = pr->user;
    const uint32_t(*fr)[3] = s->fr;
    int err;
    if (o->s.native && s->running &&
        (err = charge_native(pr, s->frames, s->n, s->thread->tid)))
        return err;
    d->total[s->cpu_cat] += s->cpu;
    if (s->nprof == 0) {
        if (o->s.idle)
            d->total[SMP_SYS] += s->off;
        charge_excluded(pr, s->first_file, s->cpu + s->off);
        return 0;
    }
    d->total[SMP_SYS] += s->off;
    if (s->cpu > 0 &&
        (err = charge_line(pr, fr[0][0], fr[0][1], (int)fr[0][2], s->cpu_cat, s->cpu)))
        return err;
    if (s->off > 0 && (err = charge_line(pr, fr[0][0], fr[0][1], (int)fr[0][2], SMP_SYS, s->off)))
        return err;
    size_t at = 0;
    if (s->cpu > 0 && (err = charge_stack(pr, fr, s->nprof, s->cpu_cat, s->cpu, &at)))
        return err;
    if (s->cpu > 0 && o->timeline)
        stream_note(pr, s, s->cpu_cat, s->cpu, at);
    if (s->off > 0 && (err = charge_stack(pr, fr, s->nprof, SMP_SYS, s->off, &at)))
        return err;
    if (s->off > 0 && o->timeline)
        stream_note(pr, s, SMP_SYS, s->off, at);
    return 0;
}

static void rec_release(void *ctx, struct smp_proc *pr)
{
    (void)ctx;
    struct rec_data *d = pr->user;
    if (!d)
        return;
    json_decref(d->line_idx);
    json_decref(d->stack_idx);
    json_decref(d->excl);
    json_decref(d->nframe_idx);
    json_decref(d->nframes);
    json_decref(d->native_chains);
    json_decref(d->combined_chains);
    rn_proc_free(d->rn);
    sst_reset(&d->ss, 0);
    for (size_t i = 0; i < d->nstacks; i++)
        json_decref(d->stacks[i].frames);
    free(d->stacks);
    free(d->lines);
    free(d);
    pr->user = NULL;
}

static int rec_open(void *ctx, struct smp_proc *pr)
{
    const struct rec_opts *o = ((const struct rec_run *)ctx)->o;
    struct rec_data *d = calloc(1, sizeof(*d));
    if (!d)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    pr->user = d;
    sst_reset(&d->ss, 0);
    d->line_idx = json_object();
    d->stack_idx = json_object();
    d->excl = json_object();
    if (o->s.native) {
        d->rn = rn_proc_new(pr->rd);
        d->nframe_idx = json_object();
        d->nframes = json_array();
        d->native_chains = json_object();
        d->combined_chains = json_object();
    }
    if (!d->line_idx || !d->stack_idx || !d->excl ||
        (o->s.native && (!d->rn || !d->nframe_idx || !d->nframes || !d->native_chains ||
                         !d->combined_chains)))
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    return 0;
}

/* After an exec its modules are another program's, and the unwinder named them through the
 * old reader. */
static int rec_reopen(void *ctx, struct smp_proc *pr)
{
    (void)ctx;
    struct rec_data *d = pr->user;
    if (d->rn) {
        rn_proc_free(d->rn);
        if (!(d->rn = rn_proc_new(pr->rd)))
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    return 0;
}

/* ---- the part ---- */

static int cmp_excl(const void *a, const void *b)
{
    double x = json_real_value(json_array_get(*(json_t *const *)a, 2));
    double y = json_real_value(json_array_get(*(json_t *const *)b, 2));
    return (x < y) - (x > y);
}

/* The part's "sample_stream" (docs/agent-protocol.md): times in µs since start_ns; a sample's
 * stack is its index in the part's "stacks" (every stack is written). */
static json_t *stream_json(const struct sst_stream *ss, uint64_t start_ns)
{
    json_t *threads = json_array(), *samples = json_array();
    for (size_t i = 0; i < ss->nthreads; i++)
        json_array_append_new(threads, json_pack("[Is]", (json_int_t)ss->threads[i].tid,
                                                 ss->threads[i].name));
    for (size_t i = 0; i < ss->n; i++) {
        const struct sst_sample *x = &ss->s[i];
        json_array_append_new(
            samples, json_pack("[IiiIiiii]",
                               (json_int_t)(x->t_ns > start_ns ? (x->t_ns - start_ns) / 1000 : 0),
                               (int)x->thread, (int)x->cat, (json_int_t)((x->weight_ns + 500) / 1000),
                               (int)x->file, (int)x->func, (int)x->line, (int)x->stack));
    }
    return json_pack("{sIsIsIsIsoso}", "max", (json_int_t)ss->max, "stride",
                     (json_int_t)ss->stride, "seen", (json_int_t)ss->seen, "lost",
                     (json_int_t)ss->lost, "threads", threads, "samples", samples);
}

/* The process's statistics as a part document (docs/agent-protocol.md), with the threads'
 * GIL samples under "threads". */
static json_t *proc_part(struct smp_proc *pr, const struct rec_opts *o)
{
    struct rec_data *d = pr->user;
    static const char *const rules[] = {"", "not_a_file", "excluded", "not_in_profile_only",
                                        "system_library", "outside_program"};
    json_t *lines = json_array(), *stacks = json_array(), *excl = json_array(),
           *threads = json_array();
    for (size_t i = 0; i < d->nlines; i++) {
        const struct rec_line *l = &d->lines[i];
        json_array_append_new(lines, json_pack("[iiifffI]", (int)l->file, (int)l->line,
                                               (int)l->func, l->sec[0], l->sec[1], l->sec[2],
                                               (json_int_t)l->samples));
    }
    for (size_t i = 0; i < d->nstacks; i++) {
        const struct rec_stack *s = &d->stacks[i];
        json_array_append_new(stacks, json_pack("[OIfff]", s->frames, (json_int_t)s->samples,
                                                s->sec[0], s->sec[1], s->sec[2]));
    }
    const char *name;
    json_t *v;
    json_t **rows = NULL;
    size_t nrows = 0, cap = 0;
    json_object_foreach(d->excl, name, v) {
        json_t *idx = json_object_get(pr->file_idx, name);
        int rule = pr->file_rule[json_integer_value(idx)];
        if (rule == PY_RULE_PROFILED || grow_array(&rows, &cap, nrows + 1, sizeof(*rows)))
            continue;
        rows[nrows++] = json_pack("[ssf]", name, rules[rule], json_real_value(v));
    }
    if (nrows > 1)
        qsort(rows, nrows, sizeof(*rows), cmp_excl);
    for (size_t i = 0; i < nrows; i++) {
        if (i < PROF_MAX_EXCLUDED)
            json_array_append(excl, rows[i]);
        json_decref(rows[i]);
    }
    free(rows);
    for (size_t i = 0; i < pr->nthreads; i++) {
        const struct smp_thread *t = &pr->threads[i];
        if (t->samples)
            json_array_append_new(threads, json_pack("{sIsIsssIsI}", "native_id",
                                                     (json_int_t)t->tid, "thread_id",
                                                     (json_int_t)t->thread_id, "name", t->name,
                                                     "samples", (json_int_t)t->samples,
                                                     "gil_samples", (json_int_t)t->gil_samples));
    }
    json_t *part = json_pack(
        "{sssisisssOsfsfsIsbsfs{sfsfsfsIsI}sOsOsosososo}", "format", "scry-part",
        "format_version", 1, "pid", pr->pid, "python_version", pr->rt.version_str, "argv",
        pr->argv, "start_time_absolute", pr->start_real, "elapsed_sec",
        (double)(pr->last_ns - pr->start_ns) / 1e9, "main_thread_id",
        (json_int_t)pr->main_thread_id, "virtual_time", 0, "sampling_rate_sec", 1.0 / o->s.rate,
        "totals", "python_sec", d->total[0], "native_sec", d->total[1], "sys_sec",
        d->total[2], "samples", (json_int_t)pr->samples, "dropped", (json_int_t)pr->dropped,
        "files", pr->files, "functions", pr->funcs, "lines", lines, "stacks", stacks,
        "excluded", excl, "threads", threads);
    if (part && d->rn) {
        /* The chains as the part has them: [[items], hits]. */
        json_t *chains[2] = {json_array(), json_array()};
        json_t *from[2] = {d->native_chains, d->combined_chains};
        for (int k = 0; k < 2; k++) {
            const char *key;
            json_t *c;
            json_object_foreach(from[k], key, c) json_array_append(chains[k], c);
        }
        json_object_set(part, "native_frames", d->nframes);
        json_object_set_new(part, "native_stacks", chains[0]);
        json_object_set_new(part, "combined_stacks", chains[1]);
        json_object_set_new(part, "native_stacks_overflow",
                            json_integer((json_int_t)d->native_overflow));
        json_object_set_new(part, "combined_stacks_overflow",
                            json_integer((json_int_t)d->combined_overflow));
    }
    if (part && o->timeline)
        json_object_set_new(part, "sample_stream", stream_json(&d->ss, pr->start_ns));
    if (part && pr->have_run_queue)
        json_object_set_new(part, "run_queue", json_pack("{sfsf}", "delay_sec", pr->rq_delay_sec,
                                                         "cpu_sec", pr->rq_cpu_sec));
    return part;
}

/* Every process's statistics so far merged into p (not finished). */
static int merge_procs(const struct smp_set *set, const struct rec_opts *o, struct profile *p)
{
    int err = 0;
    for (size_t i = 0; !err && i < set->n; i++) {
        json_t *part = proc_part(set->procs[i], o);
        char what[64];
        snprintf(what, sizeof(what), "process %d", set->procs[i]->pid);
        if (!part)
            err = err_fail(SCRY_E_NO_MEMORY, "out of memory");
        else
            err = prof_add_part(p, part, what, o->pid);
        json_decref(part);
    }
    return err;
}

/* --push: the interval's profile (every process so far, less what the previous push had)
 * goes to the sender at the end of each interval; the network is the sender thread's. */
static int rec_tick(void *ctx, const char **why)
{
    (void)why;
    struct rec_run *r = ctx;
    uint64_t now_ns = smp_mono_ns();
    prog_update2((now_ns - r->start_ns) / 1000000000u, r->samples);
    double now = (double)now_ns / 1e9;
    if (!r->ps || now < r->next_push)
        return 0;
    while (r->next_push <= now)
        r->next_push += r->o->push.interval_sec;
    struct profile p;
    prof_init(&p);
    int err = merge_procs(r->set, r->o, &p);
    if (!err) {
        prof_finish(&p);
        push_profile(r->ps, &r->delta, &p, r->jo);
    } else {
        push_count_dropped(r->ps, err_last_message());
    }
    prof_free(&p);
    return 0;
}

static int record(struct rec_opts *o);

int cmd_record(int argc, char **argv)
{
    if (record_alloc_wanted(argc, argv))
        return record_alloc_main(argc, argv);
    struct rec_opts o;
    bool help = false;
    int parsed = parse(argc, argv, &o, &help);
    int rc = parsed ? parsed : help ? cli_help() : record(&o);
    free(o.push.tags);
    return rc;
}

static int record(struct rec_opts *op)
{
    struct rec_opts o = *op;
    char ppath[PATH_MAX];
    int perr = smp_resolve_program_path(&o.s, ppath);
    if (perr)
        return perr;
    if (o.memory) {
        char agent[PATH_MAX];
        if (cli_find_agent(agent, sizeof(agent)) != 0)
            return cli_report_error(false);
        o.mem.quiet = o.quiet;
        return record_memory(o.pid, &o.s, &o.mem, o.outfile, agent);
    }
    if (o.s.native && rn_available() != 0)
        return cli_report_error(false);
    struct smp_program pg = {0};
    struct smp_set set = {0};
    struct rec_run run = {.o = &o, .set = &set};
    const struct smp_hooks hooks = {
        .ctx = &run,
        .open = rec_open,
        .reopen = rec_reopen,
        .release = rec_release,
        .sample = rec_sample,
        .tick = rec_tick,
        .input_fd = -1,
    };
    set.o = &o.s;
    set.h = &hooks;
    if (smp_set_open(&set, o.pid, &pg) != 0)
        return cli_report_error(false);
    struct smp_proc *first = set.procs[0];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    struct profile_json_opts jo = {
        .version = SCRY_VERSION,
        .program = pg.program,
        .entrypoint_dir = pg.entry_dir,
        .filename = pg.program_path,
        .args = pg.args,
        .nargs = pg.nargs,
        .start_time_perf = (double)first->start_ns / 1e9,
        .cpu_percent_threshold = 1,
        .ncpus = ncpu > 0 ? (unsigned)ncpu : 1,
    };
    run.jo = &jo;

    struct outfile out;
    if (outfile_open(&out, o.outfile, OUTFILE_PRIVATE) != 0) {
        smp_set_free(&set);
        free(pg.args);
        return cli_report_error(false);
    }
    if (o.push.url) {
        char service[256];
        push_default_service(pg.program[0] ? pg.program : "python", service, sizeof(service));
        if (push_start(&run.ps, &o.push, o.push.service ? o.push.service : service,
                       1.0 / o.s.rate) != 0) {
            outfile_abort(&out);
            smp_set_free(&set);
            free(pg.args);
            return cli_report_error(false);
        }
        run.next_push = (double)smp_mono_ns() / 1e9 + o.push.interval_sec;
    }
    smp_install_stop_handlers();
    if (!o.quiet)
        fprintf(stderr, "scry: recording process %d (Python %s) at %.0f Hz%s; Ctrl-C to stop\n",
                o.pid, san_str(first->rt.version_str), o.s.rate,
                o.s.native ? ", stopping it to unwind native frames"
                           : o.s.blocking ? ", stopping it" : "");
    const char *why = "the duration ended";
    /* The progress line (common/progress.h): the time recorded (of --duration) and the samples,
     * then the merge and the write; erased before the last line. */
    prog_init(o.quiet);
    run.start_ns = smp_mono_ns();
    prog_phase("recording", PROG_SECONDS, (uint64_t)(o.s.duration + 0.999), NULL, "samples");
    int err = smp_loop(&set, &why);

    struct profile p;
    prof_init(&p);
    prog_phase("merging and writing the profile", PROG_NONE, 0, NULL, NULL);
    if (!err)
        err = merge_procs(&set, &o, &p);
    int status = CLI_EXIT_OK;
    if (!err) {
        prof_finish(&p);
        if (run.ps)
            push_profile(run.ps, &run.delta, &p, &jo); /* the last interval */
        err = cli_profile_write(&p, &jo, &out);
        prog_done();
        if (!err && !o.quiet)
            fprintf(stderr,
                    "scry: %s: wrote %s (%llu samples over %.3f s); view it with: scry view "
                    "--cli %s\n",
                    why, san_str(o.outfile), (unsigned long long)p.samples, p.elapsed_sec,
                    san_str(o.outfile));
    } else {
        outfile_abort(&out);
    }
    if (err)
        status = cli_report_error(false);
    /* The profile is written: only now wait (a bounded time) for the pushes still queued. */
    push_end(run.ps, true);
    push_delta_free(&run.delta);
    prof_free(&p);
    smp_set_free(&set);
    free(pg.args);
    return status;
}
