/* The snapshot writer's address index (snap_index.h). */
#include "snapshot/snap_index.h"

#include <stdlib.h>

#include "common/error.h"
#include "common/hashmap.h" /* hm_hash64 */

#define PAGE_SHIFT 11 /* 2 KiB pages */

int snap_index_build(struct snap_index *ix, const struct snap_object *objs, size_t n)
{
    size_t pages = 0;
    for (size_t i = 0; i < n; i++)
        pages += !i || (objs[i].addr >> PAGE_SHIFT) != (objs[i - 1].addr >> PAGE_SHIFT);
    size_t cap = 1024;
    while (cap < 2 * pages)
        cap *= 2;
    ix->slots = calloc(cap, sizeof(*ix->slots));
    if (!ix->slots)
        return -SCRY_E_NO_MEMORY;
    ix->mask = cap - 1;
    ix->objs = objs;
    struct snap_index_slot *cur = NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t page = (objs[i].addr >> PAGE_SHIFT) + 1;
        if (cur && cur->page == page) {
            cur->hi = (uint32_t)i + 1;
            continue;
        }
        size_t j = hm_hash64(page) & ix->mask;
        while (ix->slots[j].page)
            j = (j + 1) & ix->mask;
        cur = &ix->slots[j];
        *cur = (struct snap_index_slot){page, (uint32_t)i, (uint32_t)i + 1};
    }
    return 0;
}

bool snap_index_get(const struct snap_index *ix, uint64_t addr, uint64_t *index)
{
    uint64_t page = (addr >> PAGE_SHIFT) + 1;
    if (addr == 0)
        return false;
    for (size_t j = hm_hash64(page) & ix->mask;; j = (j + 1) & ix->mask) {
        const struct snap_index_slot *sl = &ix->slots[j];
        if (sl->page == page) {
            uint32_t lo = sl->lo, hi = sl->hi; /* the first object at or above addr */
            while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (ix->objs[mid].addr < addr)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo == sl->hi || ix->objs[lo].addr != addr)
                return false;
            *index = lo;
            return true;
        }
        if (!sl->page)
            return false;
    }
}

void snap_index_free(struct snap_index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
}
