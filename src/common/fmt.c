/* fmt_bytes: powers of 1024, one decimal above a KiB. */
#include "common/fmt.h"

#include <inttypes.h>
#include <stdio.h>

void fmt_bytes(uint64_t bytes, char *out, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, size, "%" PRIu64 " B", bytes);
    else
        snprintf(out, size, "%.1f %s", v, units[u]);
}
