/* speedscope export (see speedscope.h). Only frames that some stack uses go into the table, in
 * order of first use, so the indices are dense and the output deterministic. */
#include "render/speedscope.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/profile_doc.h"
#include "common/error.h"
#include "common/hashmap.h"
#include "render/json_writer.h"

/* The document's start up to its shared frame list, which the caller fills and closes. */
static void begin_shared_frames(struct json_writer *w)
{
    jw_obj_begin(w);
    jw_key(w, "$schema");
    jw_str(w, SPEEDSCOPE_SCHEMA);
    jw_key(w, "shared");
    jw_obj_begin(w);
    jw_key(w, "frames");
    jw_arr_begin(w);
}

static void write_frame(struct json_writer *w, const char *text)
{
    struct stk_frame_parts p;
    jw_obj_begin(w);
    jw_key(w, "name");
    if (stk_frame_split(text, &p)) {
        jw_strn(w, p.name, p.name_len);
        jw_key(w, "file");
        jw_strn(w, p.file, p.file_len);
        if (p.line > 0) {
            jw_key(w, "line");
            jw_int(w, p.line);
        }
    } else {
        jw_str(w, text);
    }
    jw_obj_end(w);
}

void speedscope_write(const struct stk_tree *t, const struct speedscope_opts *o,
                      struct strbuf *out)
{
    const char *name = o->name ? o->name : "scry";
    struct json_writer w;
    jw_init(&w, out, false);
    /* index[frame] + 1: the frame's position in the shared table (0: not used). */
    uint32_t *index = calloc(t->nframes + 1, sizeof(*index));
    uint32_t *order = malloc((t->nframes + 1) * sizeof(*order));
    uint32_t *path = NULL;
    size_t nused = 0;
    if (!index || !order)
        goto out;
    uint32_t depth = 0;
    for (size_t i = 0; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        depth = n->depth > depth ? n->depth : depth;
    }
    path = malloc((depth + 1) * sizeof(*path));
    if (!path)
        goto out;
    /* Frames in depth-first order of first use. */
    for (size_t i = 1; i < t->nnodes; i++) {
        uint32_t f = t->nodes[i].frame;
        if (!index[f]) {
            order[nused] = f;
            index[f] = (uint32_t)++nused;
        }
    }

    begin_shared_frames(&w);
    for (size_t i = 0; i < nused; i++)
        write_frame(&w, t->frames[order[i]]);
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_key(&w, "profiles");
    jw_arr_begin(&w);
    jw_obj_begin(&w);
    jw_key(&w, "type");
    jw_str(&w, "sampled");
    jw_key(&w, "name");
    jw_str(&w, name);
    jw_key(&w, "unit");
    jw_str(&w, o->unit ? o->unit : "none");
    jw_key(&w, "startValue");
    jw_int(&w, 0);
    jw_key(&w, "endValue");
    jw_double(&w, t->nnodes ? t->nodes[STK_ROOT].total : 0);
    jw_key(&w, "samples");
    jw_arr_begin(&w);
    for (size_t i = 1; i < t->nnodes; i++) {
        const struct stk_node *n = &t->nodes[i];
        if (n->self <= 0)
            continue;
        uint32_t d = 0;
        for (uint32_t c = (uint32_t)i; c != STK_ROOT; c = t->nodes[c].parent)
            path[d++] = c;
        jw_arr_begin(&w);
        while (d-- > 0)
            jw_uint(&w, index[t->nodes[path[d]].frame] - 1);
        jw_arr_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "weights");
    jw_arr_begin(&w);
    for (size_t i = 1; i < t->nnodes; i++)
        if (t->nodes[i].self > 0)
            jw_double(&w, t->nodes[i].self);
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_arr_end(&w);
    jw_key(&w, "name");
    jw_str(&w, name);
    jw_key(&w, "activeProfileIndex");
    jw_int(&w, 0);
    jw_key(&w, "exporter");
    jw_str(&w, o->exporter ? o->exporter : "scry");
    jw_obj_end(&w);
    sb_addch(out, '\n');
out:
    free(index);
    free(order);
    free(path);
}

/* ---- the sample stream: a profile per thread ---- */

static bool same_frame(const struct pdoc_frame *a, const struct pdoc_frame *b)
{
    return a->line == b->line && a->file_len == b->file_len && a->func_len == b->func_len &&
           memcmp(a->file, b->file, a->file_len) == 0 &&
           memcmp(a->func, b->func, a->func_len) == 0;
}

static uint64_t frame_hash(const struct pdoc_frame *f)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over file, function and line */
    for (size_t i = 0; i < f->file_len; i++)
        h = (h ^ (unsigned char)f->file[i]) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (size_t i = 0; i < f->func_len; i++)
        h = (h ^ (unsigned char)f->func[i]) * 1099511628211ull;
    h = hm_hash64(h ^ f->line);
    return h ? h : 1; /* 0 is the map's empty key */
}

/* uniq[j]: the shared table's index of stream frame j; *first: the first stream frame of each
 * table entry, in order of first use. Returns the table's size, or -1 out of memory. */
static long stream_frames(const struct pdoc *d, uint32_t *uniq, uint32_t *first)
{
    struct hashmap seen = HASHMAP_INIT;
    long n = 0;
    for (size_t j = 0; j < d->nss_frames; j++) {
        const struct pdoc_frame *f = &d->ss_frames[j];
        uint64_t h = frame_hash(f), at;
        bool found = hm_get(&seen, h, &at) && same_frame(&d->ss_frames[first[at]], f);
        for (long k = 0; !found && hm_has(&seen, h) && k < n; k++)
            if (same_frame(&d->ss_frames[first[k]], f)) { /* a hash shared by two frames */
                at = (uint64_t)k;
                found = true;
            }
        if (!found) {
            at = (uint64_t)n;
            first[n++] = (uint32_t)j;
            if (!hm_has(&seen, h) && hm_put(&seen, h, at) != 0) {
                hm_free(&seen);
                return -1;
            }
        }
        uniq[j] = (uint32_t)at;
    }
    hm_free(&seen);
    return n;
}

static void stream_profile(struct json_writer *w, const struct pdoc *d, size_t t,
                           const uint32_t *uniq, bool pids, struct strbuf *tmp)
{
    const struct pdoc_sthread *th = &d->ss_threads[t];
    double total = 0;
    sb_reset(tmp);
    if (pids)
        sb_addf(tmp, "pid %lld: ", (long long)th->pid);
    pdoc_thread_label(th, tmp);
    jw_obj_begin(w);
    jw_key(w, "type");
    jw_str(w, "sampled");
    jw_key(w, "name");
    jw_str(w, sb_str(tmp));
    jw_key(w, "unit");
    jw_str(w, "microseconds");
    jw_key(w, "startValue");
    jw_int(w, 0);
    jw_key(w, "samples");
    jw_arr_begin(w);
    for (size_t i = 0; i < d->nss_samples; i++) {
        const struct pdoc_ssample *x = &d->ss_samples[i];
        if (x->thread != t)
            continue;
        const struct pdoc_stack *st = &d->ss_stacks[x->stack];
        jw_arr_begin(w);
        for (uint32_t k = 0; k < st->depth; k++)
            jw_uint(w, uniq[st->off + k]);
        jw_arr_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "weights");
    jw_arr_begin(w);
    for (size_t i = 0; i < d->nss_samples; i++)
        if (d->ss_samples[i].thread == t) {
            jw_double(w, d->ss_samples[i].weight_us);
            total += d->ss_samples[i].weight_us;
        }
    jw_arr_end(w);
    jw_key(w, "endValue");
    jw_double(w, total);
    jw_obj_end(w);
}

int speedscope_write_stream(const struct pdoc *d, const struct speedscope_opts *o,
                            struct strbuf *out)
{
    uint32_t *uniq = malloc((d->nss_frames + 1) * sizeof(*uniq));
    uint32_t *first = malloc((d->nss_frames + 1) * sizeof(*first));
    double *busy = calloc(d->nss_threads + 1, sizeof(*busy));
    struct strbuf tmp = STRBUF_INIT;
    long n = uniq && first && busy ? stream_frames(d, uniq, first) : -1;
    int err = n < 0 ? err_fail(SCRY_E_NO_MEMORY, "out of memory") : 0;
    if (err)
        goto out;
    bool pids = false;
    for (size_t t = 1; t < d->nss_threads; t++)
        pids = pids || d->ss_threads[t].pid != d->ss_threads[0].pid;
    size_t active = 0;
    for (size_t i = 0; i < d->nss_samples; i++)
        if (d->ss_samples[i].thread < d->nss_threads)
            busy[d->ss_samples[i].thread] += d->ss_samples[i].weight_us;
    for (size_t t = 1; t < d->nss_threads; t++)
        active = busy[t] > busy[active] ? t : active;
    struct json_writer w;
    jw_init(&w, out, false);
    begin_shared_frames(&w);
    for (long k = 0; k < n; k++) {
        const struct pdoc_frame *f = &d->ss_frames[first[k]];
        jw_obj_begin(&w);
        jw_key(&w, "name");
        jw_strn(&w, f->func, f->func_len);
        jw_key(&w, "file");
        jw_strn(&w, f->file, f->file_len);
        if (f->line > 0) {
            jw_key(&w, "line");
            jw_uint(&w, f->line);
        }
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    jw_key(&w, "profiles");
    jw_arr_begin(&w);
    for (size_t t = 0; t < d->nss_threads; t++)
        stream_profile(&w, d, t, uniq, pids, &tmp);
    jw_arr_end(&w);
    jw_key(&w, "name");
    jw_str(&w, o->name ? o->name : "scry");
    jw_key(&w, "activeProfileIndex");
    jw_uint(&w, active);
    jw_key(&w, "exporter");
    jw_str(&w, o->exporter ? o->exporter : "scry");
    jw_obj_end(&w);
    sb_addch(out, '\n');
out:
    free(uniq);
    free(first);
    free(busy);
    sb_release(&tmp);
    return err;
}
