/* `scry compare` report renderers (see compare_render.h). */
#include "render/compare_render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/sanitize.h"
#include "render/json_writer.h"

static bool is_mem(int k)
{
    return k == CMP_ALLOC || k == CMP_KEPT;
}

static void amount(struct strbuf *sb, int k, double v, bool sign)
{
    const char *fmt = sign ? "%+.3f s" : "%.3f s";
    if (is_mem(k))
        sb_addf(sb, sign ? "%+.1f MB" : "%.1f MB", v / 1048576.0);
    else
        sb_addf(sb, fmt, v);
}

static void pct(struct strbuf *sb, const struct cmp_change *c)
{
    if (isinf(c->pct))
        sb_adds(sb, "   new");
    else
        sb_addf(sb, "%+5.0f%%", c->pct);
}

static void where(struct strbuf *sb, const struct cmp_row *r)
{
    /* Names come from the profiles (the program's file and function names): the one rule for
     * text shown on a terminal. */
    if (r->function)
        sb_addf(sb, "%s (%s:%u)", san_str(r->func), san_str(r->file), r->line);
    else
        sb_addf(sb, "%s:%u (in %s)", san_str(r->file), r->line, san_str(r->func));
}

static void row_text(struct strbuf *sb, const struct cmp_row *r, int k)
{
    const struct cmp_change *c = &r->c[k];
    struct strbuf a = STRBUF_INIT;
    sb_adds(sb, "  ");
    pct(sb, c);
    sb_addf(sb, "  %-6s ", cmp_kind_names[k]);
    amount(&a, k, c->before, false);
    sb_adds(&a, " -> ");
    amount(&a, k, c->after, false);
    sb_addf(sb, "%-24s ", sb_str(&a));
    sb_reset(&a);
    amount(&a, k, c->delta, true);
    sb_adds(&a, " ± ");
    amount(&a, k, CMP_Z_95 * c->sigma, false);
    sb_addf(sb, "%-24s z %+6.1f  ", sb_str(&a), c->z);
    sb_release(&a);
    where(sb, r);
    if (!is_mem(k) && (c->before > 0 || c->after > 0)) {
        /* The split of the time change. */
        sb_adds(sb, " [");
        for (int j = CMP_PYTHON; j <= CMP_SYSTEM; j++)
            sb_addf(sb, "%s%s %+.3f s", j == CMP_PYTHON ? "" : ", ", cmp_kind_names[j],
                    r->c[j].delta);
        sb_adds(sb, "]");
    }
    sb_addch(sb, '\n');
}

static void side_text(struct strbuf *sb, const char *label, const char *path, const struct pdoc *d)
{
    sb_addf(sb, "%s %s: %.3f s elapsed, %.3f s sampled in %.0f samples\n", label, san_str(path),
            d->elapsed_sec, d->sampled_sec, d->n_samples);
}

size_t compare_render_text(const struct cmp_result *r, const struct compare_render_opts *o,
                           struct strbuf *out)
{
    side_text(out, "before", o->before_path, o->before);
    side_text(out, "after ", o->after_path, o->after);
    if (r->normalized)
        sb_addf(out, "normalized: after's times divided by %.4f (± %.1f%%), the median "
                     "function's speed ratio\n",
                r->scale, 100 * r->scale_rel_sigma);
    sb_addf(out, "significant: |z| >= %.0f for time or memory; intervals are 95%% (±1.96 σ) of "
                 "the sampling error\n",
            CMP_Z_SIGNIFICANT);
    size_t nsig[2] = {0, 0}, nreg = 0;
    for (int g = 0; g < 2; g++) {
        bool funcs = g == 0;
        size_t shown = 0;
        for (size_t i = 0; i < r->nrows; i++) {
            const struct cmp_row *row = &r->rows[i];
            if (row->function != funcs || !cmp_significant(row))
                continue;
            if (!nsig[g]++)
                sb_addf(out, "\n%s that changed, most significant first:\n",
                        funcs ? "functions" : "lines");
            if (!o->top || shown < o->top) {
                row_text(out, row, row->main);
                shown++;
            }
        }
        if (nsig[g] > shown)
            sb_addf(out, "  ... and %zu more (--json lists them all)\n", nsig[g] - shown);
    }
    if (!nsig[0] && !nsig[1])
        sb_adds(out, "\nno significant change\n");
    if (o->fail_above >= 0) {
        for (size_t i = 0; i < r->nrows; i++) {
            enum cmp_kind k;
            if (!cmp_regressed(&r->rows[i], o->fail_above, &k))
                continue;
            if (!nreg++)
                sb_addf(out, "\nregressed by more than %g%%:\n", o->fail_above);
            row_text(out, &r->rows[i], k);
        }
    }
    return nreg;
}

static void change_json(struct json_writer *w, const struct cmp_change *c)
{
    jw_obj_begin(w);
    jw_key(w, "before");
    jw_double(w, c->before);
    jw_key(w, "after");
    jw_double(w, c->after);
    jw_key(w, "delta");
    jw_double(w, c->delta);
    jw_key(w, "sigma");
    jw_double(w, c->sigma);
    jw_key(w, "low");
    jw_double(w, c->delta - CMP_Z_95 * c->sigma);
    jw_key(w, "high");
    jw_double(w, c->delta + CMP_Z_95 * c->sigma);
    jw_key(w, "z");
    jw_double(w, c->z);
    jw_key(w, "pct");
    jw_double(w, c->pct); /* infinite: null */
    jw_obj_end(w);
}

/* A name for the document: as it is, or cleaned by the one sanitizer for a page (o->clean). */
static void name_json(struct json_writer *w, const char *s, bool clean)
{
    jw_str(w, clean && s ? san_str(s) : s);
}

static void row_json(struct json_writer *w, const struct cmp_row *r, double fail_above, bool clean)
{
    jw_obj_begin(w);
    jw_key(w, "file");
    name_json(w, r->file, clean);
    jw_key(w, "function");
    name_json(w, r->func, clean);
    jw_key(w, r->function ? "first_line" : "line");
    jw_uint(w, r->line);
    jw_key(w, "significant");
    jw_bool(w, cmp_significant(r));
    jw_key(w, "main");
    jw_str(w, cmp_kind_names[r->main]);
    jw_key(w, "score");
    jw_double(w, r->score);
    if (fail_above >= 0) {
        jw_key(w, "regressed");
        jw_bool(w, cmp_regressed(r, fail_above, NULL));
    }
    for (int k = 0; k < CMP_NKINDS; k++) {
        char key[32];
        snprintf(key, sizeof(key), "%s_%s", cmp_kind_names[k], is_mem(k) ? "bytes" : "sec");
        jw_key(w, key);
        change_json(w, &r->c[k]);
    }
    jw_obj_end(w);
}

static void side_json(struct json_writer *w, const char *path, const struct pdoc *d, bool clean)
{
    jw_obj_begin(w);
    jw_key(w, "path");
    name_json(w, path, clean);
    jw_key(w, "elapsed_time_sec");
    jw_double(w, d->elapsed_sec);
    jw_key(w, "sampled_time_sec");
    jw_double(w, d->sampled_sec);
    jw_key(w, "n_samples");
    jw_double(w, d->n_samples);
    jw_key(w, "memory");
    jw_bool(w, d->memory);
    jw_obj_end(w);
}

size_t compare_render_json(const struct cmp_result *r, const struct compare_render_opts *o,
                           struct strbuf *out)
{
    struct json_writer w;
    jw_init(&w, out, true);
    size_t nreg = 0, nsig = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        nsig += cmp_significant(&r->rows[i]);
        nreg += o->fail_above >= 0 && cmp_regressed(&r->rows[i], o->fail_above, NULL);
    }
    jw_obj_begin(&w);
    jw_key(&w, "before");
    side_json(&w, o->before_path, o->before, o->clean);
    jw_key(&w, "after");
    side_json(&w, o->after_path, o->after, o->clean);
    jw_key(&w, "normalized");
    jw_bool(&w, r->normalized);
    jw_key(&w, "scale");
    jw_double(&w, r->scale);
    jw_key(&w, "scale_rel_sigma");
    jw_double(&w, r->scale_rel_sigma);
    jw_key(&w, "z_significant");
    jw_double(&w, CMP_Z_SIGNIFICANT);
    jw_key(&w, "fail_above_pct");
    if (o->fail_above >= 0)
        jw_double(&w, o->fail_above);
    else
        jw_null(&w);
    jw_key(&w, "significant");
    jw_uint(&w, nsig);
    jw_key(&w, "regressed");
    jw_uint(&w, nreg);
    jw_key(&w, "failed");
    jw_bool(&w, nreg > 0);
    for (int g = 0; g < 2; g++) {
        jw_key(&w, g == 0 ? "functions" : "lines");
        jw_arr_begin(&w);
        for (size_t i = 0; i < r->nrows; i++)
            if (r->rows[i].function == (g == 0))
                row_json(&w, &r->rows[i], o->fail_above, o->clean);
        jw_arr_end(&w);
    }
    jw_obj_end(&w);
    sb_addch(out, '\n');
    return nreg;
}
