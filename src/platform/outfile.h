/* The one way scry creates an output file (profiles, snapshots, reports, graphs): the data goes to
 * a new file with an unpredictable name in the target's folder (created with O_EXCL|O_NOFOLLOW,
 * so nothing planted there is ever opened or followed), is fsynced, and is renamed over the
 * target, so a reader never sees half a file and a symlink at the target is replaced, not
 * followed. The file gets exactly the given mode: every output of scry may hold the program's
 * names, source or data, so each is OUTFILE_PRIVATE (0600; docs/SECURITY.md). */
#ifndef SCRY_PLATFORM_OUTFILE_H
#define SCRY_PLATFORM_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define OUTFILE_PRIVATE 0600

struct outfile {
    int fd;     /* write here (write/pwrite); -1 once committed or aborted */
    char *path; /* the target */
    char *tmp;  /* the temporary file; NULL when writing straight to a device or FIFO */
};

/* Creates the temporary file for path. An existing character device or FIFO at path owned by
 * us or by root (say /dev/null), or a path that leads to our own stdout or stderr (/dev/stdout),
 * is written in place; a directory is refused. Returns 0 or records an
 * io_error (the message names the target, not the temporary name). */
/* fd moved to 3 or above (close-on-exec; the old number closed) when it is 0, 1 or 2: a program
 * or command started with a standard stream closed would otherwise find its own output, or the
 * agent's descriptors, at that number. -1 (errno set) if that fails; fd itself otherwise. */
int fd_above_stdio(int fd);
int outfile_open(struct outfile *of, const char *path, mode_t mode);
/* Writes all of buf at the current offset; returns 0 or records an io_error. */
int outfile_write(struct outfile *of, const void *buf, size_t len);
/* The same on any descriptor (write retried on EINTR and short writes); name is for the
 * message. */
int outfile_write_fd(int fd, const void *buf, size_t len, const char *name);
/* Flushes the data to disk and renames the file over the target; always releases of. Returns 0
 * or records an io_error (then the target is untouched and the temporary file removed). */
int outfile_commit(struct outfile *of);
/* Closes and removes the temporary file; the target is untouched. Safe to call twice. */
void outfile_abort(struct outfile *of);
/* The whole thing for data already in memory. */
int outfile_write_all(const char *path, const void *buf, size_t len, mode_t mode);
/* The same in the directory open at dirfd (an O_PATH descriptor will do), by name alone: for a
 * directory reached by a checked walk, which a path would resolve again (dir is for messages).
 * The temporary file, its mode, fsync and rename are outfile_open's and outfile_commit's. */
int outfile_write_all_at(int dirfd, const char *dir, const char *name, const void *buf,
                         size_t len, mode_t mode);
/* A new file that stays where it is made (no target to rename over: a page the browser opens
 * after scry exits): dir/PREFIX<12 random characters>SUFFIX, created with O_EXCL|O_NOFOLLOW and
 * mode 0600, holding buf. Its name goes to path (size bytes). Returns 0, or records an io_error
 * and leaves nothing behind. */
int outfile_write_new(const char *dir, const char *prefix, const char *suffix, const void *buf,
                      size_t len, char *path, size_t size);

#endif
