/* Unit tests of the block cache's room for the copy (memcache.h): what mc_pool_prepare faults in
 * before the stop is the copy counted now, not the spare blocks it maps for a heap that grows
 * (they would add 1/16 of the copy to the dumper's peak for nothing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpython/memcache.h"
#include "reader/reader.h"
#include "testlib.h"

#if !TL_UNDER_ASAN

#define SLOT (sizeof(struct mc_block) + MC_BLOCK_SIZE)

static void test_pool_faults_in_what_is_counted(void)
{
    struct rd_reader *rd;
    CHECK_EQ(rd_open_self(&rd), 0);
    struct mc_pool pool;
    CHECK_EQ(mc_pool_prepare(&pool, rd, UINT64_MAX / 4), 0);
    CHECK(pool.base != NULL);
    if (pool.base) {
        /* slots = counted + counted / 16 + 4 */
        size_t counted = pool.slots - 4;
        while (counted + counted / 16 + 4 > pool.slots)
            counted--;
        long kb = tl_mapping_rss_kb(pool.base);
        CHECK(kb > 0);
        /* every counted slot faulted in (the copy does not fault during the stop) */
        CHECK((size_t)kb * 1024 >= counted * SLOT);
        /* and not the 4 or more spare ones (the kernel may count a few pages of a neighbouring
         * mapping merged with it) */
        CHECK((size_t)kb * 1024 <= counted * SLOT + 64 * 1024);
        /* a spare slot still works: its pages fault in when written */
        memset(pool.base + (pool.slots - 1) * SLOT, 0xab, SLOT);
        CHECK(pool.base[pool.slots * SLOT - 1] == 0xab);
    }
    mc_pool_free(&pool);
    rd_close(rd);
}

static const struct tl_test tests[] = {
    TL(test_pool_faults_in_what_is_counted),
};

TL_MAIN(tests)
#else
TL_MAIN_SKIPPED_UNDER_ASAN("it counts a mapping's resident pages")
#endif
