/* Talking to a program that `scry run` profiles, through the run's part directory (the agent's
 * side: src/agent/control.c): which directory a process's run uses (`scry control`), and its
 * live allocation samples (`scry dump --pid`, docs/allocations.md). */
#ifndef SCRY_ATTACH_RUN_LINK_H
#define SCRY_ATTACH_RUN_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* The part directory of the run pid belongs to (pid is one of its processes or scry run itself),
 * or of the agent that `scry record --pid --memory` attached in pid (attach/agent_link.h), into
 * dir; *found false when pid is neither. Returns 0, or an error
 * (no_such_process, permission_denied) when pid's environment cannot be read. */
int run_link_dir(int pid, char *dir, size_t size, bool *found);

/* Opens dir, a part directory named by process(es) of user uid, component by component from /
 * (openat, O_PATH|O_NOFOLLOW|O_DIRECTORY): each must be a directory, not a link, of root or of
 * uid, and neither group- nor world-writable unless sticky; the last a private (0700)
 * scry-parts-* directory of uid. A root `scry control` then writes through *fd: no link or
 * directory that another user planted on the way leads it elsewhere. Returns 0 with *fd (close
 * it), or permission_denied naming the component (io_error where one cannot be read). */
int run_link_open_dir(const char *dir, uid_t uid, int *fd);

/* One live malloc sample as the agent reported it. */
struct alloc_live {
    uint64_t seq, ptr, size, weight;
    int64_t stack; /* index into stacks, -1: none */
    bool arena;    /* not a sample: a pymalloc arena, whole (record --allocations; weight 0) */
};

struct alloc_table {
    bool memory; /* the run profiles memory (else nothing below) */
    uint64_t window;
    struct alloc_live *live;
    size_t nlive;
    json_t *doc;          /* owns stacks */
    const json_t *stacks; /* [[[file, function, line], ...outermost first], ...] */
};

/* Asks pid's agent (its run's part directory dir) for its live allocation samples and waits up
 * to timeout_s for the answer. Returns 0, or an error (not_found: no answer in time). */
int run_link_allocations(int pid, const char *dir, double timeout_s, struct alloc_table *out);
void alloc_table_free(struct alloc_table *t);

/* The boot-relative start time of process pid (/proc/PID/stat field 22, clock ticks), 0 when
 * unknown: with the pid, which process an allocations file was recorded from. */
uint64_t run_link_start_time(int pid);

/* An allocations file of `scry record --allocations -o FILE` (docs/allocations.md): its table,
 * checked to be of process pid as it runs now (the same start time). Returns 0, or io_error,
 * too_large, bad_profile (not such a file), usage (recorded from another process). */
int alloc_table_load(const char *path, int pid, struct alloc_table *out);

#endif
