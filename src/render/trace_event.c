/* Trace Event export (see trace_event.h). pid 1 and tid 1 stand for the program and its main
 * thread in the events made from the profile's sums (the run, the footprint, memory samples).
 * With a sample stream (scry run --timeline) every sampled thread also gets its own track under
 * its real pid and tid: one slice per run of consecutive samples at the same stack and kind.
 * Times are microseconds since the program's process started. */
#include "render/trace_event.h"

#include <stdlib.h>
#include <string.h>

#include "render/json_writer.h"

#define TOP_FUNCS 20

static int cmp_total(const void *a, const void *b)
{
    const struct pdoc_entry *x = *(const struct pdoc_entry *const *)a;
    const struct pdoc_entry *y = *(const struct pdoc_entry *const *)b;
    double tx = x->python_sec + x->native_sec + x->sys_sec;
    double ty = y->python_sec + y->native_sec + y->sys_sec;
    return (tx < ty) - (tx > ty);
}

static void meta(struct json_writer *w, const char *name, int64_t pid, int64_t tid,
                 const char *value)
{
    jw_obj_begin(w);
    jw_key(w, "ph");
    jw_str(w, "M");
    jw_key(w, "name");
    jw_str(w, name);
    jw_key(w, "pid");
    jw_int(w, pid);
    jw_key(w, "tid");
    jw_int(w, tid);
    jw_key(w, "args");
    jw_obj_begin(w);
    jw_key(w, "name");
    jw_str(w, value);
    jw_obj_end(w);
    jw_obj_end(w);
}

static const char *const kind_names[3] = {"python", "native", "system"};

/* One slice: samples [from, to) of thread th, all at the same stack and kind. */
static void slice(struct json_writer *w, const struct pdoc *d, const struct pdoc_sthread *th,
                  const struct pdoc_ssample *first, const struct pdoc_ssample *last,
                  double start_us, size_t n, struct strbuf *tmp)
{
    const struct pdoc_stack *st = &d->ss_stacks[first->stack];
    const struct pdoc_frame *leaf = &d->ss_frames[st->off + st->depth - 1];
    double weight = 0;
    for (const struct pdoc_ssample *x = first; x <= last; x++)
        weight += x->thread == first->thread ? x->weight_us : 0;
    jw_obj_begin(w);
    jw_key(w, "ph");
    jw_str(w, "X");
    jw_key(w, "name");
    jw_strn(w, leaf->func, leaf->func_len);
    jw_key(w, "cat");
    jw_str(w, kind_names[first->kind]);
    jw_key(w, "pid");
    jw_int(w, th->pid);
    jw_key(w, "tid");
    jw_int(w, th->tid);
    jw_key(w, "ts");
    jw_double(w, start_us);
    jw_key(w, "dur");
    jw_double(w, last->t_us > start_us ? last->t_us - start_us : 0);
    jw_key(w, "args");
    jw_obj_begin(w);
    jw_key(w, "line");
    sb_reset(tmp);
    sb_addf(tmp, "%.*s:%u", (int)leaf->file_len, leaf->file, leaf->line);
    jw_str(w, sb_str(tmp));
    jw_key(w, "stack");
    sb_reset(tmp);
    for (uint32_t i = 0; i < st->depth; i++) {
        const struct pdoc_frame *f = &d->ss_frames[st->off + i];
        sb_addf(tmp, "%s%.*s:%u", i ? ";" : "", (int)f->func_len, f->func, f->line);
    }
    jw_str(w, sb_str(tmp));
    jw_key(w, "samples");
    jw_uint(w, n);
    jw_key(w, "sampled_ms");
    jw_double(w, weight / 1e3);
    jw_obj_end(w);
    jw_obj_end(w);
}

/* Each thread's name, then its slices: a run of samples at the same stack and kind starts where
 * its first sample's time began (its time less its weight, never before the previous slice's
 * end) and ends at its last sample. */
static void thread_tracks(struct json_writer *w, const struct pdoc *d)
{
    struct strbuf tmp = STRBUF_INIT;
    for (size_t t = 0; t < d->nss_threads; t++) {
        const struct pdoc_sthread *th = &d->ss_threads[t];
        bool new_pid = true;
        for (size_t u = 0; u < t; u++)
            new_pid = new_pid && d->ss_threads[u].pid != th->pid;
        if (new_pid) {
            sb_reset(&tmp);
            sb_addf(&tmp, "%s (pid %lld)", d->program[0] ? d->program : "python",
                    (long long)th->pid);
            meta(w, "process_name", th->pid, 0, sb_str(&tmp));
        }
        sb_reset(&tmp);
        pdoc_thread_label(th, &tmp);
        meta(w, "thread_name", th->pid, th->tid, sb_str(&tmp));
        const struct pdoc_ssample *first = NULL, *last = NULL;
        double end = 0, start = 0;
        size_t n = 0;
        for (size_t i = 0; i <= d->nss_samples; i++) {
            const struct pdoc_ssample *x = i < d->nss_samples ? &d->ss_samples[i] : NULL;
            if (x && x->thread != t)
                continue;
            if (first && (!x || x->stack != first->stack || x->kind != first->kind)) {
                slice(w, d, th, first, last, start, n, &tmp);
                end = last->t_us;
                first = NULL;
            }
            if (!x)
                break;
            if (!first) {
                first = x;
                n = 0;
                start = x->t_us - x->weight_us;
                if (start < end)
                    start = end;
            }
            last = x;
            n++;
        }
    }
    sb_release(&tmp);
}

void trace_event_write(const struct pdoc *d, const struct trace_opts *o, struct strbuf *out)
{
    struct json_writer w;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "traceEvents");
    jw_arr_begin(&w);
    meta(&w, "process_name", 1, 0, d->program[0] ? d->program : "python");
    meta(&w, "thread_name", 1, 1, "MainThread");

    double py = 0, nat = 0, sys = 0;
    for (size_t i = 0; i < d->nfuncs; i++) {
        py += d->funcs[i].python_sec;
        nat += d->funcs[i].native_sec;
        sys += d->funcs[i].sys_sec;
    }
    jw_obj_begin(&w);
    jw_key(&w, "ph");
    jw_str(&w, "X");
    jw_key(&w, "name");
    jw_str(&w, d->program[0] ? d->program : "program");
    jw_key(&w, "cat");
    jw_str(&w, "scry");
    jw_key(&w, "pid");
    jw_int(&w, 1);
    jw_key(&w, "tid");
    jw_int(&w, 1);
    jw_key(&w, "ts");
    jw_int(&w, 0);
    jw_key(&w, "dur");
    jw_double(&w, d->elapsed_sec * 1e6);
    jw_key(&w, "args");
    jw_obj_begin(&w);
    jw_key(&w, "sampled_time_sec");
    jw_double(&w, d->sampled_sec);
    jw_key(&w, "profiled_python_sec");
    jw_double(&w, py);
    jw_key(&w, "profiled_native_sec");
    jw_double(&w, nat);
    jw_key(&w, "profiled_system_sec");
    jw_double(&w, sys);
    /* The hottest functions: "qualname (file:line)" -> seconds. */
    const struct pdoc_entry **order = malloc((d->nfuncs + 1) * sizeof(*order));
    if (order) {
        for (size_t i = 0; i < d->nfuncs; i++)
            order[i] = &d->funcs[i];
        qsort(order, d->nfuncs, sizeof(*order), cmp_total);
        jw_key(&w, "top_functions_sec");
        jw_obj_begin(&w);
        struct strbuf k = STRBUF_INIT;
        for (size_t i = 0; i < d->nfuncs && i < TOP_FUNCS; i++) {
            const struct pdoc_entry *f = order[i];
            double t = f->python_sec + f->native_sec + f->sys_sec;
            if (t <= 0)
                break;
            sb_reset(&k);
            sb_addf(&k, "%s (%s:%u)", f->func, f->file, f->first_line);
            jw_key(&w, sb_str(&k));
            jw_double(&w, t);
        }
        sb_release(&k);
        jw_obj_end(&w);
        free(order);
    }
    jw_obj_end(&w);
    jw_obj_end(&w);

    for (size_t i = 0; i < d->nfootprint; i++) {
        jw_obj_begin(&w);
        jw_key(&w, "ph");
        jw_str(&w, "C");
        jw_key(&w, "name");
        jw_str(&w, "memory footprint");
        jw_key(&w, "pid");
        jw_int(&w, 1);
        jw_key(&w, "tid");
        jw_int(&w, 1);
        jw_key(&w, "ts");
        jw_double(&w, d->footprint[i][0] / 1000.0);
        jw_key(&w, "args");
        jw_obj_begin(&w);
        jw_key(&w, "MB");
        jw_double(&w, d->footprint[i][1]);
        jw_obj_end(&w);
        jw_obj_end(&w);
    }
    /* The times at which a line had a malloc or free sample, with the footprint then. */
    struct strbuf name = STRBUF_INIT;
    for (size_t i = 0; i < d->nlines; i++) {
        const struct pdoc_entry *l = &d->lines[i];
        for (size_t j = 0; j < json_array_size(l->memory_samples); j++) {
            const json_t *p = json_array_get(l->memory_samples, j);
            sb_reset(&name);
            sb_addf(&name, "memory sample %s:%u", l->file, l->line);
            jw_obj_begin(&w);
            jw_key(&w, "ph");
            jw_str(&w, "i");
            jw_key(&w, "s");
            jw_str(&w, "p");
            jw_key(&w, "name");
            jw_str(&w, sb_str(&name));
            jw_key(&w, "cat");
            jw_str(&w, "memory");
            jw_key(&w, "pid");
            jw_int(&w, 1);
            jw_key(&w, "tid");
            jw_int(&w, 1);
            jw_key(&w, "ts");
            jw_double(&w, json_number_value(json_array_get(p, 0)) / 1000.0);
            jw_key(&w, "args");
            jw_obj_begin(&w);
            jw_key(&w, "function");
            jw_str(&w, l->func);
            jw_key(&w, "footprint_mb");
            jw_double(&w, json_number_value(json_array_get(p, 1)));
            jw_obj_end(&w);
            jw_obj_end(&w);
        }
    }
    sb_release(&name);
    if (d->have_stream)
        thread_tracks(&w, d);
    jw_arr_end(&w);
    jw_key(&w, "displayTimeUnit");
    jw_str(&w, "ms");
    jw_key(&w, "otherData");
    jw_obj_begin(&w);
    jw_key(&w, "exporter");
    jw_str(&w, o->exporter ? o->exporter : "scry");
    jw_key(&w, "note");
    jw_str(&w, d->have_stream
                   ? "pid 1 tid 1: the whole run, the memory footprint timeline and the lines' "
                     "memory samples; real pids and tids: each thread's samples (scry run "
                     "--timeline), one slice per run of samples at the same stack and kind"
                   : "scry profiles keep no timestamp per CPU sample unless recorded with scry "
                     "run --timeline: the slice is the whole run, the counter the memory "
                     "footprint timeline, the instants the lines' memory samples");
    jw_obj_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');
}
