/* The part directory of `scry run` and `scry collect` (run_parts.c). */
#ifndef SCRY_RUN_RUN_PARTS_H
#define SCRY_RUN_RUN_PARTS_H

#include <stdbool.h>
#include <sys/types.h>

#include "analysis/profile.h"

/* A new part directory, dir (PATH_MAX bytes): 0, or -1 with the error recorded. */
int run_parts_make_dir(char *dir);
/* Removes the part directory and whatever is in it (parts, temporary files of parts). */
void run_parts_remove_dir(const char *dir);
/* Waits, a bounded time, for the processes that outlive the program to write their parts. */
void run_parts_wait_lingering(const char *dir);
/* Merges the parts in dir into p (child: the program's pid); with snapshots, also the snapshots
 * of the processes that have no part yet (--push, --profile-interval). */
void run_parts_read(struct profile *p, const char *dir, pid_t child, bool snapshots);

#endif
