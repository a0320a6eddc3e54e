/* The timeline of samples (sstream.h): a bounded, uniformly decimated record of the samples
 * charged to lines, written into the part as "sample_stream" (docs/agent-protocol.md). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sstream.h"
#include "common/grow.h"
#include "common/outfile.h"

bool ag_sstream_on;
size_t ag_sstream_max = AG_SSTREAM_DEFAULT_MAX;
struct ag_sstream ag_sstream;

void ag_sstream_reset(struct ag_sstream *tl)
{
    free(tl->s);
    free(tl->threads);
    memset(tl, 0, sizeof(*tl));
}

/* The kernel's name of thread tid (its comm: 15 bytes at most), "" when it cannot be read. */
static void thread_name(int tid, char *out, size_t size)
{
    char path[64];
    out[0] = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
    int fd = fd_above_stdio(open(path, O_RDONLY | O_CLOEXEC));
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0) {
        out[0] = 0;
        return;
    }
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
}

/* Index of thread tid among the timeline's threads, added when new; SIZE_MAX without memory. */
static size_t thread_index(struct ag_sstream *tl, int tid, bool read_names)
{
    if (tl->last_thread < tl->nthreads && tl->threads[tl->last_thread].tid == tid)
        return tl->last_thread;
    for (size_t i = 0; i < tl->nthreads; i++)
        if (tl->threads[i].tid == tid)
            return tl->last_thread = i;
    if (grow_array(&tl->threads, &tl->cap_threads, tl->nthreads + 1, sizeof(*tl->threads)))
        return SIZE_MAX;
    struct ag_tl_thread *t = &tl->threads[tl->nthreads];
    t->tid = tid;
    t->name[0] = 0;
    if (read_names)
        thread_name(tid, t->name, sizeof(t->name));
    return tl->last_thread = tl->nthreads++;
}

/* Full: keeps every second sample (those whose sequence number is a multiple of the doubled
 * stride, since the kept ones were the multiples of the stride). */
static void decimate(struct ag_sstream *tl)
{
    size_t k = 0;
    for (size_t i = 0; i < tl->n; i += 2)
        tl->s[k++] = tl->s[i];
    tl->n = k;
    tl->stride *= 2;
}

void ag_sstream_add(struct ag_sstream *tl, uint64_t t_ns, int tid, bool read_names, int cat,
                     uint64_t weight_ns, uint32_t file, uint32_t func, int32_t line,
                     uint32_t stack)
{
    if (!tl->stride)
        tl->stride = 1;
    if (!tl->max)
        tl->max = ag_sstream_max < AG_SSTREAM_MIN_MAX ? AG_SSTREAM_MIN_MAX : ag_sstream_max;
    uint64_t seq = tl->seen++;
    if (seq % tl->stride)
        return;
    if (tl->n == tl->max) {
        decimate(tl);
        if (seq % tl->stride)
            return;
    }
    size_t th = thread_index(tl, tid, read_names);
    if (th == SIZE_MAX || grow_array(&tl->s, &tl->cap, tl->n + 1, sizeof(*tl->s))) {
        tl->lost++;
        return;
    }
    tl->s[tl->n++] = (struct ag_tl_sample){t_ns, weight_ns, file, func, line, stack,
                                           (uint32_t)th, (uint8_t)cat};
}

void ag_sstream_write(const struct ag_sstream *tl, uint64_t start_ns, const int64_t *stack_pos,
                       struct json_writer *w)
{
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
        const struct ag_tl_sample *s = &tl->s[i];
        jw_arr_begin(w);
        jw_uint(w, s->t_ns > start_ns ? (s->t_ns - start_ns) / 1000 : 0);
        jw_uint(w, s->thread);
        jw_uint(w, s->cat);
        jw_uint(w, (s->weight_ns + 500) / 1000);
        jw_uint(w, s->file);
        jw_uint(w, s->func);
        jw_int(w, s->line);
        jw_int(w, s->stack && stack_pos ? stack_pos[s->stack - 1] : -1);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}
