/* Opening a page (a local HTML file) in the user's browser, for `scry view` and `scry run --web`.
 * linux/browser_linux.c: $BROWSER, else xdg-open, when there is a display. */
#ifndef SCRY_PLATFORM_BROWSER_H
#define SCRY_PLATFORM_BROWSER_H

#include <stdbool.h>
#include <sys/types.h>

/* Opens the page and waits for the launcher (which returns once the page is handed over). False,
 * with *why saying why, when nothing opened it (no display, no browser). */
bool pf_browser_open(const char *path, const char **why);

/* The same without waiting (a browser may stay in the foreground): the started command's pid,
 * for the caller to reap, or -1 with *why. Started means the command ran, not that a page
 * opened. */
pid_t pf_browser_start(const char *path, const char **why);

#endif
