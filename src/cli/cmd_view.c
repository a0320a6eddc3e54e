/* `scry view [--cli|--html|--standalone] [profile.json]`: a profile written by `scry run` (or by
 * Scalene: same schema), rendered from the JSON file alone: in the terminal (--cli), or as one
 * self-contained HTML page (docs/viewer.md) that is written to a file and, by default, opened in
 * the browser when there is a display. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "http/serve_http.h"
#include "llm/llm_providers.h"
#include "platform/browser.h"
#include "platform/infile.h"
#include "push/push.h"
#include "render/profile_text.h"

const char cmd_view_usage[] =
    "usage: scry view [--cli|--html|--standalone] [-o FILE] [--cpu-percent-threshold P]\n"
    "                 [--no-color] [profile.json]\n"
    "\n"
    "Shows a profile written by `scry run` (default: scry-profile.json): per file, the source\n"
    "lines with their share of the time as Python, native and system time (and memory, copy\n"
    "volume, leaks and GPU use when the profile has them), a function summary and the totals.\n"
    "\n"
    "Without a mode, the browser view: the page is written to a temporary file and opened with\n"
    "$BROWSER or xdg-open when there is a display (DISPLAY or WAYLAND_DISPLAY); otherwise its\n"
    "path is printed. The page is one self-contained file and makes no network request.\n"
    "\n";
enum view_mode { VIEW_BROWSER, VIEW_CLI, VIEW_HTML, VIEW_STANDALONE };

/* One of --serve's provider settings (the names of `scry optimize`): 0, or a usage error
 * recorded. */
static int llm_option(int c, const char *arg, struct serve_llm *llm)
{
    bool user = false;
    switch (c) {
    case OPT_BASE_URL:
        if (push_url_kind(arg, &user) != PUSH_URL_OK || user)
            return cli_usage("--base-url needs http(s)://host[:port][/path] without a query or "
                             "credentials, not '%s'",
                             arg);
        llm->base_url = arg;
        return 0;
    case OPT_MODEL:
        llm->model = arg;
        return 0;
    case OPT_DEPLOYMENT:
        llm->deployment = arg;
        return 0;
    case OPT_API_VERSION:
        llm->api_version = arg;
        return 0;
    case OPT_REGION:
        llm->region = arg;
        return 0;
    case OPT_API_KEY_ENV:
        if (!*arg || strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                 "0123456789_") != strlen(arg))
            return cli_usage("--api-key-env takes the NAME of a variable holding the key, not "
                             "a key");
        llm->key_env = arg;
        return 0;
    default: /* --api-key: the value is not repeated, it is a secret */
        return cli_usage("scry takes no key on the command line (every user sees it in ps); "
                         "export it, or name its variable with --api-key-env");
    }
}

static int view_html(enum view_mode mode, const char *path, const char *outfile,
                     const char *data, size_t len, double threshold)
{
    char page[PATH_MAX];
    const char *dest = mode != VIEW_BROWSER && !outfile ? "scry-profile.html" : outfile;
    if (cli_page_write(data, len, path, threshold, dest, page, sizeof(page)) != 0)
        return cli_report_error(false);
    if (mode != VIEW_BROWSER) {
        printf("%s\n", san_str(page));
        return CLI_EXIT_OK;
    }
    char abs[PATH_MAX];
    const char *shown = realpath(page, abs) ? abs : page, *why;
    if (pf_browser_open(shown, &why)) {
        fprintf(stderr, "scry: opened %s in the browser\n", san_str(shown));
    } else {
        printf("%s\n", san_str(shown));
        fprintf(stderr,
                "scry: wrote the page to %s; %s: open it in a browser on a machine with one (the "
                "file is self-contained), or write it where you want with 'scry view --html -o "
                "FILE'\n",
                san_str(shown), why);
    }
    return CLI_EXIT_OK;
}

int cmd_view(int argc, char **argv)
{
    enum view_mode mode = VIEW_BROWSER;
    const char *outfile = NULL, *format = NULL;
    bool serve = false, llm_opts = false;
    struct serve_llm llm = {0};
    long port = -1;
    struct profile_text_opts o = {.color = cli_color_stdout(), .threshold = 1.0};
    struct opt_parser p;
    opt_begin(&p, OC_VIEW, argc, argv, OP_PERMUTE);
    int c, status;
    while ((c = opt_next(&p)) > 0) {
        enum view_mode want = mode;
        switch (c) {
        case OPT_CLI:
            want = VIEW_CLI;
            break;
        case OPT_HTML:
            want = VIEW_HTML;
            break;
        case OPT_STANDALONE:
            want = VIEW_STANDALONE;
            break;
        case OPT_OUTFILE:
            outfile = p.arg;
            break;
        case OPT_CPU_PERCENT_THRESHOLD:
            o.threshold = p.num;
            break;
        case OPT_NO_COLOR:
            o.color = false;
            break;
        case OPT_FORMAT:
            format = p.arg;
            break;
        case OPT_SERVE:
        case OPT_PROPOSE:
            serve = true;
            break;
        case OPT_PORT:
            port = (long)p.ival;
            break;
        case OPT_PROVIDER:
            if (!llm_find(p.arg))
                return cli_usage("--provider takes one of %s, not '%s'", llm_names(), p.arg);
            llm.provider = p.arg;
            break;
        case OPT_HELP:
            return cli_help();
        default: /* the provider's settings */
            if ((status = llm_option(c, p.arg, &llm)) != 0)
                return status;
            llm_opts = true;
            break;
        }
        if (want != mode && mode != VIEW_BROWSER)
            return cli_usage("give one of --cli, --html and --standalone");
        mode = want;
    }
    if (c < 0)
        return c;
    int operand = opt_operand(&p);
    if (argc - operand > 1)
        return cli_usage("unexpected argument '%s' (give one profile)",
                         argv[operand + 1]);
    if (format && mode != VIEW_BROWSER)
        return cli_usage("--format exports the profile; it goes without --cli, "
                         "--html and --standalone");
    if ((port >= 0 || llm.provider || llm_opts) && !serve)
        return cli_usage("--port, --provider and the provider's settings go with --serve");
    if (llm_opts && !llm.provider)
        return cli_usage("--base-url, --model, --deployment, --api-version, --region and "
                         "--api-key-env are settings of the --provider they go with");
    if (serve && (format || mode != VIEW_BROWSER || outfile))
        return cli_usage("--serve serves the page; it goes without --format, --cli, --html, "
                         "--standalone and -o");
    if (format)
        return cli_view_export(operand < argc ? argv[operand] : "scry-profile.json", format,
                               outfile);
    if (mode == VIEW_CLI && outfile)
        return cli_usage("-o writes the HTML page; the terminal view goes to "
                         "standard output");
    const char *path = operand < argc ? argv[operand] : "scry-profile.json";

    char *data = NULL;
    size_t len = 0;
    struct strbuf out = STRBUF_INIT;
    status = CLI_EXIT_OK;
    if (cli_read_file(path, &data, &len) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (serve) {
        if (cli_view_serve(path, data, len, o.threshold, port > 0 ? (unsigned)port : 0,
                           &llm) != 0)
            status = cli_report_error(false);
        goto out;
    }
    if (mode != VIEW_CLI) {
        status = view_html(mode, path, outfile, data, len, o.threshold);
        goto out;
    }
    if (profile_text_render_bytes(data, len, path, &o, &out) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    cli_print(&out);
out:
    free(data);
    sb_release(&out);
    return status;
}
