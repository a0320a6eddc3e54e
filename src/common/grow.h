/* The one way an array grows: room for at least `need` elements, capacity doubled so that
 * appending one at a time costs amortised O(1), every size checked for overflow. */
#ifndef SCRY_COMMON_GROW_H
#define SCRY_COMMON_GROW_H

#include <stddef.h>

/* arrp is the address of the array's pointer (any element type: `&t->nodes`), *cap its
 * capacity in elements, elem the size of one. Does nothing when need <= *cap; otherwise
 * reallocates to max(need, 2 * *cap, 16) elements.
 * Returns 0, or -SCRY_E_NO_MEMORY (recorded; the array and *cap are unchanged) when the size
 * overflows size_t or memory is short. Never aborts. Arrays that grow together (parallel
 * arrays) each get a copy of the same capacity: given the same (cap, need) the helper picks the
 * same new capacity. */
int grow_array(void *arrp, size_t *cap, size_t need, size_t elem);

#endif
