/* The part directory of a program under scry run, and its allocation samples (run_link.h). */
#include "attach/run_link.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach/agent_link.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/infile.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"

/* The part directory named in pid's environment, into dir (false: none there). Records an
 * error for a process that cannot be read. */
static int run_dir_of(int pid, char *dir, size_t size, bool *found)
{
    char *env;
    size_t len;
    *found = false;
    int e = pf_process_environ(pid, &env, &len);
    if (e == -ENOENT)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    if (e == -ENOMEM)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    if (e)
        return err_fail_hint(SCRY_E_PERMISSION_DENIED,
                             "run scry as the user who runs the program, or as root",
                             "cannot read the environment of pid %d: %s", pid, strerror(-e));
    static const char key[] = "SCRY_PART_DIR=";
    for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
        if (strncmp(env + i, key, sizeof(key) - 1) == 0 && env[i + sizeof(key) - 1]) {
            snprintf(dir, size, "%s", env + i + sizeof(key) - 1);
            *found = true;
            break;
        }
    }
    free(env);
    /* Only a run's own part directory, owned by the process's user: an environment can name
     * any directory. */
    long uid = pf_process_owner(pid);
    if (*found && (uid < 0 || !cli_is_part_dir(dir, (uid_t)uid)))
        *found = false;
    return 0;
}

struct child_dir {
    char *dir;
    size_t size;
    bool *found;
};

static void try_child(int child, void *ctx)
{
    struct child_dir *c = ctx;
    if (!*c->found && run_dir_of(child, c->dir, c->size, c->found) != 0)
        err_clear();
}

/* pid is `scry run` itself: its environment is its own; the run's is its children's. */
static int run_dir_of_children(int pid, char *dir, size_t size, bool *found)
{
    *found = false;
    struct child_dir c = {dir, size, found};
    pf_process_children(pid, try_child, &c);
    return 0;
}

int run_link_dir(int pid, char *dir, size_t size, bool *found)
{
    int err = run_dir_of(pid, dir, size, found);
    if (!err && !*found)
        err = run_dir_of_children(pid, dir, size, found);
    if (!err && !*found) /* an agent attached by scry record --pid --memory */
        err = agent_link_dir(pid, dir, size, found);
    return err;
}

/* Refuses the walk at the component `upto` of dir (its first len bytes), saying why. */
static int unsafe_dir(const char *dir, size_t len, const char *why)
{
    return err_fail_hint(SCRY_E_PERMISSION_DENIED,
                         "a run's part directory is reached through directories of root or of "
                         "the program's user that no one else may change (docs/SECURITY.md)",
                         "refusing the part directory %s: %.*s %s", san_str(dir), (int)len,
                         san_str(dir), why);
}

/* One component's checks: a directory (not a link: O_NOFOLLOW), of root or of uid, that no one
 * else may change (neither group- nor world-writable, unless sticky like /tmp: there another
 * user may create names but not replace ours). */
static int check_component(const char *dir, size_t len, int fd, uid_t uid)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return err_fail(SCRY_E_IO, "cannot read %.*s: %s", (int)len, san_str(dir),
                        strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return unsafe_dir(dir, len, "is not a directory");
    if (st.st_uid != 0 && st.st_uid != uid)
        return unsafe_dir(dir, len, "belongs to another user");
    if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
        return unsafe_dir(dir, len, "may be changed by other users (group- or world-writable, "
                                    "not sticky)");
    return 0;
}

int run_link_open_dir(const char *dir, uid_t uid, int *out)
{
    *out = -1;
    if (dir[0] != '/')
        return unsafe_dir(dir, strlen(dir), "is not an absolute path");
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return err_fail(SCRY_E_IO, "cannot open /: %s", strerror(errno));
    int err = check_component(dir, 1, fd, uid);
    const char *p = dir;
    while (!err) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchrnul(p, '/');
        size_t n = (size_t)(end - p), upto = (size_t)(end - dir);
        char name[NAME_MAX + 1];
        if (n > NAME_MAX || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.')) {
            err = unsafe_dir(dir, upto, "is not a plain name");
            break;
        }
        memcpy(name, p, n);
        name[n] = 0;
        int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int e = errno;
            struct stat st;
            if (e == ENOTDIR && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                err = unsafe_dir(dir, upto, "is a symbolic link");
            else if (e == ENOTDIR)
                err = unsafe_dir(dir, upto, "is not a directory");
            else
                err = err_fail(SCRY_E_IO, "cannot open %.*s: %s", (int)upto, san_str(dir),
                               strerror(e));
            break;
        }
        close(fd);
        fd = next;
        err = check_component(dir, upto, fd, uid);
        p = end;
    }
    /* The part directory itself: the run's own, private (0700) and of the program's user. */
    struct stat st;
    const char *base = strrchr(dir, '/') + 1;
    if (!err && (fstat(fd, &st) != 0 || st.st_uid != uid || (st.st_mode & 077) != 0 ||
                 strncmp(base, "scry-parts-", 11) != 0))
        err = unsafe_dir(dir, strlen(dir), "is not a private scry-parts-* directory of the "
                                           "program's user");
    if (err) {
        close(fd);
        return err;
    }
    *out = fd;
    return 0;
}

void alloc_table_free(struct alloc_table *t)
{
    free(t->live);
    if (t->doc)
        json_decref(t->doc);
    memset(t, 0, sizeof(*t));
}

static bool as_u64(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* The agent's answer (src/agent/part_writer.c, ag_write_allocations_file), checked. */
static int parse_table(const char *path, json_t *doc, struct alloc_table *out)
{
    const json_t *live = json_object_get(doc, "live");
    const json_t *stacks = json_object_get(doc, "stacks");
    if (!json_is_array(live) || !json_is_array(stacks) ||
        !as_u64(json_object_get(doc, "window"), &out->window))
        return err_fail(SCRY_E_BAD_PROFILE, "%s: not an allocation table", san_str(path));
    out->memory = json_is_true(json_object_get(doc, "memory"));
    size_t n = json_array_size(live), nst = json_array_size(stacks);
    out->live = calloc(n ? n : 1, sizeof(*out->live));
    if (!out->live)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(live, i);
        struct alloc_live *l = &out->live[i];
        const json_t *st = json_array_get(r, 4);
        /* a sixth item, 1: an arena (the eBPF recorder's file) */
        size_t nr = json_array_size(r);
        const json_t *kind = nr == 6 ? json_array_get(r, 5) : NULL;
        if (kind && json_is_integer(kind) && json_integer_value(kind) == 1)
            l->arena = true;
        else if (kind)
            nr = 0;
        if (!json_is_array(r) || (nr != 5 && nr != 6) || !as_u64(json_array_get(r, 0), &l->seq) ||
            !as_u64(json_array_get(r, 1), &l->ptr) || !as_u64(json_array_get(r, 2), &l->size) ||
            !as_u64(json_array_get(r, 3), &l->weight) || !json_is_integer(st) ||
            json_integer_value(st) < -1 || json_integer_value(st) >= (json_int_t)nst)
            return err_fail(SCRY_E_BAD_PROFILE, "%s: live sample %zu is not valid", san_str(path),
                            i);
        l->stack = json_integer_value(st);
    }
    for (size_t i = 0; i < nst; i++) {
        const json_t *s = json_array_get(stacks, i), *f;
        size_t k;
        if (!json_is_array(s))
            return err_fail(SCRY_E_BAD_PROFILE, "%s: stack %zu is not valid", san_str(path), i);
        json_array_foreach(s, k, f)
        {
            if (!json_is_array(f) || json_array_size(f) != 3 ||
                !json_is_string(json_array_get(f, 0)) || !json_is_string(json_array_get(f, 1)) ||
                !json_is_integer(json_array_get(f, 2)))
                return err_fail(SCRY_E_BAD_PROFILE, "%s: stack %zu is not valid", san_str(path), i);
        }
    }
    out->nlive = n;
    out->stacks = stacks;
    return 0;
}

int run_link_allocations(int pid, const char *dir, double timeout_s, struct alloc_table *out)
{
    memset(out, 0, sizeof(*out));
    char req_name[64], ans_name[64], ans_path[128], text[32];
    long uid = pf_process_owner(pid);
    if (uid < 0)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    /* Reached as `scry control` reaches it: no link or directory of another user's on the way
     * (scry dump --pid runs as root as often as not). */
    int dfd;
    int err = run_link_open_dir(dir, (uid_t)uid, &dfd);
    if (err)
        return err;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    /* A number the agent has not answered yet. */
    unsigned long long req = ((unsigned long long)now.tv_sec * 1000000000ULL + now.tv_nsec) | 1;
    snprintf(req_name, sizeof(req_name), "allocreq-%d", pid);
    snprintf(ans_name, sizeof(ans_name), "alloc-%d.json", pid);
    /* The answer is read through the directory's descriptor, not its path again. */
    snprintf(ans_path, sizeof(ans_path), "/proc/self/fd/%d/%s", dfd, ans_name);
    int len = snprintf(text, sizeof(text), "%llu\n", req);
    err = outfile_write_all_at(dfd, dir, req_name, text, (size_t)len, OUTFILE_PRIVATE);
    if (err) {
        close(dfd);
        return err;
    }
    for (double waited = 0; waited < timeout_s; waited += 0.005) {
        char *data;
        size_t n;
        if (infile_read_all(ans_path, "allocation samples", 1ULL << 30, &data, &n) == 0) {
            json_t *doc = json_loadb(data, n, 0, NULL);
            free(data);
            const json_t *r = json_object_get(doc, "request");
            if (json_is_integer(r) && (unsigned long long)json_integer_value(r) == req) {
                out->doc = doc;
                err = parse_table(ans_name, doc, out);
                unlinkat(dfd, ans_name, 0);
                unlinkat(dfd, req_name, 0);
                close(dfd);
                if (err)
                    alloc_table_free(out);
                return err;
            }
            if (doc)
                json_decref(doc);
        }
        err_clear();
        if (kill(pid, 0) != 0 && errno == ESRCH)
            break;
        struct timespec ms5 = {0, 5000000};
        nanosleep(&ms5, NULL);
    }
    unlinkat(dfd, req_name, 0);
    close(dfd);
    return err_fail(SCRY_E_NOT_FOUND, "pid %d did not report its allocation samples", pid);
}

uint64_t run_link_start_time(int pid)
{
    return pf_process_start_time(pid);
}

int alloc_table_load(const char *path, int pid, struct alloc_table *out)
{
    memset(out, 0, sizeof(*out));
    char *data;
    size_t n;
    int err = infile_read_all(path, "allocations file", 1ULL << 30, &data, &n);
    if (err)
        return err;
    json_t *doc = json_loadb(data, n, 0, NULL);
    free(data);
    const char *format = json_string_value(json_object_get(doc, "format"));
    if (!doc || !format || strcmp(format, "scry-allocations") != 0) {
        if (doc)
            json_decref(doc);
        return err_fail(SCRY_E_BAD_PROFILE,
                        "%s is not an allocations file of scry record --allocations",
                        san_str(path));
    }
    out->doc = doc;
    uint64_t fpid = 0, fstart = 0;
    err = parse_table(path, doc, out);
    if (!err && (!as_u64(json_object_get(doc, "pid"), &fpid) ||
                 !as_u64(json_object_get(doc, "start_time"), &fstart)))
        err = err_fail(SCRY_E_BAD_PROFILE, "%s: no pid or start time", san_str(path));
    if (!err && (fpid != (uint64_t)pid || fstart != run_link_start_time(pid)))
        err = err_fail_hint(SCRY_E_USAGE,
                            "record the allocations of the process you dump, and dump it before "
                            "it ends",
                            "%s was recorded from process %llu, not from process %d as it runs "
                            "now",
                            san_str(path), (unsigned long long)fpid, pid);
    if (err)
        alloc_table_free(out);
    return err;
}
