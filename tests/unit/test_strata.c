/* Unit tests for the stratified byte sampler (src/agent/strata.h) on allocation streams whose
 * per-"line" truth is known: loops whose period divides the window (where a fixed threshold
 * charges one line everything), lines with temporaries, events of a window or more, and the
 * total of a single line (within one window). Seeds are fixed, so the results are too; the
 * tolerances are several standard errors (about 1/sqrt(points) per line). */
#include <math.h>
#include <stdlib.h>

#include "agent/strata.h"
#include "testlib.h"

#define W 65536ULL

/* Feeds iterations x the pattern (sizes[i] charged to line[i]) through one stream; est[line]
 * gets what the samples stand for. */
static void run(uint64_t seed, const uint64_t *sizes, const int *line, int n, uint64_t iterations,
                double *est)
{
    struct ag_strata s = {0, 0};
    uint64_t rng = ag_rng_seed(seed);
    for (uint64_t it = 0; it < iterations; it++)
        for (int i = 0; i < n; i++)
            est[line[i]] += (double)ag_strata_bytes(&s, &rng, sizes[i], W);
}

static int near(double got, double want, double rel)
{
    return fabs(got - want) <= rel * want;
}

/* Two lines of 32 bytes each: a period of 64 bytes divides the window, the worst case of a
 * fixed threshold (every sample on the same line). */
static void test_period_divides_window(void)
{
    static const uint64_t sizes[] = {32, 32};
    static const int line[] = {0, 1};
    double est[2] = {0, 0};
    uint64_t iterations = 20000000; /* 610 MiB per line: ~9,800 points each */
    run(1, sizes, line, 2, iterations, est);
    double truth = 32.0 * (double)iterations;
    CHECK(near(est[0], truth, 0.04));
    CHECK(near(est[1], truth, 0.04));
    /* Together: every point is counted, within one window. */
    CHECK(fabs(est[0] + est[1] - 2 * truth) <= W);
}

/* Three lines of 90 bytes (the objects), and a line with a 1,000-byte temporary. */
static void test_loop_shapes(void)
{
    static const uint64_t three[] = {90, 90, 90};
    static const int line3[] = {0, 1, 2};
    double est[3] = {0, 0, 0};
    run(2, three, line3, 3, 5000000, est);
    for (int i = 0; i < 3; i++)
        CHECK(near(est[i], 90.0 * 5000000, 0.04));
    static const uint64_t temp[] = {1000, 90, 90};
    static const int line_t[] = {0, 0, 1};
    double e2[2] = {0, 0};
    run(3, temp, line_t, 3, 2000000, e2);
    CHECK(near(e2[0], 1090.0 * 2000000, 0.03));
    CHECK(near(e2[1], 90.0 * 2000000, 0.05));
}

/* Events of a window or more are exact and leave the small ones unbiased around them. */
static void test_large_events(void)
{
    static const uint64_t sizes[] = {W * 3 + 17, 100};
    static const int line[] = {0, 1};
    double est[2] = {0, 0};
    run(4, sizes, line, 2, 200000, est);
    CHECK(est[0] == (double)(W * 3 + 17) * 200000);
    CHECK(near(est[1], 100.0 * 200000, 0.06));
}

/* A single line is exact to within one window, whatever the sizes. */
static void test_single_line_total(void)
{
    for (uint64_t seed = 10; seed < 30; seed++) {
        struct ag_strata s = {0, 0};
        uint64_t rng = ag_rng_seed(seed), truth = 0;
        double est = 0;
        for (uint64_t i = 0; i < 100000; i++) {
            uint64_t n = 1 + (i * 2654435761ULL >> 7) % 5000;
            truth += n;
            est += (double)ag_strata_bytes(&s, &rng, n, W);
        }
        CHECK(fabs(est - (double)truth) <= W);
    }
}

/* Over many seeds the estimate of a rarely sampled line averages to its truth (unbiased),
 * though each run sees it 0 or W times. */
static void test_unbiased_over_seeds(void)
{
    static const uint64_t sizes[] = {5000, 40};
    static const int line[] = {0, 1};
    double sum = 0;
    int seeds = 100000;
    for (int k = 0; k < seeds; k++) {
        double est[2] = {0, 0};
        run(100 + (uint64_t)k, sizes, line, 2, 100, est); /* line 1: 4,000 bytes a run */
        sum += est[1];
    }
    if (!near(sum / seeds, 4000.0, 0.1))
        tl_fail(__FILE__, __LINE__, "mean %f", sum / seeds);
}

static const struct tl_test tests[] = {
    TL(test_period_divides_window), TL(test_loop_shapes), TL(test_large_events),
    TL(test_single_line_total), TL(test_unbiased_over_seeds),
};
TL_MAIN(tests)
