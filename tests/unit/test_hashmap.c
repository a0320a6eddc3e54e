/* Unit tests for the open-addressing hash map, checked against a plain array as the reference:
 * collisions, tombstones, growth and iteration are where linear probing goes wrong. */
#include <stdlib.h>

#include "common/error.h"
#include "common/hashmap.h"
#include "testlib.h"

static void test_empty(void)
{
    struct hashmap m = HASHMAP_INIT;
    uint64_t v = 7;
    CHECK(!hm_get(&m, 1, &v));
    CHECK_EQ(v, 7);
    CHECK(!hm_has(&m, 1));
    CHECK(!hm_del(&m, 1));
    size_t it = 0;
    CHECK(!hm_next(&m, &it, NULL, NULL));
    hm_clear(&m);
    hm_free(&m);
    CHECK_EQ(m.count, 0);
}

static void test_put_get_replace_delete(void)
{
    struct hashmap m = HASHMAP_INIT;
    CHECK_EQ(hm_put(&m, 42, 1), 0);
    CHECK_EQ(hm_put(&m, 0x7fff12345678ull, 2), 0);
    CHECK_EQ(m.count, 2);
    uint64_t v = 0;
    CHECK(hm_get(&m, 42, &v));
    CHECK_EQ(v, 1);
    CHECK(hm_get(&m, 42, NULL));
    CHECK_EQ(hm_put(&m, 42, 99), 0); /* replace keeps the count */
    CHECK_EQ(m.count, 2);
    CHECK(hm_get(&m, 42, &v));
    CHECK_EQ(v, 99);
    CHECK(hm_del(&m, 42));
    CHECK(!hm_has(&m, 42));
    CHECK(!hm_del(&m, 42));
    CHECK_EQ(m.count, 1);
    CHECK(hm_get(&m, 0x7fff12345678ull, &v));
    CHECK_EQ(v, 2);
    /* Values are full 64-bit and 0 is a fine value. */
    CHECK_EQ(hm_put(&m, 5, UINT64_MAX), 0);
    CHECK_EQ(hm_put(&m, 6, 0), 0);
    CHECK(hm_get(&m, 5, &v));
    CHECK_EQ_U64(v, UINT64_MAX);
    CHECK(hm_get(&m, 6, &v));
    CHECK_EQ_U64(v, 0);
    hm_free(&m);
}

static void test_reserved_keys(void)
{
    struct hashmap m = HASHMAP_INIT;
    CHECK(hm_put(&m, 0, 1) < 0);
    CHECK_EQ(m.count, 0);
    CHECK(!hm_has(&m, 0));
    CHECK(hm_put(&m, UINT64_MAX, 1) < 0); /* the tombstone marker */
    CHECK(!hm_has(&m, UINT64_MAX));
    CHECK_EQ(hm_put(&m, 1, 1), 0);
    CHECK(!hm_has(&m, 0));
    CHECK(!hm_del(&m, 0));
    CHECK(!hm_del(&m, UINT64_MAX));
    CHECK_EQ(m.count, 1);
    hm_free(&m);
}

/* Keys that all land in the same home slot of a 16- or 32-slot table. */
static size_t colliding_keys(uint64_t *out, size_t want, size_t cap)
{
    size_t n = 0;
    uint64_t target = hm_hash64(1) & (cap - 1);
    for (uint64_t k = 1; n < want; k++)
        if ((hm_hash64(k) & (cap - 1)) == target)
            out[n++] = k;
    return n;
}

static void test_collisions_and_tombstones(void)
{
    struct hashmap m = HASHMAP_INIT;
    uint64_t keys[8];
    colliding_keys(keys, 8, 16);
    /* 8 keys in one probe chain of a 16-slot table (under the 70% load limit). */
    for (size_t i = 0; i < 8; i++)
        CHECK_EQ(hm_put(&m, keys[i], i + 100), 0);
    CHECK_EQ(m.cap, 16);
    for (size_t i = 0; i < 8; i++) {
        uint64_t v = 0;
        CHECK(hm_get(&m, keys[i], &v));
        CHECK_EQ(v, i + 100);
    }
    /* Deleting from the middle of the chain must not hide the keys after it. */
    CHECK(hm_del(&m, keys[2]));
    CHECK(hm_del(&m, keys[4]));
    CHECK_EQ(m.tombstones, 2);
    for (size_t i = 0; i < 8; i++)
        CHECK(hm_has(&m, keys[i]) == (i != 2 && i != 4));
    uint64_t v = 0;
    CHECK(hm_get(&m, keys[7], &v));
    CHECK_EQ(v, 107);
    /* Re-inserting a live key behind a tombstone replaces it instead of adding a duplicate. */
    CHECK_EQ(hm_put(&m, keys[7], 7), 0);
    CHECK_EQ(m.count, 6);
    size_t seen = 0;
    uint64_t k;
    for (size_t it = 0; hm_next(&m, &it, &k, &v);)
        seen += k == keys[7];
    CHECK_EQ(seen, 1);
    /* A new key reuses the first tombstone of its chain. */
    CHECK_EQ(hm_put(&m, keys[2], 2), 0);
    CHECK_EQ(m.tombstones, 1);
    CHECK_EQ(m.count, 7);
    CHECK_EQ(m.cap, 16);
    CHECK(hm_get(&m, keys[2], &v));
    CHECK_EQ(v, 2);
    hm_free(&m);
}

static void test_tombstones_do_not_fill_table(void)
{
    /* Insert and delete many distinct keys: without tombstone cleanup the table would fill with
     * tombstones and lookups of missing keys would never end. */
    struct hashmap m = HASHMAP_INIT;
    for (uint64_t k = 1; k <= 20000; k++) {
        CHECK_EQ(hm_put(&m, k, k), 0);
        CHECK(hm_del(&m, k));
    }
    CHECK_EQ(m.count, 0);
    CHECK(m.cap <= 64);
    CHECK((m.count + m.tombstones) * 10 <= m.cap * 7);
    CHECK(!hm_has(&m, 123456789));
    hm_free(&m);
}

static void test_iteration_visits_each_once(void)
{
    struct hashmap m = HASHMAP_INIT;
    enum { N = 1000 };
    static unsigned char seen[N + 1];
    memset(seen, 0, sizeof(seen));
    for (uint64_t k = 1; k <= N; k++)
        CHECK_EQ(hm_put(&m, k, k * 3), 0);
    for (uint64_t k = 2; k <= N; k += 2)
        CHECK(hm_del(&m, k));
    size_t n = 0;
    uint64_t k, v;
    for (size_t it = 0; hm_next(&m, &it, &k, &v);) {
        n++;
        if (k < 1 || k > N) {
            CHECK(k >= 1 && k <= N);
            continue;
        }
        seen[k]++;
        CHECK_EQ(v, k * 3);
    }
    CHECK_EQ(n, N / 2);
    for (uint64_t i = 1; i <= N; i++)
        CHECK_EQ(seen[i], i % 2 ? 1 : 0);
    /* The iterator is done and stays done. */
    size_t it = m.cap;
    CHECK(!hm_next(&m, &it, &k, &v));
    hm_free(&m);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_growth_against_reference(void)
{
    /* 1e5 keys from a small universe (so puts replace and deletes hit), mirrored in an array. */
    enum { UNIVERSE = 150000, OPS = 400000 };
    uint64_t *ref = calloc(UNIVERSE, sizeof(*ref)); /* value, when present[i] */
    unsigned char *present = calloc(UNIVERSE, 1);
    if (!ref || !present) {
        CHECK(!"out of memory");
        free(ref);
        free(present);
        return;
    }
    struct hashmap m = HASHMAP_INIT;
    size_t live = 0;
    /* Keys look like addresses: aligned, large, with low bits zero, to stress the mixer. */
#define KEY(i) (0x7f0000000000ull + (uint64_t)(i) * 16)
    for (size_t i = 0; i < 100000; i++) {
        CHECK_EQ(hm_put(&m, KEY(i), i), 0);
        ref[i] = i;
        present[i] = 1;
        live++;
    }
    CHECK_EQ(m.count, 100000);
    for (size_t op = 0; op < OPS; op++) {
        uint64_t r = rng();
        size_t i = (size_t)(r % UNIVERSE);
        switch ((r >> 32) % 3) {
        case 0:
            CHECK_EQ(hm_put(&m, KEY(i), r), 0);
            live += !present[i];
            present[i] = 1;
            ref[i] = r;
            break;
        case 1:
            CHECK(hm_del(&m, KEY(i)) == (present[i] != 0));
            live -= present[i];
            present[i] = 0;
            break;
        default: {
            uint64_t v = 0;
            bool got = hm_get(&m, KEY(i), &v);
            CHECK(got == (present[i] != 0));
            if (got)
                CHECK_EQ_U64(v, ref[i]);
        }
        }
    }
    CHECK_EQ(m.count, live);
    size_t bad = 0, n = 0;
    for (size_t i = 0; i < UNIVERSE; i++) {
        uint64_t v = 0;
        bool got = hm_get(&m, KEY(i), &v);
        if (got != (present[i] != 0) || (got && v != ref[i]))
            bad++;
    }
    CHECK_EQ(bad, 0);
    uint64_t k, v;
    for (size_t it = 0; hm_next(&m, &it, &k, &v);) {
        n++;
        size_t i = (size_t)((k - KEY(0)) / 16);
        CHECK(i < UNIVERSE && present[i]);
    }
    CHECK_EQ(n, live);
    CHECK((m.count + m.tombstones) * 10 <= m.cap * 7);
#undef KEY
    hm_clear(&m);
    CHECK_EQ(m.count, 0);
    CHECK(!hm_has(&m, 0x7f0000000000ull));
    CHECK_EQ(hm_put(&m, 3, 4), 0);
    CHECK(hm_has(&m, 3));
    hm_free(&m);
    free(ref);
    free(present);
}

static void test_hash64(void)
{
    /* The mixer is exported: it must be deterministic and spread sequential keys. */
    CHECK_EQ_U64(hm_hash64(0), 0);
    CHECK(hm_hash64(1) != hm_hash64(2));
    CHECK_EQ_U64(hm_hash64(12345), hm_hash64(12345));
    size_t low_same = 0;
    for (uint64_t k = 0; k < 64; k++)
        low_same += (hm_hash64(k * 4096) & 15) == (hm_hash64((k + 1) * 4096) & 15);
    CHECK(low_same < 16);
}

static const struct tl_test tests[] = {
    TL(test_empty),
    TL(test_put_get_replace_delete),
    TL(test_reserved_keys),
    TL(test_collisions_and_tombstones),
    TL(test_tombstones_do_not_fill_table),
    TL(test_iteration_visits_each_once),
    TL(test_growth_against_reference),
    TL(test_hash64),
};
TL_MAIN(tests)
