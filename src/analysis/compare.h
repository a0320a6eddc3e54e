/* Two profiles of one program compared: per function (file, qualname) and per line (file,
 * line), the change of each time kind and of memory, with its error from the sampling.
 *
 * The error model (docs/json-schema.md, "scry compare"): an entry's seconds are a sum of
 * samples; their number is Poisson, so the variance of the seconds s of a kind is s × w, w the
 * entry's mean seconds per sample (its total seconds over its n_samples; the profile's mean when
 * the entry has none). An entry with nothing on one side gets the variance of one sample there
 * (w²), so that a change from 0 needs more than one sample to count. Memory bytes come from a
 * sampler that emits one sample per window W of allocated bytes: variance bytes × W, at least
 * W². The change d = after − before has the standard error σ = √(var_before + var_after), the
 * 95% interval d ± 1.96σ and z = d / σ. An entry changed significantly when |z| ≥ 3 for its
 * total time, its allocated bytes or its kept bytes (per entry a false alarm rate of 0.27%). */
#ifndef SCRY_ANALYSIS_COMPARE_H
#define SCRY_ANALYSIS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/profile_doc.h"

#define CMP_Z_SIGNIFICANT 3.0
#define CMP_Z_95 1.959964

enum cmp_kind { CMP_TIME, CMP_PYTHON, CMP_NATIVE, CMP_SYSTEM, CMP_ALLOC, CMP_KEPT, CMP_NKINDS };

struct cmp_change {
    double before, after; /* seconds or bytes */
    double delta, sigma, z;
    double pct; /* 100 × delta / before; INFINITY when before is 0 and after is not; 0 if both */
};

struct cmp_row {
    bool function; /* a function entry, else a line */
    const char *file, *func;
    unsigned line; /* a line's number, a function's first line (after's, else before's) */
    struct cmp_change c[CMP_NKINDS];
    enum cmp_kind main; /* the kind (time, alloc, kept) with the largest |z| */
    double score;       /* that |z| */
    unsigned scored;    /* bit k: kind k counts (time; memory when both profiles have it) */
};

struct cmp_result {
    struct cmp_row *rows; /* functions first, then lines; each group by score, largest first */
    size_t nrows, nfuncs;
    bool normalized;        /* after's times were divided by scale */
    double scale;           /* 1 unless normalized */
    double scale_rel_sigma; /* its relative standard error */
};

/* Compares; strings point into the two documents, which must outlive the result. With
 * normalize (--normalize), after's times are first divided by k, the after/before ratio of the
 * function at the time-weighted median of the functions' ratios (those with time on both
 * sides): a machine that ran the whole program faster or slower changes nothing, and a
 * function that changed stands out by its own change as long as most of the time is in code
 * that did not. k's sampling error (that function's: w_b/s_b + w_a/s_a relative variance) is
 * added to every scaled entry's: var(x/k) = var(x)/k² + (x/k)² × rel_var(k). */
int cmp_profiles(const struct pdoc *before, const struct pdoc *after, bool normalize,
                 struct cmp_result *out);
void cmp_free(struct cmp_result *r);

/* Whether a row changed significantly (score ≥ CMP_Z_SIGNIFICANT). */
bool cmp_significant(const struct cmp_row *r);
/* Whether a row regressed beyond pct: a kind that counts grew significantly (z ≥ 3) by more
 * than pct percent (a new entry's growth is infinite); *kind gets the first such (may be NULL). */
bool cmp_regressed(const struct cmp_row *r, double pct, enum cmp_kind *kind);

extern const char *const cmp_kind_names[CMP_NKINDS];

#endif
