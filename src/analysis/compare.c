/* Comparing two profiles (see compare.h): entries of both sides matched by key after sorting,
 * then each kind's change and its sampling error. */
#include "analysis/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

const char *const cmp_kind_names[CMP_NKINDS] = {"time", "python", "native",
                                                 "system", "alloc", "kept"};

/* One side's entry with its key. */
struct side {
    const struct pdoc_entry *e;
    bool function;
    int which; /* 0 before, 1 after */
};

static int cmp_key(const struct side *a, const struct side *b)
{
    if (a->function != b->function)
        return a->function ? -1 : 1;
    int c = strcmp(a->e->file, b->e->file);
    if (c)
        return c;
    if (a->function)
        return strcmp(a->e->func, b->e->func);
    return (a->e->line > b->e->line) - (a->e->line < b->e->line);
}

static int cmp_side(const void *x, const void *y)
{
    const struct side *a = x, *b = y;
    int c = cmp_key(a, b);
    return c ? c : a->which - b->which;
}

static int cmp_row_order(const void *x, const void *y)
{
    const struct cmp_row *a = x, *b = y;
    if (a->function != b->function)
        return a->function ? -1 : 1;
    if (a->score != b->score)
        return a->score < b->score ? 1 : -1;
    int c = strcmp(a->file, b->file);
    return c ? c : (a->line > b->line) - (a->line < b->line);
}

/* Mean seconds per sample of an entry (the profile's when the entry has no samples). */
static double weight(const struct pdoc *d, const struct pdoc_entry *e)
{
    double t = e ? e->python_sec + e->native_sec + e->sys_sec : 0;
    if (e && e->samples > 0 && t > 0)
        return t / e->samples;
    if (d->n_samples > 0 && d->sampled_sec > 0)
        return d->sampled_sec / d->n_samples;
    return d->sampling_rate_sec;
}

static double value(const struct pdoc_entry *e, enum cmp_kind k)
{
    if (!e)
        return 0;
    switch (k) {
    case CMP_TIME:
        return e->python_sec + e->native_sec + e->sys_sec;
    case CMP_PYTHON:
        return e->python_sec;
    case CMP_NATIVE:
        return e->native_sec;
    case CMP_SYSTEM:
        return e->sys_sec;
    case CMP_ALLOC:
        return e->malloc_bytes;
    case CMP_KEPT:
        return e->kept_bytes;
    default:
        return 0;
    }
}

/* Poisson variance of a sum of samples of mean size w: v × w, at least one sample's w². */
static double variance(double v, double w)
{
    return (v > w ? v : w) * w;
}

/* The speed factor of --normalize: k, the after/before ratio of the seconds of the function
 * at the time-weighted median of every function's ratio, and its relative variance. */
struct scale {
    double k, rel_var;
};

static void fill(struct cmp_row *r, const struct pdoc *db, const struct pdoc_entry *b,
                 const struct pdoc *da, const struct pdoc_entry *a, const struct scale *sc)
{
    double wb = weight(db, b), wa = weight(da, a);
    r->score = -1;
    for (int k = 0; k < CMP_NKINDS; k++) {
        struct cmp_change *c = &r->c[k];
        c->before = value(b, k);
        c->after = value(a, k);
        c->delta = c->after - c->before;
        bool mem = k == CMP_ALLOC || k == CMP_KEPT;
        double vb = mem ? variance(c->before, db->mem_window) : variance(c->before, wb);
        double va = mem ? variance(c->after, da->mem_window) : variance(c->after, wa);
        if (!mem && sc) {
            /* after / k, with k's own error: var(x/k) = var(x)/k² + (x/k)² rel_var(k). */
            c->after /= sc->k;
            va = va / (sc->k * sc->k) + c->after * c->after * sc->rel_var;
            c->delta = c->after - c->before;
        }
        c->sigma = sqrt(vb + va);
        c->z = c->sigma > 0 ? c->delta / c->sigma : 0;
        c->pct = c->before > 0 ? 100.0 * c->delta / c->before : (c->after > 0 ? INFINITY : 0);
        if (k == CMP_TIME || mem) {
            /* Memory counts only where the profiles have it. */
            if (mem && !(db->memory && da->memory))
                continue;
            r->scored |= 1u << k;
            if (fabs(c->z) > r->score) {
                r->score = fabs(c->z);
                r->main = k;
            }
        }
    }
}

/* A matched row's two sides (either may be NULL); w > 0 marks a function. */
struct pair {
    const struct pdoc_entry *b, *a;
    double ratio, w;
};

static int cmp_ratio(const void *x, const void *y)
{
    const struct pair *p = x, *q = y;
    return (p->ratio > q->ratio) - (p->ratio < q->ratio);
}

/* The time-weighted median of the functions' after/before ratios (functions with time on both
 * sides); false when there is none. */
static bool median_scale(const struct pdoc *db, const struct pdoc *da, struct pair *pairs,
                         size_t n, struct scale *sc)
{
    struct pair *fs = malloc((n ? n : 1) * sizeof(*fs));
    size_t m = 0;
    double total = 0;
    if (!fs)
        return false;
    for (size_t i = 0; i < n; i++) {
        double tb = value(pairs[i].b, CMP_TIME), ta = value(pairs[i].a, CMP_TIME);
        if (pairs[i].w > 0 /* a function */ && tb > 0 && ta > 0) {
            fs[m] = pairs[i];
            fs[m].ratio = ta / tb;
            fs[m].w = tb;
            total += tb;
            m++;
        }
    }
    bool ok = m > 0;
    if (ok) {
        qsort(fs, m, sizeof(*fs), cmp_ratio);
        double acc = 0;
        size_t i = 0;
        for (; i + 1 < m; i++) {
            acc += fs[i].w;
            if (acc >= total / 2)
                break;
        }
        sc->k = fs[i].ratio;
        double tb = value(fs[i].b, CMP_TIME), ta = value(fs[i].a, CMP_TIME);
        sc->rel_var = weight(db, fs[i].b) / tb + weight(da, fs[i].a) / ta;
    }
    free(fs);
    return ok;
}

int cmp_profiles(const struct pdoc *before, const struct pdoc *after, bool normalize,
                 struct cmp_result *out)
{
    memset(out, 0, sizeof(*out));
    out->scale = 1;
    size_t n = before->nfuncs + before->nlines + after->nfuncs + after->nlines;
    struct side *sides = malloc((n ? n : 1) * sizeof(*sides));
    struct pair *pairs = malloc((n ? n : 1) * sizeof(*pairs));
    out->rows = calloc(n ? n : 1, sizeof(*out->rows));
    if (!sides || !out->rows || !pairs) {
        free(sides);
        free(pairs);
        free(out->rows);
        out->rows = NULL;
        return err_fail(SCRY_E_NO_MEMORY, "out of memory comparing profiles");
    }
    size_t m = 0;
    const struct pdoc *docs[2] = {before, after};
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < docs[w]->nfuncs; i++)
            sides[m++] = (struct side){&docs[w]->funcs[i], true, w};
        for (size_t i = 0; i < docs[w]->nlines; i++)
            sides[m++] = (struct side){&docs[w]->lines[i], false, w};
    }
    qsort(sides, m, sizeof(*sides), cmp_side);
    for (size_t i = 0; i < m;) {
        const struct pdoc_entry *b = NULL, *a = NULL;
        size_t j = i;
        /* Duplicates of one key on one side (a profile should have none) are taken once. */
        for (; j < m && cmp_key(&sides[i], &sides[j]) == 0; j++) {
            if (sides[j].which == 0 && !b)
                b = sides[j].e;
            if (sides[j].which == 1 && !a)
                a = sides[j].e;
        }
        struct cmp_row *r = &out->rows[out->nrows];
        const struct pdoc_entry *any = a ? a : b;
        r->function = sides[i].function;
        r->file = any->file;
        r->func = any->func;
        r->line = r->function ? any->first_line : any->line;
        pairs[out->nrows] = (struct pair){b, a, 0, r->function ? 1 : 0};
        out->nrows++;
        if (r->function)
            out->nfuncs++;
        i = j;
    }
    struct scale sc = {1, 0};
    bool scaled = normalize && median_scale(before, after, pairs, out->nrows, &sc);
    if (scaled) {
        out->normalized = true;
        out->scale = sc.k;
        out->scale_rel_sigma = sqrt(sc.rel_var);
    }
    for (size_t i = 0; i < out->nrows; i++)
        fill(&out->rows[i], before, pairs[i].b, after, pairs[i].a, scaled ? &sc : NULL);
    free(sides);
    free(pairs);
    qsort(out->rows, out->nrows, sizeof(*out->rows), cmp_row_order);
    return 0;
}

void cmp_free(struct cmp_result *r)
{
    free(r->rows);
    memset(r, 0, sizeof(*r));
}

bool cmp_significant(const struct cmp_row *r)
{
    return r->score >= CMP_Z_SIGNIFICANT;
}

bool cmp_regressed(const struct cmp_row *r, double pct, enum cmp_kind *kind)
{
    for (int k = 0; k < CMP_NKINDS; k++) {
        const struct cmp_change *c = &r->c[k];
        if ((r->scored & (1u << k)) && c->z >= CMP_Z_SIGNIFICANT && c->pct > pct) {
            if (kind)
                *kind = k;
            return true;
        }
    }
    return false;
}
