/* strbuf as the agent builds it (-DSCRY_AGENT, linked with build/agent-obj's strbuf.o): out of
 * memory marks the buffer failed (sticky; later additions dropped, detach gives NULL) instead of
 * aborting the profiled program. The CLI build aborts there, and test_strbuf.c covers the rest. */
#include <stdint.h>
#include <stdlib.h>

#include "common/strbuf.h"
#include "testlib.h"

/* Under AddressSanitizer (make check) a refused allocation must come back as NULL, as it does
 * from glibc, rather than stop the test. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

/* More than any allocator gives: the doubling stops at 2^63 and realloc refuses it. */
#define TOO_MUCH (SIZE_MAX / 2)

static void test_failure_is_sticky(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "kept");
    CHECK(!sb_failed(&sb));
    sb_add(&sb, "x", TOO_MUCH); /* never copied: the room is asked for first */
    CHECK(sb_failed(&sb));
    CHECK_EQ(sb.len, 4);
    CHECK_STR(sb_str(&sb), "kept");
    sb_adds(&sb, " more");
    sb_addf(&sb, "%d", 42);
    sb_addch(&sb, '!');
    CHECK_EQ(sb.len, 4); /* nothing added after the failure */
    CHECK(sb_failed(&sb));
    sb_reset(&sb);
    CHECK(sb_failed(&sb));
    sb_release(&sb);
    CHECK(!sb_failed(&sb)); /* a released buffer starts afresh */
    sb_adds(&sb, "again");
    CHECK_STR(sb_str(&sb), "again");
    sb_release(&sb);
}

static void test_detach_failed_empty(void)
{
    struct strbuf sb = STRBUF_INIT;
    sb_add(&sb, "x", TOO_MUCH);
    CHECK(sb_failed(&sb));
    CHECK(sb_detach(&sb) == NULL);
    sb_release(&sb);
}

static const struct tl_test tests[] = {
    TL(test_failure_is_sticky),
    TL(test_detach_failed_empty),
};
TL_MAIN(tests)
