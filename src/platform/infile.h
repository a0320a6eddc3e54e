/* The one way scry opens a file it reads (profiles, snapshots, cores, ELF images, sources):
 * regular files only, opened with O_NONBLOCK so that a FIFO or a device named by a user or by a
 * core's file notes can never block the open or feed bytes forever, and with a size cap where
 * the whole file is read into memory. */
#ifndef SCRY_PLATFORM_INFILE_H
#define SCRY_PLATFORM_INFILE_H

#include <stddef.h>
#include <stdint.h>

/* The largest profile (scry-profile.json, a part file, a source file) read into memory: parsing
 * takes several times the file's size. */
#define INFILE_MAX_READ ((uint64_t)1 << 30)

/* Opens path for reading if it is a regular file of at most max bytes (0: no cap). Returns 0
 * with *fd (close-on-exec, blocking again) and *size, or records io_error (cannot open, not a
 * regular file) or too_large. what names the file in messages ("profile", "core"). */
int infile_open(const char *path, const char *what, uint64_t max, int *fd, uint64_t *size);
/* Reads a whole regular file of at most max bytes into a malloc'd, NUL-terminated buffer. */
int infile_read_all(const char *path, const char *what, uint64_t max, char **data, size_t *len);

#endif
