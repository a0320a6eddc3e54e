/* "Your code": which files a sample may be charged to (docs/agent-protocol.md, "Which file a sample
 * is charged to"). The one copy of the rules, used by the agent's collector and by `scry record`.
 * py_filter_classify is pure string work; py_filter_read_prefixes reads sys.prefix,
 * sys.base_prefix and sys.exec_prefix from the interpreter through the runtime's reader. */
#ifndef SCRY_CPYTHON_FILE_FILTER_H
#define SCRY_CPYTHON_FILE_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "cpython/runtime.h"

#define PY_FILTER_PATH_MAX 4096

/* Why a file is not profiled; PY_RULE_PROFILED when it is. The order is the agent's enum ag_rule. */
enum py_rule {
    PY_RULE_PROFILED,
    PY_RULE_NOT_A_FILE,
    PY_RULE_EXCLUDED,
    PY_RULE_NOT_IN_PROFILE_ONLY,
    PY_RULE_SYSTEM_LIBRARY,
    PY_RULE_OUTSIDE_PROGRAM,
};

struct py_filter {
    bool profile_all;
    bool system_libraries;
    const char *program_path;    /* absolute directory */
    const char *profile_only;    /* comma-separated substrings, "" for none */
    const char *profile_exclude; /* comma-separated substrings, "" for none */
    /* sys.prefix, sys.base_prefix, sys.exec_prefix ("" unknown); prefixes_known once read. */
    char prefixes[3][PY_FILTER_PATH_MAX];
    bool prefixes_known;
};

/* The rule for an absolute file name (co_filename made absolute). */
enum py_rule py_filter_classify(const struct py_filter *f, const char *path);
/* The rule for a pseudo-file (<interpreter shutdown>, <native>): only --profile-exclude and
 * --profile-only apply (the other rules are about real files). */
enum py_rule py_filter_pseudo(const struct py_filter *f, const char *name);
/* Reads the interpreter's prefixes into f once they are set (a no-op once known). */
void py_filter_read_prefixes(struct py_filter *f, struct py_runtime *rt, uint64_t interp);

#endif
