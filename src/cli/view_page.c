/* The browser view's page of a profile (render/profile_html), written to a file and opened in a
 * browser: shared by `scry view` (its default mode, --html, --standalone) and `scry run` (--html,
 * --web, --no-browser). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/error.h"
#include "common/outfile.h"
#include "render/profile_html.h"

/* A new private file in $TMPDIR (the browser opens it after we exit, so it stays; the system's
 * temp cleaning removes it). */
static int write_temp(const struct strbuf *sb, char *path, size_t size)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if (outfile_write_new(dir, "scry-profile-", ".html", sb->buf ? sb->buf : "", sb->len, path,
                          size) == 0)
        return 0;
    /* The message names the directory; say what to do about it. */
    char msg[512];
    snprintf(msg, sizeof(msg), "%s", err_last_message());
    return err_fail_hint(SCRY_E_IO, "set TMPDIR, or write the page where you want with -o FILE",
                         "%s", msg);
}

int cli_page_write(const char *data, size_t len, const char *what, double threshold,
                   const char *dest, char *path, size_t size)
{
    struct profile_html_opts ho = {.threshold = threshold, .scry_version = SCRY_VERSION};
    struct strbuf page = STRBUF_INIT;
    int err = profile_html_render_bytes(&profile_html_web_assets, data, len, what, &ho, &page);
    if (!err && dest) {
        err = outfile_write_all(dest, page.buf ? page.buf : "", page.len, OUTFILE_PRIVATE);
        if (!err)
            snprintf(path, size, "%s", dest);
    } else if (!err) {
        err = write_temp(&page, path, size);
    }
    sb_release(&page);
    return err;
}

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

bool cli_page_open(const char *path, const char **why)
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

pid_t cli_page_start(const char *path, const char **why)
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
