/* Writes the agent's part file (format in docs/agent-protocol.md): to a temporary name in the
 * part directory, created when the process starts profiling, then renamed, so the command never
 * reads half a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/gpu.h"
#include "agent/memory.h"
#include "agent/memstats.h"
#include "agent/stats.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"
#include "render/json_writer.h"

#define MAX_EXCLUDED 50

static void write_argv(struct json_writer *w)
{
    char buf[65536];
    ssize_t n = pf_process_cmdline(0, buf, sizeof(buf));
    jw_arr_begin(w);
    for (ssize_t i = 0; i < n;) {
        size_t len = strnlen(buf + i, (size_t)(n - i));
        jw_strn(w, buf + i, len);
        i += (ssize_t)len + 1;
    }
    jw_arr_end(w);
}

static int cmp_excluded(const void *a, const void *b, void *arg)
{
    const struct ag_stats *st = arg;
    const struct ag_file *fa = &st->files[*(const uint32_t *)a];
    const struct ag_file *fb = &st->files[*(const uint32_t *)b];
    double x = fa->excluded_sec + fa->excluded_idle_sec;
    double y = fb->excluded_sec + fb->excluded_idle_sec;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* native_frames, native_stacks and combined_stacks (docs/agent-protocol.md). */
static void write_native(const struct ag_stats *st, struct json_writer *w)
{
    jw_key(w, "native_frames");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nnframes; i++) {
        const struct ag_nframe *f = &st->nframes[i];
        jw_arr_begin(w);
        jw_str(w, ag_stats_str(st, f->module));
        jw_str(w, ag_stats_str(st, f->symbol));
        jw_uint(w, f->ip);
        jw_uint(w, f->offset);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "native_stacks");
    jw_arr_begin(w);
    const struct ag_chains *c = &st->native_stacks;
    for (size_t i = 0; i < c->n; i++) {
        const uint32_t *items = (const uint32_t *)(c->items + (size_t)c->chains[i].off * c->item_size);
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t k = 0; k < c->chains[i].depth; k++)
            jw_uint(w, items[k]);
        jw_arr_end(w);
        jw_uint(w, c->chains[i].hits);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "native_stacks_overflow");
    jw_uint(w, c->overflow);
    jw_key(w, "combined_stacks");
    jw_arr_begin(w);
    c = &st->combined_stacks;
    for (size_t i = 0; i < c->n; i++) {
        const struct ag_citem *items =
            (const struct ag_citem *)(c->items + (size_t)c->chains[i].off * c->item_size);
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t k = 0; k < c->chains[i].depth; k++) {
            jw_arr_begin(w);
            jw_uint(w, items[k].a);
            if (!items[k].native) {
                jw_uint(w, items[k].b);
                jw_int(w, items[k].line);
            }
            jw_arr_end(w);
        }
        jw_arr_end(w);
        jw_uint(w, c->chains[i].hits);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "combined_stacks_overflow");
    jw_uint(w, c->overflow);
}

static void write_timeline(struct json_writer *w, const struct ag_timeline *tl)
{
    jw_arr_begin(w);
    for (uint32_t i = 0; tl && i < tl->n; i++) {
        jw_arr_begin(w);
        jw_uint(w, tl->t[i]);
        jw_uint(w, tl->v[i]);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

static void key_uint(struct json_writer *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    jw_uint(w, v);
}

/* memory and memory_lines (docs/agent-protocol.md, "Memory"). */
static void write_memory(const struct ag_mem_stats *m, uint64_t start_ns, uint64_t end_ns,
                         struct json_writer *w)
{
    jw_key(w, "memory");
    jw_obj_begin(w);
    key_uint(w, "window", ag_mem_window);
    key_uint(w, "copy_window", ag_copy_window);
    jw_key(w, "leak_detector");
    jw_bool(w, ag_leak_on);
    key_uint(w, "alloc_samples", m->alloc_samples);
    key_uint(w, "copy_samples", m->copy_samples);
    key_uint(w, "malloc_bytes", m->malloc_bytes);
    key_uint(w, "free_bytes", m->free_bytes);
    key_uint(w, "python_bytes", m->python_bytes);
    key_uint(w, "copy_bytes", m->copy_bytes);
    key_uint(w, "native_malloc_bytes", m->native_malloc_bytes);
    key_uint(w, "startup_malloc_bytes", m->startup_malloc_bytes);
    key_uint(w, "max_footprint_bytes", m->max_footprint);
    jw_key(w, "max_footprint_at");
    if (m->max_at_line) {
        jw_arr_begin(w);
        jw_uint(w, m->max_file);
        jw_int(w, m->max_line);
        jw_arr_end(w);
    } else {
        jw_null(w);
    }
    jw_key(w, "max_footprint_python_fraction");
    jw_double(w, m->max_python_fraction);
    key_uint(w, "final_footprint_bytes", m->footprint);
    key_uint(w, "deferred_samples", atomic_load(&ag_memq_deferred));
    jw_key(w, "timeline");
    write_timeline(w, &m->timeline);
    jw_obj_end(w);

    jw_key(w, "memory_lines");
    jw_arr_begin(w);
    for (size_t i = 0; i < m->nlines; i++) {
        const struct ag_mline *l = &m->lines[i];
        jw_arr_begin(w);
        jw_uint(w, l->file);
        jw_int(w, l->line);
        jw_uint(w, l->func);
        const uint64_t nums[] = {l->malloc_bytes, l->python_bytes, l->malloc_samples,
                                 l->free_bytes,   l->peak,         l->hw_sum,
                                 l->execs,        l->copy_bytes,   l->leak_mallocs,
                                 l->leak_frees};
        for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++)
            jw_uint(w, nums[k]);
        write_timeline(w, l->timeline);
        jw_uint(w, l->live_bytes);
        jw_uint(w, ag_mem_growth_rises(l, start_ns, end_ns));
        jw_uint(w, l->max_live);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

/* The timeline (final part only): each sample's stack by its position in "stacks", which
 * leaves out stacks with neither samples nor bytes. */
static void write_sample_stream(const struct ag_stats *st, uint64_t start_mono_ns,
                                  struct json_writer *w)
{
    int64_t *pos = NULL;
    if (ag_cfg.stacks && st->nstacks) {
        pos = malloc(st->nstacks * sizeof(*pos));
        if (!pos)
            return; /* out of memory: no timeline rather than a wrong one */
        int64_t k = 0;
        for (size_t i = 0; i < st->nstacks; i++)
            pos[i] = st->stacks[i].samples || st->stacks[i].malloc_bytes ? k++ : -1;
    }
    const struct sst_stream *tl = &ag_sstream;
    jw_key(w, "sample_stream");
    jw_obj_begin(w);
    jw_key(w, "max");
    jw_uint(w, tl->max ? tl->max : ag_sstream_max);
    jw_key(w, "stride");
    jw_uint(w, tl->stride ? tl->stride : 1);
    jw_key(w, "seen");
    jw_uint(w, tl->seen);
    jw_key(w, "lost");
    jw_uint(w, tl->lost);
    jw_key(w, "threads");
    jw_arr_begin(w);
    for (size_t i = 0; i < tl->nthreads; i++) {
        jw_arr_begin(w);
        jw_int(w, tl->threads[i].tid);
        jw_str(w, tl->threads[i].name);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "samples");
    jw_arr_begin(w);
    for (size_t i = 0; i < tl->n; i++) {
        const struct sst_sample *s = &tl->s[i];
        jw_arr_begin(w);
        jw_uint(w, s->t_ns > start_mono_ns ? (s->t_ns - start_mono_ns) / 1000 : 0);
        jw_uint(w, s->thread);
        jw_uint(w, s->cat);
        jw_uint(w, (s->weight_ns + 500) / 1000);
        jw_uint(w, s->file);
        jw_uint(w, s->func);
        jw_int(w, s->line);
        jw_int(w, s->stack >= 0 && pos ? pos[s->stack] : -1);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    free(pos);
}

/* The GPU sampler's "gpu" object (gpu.c) and the lines it charged: [file, line, func, seconds,
 * load-weighted seconds, MiB-weighted seconds, peak MiB] (docs/agent-protocol.md, "GPU"). */
static void write_gpu(const struct ag_stats *st, struct json_writer *w)
{
    ag_gpu_write_part(w);
    if (st->gpu_sec <= 0)
        return;
    jw_key(w, "gpu_lines");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nlines; i++) {
        const struct ag_line *l = &st->lines[i];
        if (l->gpu_sec <= 0)
            continue;
        jw_arr_begin(w);
        jw_uint(w, l->file);
        jw_int(w, l->line);
        jw_uint(w, l->func);
        jw_double(w, l->gpu_sec);
        jw_double(w, l->gpu_load_sec);
        jw_double(w, l->gpu_mem_mb_sec);
        jw_double(w, l->gpu_peak_mb);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

/* The process, its times and totals, its @profile functions and its run-queue delay. */
static void write_process(const struct ag_stats *st, double start_real_sec, double elapsed_sec,
                          struct json_writer *w)
{
    jw_key(w, "format");
    jw_str(w, "scry-part");
    jw_key(w, "format_version");
    jw_int(w, 1);
    jw_key(w, "pid");
    jw_int(w, ag_pid);
    jw_key(w, "ppid");
    jw_int(w, getppid());
    jw_key(w, "python_version");
    jw_str(w, ag_rt.version_str);
    if (ag_cfg.memory_unsupported) {
        jw_key(w, "memory_unsupported");
        jw_bool(w, true);
    }
    jw_key(w, "argv");
    write_argv(w);
    jw_key(w, "start_time_absolute");
    jw_double(w, start_real_sec);
    jw_key(w, "elapsed_sec");
    jw_double(w, elapsed_sec);
    jw_key(w, "main_thread_id");
    jw_uint(w, ag_main_thread_id);
    jw_key(w, "virtual_time");
    jw_bool(w, ag_cfg.virtual_time);
    jw_key(w, "sampling_rate_sec");
    jw_double(w, ag_cfg.rate_sec);
    jw_key(w, "profiling_off_sec");
    jw_double(w, st->off_sec);
    jw_key(w, "totals");
    jw_obj_begin(w);
    jw_key(w, "python_sec");
    jw_double(w, st->total_sec[AG_PYTHON]);
    jw_key(w, "native_sec");
    jw_double(w, st->total_sec[AG_NATIVE]);
    jw_key(w, "sys_sec");
    jw_double(w, st->total_sec[AG_SYS]);
    jw_key(w, "samples");
    jw_uint(w, st->samples);
    jw_key(w, "dropped");
    jw_uint(w, st->dropped);
    jw_obj_end(w);

    static struct ag_decorated dec[512];
    size_t ndec = ag_decorated_copy(dec, sizeof(dec) / sizeof(dec[0]));
    if (ndec) {
        jw_key(w, "decorated");
        jw_arr_begin(w);
        for (size_t i = 0; i < ndec; i++) {
            jw_arr_begin(w);
            jw_str(w, dec[i].file);
            jw_str(w, dec[i].name);
            jw_int(w, dec[i].first);
            jw_arr_end(w);
        }
        jw_arr_end(w);
    }

    uint64_t delay_ns, cpu_ns;
    if (ag_sched_totals(&delay_ns, &cpu_ns)) {
        jw_key(w, "run_queue");
        jw_obj_begin(w);
        jw_key(w, "delay_sec");
        jw_double(w, (double)delay_ns / 1e9);
        jw_key(w, "cpu_sec");
        jw_double(w, (double)cpu_ns / 1e9);
        jw_obj_end(w);
    }
}

/* The files, functions and lines, which the rest names by index. */
static void write_lines(const struct ag_stats *st, struct json_writer *w)
{
    jw_key(w, "files");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nfiles; i++)
        jw_str(w, ag_stats_str(st, st->files[i].name));
    jw_arr_end(w);
    jw_key(w, "functions");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nfuncs; i++) {
        jw_arr_begin(w);
        jw_str(w, ag_stats_str(st, st->funcs[i].name));
        jw_uint(w, st->funcs[i].file);
        jw_int(w, st->funcs[i].firstline);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "lines");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nlines; i++) {
        const struct ag_line *l = &st->lines[i];
        jw_arr_begin(w);
        jw_uint(w, l->file);
        jw_int(w, l->line);
        jw_uint(w, l->func);
        jw_double(w, l->sec[AG_PYTHON]);
        jw_double(w, l->sec[AG_NATIVE]);
        jw_double(w, l->sec[AG_SYS]);
        jw_uint(w, l->samples);
        jw_arr_end(w);
    }
    jw_arr_end(w);
}

/* --stacks: the Python call stacks (with memory on, the bytes allocated under each). */
static void write_stacks(const struct ag_stats *st, const struct ag_mem_stats *mem,
                         struct json_writer *w)
{
    jw_key(w, "stacks");
    jw_arr_begin(w);
    for (size_t i = 0; i < st->nstacks; i++) {
        const struct ag_stack *x = &st->stacks[i];
        if (!x->samples && !x->malloc_bytes)
            continue;
        jw_arr_begin(w);
        jw_arr_begin(w);
        for (uint32_t f = 0; f < x->depth; f++) {
            const struct ag_sframe *fr = &st->sframes[x->off + f];
            jw_arr_begin(w);
            jw_uint(w, fr->file);
            jw_uint(w, fr->func);
            jw_int(w, fr->line);
            jw_arr_end(w);
        }
        jw_arr_end(w);
        jw_uint(w, x->samples);
        jw_double(w, x->sec[AG_PYTHON]);
        jw_double(w, x->sec[AG_NATIVE]);
        jw_double(w, x->sec[AG_SYS]);
        if (mem)
            jw_uint(w, x->malloc_bytes);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "stacks_overflow");
    jw_uint(w, st->stacks_overflow);
}

/* The files filtered out, by their time, most first. */
static void write_excluded(const struct ag_stats *st, struct json_writer *w)
{
    jw_key(w, "excluded");
    jw_arr_begin(w);
    uint32_t *order = malloc((st->nfiles ? st->nfiles : 1) * sizeof(*order));
    size_t n = 0;
    for (size_t i = 0; order && i < st->nfiles; i++)
        if (st->files[i].excluded_sec + st->files[i].excluded_idle_sec > 0)
            order[n++] = (uint32_t)i;
    if (order)
        qsort_r(order, n, sizeof(*order), cmp_excluded, (void *)st);
    for (size_t i = 0; i < n && i < MAX_EXCLUDED; i++) {
        const struct ag_file *f = &st->files[order[i]];
        jw_arr_begin(w);
        jw_str(w, ag_stats_str(st, f->name));
        jw_str(w, ag_rule_name(f->rule));
        jw_double(w, f->excluded_sec + f->excluded_idle_sec);
        jw_arr_end(w);
    }
    free(order);
    jw_arr_end(w);
}

static void write_body(const struct ag_stats *st, const struct ag_mem_stats *mem,
                       double start_real_sec, double elapsed_sec, double window_sec,
                       uint64_t timeline_origin, struct json_writer *w)
{
    jw_obj_begin(w);
    write_process(st, start_real_sec, elapsed_sec, w);
    write_lines(st, w);
    if (ag_cfg.stacks)
        write_stacks(st, mem, w);
    if (ag_cfg.stacks && ag_unwind_ok)
        write_native(st, w);
    if (mem)
        write_memory(mem, window_sec > 0 ? (uint64_t)(window_sec * 1e9) : 0,
                     elapsed_sec > 0 ? (uint64_t)(elapsed_sec * 1e9) : 0, w);
    write_gpu(st, w);
    write_excluded(st, w);
    if (timeline_origin && ag_sstream_on)
        write_sample_stream(st, timeline_origin, w);
    jw_obj_end(w);
}

/* The part directory (O_PATH) and this process's part file, both opened when the process starts
 * profiling: a program that drops its privileges (setuid to an unprivileged user) can no longer
 * create anything in the private part directory, but still writes through descriptors it holds.
 * Both are above 2 and close-on-exec, and used only while they still refer to what they were
 * opened on (ag_fd_get). */
static struct ag_fd dir_fd = {-1, 0, 0};
static struct ag_fd part_fd = {-1, 0, 0};
static int part_pid; /* the process part_fd was created for */

static void tmp_name(char *buf, size_t size, int pid)
{
    snprintf(buf, size, ".part-%d.json.tmp", pid);
}

/* The part directory's descriptor, opened again if the program closed it. */
static int part_dir(void)
{
    int fd = ag_fd_get(&dir_fd);
    if (fd < 0)
        fd = ag_fd_keep(&dir_fd, open(ag_cfg.part_dir, O_PATH | O_DIRECTORY | O_CLOEXEC));
    return fd;
}

/* This process's part file: the one created at the start if it is still there, else a new one
 * (-1 if that cannot be created: the program dropped its privileges after closing it). A forked
 * child holds its parent's part file: it never writes there. */
static int part_file(bool reuse)
{
    char name[64];
    int fd = part_pid == ag_pid && reuse ? ag_fd_get(&part_fd) : -1;
    if (fd >= 0)
        return fd;
    if (part_fd.fd >= 0 && ag_fd_get(&part_fd) >= 0)
        close(part_fd.fd);
    part_fd.fd = -1;
    int dir = part_dir();
    if (dir < 0)
        return -1;
    tmp_name(name, sizeof(name), ag_pid);
    part_pid = ag_pid;
    return ag_fd_keep(&part_fd, openat(dir, name, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW |
                                                      O_CLOEXEC, 0600));
}

int ag_part_mark(const char *name, bool exclusive)
{
    int dir = part_dir();
    if (dir < 0)
        return -1;
    int fd = fd_above_stdio(openat(dir, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                                                  (exclusive ? O_EXCL : 0), 0600));
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

bool ag_part_mark_present(const char *name)
{
    struct stat st;
    int dir = part_dir();
    return dir >= 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void ag_part_unmark(const char *name)
{
    int dir = part_dir();
    if (dir >= 0)
        unlinkat(dir, name, 0);
}

void ag_part_begin(void)
{
    char name[64];
    part_file(false);
    snprintf(name, sizeof(name), "live-%d", ag_pid);
    ag_part_mark(name, false);
}

void ag_part_forget_dir(void)
{
    if (ag_fd_get(&part_fd) >= 0)
        close(part_fd.fd);
    if (ag_fd_get(&dir_fd) >= 0)
        close(dir_fd.fd);
    part_fd.fd = dir_fd.fd = -1;
}

static void live_marker_remove(int dir)
{
    char name[64];
    snprintf(name, sizeof(name), "live-%d", ag_pid);
    unlinkat(dir, name, 0);
}

/* The whole buffer at offset 0 of fd; 0, or -1 with errno set. */
static int write_all(int fd, const struct strbuf *sb)
{
    for (size_t done = 0; done < sb->len;) {
        ssize_t n = pwrite(fd, sb->buf + done, sb->len - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

/* timeline_origin: 0 for snapshots and checkpoints (no timeline), else its time origin.
 * window_sec: where the window the leak rule judges starts (seconds since the start; 0: the
 * whole run). */
static void render_part(const struct ag_stats *st, const struct ag_mem_stats *mem,
                        double start_real_sec, double elapsed_sec, double window_sec,
                        uint64_t timeline_origin, struct strbuf *sb)
{
    struct json_writer w;
    jw_init(&w, sb, false);
    write_body(st, mem, start_real_sec, elapsed_sec, window_sec, timeline_origin, &w);
    sb_addch(sb, '\n');
}

/* sb as the part directory's <what>-<pid>.json, written under a temporary name and renamed over
 * the previous one. */
static int replace_in_dir(const char *what, const struct strbuf *sb)
{
    char tmp[64], path[64];
    int dir = part_dir();
    if (dir < 0)
        return err_fail(SCRY_E_IO, "cannot open %s: %s", ag_cfg.part_dir, strerror(errno));
    if (sb_failed(sb))
        return err_fail(SCRY_E_NO_MEMORY, "cannot write %s-%d.json: out of memory", what, ag_pid);
    snprintf(tmp, sizeof(tmp), ".%s-%d.json.tmp", what, ag_pid);
    snprintf(path, sizeof(path), "%s-%d.json", what, ag_pid);
    int err = 0;
    int fd = fd_above_stdio(
        openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd < 0) {
        err = err_fail(SCRY_E_IO, "cannot create %s/%s: %s", ag_cfg.part_dir, tmp,
                       strerror(errno));
    } else {
        bool ok = write_all(fd, sb) == 0;
        ok = close(fd) == 0 && ok;
        if (!ok || renameat(dir, tmp, dir, path) != 0) {
            err = err_fail(SCRY_E_IO, "cannot write %s/%s: %s", ag_cfg.part_dir, path,
                           strerror(errno));
            unlinkat(dir, tmp, 0);
        }
    }
    return err;
}

int ag_write_snapshot_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                           double start_real_sec, double elapsed_sec)
{
    struct strbuf sb = STRBUF_INIT;
    render_part(st, mem, start_real_sec, elapsed_sec, 0, 0, &sb);
    int err = replace_in_dir("snap", &sb);
    sb_release(&sb);
    return err;
}

int ag_write_allocations_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                              uint64_t req)
{
    struct strbuf sb = STRBUF_INIT;
    struct json_writer w;
    jw_init(&w, &sb, false);
    jw_obj_begin(&w);
    jw_key(&w, "version");
    jw_int(&w, 1);
    jw_key(&w, "pid");
    jw_int(&w, ag_pid);
    jw_key(&w, "request");
    jw_uint(&w, req);
    jw_key(&w, "window");
    jw_uint(&w, ag_mem_window);
    jw_key(&w, "memory");
    jw_bool(&w, mem != NULL);
    /* [file, function, line] of each stack's frames, outermost first. */
    const struct ag_chains *c = &st->alloc_stacks;
    jw_key(&w, "stacks");
    jw_arr_begin(&w);
    for (size_t i = 0; mem && i < c->n; i++) {
        const struct ag_sframe *f = (const struct ag_sframe *)(const void *)c->items + c->chains[i].off;
        jw_arr_begin(&w);
        for (uint32_t k = 0; k < c->chains[i].depth; k++) {
            jw_arr_begin(&w);
            jw_str(&w, ag_stats_str(st, st->files[f[k].file].name));
            jw_str(&w, ag_stats_str(st, st->funcs[f[k].func].name));
            jw_int(&w, f[k].line);
            jw_arr_end(&w);
        }
        jw_arr_end(&w);
    }
    jw_arr_end(&w);
    /* [seq, address, block size, bytes it stands for, stack index or -1] */
    jw_key(&w, "live");
    jw_arr_begin(&w);
    for (size_t i = 0; mem && i < mem->nlive; i++) {
        const struct ag_live *l = &mem->live[i];
        jw_arr_begin(&w);
        jw_uint(&w, l->seq);
        jw_uint(&w, l->ptr);
        jw_uint(&w, l->size);
        jw_uint(&w, l->bytes);
        jw_int(&w, l->stack ? (int64_t)l->stack - 1 : -1);
        jw_arr_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    sb_addch(&sb, '\n');
    int err = replace_in_dir("alloc", &sb);
    sb_release(&sb);
    return err;
}

int ag_write_checkpoint_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                             double start_real_sec, double elapsed_sec, double window_sec,
                             const char *path)
{
    struct strbuf sb = STRBUF_INIT;
    render_part(st, mem, start_real_sec, elapsed_sec, window_sec, 0, &sb);
    if (sb_failed(&sb)) {
        sb_release(&sb);
        errno = ENOMEM;
        return err_fail(SCRY_E_NO_MEMORY, "cannot write %s: out of memory", path);
    }
    int err = 0;
    int fd = fd_above_stdio(
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd < 0) {
        err = err_fail(SCRY_E_IO, "cannot create %s: %s", path, strerror(errno));
    } else {
        bool ok = write_all(fd, &sb) == 0;
        int saved = errno;
        ok = close(fd) == 0 && ok;
        if (!ok) {
            err = err_fail(SCRY_E_IO, "cannot write %s: %s", path, strerror(saved));
            unlink(path);
            errno = saved;
        }
    }
    sb_release(&sb);
    return err;
}

/* Writes the part into the file opened at the start (created now if that failed), then renames
 * it to part-PID.json. A process that can no longer rename in the part directory (it dropped its
 * privileges) leaves the complete part under its temporary name, which the command reads too
 * (docs/agent-protocol.md). */
int ag_write_part_file(const struct ag_stats *st, const struct ag_mem_stats *mem,
                       double start_real_sec, double elapsed_sec, uint64_t start_mono_ns)
{
    struct strbuf sb = STRBUF_INIT;
    char path[64], tmp[64];
    int err = 0;
    render_part(st, mem, start_real_sec, elapsed_sec, 0, start_mono_ns, &sb);
    snprintf(path, sizeof(path), "part-%d.json", ag_pid);
    tmp_name(tmp, sizeof(tmp), ag_pid);
    int fd = part_file(true);
    int dir = ag_fd_get(&dir_fd);
    part_fd.fd = -1; /* closed below, whatever happens */
    if (fd < 0 || dir < 0) {
        err = err_fail(SCRY_E_IO, "cannot create %s/%s: %s", ag_cfg.part_dir, tmp,
                       strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    if (sb_failed(&sb)) { /* out of memory: no truncated part */
        err = err_fail(SCRY_E_NO_MEMORY, "cannot write %s/%s: out of memory", ag_cfg.part_dir,
                       tmp);
        close(fd);
        unlinkat(dir, tmp, 0);
        goto out;
    }
    if (ftruncate(fd, 0) != 0) {
        err = err_fail(SCRY_E_IO, "cannot write %s/%s: %s", ag_cfg.part_dir, tmp, strerror(errno));
        close(fd);
        goto out;
    }
    if (write_all(fd, &sb) != 0) {
        err = err_fail(SCRY_E_IO, "cannot write %s/%s: %s", ag_cfg.part_dir, tmp, strerror(errno));
        close(fd);
        unlinkat(dir, tmp, 0);
        goto out;
    }
    if (close(fd) != 0) {
        err = err_fail(SCRY_E_IO, "cannot write %s/%s: %s", ag_cfg.part_dir, tmp, strerror(errno));
        unlinkat(dir, tmp, 0);
    } else if (renameat(dir, tmp, dir, path) != 0 && errno != EACCES && errno != EPERM) {
        err = err_fail(SCRY_E_IO, "cannot write %s/%s: %s", ag_cfg.part_dir, path,
                       strerror(errno));
        unlinkat(dir, tmp, 0);
    }
    live_marker_remove(dir);
out:
    sb_release(&sb);
    return err;
}
