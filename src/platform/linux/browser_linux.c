/* platform/browser.h on Linux (and other systems with a desktop of the freedesktop kind): the
 * first command of $BROWSER (Python's webbrowser convention, a colon-separated list), else
 * xdg-open, with the page's path as its argument and stdio on /dev/null. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "platform/browser.h"

/* Starts `prog path` with stdio on /dev/null and does not wait for it: its pid, or -1 when it
 * could not be started (fork failed, or exec did: the child reports exec's errno through a
 * close-on-exec pipe, which an exec that works closes without a word). */
static pid_t launch_start(const char *prog, const char *path)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        int fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp(prog, prog, path, (char *)NULL);
        int e = errno;
        ssize_t w = write(p[1], &e, sizeof(e));
        (void)w;
        _exit(127);
    }
    close(p[1]);
    int e = 0;
    ssize_t r;
    while ((r = read(p[0], &e, sizeof(e))) < 0 && errno == EINTR)
        ;
    close(p[0]);
    if (pid > 0 && r > 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    return pid;
}

/* Runs `prog path` and waits for it (xdg-open and most browsers' launchers return once the page
 * is handed over); true if it exited with status 0. */
static bool launch(const char *prog, const char *path)
{
    pid_t pid = launch_start(prog, path);
    if (pid < 0)
        return false;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static bool have_display(void)
{
    const char *d = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");
    return (d && *d) || (w && *w);
}

bool pf_browser_open(const char *path, const char **why)
{
    *why = "there is no display here (DISPLAY and WAYLAND_DISPLAY are unset)";
    if (!have_display())
        return false;
    *why = "no browser could be started ($BROWSER, xdg-open)";
    /* The first command of $BROWSER (Python's webbrowser convention, a colon-separated list),
     * else xdg-open. */
    const char *b = getenv("BROWSER");
    if (b && *b) {
        char cmd[PATH_MAX];
        snprintf(cmd, sizeof(cmd), "%.*s", (int)strcspn(b, ":"), b);
        if (*cmd && launch(cmd, path))
            return true;
    }
    return launch("xdg-open", path);
}

pid_t pf_browser_start(const char *path, const char **why)
{
    *why = "there is no display here (DISPLAY and WAYLAND_DISPLAY are unset)";
    if (!have_display())
        return -1;
    *why = "no browser could be started ($BROWSER, xdg-open)";
    const char *b = getenv("BROWSER");
    pid_t pid = -1;
    if (b && *b) {
        char cmd[PATH_MAX];
        snprintf(cmd, sizeof(cmd), "%.*s", (int)strcspn(b, ":"), b);
        if (*cmd)
            pid = launch_start(cmd, path);
    }
    return pid >= 0 ? pid : launch_start("xdg-open", path);
}
