/* part_subtract (see part_delta.h). Entries of before are indexed by their keys in a jansson
 * object (key text -> index); each entry of after finds its earlier self there. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analysis/part_delta.h"
#include "common/error.h"

static double num(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* a - b, never below 0, as an integer when a is one. */
static json_t *minus(const json_t *a, const json_t *b)
{
    double d = num(a) - num(b);
    if (d < 0)
        d = 0;
    if (json_is_integer(a))
        return json_integer((json_int_t)llround(d));
    return json_real(d);
}

/* obj[key] -= other[key] for each key (absent keys are left alone). */
static void subtract_fields(json_t *obj, const json_t *other, const char *const *keys)
{
    if (!json_is_object(obj) || !json_is_object(other))
        return;
    for (size_t i = 0; keys[i]; i++) {
        json_t *a = json_object_get(obj, keys[i]);
        if (json_is_number(a))
            json_object_set_new(obj, keys[i], minus(a, json_object_get(other, keys[i])));
    }
}

/* The key of an entry: the JSON text of its first n items (n 0: of its first item). */
static char *entry_key(const json_t *entry, size_t n)
{
    if (!json_is_array(entry))
        return NULL;
    if (n == 0)
        return json_dumps(json_array_get(entry, 0), JSON_COMPACT | JSON_ENCODE_ANY);
    json_t *head = json_array();
    for (size_t i = 0; i < n && head; i++)
        json_array_append(head, json_array_get(entry, i));
    char *k = head ? json_dumps(head, JSON_COMPACT) : NULL;
    json_decref(head);
    return k;
}

/* key -> entry of before's array. */
static json_t *index_entries(const json_t *arr, size_t nkey)
{
    json_t *idx = json_object();
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char *k = entry_key(e, nkey);
        if (k && idx)
            json_object_set(idx, k, e);
        free(k);
    }
    return idx;
}

/* A timeline ([[ns since start, value], ...]) cut to the window that starts at t0_ns: its
 * points after t0, with times made relative to it. */
static json_t *timeline_since(const json_t *tl, double t0_ns, double *max_out)
{
    json_t *out = json_array();
    size_t i;
    json_t *pt;
    json_array_foreach(tl, i, pt) {
        double t = num(json_array_get(pt, 0)), v = num(json_array_get(pt, 1));
        if (t <= t0_ns)
            continue;
        if (max_out && v > *max_out)
            *max_out = v;
        json_array_append_new(out, json_pack("[I, I]", (json_int_t)llround(t - t0_ns),
                                             (json_int_t)llround(v)));
    }
    return out;
}

/* Which items of an entry are subtracted, which are the window's own, and when it is empty. */
struct entry_rule {
    size_t nkey;             /* items that make its key */
    const int *sub;          /* items subtracted, -1 ends */
    int timeline;            /* the item that is a timeline, -1: none */
    const int *empty_when_0; /* it is dropped when all of these are 0, -1 ends */
};

static bool all_zero(const json_t *e, const int *items)
{
    for (size_t i = 0; items[i] >= 0; i++)
        if (fabs(num(json_array_get(e, (size_t)items[i]))) > 1e-12)
            return false;
    return true;
}

static void subtract_entries(json_t *doc, const json_t *before, const char *key,
                             const struct entry_rule *r, double t0_ns)
{
    json_t *arr = json_object_get(doc, key);
    if (!json_is_array(arr))
        return;
    json_t *idx = index_entries(json_object_get(before, key), r->nkey);
    json_t *kept = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char *k = entry_key(e, r->nkey);
        const json_t *old = k && idx ? json_object_get(idx, k) : NULL;
        free(k);
        json_t *ne = json_copy(e);
        if (!ne)
            continue;
        for (size_t s = 0; old && r->sub[s] >= 0; s++) {
            size_t at = (size_t)r->sub[s];
            if (at >= json_array_size(ne))
                continue;
            json_array_set_new(ne, at, minus(json_array_get(e, at), json_array_get(old, at)));
        }
        if (r->timeline >= 0)
            json_array_set_new(ne, (size_t)r->timeline,
                               timeline_since(json_array_get(e, (size_t)r->timeline), t0_ns,
                                              NULL));
        if (all_zero(ne, r->empty_when_0))
            json_decref(ne);
        else
            json_array_append_new(kept, ne);
    }
    json_object_set_new(doc, key, kept);
    json_decref(idx);
}

/* lines: [file, line, func, python_sec, native_sec, sys_sec, samples] */
static const int line_sub[] = {3, 4, 5, 6, -1};
static const struct entry_rule line_rule = {3, line_sub, -1, line_sub};
/* stacks: [frames, samples, python_sec, native_sec, sys_sec, (malloc_bytes)] */
static const int stack_sub[] = {1, 2, 3, 4, 5, -1};
static const struct entry_rule stack_rule = {0, stack_sub, -1, stack_sub};
/* memory_lines: [file, line, func, malloc_bytes, python_bytes, malloc_samples, free_bytes,
 * peak, hw_sum, execs, copy_bytes, leak_mallocs, leak_frees, timeline, live_bytes,
 * growth_rises (a judgement at the window's end, kept as it is), max_live (window_peak)] */
static const int mline_sub[] = {3, 4, 5, 6, 8, 9, 10, 11, 12, -1};
static const int mline_empty[] = {3, 6, 10, -1};
static const struct entry_rule mline_rule = {2, mline_sub, 13, mline_empty};
/* excluded: [file, rule, sec] */
static const int excl_sub[] = {2, -1};
static const struct entry_rule excl_rule = {1, excl_sub, -1, excl_sub};

/* fn(entry, before's entry of the same key or NULL) for each entry of after[key] (keyed by its
 * first nkey items). */
static void each_with_before(json_t *after, const json_t *before, const char *key, size_t nkey,
                             void (*fn)(json_t *e, const json_t *old))
{
    json_t *idx = index_entries(json_object_get(before, key), nkey);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(after, key), i, e) {
        char *k = entry_key(e, nkey);
        const json_t *old = k && idx ? json_object_get(idx, k) : NULL;
        free(k);
        fn(e, old);
    }
    json_decref(idx);
}

/* A memory line's peak (one execution's largest net bytes) in the window: after's when it rose
 * in the window, else at most what the line allocated in it. */
static void window_peak(json_t *e, const json_t *old)
{
    if (!old)
        return;
    double peak = num(json_array_get(e, 7)), was = num(json_array_get(old, 7));
    double allocated = num(json_array_get(e, 3));
    if (peak <= was && peak > allocated)
        json_array_set_new(e, 7, json_integer((json_int_t)llround(allocated)));
    /* The most held at once: after's when it rose in the window; otherwise the most known
     * held in it, at its start or at its end (a lower bound). */
    if (json_array_size(e) > 16 && json_array_size(old) > 16) {
        double top = num(json_array_get(e, 16)), top_was = num(json_array_get(old, 16));
        double at_start = num(json_array_get(old, 14)), at_end = num(json_array_get(e, 14));
        if (top <= top_was)
            json_array_set_new(e, 16, json_integer((json_int_t)llround(
                                          at_start > at_end ? at_start : at_end)));
    }
}

/* gpu_lines: [file, line, func, seconds, load-weighted seconds, MiB-weighted seconds, peak MiB] */
static const int gline_sub[] = {3, 4, 5, -1};
static const int gline_empty[] = {3, -1};
static const struct entry_rule gline_rule = {3, gline_sub, -1, gline_empty};

/* A GPU line's peak in the window (after the subtraction): after's when it rose in the window
 * (or the line is new in it); otherwise the window's own peak is somewhere between its mean and
 * the earlier peak, and the mean, the one figure known, is taken. */
static void gpu_window_peak(json_t *e, const json_t *old)
{
    double sec = num(json_array_get(e, 3));
    if (old && num(json_array_get(e, 6)) <= num(json_array_get(old, 6)) && sec > 0)
        json_array_set_new(e, 6, json_real(num(json_array_get(e, 5)) / sec));
}

static void subtract_gpu(json_t *after, const json_t *before, double t0_ns)
{
    subtract_entries(after, before, "gpu_lines", &gline_rule, t0_ns);
    each_with_before(after, before, "gpu_lines", 3, gpu_window_peak);
}

static void subtract_memory(json_t *after, const json_t *before, double t0_ns)
{
    json_t *m = json_object_get(after, "memory");
    const json_t *bm = json_object_get(before, "memory");
    if (!json_is_object(m) || !json_is_object(bm))
        return;
    static const char *const counts[] = {
        "alloc_samples", "copy_samples",        "malloc_bytes",         "free_bytes",
        "python_bytes",  "copy_bytes",          "native_malloc_bytes",  "startup_malloc_bytes",
        "deferred_samples", NULL,
    };
    subtract_fields(m, bm, counts);
    /* The window's maximum: where the footprint was when it began, and every point after. */
    double max = num(json_object_get(bm, "final_footprint_bytes"));
    json_object_set_new(m, "timeline",
                        timeline_since(json_object_get(m, "timeline"), t0_ns, &max));
    double fin = num(json_object_get(m, "final_footprint_bytes"));
    if (fin > max)
        max = fin;
    double all_max = num(json_object_get(m, "max_footprint_bytes"));
    if (all_max > num(json_object_get(bm, "max_footprint_bytes"))) {
        max = all_max; /* the run's maximum was reached in the window: exact, and where */
    } else {
        json_object_set_new(m, "max_footprint_at", json_null());
        json_object_set_new(m, "max_footprint_python_fraction", json_real(0));
    }
    json_object_set_new(m, "max_footprint_bytes", json_integer((json_int_t)llround(max)));
    each_with_before(after, before, "memory_lines", 2, window_peak);
    subtract_entries(after, before, "memory_lines", &mline_rule, t0_ns);
}

int part_subtract(json_t *after, const json_t *before)
{
    if (!json_is_object(after) || !json_is_object(before))
        return err_fail(SCRY_E_BAD_PROFILE, "a checkpoint is not a JSON object");
    double t_after = num(json_object_get(after, "elapsed_sec"));
    double t_before = num(json_object_get(before, "elapsed_sec"));
    json_int_t pid = json_integer_value(json_object_get(after, "pid"));
    if (pid != json_integer_value(json_object_get(before, "pid")) ||
        num(json_object_get(after, "start_time_absolute")) !=
            num(json_object_get(before, "start_time_absolute")))
        return err_fail(SCRY_E_BAD_PROFILE,
                        "the two checkpoints are not of the same process (pid %lld and %lld)",
                        (long long)pid,
                        (long long)json_integer_value(json_object_get(before, "pid")));
    if (t_after < t_before)
        return err_fail(SCRY_E_BAD_PROFILE,
                        "--since names a later checkpoint (%.3f s into the run) than --part "
                        "(%.3f s)",
                        t_before, t_after);
    double t0_ns = t_before * 1e9;
    json_object_set_new(after, "start_time_absolute",
                        json_real(num(json_object_get(before, "start_time_absolute")) + t_before));
    json_object_set_new(after, "elapsed_sec", json_real(t_after - t_before));
    static const char *const top[] = {"profiling_off_sec", "stacks_overflow", NULL};
    subtract_fields(after, before, top);
    static const char *const totals[] = {"python_sec", "native_sec", "sys_sec", "samples",
                                         "dropped", NULL};
    subtract_fields(json_object_get(after, "totals"), json_object_get(before, "totals"), totals);
    static const char *const runq[] = {"delay_sec", "cpu_sec", NULL};
    subtract_fields(json_object_get(after, "run_queue"), json_object_get(before, "run_queue"),
                    runq);
    subtract_entries(after, before, "lines", &line_rule, t0_ns);
    subtract_entries(after, before, "stacks", &stack_rule, t0_ns);
    subtract_entries(after, before, "excluded", &excl_rule, t0_ns);
    subtract_memory(after, before, t0_ns);
    subtract_gpu(after, before, t0_ns);
    static const char *const native[] = {"native_frames", "native_stacks",
                                         "native_stacks_overflow", "combined_stacks",
                                         "combined_stacks_overflow", NULL};
    for (size_t i = 0; native[i]; i++)
        json_object_del(after, native[i]);
    return 0;
}
