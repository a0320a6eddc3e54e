/* The browser view's page of a profile (render/profile_html), written to a file for a browser
 * (platform/browser.h opens it): shared by `scry view` (its default mode, --html, --standalone)
 * and `scry run` (--html, --web, --no-browser). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"
#include "platform/outfile.h"
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
