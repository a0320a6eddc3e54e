/* What the profile model's files share: profile.c (the merge of parts, and finishing),
 * profile_check.c (a part checked before it is merged), profile_timeline.c (memory timelines). */
#ifndef SCRY_ANALYSIS_PROFILE_INTERNAL_H
#define SCRY_ANALYSIS_PROFILE_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "analysis/profile.h"

/* Nanoseconds and bytes at most: with a start time saturated at the same bound, sums stay far
 * from INT64_MAX. */
#define PROF_MAX_NS ((int64_t)4000000000000000000)

/* A Unix time in nanoseconds, saturated so that adding a part's nanoseconds cannot overflow. */
static inline int64_t prof_unix_ns(double sec)
{
    double ns = sec * 1e9;
    return ns >= (double)PROF_MAX_NS ? PROF_MAX_NS : (int64_t)(ns + 0.5); /* sec >= 0 */
}

/* 0 when the part is one scry can merge; else the error "bad profile part WHAT: ...". */
int prof_part_check(const json_t *part, const char *what);
/* A part's text parsed: NULL, with the error recorded, when it is not JSON. */
json_t *prof_part_parse(const char *text, size_t len, const char *what);
/* Timelines reduced to PROF_MAX_POINTS and rebased; the whole program's footprint summed. */
void prof_finish_memory(struct profile *p);

#endif
