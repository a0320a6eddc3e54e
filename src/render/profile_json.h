/* scry-profile.json: the merged CPU profile in Scalene's JSON schema, with scry's additions
 * (docs/json-schema.md, "`scry run`: scry-profile.json"). */
#ifndef SCRY_RENDER_PROFILE_JSON_H
#define SCRY_RENDER_PROFILE_JSON_H

#include <stdbool.h>

#include "analysis/profile.h"
#include "common/strbuf.h"

struct profile_json_opts {
    const char *version;        /* scry's version */
    const char *program;        /* absolute path of the script, or the module's file/name */
    const char *entrypoint_dir; /* directory of the script; "" for -m */
    const char *filename;       /* the program path: "your code" for filtering */
    /* The program's arguments; NULL: the primary part's argv after its first entry. */
    const char *const *args;
    size_t nargs;
    double start_time_perf; /* CLOCK_MONOTONIC (= Python's perf_counter) at start */
    double cpu_percent_threshold;
    bool reduced;    /* keep only lines and functions at or above the threshold */
    /* With reduced: a line, function or file under the threshold stays for its memory when it
     * allocated or copied at least this many MB (0: any byte). */
    double malloc_threshold_mb;
    unsigned ncpus;  /* divides n_core_utilization; 0 counts as 1 */
};

/* Writes the profile document (pretty-printed, ending with a newline) into out. */
void profile_json_write(const struct profile *p, const struct profile_json_opts *o,
                        struct strbuf *out);

/* The source line as Scalene stores it: '&', '<' and '>' become the six-character strings
 * \u0026, \u003c and \u003e (the JSON then escapes their backslashes). */
void profile_json_scalene_line(struct strbuf *sb, const char *s);

#endif
