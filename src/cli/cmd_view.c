/* `scry view [--cli|--html|--standalone] [profile.json]`: a profile written by `scry run` (or by
 * Scalene: same schema), rendered from the JSON file alone: in the terminal (--cli), or as one
 * self-contained HTML page (docs/viewer.md) that is written to a file and, by default, opened in
 * the browser when there is a display. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
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
    "\n"
    "      --cli                     the terminal view\n"
    "      --html                    write the page to scry-profile.html (or -o FILE) and print\n"
    "                                its path; nothing is opened\n"
    "      --standalone              the same single self-contained file (--html is one too)\n"
    "  -o, --outfile FILE            where the page goes (--html, --standalone, or the default)\n"
    "      --cpu-percent-threshold P hide lines, functions and files under P% of the time\n"
    "                                (default 1; 0 shows every line); in the page, the level\n"
    "                                under which \"hide quiet lines\" hides a line\n"
    "      --no-color                no colours even on a terminal\n"
    "      --serve, --propose        serve the page from 127.0.0.1 at a URL with a random\n"
    "                                token instead of writing it, with a \"propose\" action\n"
    "                                that asks a language model for a faster version of a\n"
    "                                line, region or function (docs/optimize.md); Ctrl-C\n"
    "                                stops it\n"
    "      --port P                  the port --serve listens on (default: any free one)\n"
    "      --provider P, --base-url URL, --model M, --deployment D, --api-version V,\n"
    "      --region R, --api-key-env NAME\n"
    "                                with --serve: the provider whose key (from scry's\n"
    "                                environment, as for `scry optimize`) the page's proposals\n"
    "                                may use, and its settings; the environment's key goes to\n"
    "                                this provider and base URL only (without --provider: to\n"
    "                                each provider's own endpoint); a base URL typed in the\n"
    "                                page gets only a key typed there\n"
    "      --format folded|speedscope  export the profile's call stacks (scry run --stacks)\n"
    "                                as folded stacks or a speedscope file, to -o FILE or\n"
    "                                standard output\n"
    "      --format pprof|trace|firefox  export the whole profile: gzipped pprof (go tool\n"
    "                                pprof, Pyroscope), Trace Event JSON (Perfetto), the\n"
    "                                Firefox Profiler's format (docs/export-formats.md)\n";
enum view_mode { VIEW_BROWSER, VIEW_CLI, VIEW_HTML, VIEW_STANDALONE };

/* One of --serve's provider settings (the names of `scry optimize`): 0, or a usage error
 * recorded. */
static int llm_option(int c, const char *arg, struct serve_llm *llm)
{
    bool user = false;
    switch (c) {
    case 'b':
        if (push_url_kind(arg, &user) != PUSH_URL_OK || user)
            return cli_usage("--base-url needs http(s)://host[:port][/path] without a query or "
                             "credentials, not '%s'",
                             arg);
        llm->base_url = arg;
        return 0;
    case 'm':
        llm->model = arg;
        return 0;
    case 'd':
        llm->deployment = arg;
        return 0;
    case 'v':
        llm->api_version = arg;
        return 0;
    case 'r':
        llm->region = arg;
        return 0;
    case 'k':
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
    static const struct option longopts[] = {
        {"cli", no_argument, NULL, 'c'},
        {"html", no_argument, NULL, 'H'},
        {"standalone", no_argument, NULL, 'S'},
        {"outfile", required_argument, NULL, 'o'},
        {"cpu-percent-threshold", required_argument, NULL, 't'},
        {"no-color", no_argument, NULL, 'C'},
        {"format", required_argument, NULL, 'F'},
        {"serve", no_argument, NULL, 's'},
        {"propose", no_argument, NULL, 's'},
        {"port", required_argument, NULL, 'p'},
        {"provider", required_argument, NULL, 'P'},
        {"base-url", required_argument, NULL, 'b'},
        {"model", required_argument, NULL, 'm'},
        {"deployment", required_argument, NULL, 'd'},
        {"api-version", required_argument, NULL, 'v'},
        {"region", required_argument, NULL, 'r'},
        {"api-key-env", required_argument, NULL, 'k'},
        {"api-key", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    enum view_mode mode = VIEW_BROWSER;
    const char *outfile = NULL, *format = NULL;
    bool serve = false, llm_opts = false;
    struct serve_llm llm = {0};
    long port = -1;
    struct profile_text_opts o = {.color = cli_color_stdout(), .threshold = 1.0};
    opterr = 0;
    optind = 1;
    int c, status;
    while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        enum view_mode want = mode;
        switch (c) {
        case 'c':
            want = VIEW_CLI;
            break;
        case 'H':
            want = VIEW_HTML;
            break;
        case 'S':
            want = VIEW_STANDALONE;
            break;
        case 'o':
            outfile = optarg;
            break;
        case 't':
            if (!cli_parse_percent(optarg, &o.threshold))
                return cli_usage("--cpu-percent-threshold needs a percentage from 0 to 100, "
                                 "not '%s'",
                                 optarg);
            break;
        case 'C':
            o.color = false;
            break;
        case 'F':
            format = optarg;
            break;
        case 's':
            serve = true;
            break;
        case 'p': {
            char *end;
            port = strtol(optarg, &end, 10);
            if (*end || end == optarg || port < 1 || port > 65535)
                return cli_usage("--port needs a port from 1 to 65535, not '%s'", optarg);
            break;
        }
        case 'P':
            if (!llm_find(optarg))
                return cli_usage("--provider takes one of %s, not '%s'", llm_names(), optarg);
            llm.provider = optarg;
            break;
        case 'b':
        case 'm':
        case 'd':
        case 'v':
        case 'r':
        case 'k':
        case 'K':
            if ((status = llm_option(c, optarg, &llm)) != 0)
                return status;
            llm_opts = true;
            break;
        case 'h':
            return cli_help();
        default:
            return cli_option_error(c, argv);
        }
        if (want != mode && mode != VIEW_BROWSER)
            return cli_usage("give one of --cli, --html and --standalone");
        mode = want;
    }
    if (argc - optind > 1)
        return cli_usage("unexpected argument '%s' (give one profile)",
                         argv[optind + 1]);
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
        return cli_view_export(optind < argc ? argv[optind] : "scry-profile.json", format,
                               outfile);
    if (mode == VIEW_CLI && outfile)
        return cli_usage("-o writes the HTML page; the terminal view goes to "
                         "standard output");
    const char *path = optind < argc ? argv[optind] : "scry-profile.json";

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
