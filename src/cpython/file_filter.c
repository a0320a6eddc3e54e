/* The file filter's rules (file_filter.h): a path is profiled or excluded by the first rule that
 * decides, in the documented order. No allocation: the agent's collector calls it too. */
#include "cpython/file_filter.h"

#include <stdio.h>
#include <string.h>

#include "common/strbuf.h"
#include "cpython/objects.h"
#include "reader/reader.h"

static bool contains_any(const char *path, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n > 0 && n < PY_FILTER_PATH_MAX) {
            char needle[PY_FILTER_PATH_MAX];
            memcpy(needle, p, n);
            needle[n] = 0;
            if (strstr(path, needle))
                return true;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

static bool is_system_library(const struct py_filter *f, const char *path)
{
    if (strstr(path, "/site-packages/") || strstr(path, "/dist-packages/") ||
        strstr(path, "/lib/python3."))
        return true;
    for (int i = 0; f->prefixes_known && i < 3; i++)
        if (f->prefixes[i][0] && under(path, f->prefixes[i]))
            return true;
    return false;
}

enum py_rule py_filter_classify(const struct py_filter *f, const char *path)
{
    const char *only = f->profile_only ? f->profile_only : "";
    const char *exclude = f->profile_exclude ? f->profile_exclude : "";
    if (path[0] != '/')
        return PY_RULE_NOT_A_FILE;
    if (exclude[0] && contains_any(path, exclude))
        return PY_RULE_EXCLUDED;
    if (only[0] && !contains_any(path, only))
        return PY_RULE_NOT_IN_PROFILE_ONLY;
    if (f->profile_all)
        return PY_RULE_PROFILED;
    if (is_system_library(f, path))
        return f->system_libraries ? PY_RULE_PROFILED : PY_RULE_SYSTEM_LIBRARY;
    if (only[0])
        return PY_RULE_PROFILED;
    return f->program_path && under(path, f->program_path) ? PY_RULE_PROFILED
                                                            : PY_RULE_OUTSIDE_PROGRAM;
}

enum py_rule py_filter_pseudo(const struct py_filter *f, const char *name)
{
    if (f->profile_exclude && f->profile_exclude[0] && contains_any(name, f->profile_exclude))
        return PY_RULE_EXCLUDED;
    if (f->profile_only && f->profile_only[0] && !contains_any(name, f->profile_only))
        return PY_RULE_NOT_IN_PROFILE_ONLY;
    return PY_RULE_PROFILED;
}

void py_filter_read_prefixes(struct py_filter *f, struct py_runtime *rt, uint64_t interp)
{
    static const char *const names[3] = {"prefix", "base_prefix", "exec_prefix"};
    uint64_t sysdict;
    if (f->prefixes_known || rd_read_u64(rt->rd, interp + rt->layout.is_sysdict, &sysdict) ||
        !sysdict)
        return;
    int found = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t obj;
        struct strbuf sb = STRBUF_INIT;
        if (py_dict_get_str(rt, sysdict, names[i], &obj) == 0 && obj &&
            py_read_str(rt, obj, sizeof(f->prefixes[i]) - 1, &sb) == 0) {
            snprintf(f->prefixes[i], sizeof(f->prefixes[i]), "%s", sb_str(&sb));
            found++;
        }
        sb_release(&sb);
    }
    f->prefixes_known = found > 0;
}
