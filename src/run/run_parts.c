/* The part directory of `scry run` and `scry collect`: made for the run, where each profiled
 * process's agent writes its part file (docs/agent-protocol.md); waited on for the processes that
 * outlive the program, read into one profile (analysis/profile.c merges), removed at the end. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "run/run_parts.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/progress.h"
#include "common/sanitize.h"

/* A new part directory, dir (PATH_MAX bytes): scry-parts-XXXXXX in $TMPDIR, else in /tmp. 0, or
 * -1 with the error recorded. */
int run_parts_make_dir(char *dir)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, PATH_MAX, "%s/scry-parts-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir))
        return 0;
    snprintf(dir, PATH_MAX, "/tmp/scry-parts-XXXXXX");
    if (mkdtemp(dir))
        return 0;
    return err_fail(SCRY_E_IO, "cannot create a directory for the profile's parts in /tmp: %s",
                    strerror(errno));
}

/* Removes the part directory and whatever is in it (parts, temporary files of parts). */
void run_parts_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "scry: warning: cannot remove %s: %s\n", dir, strerror(errno));
}

/* Python processes of the program that outlive it (a multiprocessing resource tracker, a child
 * that was not waited for) write their parts a moment later: each process marks itself with an
 * empty live-<pid> file while it profiles. Wait, at most LINGER_MS, for those still running. */
#define LINGER_MS 2000

void run_parts_wait_lingering(const char *dir)
{
    for (int waited = 0; waited < LINGER_MS; waited += 10) {
        bool any = false;
        DIR *d = opendir(dir);
        if (!d)
            return;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && !any) {
            char *end;
            if (strncmp(e->d_name, "live-", 5) != 0)
                continue;
            long pid = strtol(e->d_name + 5, &end, 10);
            if (*end || pid <= 0)
                continue;
            /* A process that died without writing (SIGKILL) leaves its marker: skip it. */
            if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
                any = true;
        }
        closedir(d);
        if (!any)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The parts in dir; with snapshots, also the snapshots (snap-PID.json) of the processes that
 * have no part yet: the statistics of every process so far (--push). That is done while the
 * program runs, and shares its stderr: a part that cannot be read is then skipped silently (it
 * is reported at the end). */
void run_parts_read(struct profile *p, const char *dir, pid_t child, bool snapshots)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "scry: warning: cannot read the part directory %s: %s\n", dir,
                strerror(errno));
        return;
    }
    /* Sorted names, so that the merge does not depend on the directory's order. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        /* .part-PID.json.tmp: the part of a process that could not rename it (it dropped its
         * privileges), or one that is not complete (checked below). */
        bool part = len >= 10 && strncmp(e->d_name, "part-", 5) == 0 &&
                    strcmp(e->d_name + len - 5, ".json") == 0;
        bool tmp = len >= 15 && strncmp(e->d_name, ".part-", 6) == 0 &&
                   strcmp(e->d_name + len - 9, ".json.tmp") == 0;
        bool snap = snapshots && len >= 10 && strncmp(e->d_name, "snap-", 5) == 0 &&
                    strcmp(e->d_name + len - 5, ".json") == 0;
        if (!part && !tmp && !snap)
            continue;
        if (grow_array(&names, &cap, n + 1, sizeof(*names)))
            break;
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_name);
    /* Sorted, snapshots come after every part (".part-" < "part-" < "snap-"): the pids of the
     * parts read are known by then. */
    long *have = calloc(n + 1, sizeof(*have));
    size_t nhave = 0;
    if (!snapshots) /* the merge at the end: while the program runs, its terminal is its own */
        prog_phase("merging the parts", PROG_COUNT, n, "parts", NULL);
    for (size_t i = 0; i < n; i++) {
        if (!snapshots)
            prog_update(i);
        long pid = strtol(names[i] + (names[i][0] == '.' ? 6 : 5), NULL, 10);
        bool skip = false;
        for (size_t j = 0; names[i][0] == 's' && j < nhave && !skip; j++)
            skip = have[j] == pid;
        if (skip || (names[i][0] == 's' && !have)) {
            free(names[i]);
            continue;
        }
        char path[PATH_MAX];
        char *data;
        size_t len;
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
            free(names[i]);
            continue;
        }
        if (cli_read_file(path, &data, &len) == 0) {
            /* A part under its temporary name counts once complete: the agent ends every part
             * with "}\n", and writes the file, created empty at the start, only once. */
            if (names[i][0] == '.' && (len < 2 || memcmp(data + len - 2, "}\n", 2) != 0))
                ; /* still being written, or never: not a part */
            else if (prof_add_part_text(p, data, len, names[i], child) != 0) {
                if (!snapshots) {
                    prog_clear();
                    fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
                }
            } else if (have)
                have[nhave++] = pid;
            free(data);
        } else if (!snapshots) {
            prog_clear();
            fprintf(stderr, "scry: warning: %s; skipped\n", san_str(err_last_message()));
        }
        free(names[i]);
    }
    if (!snapshots)
        prog_update(n);
    free(have);
    free(names);
}
