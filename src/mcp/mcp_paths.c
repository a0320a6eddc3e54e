/* The roots rule of `scry mcp`'s path arguments (mcp_paths.h). */
#include "mcp/mcp_paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"

#define ROOT_HINT                                                                                  \
    "give a path under the server's working directory, or start the server with 'scry mcp "       \
    "--root DIR' to allow the files under DIR"

static char *roots[MCP_MAX_ROOTS];
static size_t nroots;

int mcp_roots_add(const char *dir)
{
    char resolved[PATH_MAX];
    struct stat st;
    if (!realpath(dir, resolved) || stat(resolved, &st) != 0)
        return err_fail(SCRY_E_USAGE, "root %s: %s (a directory expected)", dir,
                        strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return err_fail(SCRY_E_USAGE, "root %s is not a directory", dir);
    for (size_t i = 0; i < nroots; i++)
        if (strcmp(roots[i], resolved) == 0)
            return 0;
    if (nroots == MCP_MAX_ROOTS)
        return err_fail(SCRY_E_USAGE, "at most %d roots", MCP_MAX_ROOTS);
    roots[nroots] = strdup(resolved);
    if (!roots[nroots])
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    nroots++;
    return 0;
}

void mcp_roots_clear(void)
{
    for (size_t i = 0; i < nroots; i++)
        free(roots[i]);
    nroots = 0;
}

bool mcp_under_root(const char *resolved)
{
    for (size_t i = 0; i < nroots; i++) {
        size_t n = strlen(roots[i]);
        /* Whole components: /srv/app2 is not under /srv/app; every path is under /. */
        if (strncmp(resolved, roots[i], n) == 0 &&
            (resolved[n] == 0 || resolved[n] == '/' || (n == 1 && roots[i][0] == '/')))
            return true;
    }
    return false;
}

static int outside(const char *what, const char *given, const char *expected)
{
    return err_fail_hint(SCRY_E_PERMISSION_DENIED, ROOT_HINT,
                         "%s %s is outside this server's roots: %s under one of them expected",
                         what, given, expected);
}

/* Whether the nearest ancestor of given that resolves (given does not) is under a root. */
static bool nearest_under_root(const char *given)
{
    char dir[PATH_MAX], resolved[PATH_MAX];
    if (strlen(given) >= sizeof(dir))
        return false;
    memcpy(dir, given, strlen(given) + 1);
    for (;;) {
        char *slash = strrchr(dir, '/');
        while (slash && slash > dir && slash[1] == 0) { /* trailing slashes */
            *slash = 0;
            slash = strrchr(dir, '/');
        }
        if (!slash)
            memcpy(dir, ".", 2);
        else if (slash == dir)
            dir[1] = 0;
        else
            *slash = 0;
        if (realpath(dir, resolved))
            return mcp_under_root(resolved);
        if (!slash || strcmp(dir, "/") == 0)
            return false;
    }
}

/* given resolved into out, under a root; its type is left to the caller (st). */
static int resolve_under_root(const char *given, const char *what, const char *expected,
                              char *out, size_t size, struct stat *st)
{
    char resolved[PATH_MAX];
    if (!realpath(given, resolved)) {
        int e = errno;
        /* Outside the roots, a missing file reads as any other: no probing what exists. */
        if (!nearest_under_root(given))
            return outside(what, given, expected);
        return err_fail(SCRY_E_IO, "%s %s: cannot resolve it (%s); %s expected", what, given,
                        strerror(e), expected);
    }
    if (!mcp_under_root(resolved))
        return outside(what, given, expected);
    if (stat(resolved, st) != 0)
        return err_fail(SCRY_E_IO, "%s %s: %s", what, given, strerror(errno));
    if (strlen(resolved) >= size)
        return err_fail(SCRY_E_USAGE, "%s %s: the path is too long", what, given);
    memcpy(out, resolved, strlen(resolved) + 1);
    return 0;
}

static const char *kind_of(mode_t mode)
{
    return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket"
                                        : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
                                        : S_ISREG(mode)                  ? "a regular file"
                                                                         : "not a regular file";
}

int mcp_path_read(const char *given, const char *what, char *out, size_t size)
{
    struct stat st;
    int err = resolve_under_root(given, what, "a regular file", out, size, &st);
    if (!err && !S_ISREG(st.st_mode))
        err = err_fail(SCRY_E_IO, "%s %s is %s: a regular file expected", what, given,
                       kind_of(st.st_mode));
    return err;
}

int mcp_path_dir(const char *given, const char *what, char *out, size_t size)
{
    struct stat st;
    int err = resolve_under_root(given, what, "a directory", out, size, &st);
    if (!err && !S_ISDIR(st.st_mode))
        err = err_fail(SCRY_E_IO, "%s %s is %s: a directory expected", what, given,
                       kind_of(st.st_mode));
    return err;
}

int mcp_path_new(const char *given, const char *what, char *out, size_t size)
{
    struct stat st;
    if (lstat(given, &st) == 0)
        return err_fail_hint(SCRY_E_IO, "give a path that does not exist yet, or leave it out",
                             "%s %s exists: a tool never overwrites a file", what, given);
    if (errno != ENOENT)
        return err_fail(SCRY_E_IO, "%s %s: %s", what, given, strerror(errno));
    const char *slash = strrchr(given, '/');
    const char *name = slash ? slash + 1 : given;
    char dir[PATH_MAX];
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return err_fail(SCRY_E_USAGE, "%s %s does not end with a file name", what, given);
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == given)
        snprintf(dir, sizeof(dir), "/");
    else if ((size_t)(slash - given) >= sizeof(dir))
        return err_fail(SCRY_E_USAGE, "%s %s: the path is too long", what, given);
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - given), given);
    char resolved[PATH_MAX];
    int err = resolve_under_root(dir, what, "a new file in a directory", resolved,
                                 sizeof(resolved), &st);
    if (err)
        return err;
    if (!S_ISDIR(st.st_mode))
        return err_fail(SCRY_E_IO, "%s %s: %s is %s: a directory expected", what, given, dir,
                        kind_of(st.st_mode));
    if ((size_t)snprintf(out, size, "%s%s%s", resolved, strcmp(resolved, "/") ? "/" : "",
                         name) >= size)
        return err_fail(SCRY_E_USAGE, "%s %s: the path is too long", what, given);
    return 0;
}
