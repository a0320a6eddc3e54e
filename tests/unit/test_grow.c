/* Unit tests for grow_array: amortised doubling that keeps the contents, parallel arrays grown to
 * one capacity, and sizes that overflow size_t refused with no_memory, the array left as it was. */
#include <stdint.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/grow.h"
#include "testlib.h"

static void test_appends_keep_contents(void)
{
    uint64_t *v = NULL;
    size_t cap = 0, reallocs = 0;
    for (size_t i = 0; i < 100000; i++) {
        size_t before = cap;
        CHECK_EQ(grow_array(&v, &cap, i + 1, sizeof(*v)), 0);
        CHECK(cap >= i + 1);
        reallocs += cap != before;
        v[i] = i * 2654435761u;
    }
    size_t bad = 0;
    for (size_t i = 0; i < 100000; i++)
        bad += v[i] != i * 2654435761u;
    CHECK_EQ(bad, 0);
    /* Doubling from 16: 16 << 13 = 131072 >= 100000, so 14 reallocations, not one per append. */
    CHECK_EQ(reallocs, 14);
    CHECK_EQ(cap, 131072);
    free(v);
}

static void test_no_change_when_room(void)
{
    char *p = malloc(40);
    char *old = p;
    size_t cap = 40;
    CHECK_EQ(grow_array(&p, &cap, 40, 1), 0);
    CHECK(p == old);
    CHECK_EQ(cap, 40);
    CHECK_EQ(grow_array(&p, &cap, 0, 1), 0);
    CHECK_EQ(cap, 40);
    /* One more than the room: at least doubled, never just +1. */
    CHECK_EQ(grow_array(&p, &cap, 41, 1), 0);
    CHECK_EQ(cap, 80);
    /* A request beyond doubling is met exactly. */
    CHECK_EQ(grow_array(&p, &cap, 1000, 1), 0);
    CHECK_EQ(cap, 1000);
    p[999] = 1;
    free(p);
}

static void test_parallel_arrays_same_capacity(void)
{
    uint32_t *a = NULL;
    double *b = NULL;
    size_t cap = 0;
    for (size_t n = 1; n < 5000; n += 37) {
        size_t cap_b = cap;
        CHECK_EQ(grow_array(&b, &cap_b, n, sizeof(*b)), 0);
        CHECK_EQ(grow_array(&a, &cap, n, sizeof(*a)), 0);
        CHECK_EQ(cap, cap_b);
        a[n - 1] = (uint32_t)n;
        b[n - 1] = (double)n;
    }
    free(a);
    free(b);
}

static void test_overflow_is_refused(void)
{
    uint64_t *v = NULL;
    size_t cap = 0;
    CHECK_EQ(grow_array(&v, &cap, 4, sizeof(*v)), 0);
    uint64_t *kept = v;
    size_t kept_cap = cap;
    v[0] = 42;
    /* need * elem overflows size_t: refused before any allocation. */
    err_clear();
    CHECK_EQ(grow_array(&v, &cap, SIZE_MAX / 4, sizeof(*v)), -SCRY_E_NO_MEMORY);
    CHECK_EQ(err_last_code(), SCRY_E_NO_MEMORY);
    CHECK(strstr(err_last_message(), "overflows") != NULL);
    CHECK(v == kept);
    CHECK_EQ(cap, kept_cap);
    CHECK_EQ(v[0], 42);
    /* The largest element count: doubling would wrap the count itself. */
    err_clear();
    CHECK_EQ(grow_array(&v, &cap, SIZE_MAX, 2), -SCRY_E_NO_MEMORY);
    CHECK(v == kept && cap == kept_cap);
    /* An element size of zero is a caller's error, refused too. */
    CHECK_EQ(grow_array(&v, &cap, 100, 0), -SCRY_E_NO_MEMORY);
    CHECK(v == kept && cap == kept_cap);
    free(v);
}

static const struct tl_test tests[] = {
    TL(test_appends_keep_contents),
    TL(test_no_change_when_room),
    TL(test_parallel_arrays_same_capacity),
    TL(test_overflow_is_refused),
};
TL_MAIN(tests)
