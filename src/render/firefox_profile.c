/* Firefox Profiler export (see firefox_profile.h). Thread 0, "CPU time (all threads)": one
 * sample row per (stack, time kind) weighted by milliseconds ("tracing-ms"), whose leaf stack
 * node has the kind's category (Python, Native, System): the call stacks when the profile has
 * them, else one frame per line; every row at time 0. Thread 1 (memory profiles), "Memory
 * allocated": one row per line that allocated, weighted by bytes. With a sample stream (scry run
 * --timeline), one more thread per real thread: its samples at their times, each weighted by
 * its milliseconds. Strings are shared (shared.stringArray). */
#include "render/firefox_profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/grow.h"
#include "common/hashmap.h"
#include "render/json_writer.h"

enum { CAT_OTHER, CAT_PYTHON, CAT_NATIVE, CAT_SYSTEM, CAT_MEMORY, NCATS };
static const char *const cat_names[NCATS] = {"Other", "Python", "Native", "System", "Memory"};
static const char *const cat_colors[NCATS] = {"grey", "yellow", "blue", "transparent", "orange"};

/* A growable table of rows of three 64-bit values, indexed by a hash with a linear fallback. */
struct tab {
    uint64_t (*rows)[3];
    size_t n, cap;
    struct hashmap index;
};

struct ffb {
    const char **strs;
    size_t *lens;
    size_t nstrs, cap_strs;
    struct tab str_tab;  /* (hash, 0, 0) -> string */
    struct tab funcs;    /* (name, file, first line) */
    struct tab frames;   /* (func, line, category) */
    struct tab stacks;   /* (prefix + 1, frame, category) */
    struct tab samples;  /* (stack, weight bits, time bits in ms): not deduplicated */
    struct tab resources; /* (file string, 0, 0) */
    bool oom;
};

static uint64_t mix3(const uint64_t *v)
{
    uint64_t h = hm_hash64(v[0] ^ hm_hash64(v[1] + 0x9E3779B97F4A7C15ULL) ^
                           hm_hash64(v[2] + 0x632BE59BD9B4E019ULL));
    return h && h != UINT64_MAX ? h : 1;
}

static size_t tab_add(struct ffb *b, struct tab *t, uint64_t a, uint64_t c, uint64_t d,
                      bool dedup)
{
    uint64_t v[3] = {a, c, d}, h = mix3(v), at;
    if (dedup && hm_get(&t->index, h, &at)) {
        if (memcmp(t->rows[at - 1], v, sizeof(v)) == 0)
            return at - 1;
        for (size_t i = 0; i < t->n; i++)
            if (memcmp(t->rows[i], v, sizeof(v)) == 0)
                return i;
    }
    if (grow_array(&t->rows, &t->cap, t->n + 1, sizeof(*t->rows))) {
        b->oom = true;
        return 0;
    }
    memcpy(t->rows[t->n], v, sizeof(v));
    if (dedup && !hm_has(&t->index, h) && hm_put(&t->index, h, t->n + 1) != 0)
        b->oom = true;
    return t->n++;
}

static size_t str_of(struct ffb *b, const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    uint64_t at;
    h = hm_hash64(h);
    h = h && h != UINT64_MAX ? h : 1;
    if (hm_get(&b->str_tab.index, h, &at) && b->lens[at - 1] == len &&
        memcmp(b->strs[at - 1], s, len) == 0)
        return at - 1;
    for (size_t i = 0; hm_has(&b->str_tab.index, h) && i < b->nstrs; i++)
        if (b->lens[i] == len && memcmp(b->strs[i], s, len) == 0)
            return i;
    size_t cap_lens = b->cap_strs; /* parallel arrays: one capacity */
    if (grow_array(&b->lens, &cap_lens, b->nstrs + 1, sizeof(*b->lens)) ||
        grow_array(&b->strs, &b->cap_strs, b->nstrs + 1, sizeof(*b->strs))) {
        b->oom = true;
        return 0;
    }
    b->strs[b->nstrs] = s;
    b->lens[b->nstrs] = len;
    if (!hm_has(&b->str_tab.index, h) && hm_put(&b->str_tab.index, h, b->nstrs + 1) != 0)
        b->oom = true;
    return b->nstrs++;
}

static size_t func_of(struct ffb *b, const char *file, size_t file_len, const char *func,
                      size_t func_len, uint32_t first_line)
{
    size_t fi = str_of(b, file, file_len);
    tab_add(b, &b->resources, fi, 0, 0, true);
    return tab_add(b, &b->funcs, str_of(b, func, func_len), fi, first_line, true);
}

/* The stack node of frame (func, line) under prefix (SIZE_MAX: a root) with a category. */
static size_t stack_of(struct ffb *b, size_t prefix, size_t func, uint32_t line, int cat)
{
    size_t frame = tab_add(b, &b->frames, func, line, cat, true);
    return tab_add(b, &b->stacks, prefix == SIZE_MAX ? 0 : prefix + 1, frame, cat, true);
}

static void add_sample_at(struct ffb *b, size_t stack, double weight, double time_ms)
{
    uint64_t bits, tbits;
    memcpy(&bits, &weight, sizeof(bits));
    memcpy(&tbits, &time_ms, sizeof(tbits));
    tab_add(b, &b->samples, stack, bits, tbits, false);
}

static void add_sample(struct ffb *b, size_t stack, double weight)
{
    add_sample_at(b, stack, weight, 0);
}

/* A CPU thread's rows: for each kind with time, the stack whose leaf carries the kind. */
static void add_kinds(struct ffb *b, size_t prefix, size_t func, uint32_t line, double py,
                      double nat, double sys)
{
    double ms[3] = {py * 1e3, nat * 1e3, sys * 1e3};
    int cats[3] = {CAT_PYTHON, CAT_NATIVE, CAT_SYSTEM};
    for (int k = 0; k < 3; k++)
        if (ms[k] > 0)
            add_sample(b, stack_of(b, prefix, func, line, cats[k]), ms[k]);
}

static void build_cpu(struct ffb *b, const struct pdoc *d)
{
    if (d->nstacks) {
        for (size_t i = 0; i < d->nstacks; i++) {
            const struct pdoc_stack *s = &d->stacks[i];
            size_t prefix = SIZE_MAX;
            for (uint32_t j = 0; j < s->depth; j++) {
                const struct pdoc_frame *f = &d->frames[s->off + j];
                uint32_t first = pdoc_first_line(d, f->file, f->file_len, f->func, f->func_len);
                size_t fn = func_of(b, f->file, f->file_len, f->func, f->func_len, first);
                if (j + 1 < s->depth)
                    prefix = stack_of(b, prefix, fn, f->line, CAT_PYTHON);
                else
                    add_kinds(b, prefix, fn, f->line, s->python_sec, s->native_sec, s->sys_sec);
            }
        }
        return;
    }
    for (size_t i = 0; i < d->nlines; i++) {
        const struct pdoc_entry *l = &d->lines[i];
        if (l->python_sec + l->native_sec + l->sys_sec <= 0)
            continue;
        size_t fn = func_of(b, l->file, strlen(l->file), l->func, strlen(l->func), l->first_line);
        add_kinds(b, SIZE_MAX, fn, l->line, l->python_sec, l->native_sec, l->sys_sec);
    }
}

static void build_memory(struct ffb *b, const struct pdoc *d)
{
    for (size_t i = 0; i < d->nlines; i++) {
        const struct pdoc_entry *l = &d->lines[i];
        if (l->malloc_bytes <= 0)
            continue;
        size_t fn = func_of(b, l->file, strlen(l->file), l->func, strlen(l->func), l->first_line);
        add_sample(b, stack_of(b, SIZE_MAX, fn, l->line, CAT_MEMORY), round(l->malloc_bytes));
    }
}

/* Thread t of the sample stream: its samples in time order, stacks from the stream's. */
static void build_stream_thread(struct ffb *b, const struct pdoc *d, size_t t)
{
    static const int cats[3] = {CAT_PYTHON, CAT_NATIVE, CAT_SYSTEM};
    for (size_t i = 0; i < d->nss_samples; i++) {
        const struct pdoc_ssample *x = &d->ss_samples[i];
        if (x->thread != t)
            continue;
        const struct pdoc_stack *s = &d->ss_stacks[x->stack];
        size_t prefix = SIZE_MAX;
        for (uint32_t j = 0; j < s->depth; j++) {
            const struct pdoc_frame *f = &d->ss_frames[s->off + j];
            uint32_t first = pdoc_first_line(d, f->file, f->file_len, f->func, f->func_len);
            size_t fn = func_of(b, f->file, f->file_len, f->func, f->func_len, first);
            prefix = stack_of(b, prefix, fn, f->line, j + 1 < s->depth ? CAT_PYTHON : cats[x->kind]);
        }
        add_sample_at(b, prefix, x->weight_us / 1e3, x->t_us / 1e3);
    }
}

static void tab_reset(struct tab *t)
{
    free(t->rows);
    hm_free(&t->index);
    memset(t, 0, sizeof(*t));
}

/* Empties the tables of a thread (the strings are shared). */
static void thread_reset(struct ffb *b)
{
    tab_reset(&b->funcs);
    tab_reset(&b->frames);
    tab_reset(&b->stacks);
    tab_reset(&b->samples);
    tab_reset(&b->resources);
}

static void col_u(struct json_writer *w, const char *key, const struct tab *t, int c, bool plus1)
{
    jw_key(w, key);
    jw_arr_begin(w);
    for (size_t i = 0; i < t->n; i++) {
        if (plus1 && t->rows[i][c] == 0)
            jw_null(w);
        else
            jw_uint(w, t->rows[i][c] - (plus1 ? 1 : 0));
    }
    jw_arr_end(w);
}

static void col_const(struct json_writer *w, const char *key, size_t n, int v /* -2: null */,
                      bool boolean)
{
    jw_key(w, key);
    jw_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        if (v == -2)
            jw_null(w);
        else if (boolean)
            jw_bool(w, v != 0);
        else
            jw_int(w, v);
    }
    jw_arr_end(w);
}

static void length(struct json_writer *w, size_t n)
{
    jw_key(w, "length");
    jw_uint(w, n);
}

static void empty_table(struct json_writer *w, const char *name, const char *const *cols)
{
    jw_key(w, name);
    jw_obj_begin(w);
    for (size_t i = 0; cols[i]; i++) {
        jw_key(w, cols[i]);
        jw_arr_begin(w);
        jw_arr_end(w);
    }
    length(w, 0);
    jw_obj_end(w);
}

/* A thread's identity in the profiler: its name, process and thread ids, main or not. */
struct ff_thread {
    const char *name;
    const char *pid;
    int64_t tid;
    bool main;
};

static void write_thread(struct json_writer *w, struct ffb *b, const struct pdoc *d,
                         const struct ff_thread *th, const char *weight_type)
{
    jw_obj_begin(w);
    jw_key(w, "name");
    jw_str(w, th->name);
    jw_key(w, "isMainThread");
    jw_bool(w, th->main);
    jw_key(w, "processStartupTime");
    jw_int(w, 0);
    jw_key(w, "processShutdownTime");
    jw_double(w, d->elapsed_sec * 1e3);
    jw_key(w, "registerTime");
    jw_int(w, 0);
    jw_key(w, "unregisterTime");
    jw_null(w);
    jw_key(w, "pausedRanges");
    jw_arr_begin(w);
    jw_arr_end(w);
    jw_key(w, "pid");
    jw_str(w, th->pid);
    jw_key(w, "tid");
    jw_int(w, th->tid);
    jw_key(w, "processType");
    jw_str(w, "default");
    jw_key(w, "processName");
    jw_str(w, d->program[0] ? d->program : "python");

    jw_key(w, "samples");
    jw_obj_begin(w);
    col_u(w, "stack", &b->samples, 0, false);
    jw_key(w, "time");
    jw_arr_begin(w);
    for (size_t i = 0; i < b->samples.n; i++) {
        double v;
        memcpy(&v, &b->samples.rows[i][2], sizeof(v));
        jw_double(w, v);
    }
    jw_arr_end(w);
    jw_key(w, "weight");
    jw_arr_begin(w);
    for (size_t i = 0; i < b->samples.n; i++) {
        double v;
        memcpy(&v, &b->samples.rows[i][1], sizeof(v));
        jw_double(w, v);
    }
    jw_arr_end(w);
    jw_key(w, "weightType");
    jw_str(w, weight_type);
    length(w, b->samples.n);
    jw_obj_end(w);

    jw_key(w, "stackTable");
    jw_obj_begin(w);
    col_u(w, "frame", &b->stacks, 1, false);
    col_u(w, "category", &b->stacks, 2, false);
    col_const(w, "subcategory", b->stacks.n, 0, false);
    col_u(w, "prefix", &b->stacks, 0, true);
    length(w, b->stacks.n);
    jw_obj_end(w);

    jw_key(w, "frameTable");
    jw_obj_begin(w);
    col_const(w, "address", b->frames.n, -1, false);
    col_u(w, "category", &b->frames, 2, false);
    col_const(w, "subcategory", b->frames.n, 0, false);
    col_u(w, "func", &b->frames, 0, false);
    col_const(w, "innerWindowID", b->frames.n, -2, false);
    col_const(w, "implementation", b->frames.n, -2, false);
    jw_key(w, "line");
    jw_arr_begin(w);
    for (size_t i = 0; i < b->frames.n; i++) {
        if (b->frames.rows[i][1])
            jw_uint(w, b->frames.rows[i][1]);
        else
            jw_null(w);
    }
    jw_arr_end(w);
    col_const(w, "column", b->frames.n, -2, false);
    col_const(w, "inlineDepth", b->frames.n, 0, false);
    col_const(w, "nativeSymbol", b->frames.n, -2, false);
    length(w, b->frames.n);
    jw_obj_end(w);

    jw_key(w, "funcTable");
    jw_obj_begin(w);
    col_u(w, "name", &b->funcs, 0, false);
    col_const(w, "isJS", b->funcs.n, 1, true);
    col_const(w, "relevantForJS", b->funcs.n, 0, true);
    jw_key(w, "resource");
    jw_arr_begin(w);
    for (size_t i = 0; i < b->funcs.n; i++) {
        uint64_t r = 0;
        for (size_t j = 0; j < b->resources.n; j++)
            if (b->resources.rows[j][0] == b->funcs.rows[i][1])
                r = j;
        jw_uint(w, r);
    }
    jw_arr_end(w);
    col_u(w, "fileName", &b->funcs, 1, false);
    jw_key(w, "lineNumber");
    jw_arr_begin(w);
    for (size_t i = 0; i < b->funcs.n; i++) {
        if (b->funcs.rows[i][2])
            jw_uint(w, b->funcs.rows[i][2]);
        else
            jw_null(w);
    }
    jw_arr_end(w);
    col_const(w, "columnNumber", b->funcs.n, -2, false);
    length(w, b->funcs.n);
    jw_obj_end(w);

    jw_key(w, "resourceTable");
    jw_obj_begin(w);
    col_const(w, "lib", b->resources.n, -2, false);
    col_u(w, "name", &b->resources, 0, false);
    col_const(w, "host", b->resources.n, -2, false);
    col_const(w, "type", b->resources.n, 1, false);
    length(w, b->resources.n);
    jw_obj_end(w);

    static const char *const native_cols[] = {"libIndex", "address", "name", "functionSize", NULL};
    static const char *const marker_cols[] = {"data", "name", "startTime", "endTime", "phase",
                                              "category", NULL};
    empty_table(w, "nativeSymbols", native_cols);
    empty_table(w, "markers", marker_cols);
    jw_obj_end(w);
}

int firefox_profile_write(const struct pdoc *d, const struct firefox_opts *o, struct strbuf *out)
{
    struct ffb b;
    memset(&b, 0, sizeof(b));
    struct json_writer w;
    jw_init(&w, out, false);
    jw_obj_begin(&w);
    jw_key(&w, "meta");
    jw_obj_begin(&w);
    jw_key(&w, "interval");
    jw_double(&w, d->sampling_rate_sec * 1e3);
    jw_key(&w, "startTime");
    jw_double(&w, d->start_time_absolute * 1e3);
    jw_key(&w, "processType");
    jw_int(&w, 0);
    jw_key(&w, "product");
    jw_str(&w, d->program[0] ? d->program : "python");
    jw_key(&w, "importedFrom");
    jw_str(&w, o->exporter ? o->exporter : "scry");
    jw_key(&w, "misc");
    jw_str(&w, d->have_stream
                   ? "the first threads hold the profile's sums at time 0, weighted by their "
                     "milliseconds (CPU) or bytes (memory); the others are the real threads' "
                     "samples at their times (scry run --timeline), weighted by milliseconds"
                   : "scry profiles keep no timestamp per sample unless recorded with scry run "
                     "--timeline: every sample is at time 0, weighted by its milliseconds (CPU) "
                     "or bytes (memory)");
    jw_key(&w, "version");
    jw_int(&w, 32);
    jw_key(&w, "preprocessedProfileVersion");
    jw_int(&w, 57);
    jw_key(&w, "symbolicated");
    jw_bool(&w, true);
    jw_key(&w, "stackwalk");
    jw_int(&w, 0);
    jw_key(&w, "markerSchema");
    jw_arr_begin(&w);
    jw_arr_end(&w);
    jw_key(&w, "categories");
    jw_arr_begin(&w);
    for (int i = 0; i < NCATS; i++) {
        jw_obj_begin(&w);
        jw_key(&w, "name");
        jw_str(&w, cat_names[i]);
        jw_key(&w, "color");
        jw_str(&w, cat_colors[i]);
        jw_key(&w, "subcategories");
        jw_arr_begin(&w);
        jw_str(&w, "Other");
        jw_arr_end(&w);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "extensions");
    jw_obj_begin(&w);
    static const char *const ext[] = {"id", "name", "baseURL"};
    for (int i = 0; i < 3; i++) {
        jw_key(&w, ext[i]);
        jw_arr_begin(&w);
        jw_arr_end(&w);
    }
    length(&w, 0);
    jw_obj_end(&w);
    jw_obj_end(&w);
    jw_key(&w, "libs");
    jw_arr_begin(&w);
    jw_arr_end(&w);
    jw_key(&w, "pages");
    jw_arr_begin(&w);
    jw_arr_end(&w);

    /* Threads share the string table; their other tables are their own. */
    jw_key(&w, "threads");
    jw_arr_begin(&w);
    build_cpu(&b, d);
    write_thread(&w, &b, d, &(struct ff_thread){"CPU time (all threads)", "0", 0, true},
                 "tracing-ms");
    if (d->memory) {
        thread_reset(&b);
        build_memory(&b, d);
        write_thread(&w, &b, d, &(struct ff_thread){"Memory allocated (bytes)", "0", 1, false},
                     "bytes");
    }
    struct strbuf name = STRBUF_INIT, pid = STRBUF_INIT;
    for (size_t t = 0; t < d->nss_threads; t++) {
        const struct pdoc_sthread *th = &d->ss_threads[t];
        thread_reset(&b);
        build_stream_thread(&b, d, t);
        sb_reset(&name);
        sb_reset(&pid);
        pdoc_thread_label(th, &name);
        sb_addf(&pid, "%lld", (long long)th->pid);
        write_thread(&w, &b, d,
                     &(struct ff_thread){sb_str(&name), sb_str(&pid), th->tid,
                                         th->tid == th->pid},
                     "tracing-ms");
    }
    sb_release(&name);
    sb_release(&pid);
    jw_arr_end(&w);
    jw_key(&w, "shared");
    jw_obj_begin(&w);
    jw_key(&w, "stringArray");
    jw_arr_begin(&w);
    for (size_t i = 0; i < b.nstrs; i++)
        jw_strn(&w, b.strs[i], b.lens[i]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_obj_end(&w);
    sb_addch(out, '\n');

    int err = b.oom ? err_fail(SCRY_E_NO_MEMORY, "out of memory writing the Firefox profile") : 0;
    thread_reset(&b);
    hm_free(&b.str_tab.index);
    free(b.strs);
    free(b.lens);
    return err;
}
