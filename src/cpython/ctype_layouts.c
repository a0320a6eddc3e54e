/* Row lookup in the generated tables of module-private C types (ctype_layouts.h). */
#include "cpython/ctype_layouts.h"

#include <string.h>

/* Every table but ctl_dtype starts {int minor; bool ft; uint16_t basicsize; ...}: ctl_future's
 * layout stands for them all. */
#define ROW_MINOR(r) (((const struct ctl_future *)(r))->minor)
#define ROW_FT(r) (((const struct ctl_future *)(r))->ft)
#define ROW_DATA offsetof(struct ctl_future, basicsize)

uint16_t ctl_basicsize(const void *row) { return ((const struct ctl_future *)row)->basicsize; }

const void *ctl_row(const void *table, size_t n, size_t size, int minor, bool ft, bool later)
{
    const char *newest = NULL;
    bool same = true;
    for (size_t i = 0; i < n; i++) {
        const char *r = (const char *)table + i * size;
        if (ROW_FT(r) != ft)
            continue;
        if (ROW_MINOR(r) == minor)
            return r;
        if (newest && memcmp(newest + ROW_DATA, r + ROW_DATA, size - ROW_DATA) != 0)
            same = false;
        if (!newest || ROW_MINOR(r) > ROW_MINOR(newest))
            newest = r;
    }
    return later && same && newest && minor > ROW_MINOR(newest) ? newest : NULL;
}
