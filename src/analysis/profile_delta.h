/* What a profile gained since an earlier profile of the same run (`scry run --push`: each push
 * covers one interval). Pure: two profile documents in, the later one changed in place. */
#ifndef SCRY_ANALYSIS_PROFILE_DELTA_H
#define SCRY_ANALYSIS_PROFILE_DELTA_H

#include "analysis/profile_doc.h"

/* cur becomes cur - prev, matching lines by (file, line, function) and stacks by their frames:
 * each line's and stack's seconds of each kind, samples and allocated bytes (never below 0:
 * a process whose statistics were lost between the two counts from nothing); kept bytes stay
 * as they are (what the line holds at the end of the interval), n_samples likewise less prev's.
 * 0, or -SCRY_E_NO_MEMORY (recorded). */
int pdoc_subtract(struct pdoc *cur, const struct pdoc *prev);

#endif
