/* Unit tests for the sample stream (src/common/sstream.c): every sample kept until the bound,
 * then uniform decimation (the kept ones are exactly the multiples of a doubling stride, so the
 * stream still spans the run), threads numbered in order of first sight. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sstream.h"
#include "testlib.h"

static void fill(struct sst_stream *tl, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) { /* the line carries the sequence number */
        bool added;
        size_t th = sst_thread(tl, i % 3 == 0 ? 7 : 8, &added);
        sst_add(tl, 1000000 + i * 1000, th, (int)(i % 3), 500, 1, 2, (int32_t)i, -1);
    }
}

static void test_all_kept_below_bound(void)
{
    struct sst_stream tl;
    memset(&tl, 0, sizeof(tl));
    sst_reset(&tl, 100);
    fill(&tl, 100);
    CHECK_EQ(tl.n, 100);
    CHECK_EQ(tl.stride, 1);
    CHECK_EQ(tl.nthreads, 2);
    CHECK_EQ(tl.threads[0].tid, 7);
    CHECK_EQ(tl.threads[1].tid, 8);
    for (size_t i = 0; i < tl.n; i++) {
        CHECK_EQ(tl.s[i].line, (int32_t)i);
        CHECK_EQ(tl.s[i].thread, i % 3 == 0 ? 0u : 1u);
    }
    bool added;
    CHECK_EQ(sst_thread(&tl, 8, &added), 1);
    CHECK(!added);
    CHECK_EQ(sst_thread(&tl, 9, &added), 2);
    CHECK(added);
    sst_reset(&tl, 0);
    CHECK_EQ(tl.n, 0);
    CHECK_EQ(tl.max, SST_DEFAULT_MAX);
    sst_reset(&tl, 3);
    CHECK_EQ(tl.max, SST_MIN_MAX);
    sst_reset(&tl, 0);
}

static void test_decimation_keeps_multiples_of_stride(void)
{
    struct sst_stream tl;
    memset(&tl, 0, sizeof(tl));
    sst_reset(&tl, 16);
    fill(&tl, 1000);
    /* ceil(1000 / 32) = 32 > 16, ceil(1000 / 64) = 16: the stride is 64. */
    CHECK_EQ(tl.stride, 64);
    CHECK_EQ(tl.n, 16);
    CHECK_EQ(tl.seen, 1000);
    for (size_t i = 0; i < tl.n; i++)
        CHECK_EQ(tl.s[i].line, (int32_t)(i * 64));
    /* The first and the last kept sample span the run. */
    CHECK_EQ(tl.s[0].t_ns, 1000000);
    CHECK(tl.s[tl.n - 1].t_ns >= 1000000 + 900 * 1000);
    sst_reset(&tl, 0);
}

static const struct tl_test tests[] = {
    TL(test_all_kept_below_bound),
    TL(test_decimation_keeps_multiples_of_stride),
};
TL_MAIN(tests)
