/* Waiting for another process to end, or to say so first by making a file: `scry collect` waits
 * for the program it attached to (a program may run for days, so the wait sleeps instead of
 * polling where the system can wake it). linux/proc_wait_linux.c: a pidfd and inotify, else a
 * look every 20 ms. */
#ifndef SCRY_PLATFORM_PROC_WAIT_H
#define SCRY_PLATFORM_PROC_WAIT_H

/* Returns once process pid has ended, or a file called name exists in directory dir. */
void pf_wait_exit_or_file(int pid, const char *dir, const char *name);

#endif
