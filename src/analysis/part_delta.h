/* What one process did between two checkpoints (docs/agent-protocol.md, "Checkpoints"): a part
 * document minus an earlier one of the same process, as a part document again, so that the
 * profile of a window (a notebook cell, a test) is made by the same merge as a whole run's.
 * Pure: two parsed documents in, the later one changed in place. */
#ifndef SCRY_ANALYSIS_PART_DELTA_H
#define SCRY_ANALYSIS_PART_DELTA_H

#include <jansson.h>

/* after becomes after - before. The agent's tables only grow, so what before holds is in after
 * under the same indexes; lines, stacks, memory lines and excluded files are matched by their
 * keys all the same, and checked. Counts and seconds are subtracted (never below 0); a line or
 * stack left with nothing is dropped. The window starts where before ended: the footprint's
 * timelines keep the points after it (their times made relative to it), its maximum is the
 * window's, its final value after's. Native call chains are left out (they are counted per
 * chain, not per window). 0, or -SCRY_E_BAD_PROFILE (recorded) when the two are not of one
 * process or before is not earlier. */
int part_subtract(json_t *after, const json_t *before);

#endif
