/* Fuzz target: arbitrary text parsed as /proc/PID/maps, then the lookups over the result. */
#include <stdint.h>
#include <stdlib.h>

#include "common/arena.h"
#include "reader/reader_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena a = ARENA_INIT;
    struct rd_mapping *maps = NULL;
    size_t n = 0;
    if (rd_maps_parse_text((const char *)data, size, &a, &maps, &n) == 0) {
        for (size_t i = 1; i < n; i++)
            if (maps[i - 1].start > maps[i].start || maps[i].end < maps[i].start)
                abort(); /* the result must be sorted and well-formed */
        free(maps);
    }
    char state = rd_stat_state((const char *)data, size);
    (void)state;
    arena_free(&a);
    return 0;
}
