/* grow_array: capacity doubling with overflow checks, for every growing array outside the
 * agent's signal and hook paths (realloc is not async-signal-safe). */
#include "common/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define GROW_MIN 16

int grow_array(void *arrp, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap > SIZE_MAX / 2 ? SIZE_MAX : *cap * 2;
    if (n < GROW_MIN)
        n = GROW_MIN;
    if (n < need)
        n = need;
    /* No fallback to `need` when the doubled size overflows: such a size (over half the address
     * space) cannot be allocated anyway, and the new capacity stays a function of (cap, need)
     * alone, which parallel arrays rely on. */
    if (elem == 0 || n > SIZE_MAX / elem)
        return err_fail(SCRY_E_NO_MEMORY, "cannot grow an array to %zu elements of %zu bytes: "
                                          "the size overflows", need, elem);
    void *old;
    memcpy(&old, arrp, sizeof(old)); /* arrp points at a T*, whatever T is */
    void *q = realloc(old, n * elem);
    if (!q)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory growing an array to %zu elements of "
                                          "%zu bytes", n, elem);
    memcpy(arrp, &q, sizeof(q));
    *cap = n;
    return 0;
}
