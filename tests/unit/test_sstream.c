/* Unit tests for the agent's sample stream (src/agent/sstream.c): every sample kept until the
 * bound, then uniform decimation (the kept ones are exactly the multiples of a doubling stride,
 * so the stream still spans the run), threads numbered in order of first sight, and the part's
 * "sample_stream" with times relative to the start and stacks by their written position. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sstream.h"
#include "common/strbuf.h"
#include "render/json_writer.h"
#include "testlib.h"

static void fill(struct ag_sstream *tl, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) /* the line carries the sequence number */
        ag_sstream_add(tl, 1000000 + i * 1000, i % 3 == 0 ? 7 : 8, false, (int)(i % 3), 500,
                       1, 2, (int32_t)i, 0);
}

static void test_all_kept_below_bound(void)
{
    struct ag_sstream tl;
    memset(&tl, 0, sizeof(tl));
    tl.max = 100;
    fill(&tl, 100);
    CHECK_EQ(tl.n, 100);
    CHECK_EQ(tl.stride, 1);
    CHECK_EQ(tl.nthreads, 2);
    CHECK_EQ(tl.threads[0].tid, 7);
    CHECK_EQ(tl.threads[1].tid, 8);
    for (size_t i = 0; i < tl.n; i++)
        CHECK_EQ(tl.s[i].line, (int32_t)i);
    ag_sstream_reset(&tl);
    CHECK_EQ(tl.n, 0);
}

static void test_decimation_keeps_multiples_of_stride(void)
{
    struct ag_sstream tl;
    memset(&tl, 0, sizeof(tl));
    tl.max = 16;
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
    ag_sstream_reset(&tl);
}

static void test_written_part(void)
{
    struct ag_sstream tl;
    memset(&tl, 0, sizeof(tl));
    tl.max = 10;
    ag_sstream_add(&tl, 5000000, 42, false, 2, 1499, 0, 1, 12, 0);
    ag_sstream_add(&tl, 7000000, 43, false, 1, 2500, 0, 1, 13, 3);
    int64_t pos[3] = {0, -1, 1}; /* stack 2 (index + 1 = 3) is written second */
    struct strbuf sb = STRBUF_INIT;
    struct json_writer w;
    jw_init(&w, &sb, false);
    ag_sstream_write(&tl, 1000000, pos, &w);
    CHECK_STR(sb_str(&sb), "{\"max\":10,\"stride\":1,\"seen\":2,\"lost\":0,\"threads\":[[42,\"\"],"
                           "[43,\"\"]],\"samples\":[[4000,0,2,1,0,1,12,-1],"
                           "[6000,1,1,3,0,1,13,1]]}");
    sb_release(&sb);
    ag_sstream_reset(&tl);
}

static const struct tl_test tests[] = {
    TL(test_all_kept_below_bound),
    TL(test_decimation_keeps_multiples_of_stride),
    TL(test_written_part),
};
TL_MAIN(tests)
