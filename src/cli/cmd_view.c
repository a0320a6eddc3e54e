/* `scry view --cli [profile.json]`: the terminal view of a profile written by `scry run` (or by
 * Scalene: same schema), rendered from the JSON file alone. The browser view comes later. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/error.h"
#include "render/profile_text.h"

static const char view_usage[] =
    "usage: scry view --cli [--cpu-percent-threshold P] [--no-color] [profile.json]\n"
    "\n"
    "Shows a profile written by `scry run` (default: scry-profile.json) in the terminal: per\n"
    "file, the source lines with their share of the time as Python, native and system time\n"
    "(lines at or above 33% highlighted), then a function summary and the totals.\n"
    "\n"
    "      --cli                     the terminal view (the browser view comes in a later\n"
    "                                version of scry)\n"
    "      --cpu-percent-threshold P hide lines, functions and files under P% of the time\n"
    "                                (default 1; 0 shows every line)\n"
    "      --no-color                no colours even on a terminal\n"
    "      --format folded|speedscope  export the profile's call stacks (scry run --stacks)\n"
    "                                as folded stacks or a speedscope file, to -o FILE or\n"
    "                                standard output\n";

int cli_read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_fail(SCRY_E_IO, "cannot open %s: %s", path, strerror(errno));
    struct strbuf sb = STRBUF_INIT;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        sb_add(&sb, buf, n);
    int failed = ferror(f);
    int saved = errno;
    fclose(f);
    if (failed) {
        sb_release(&sb);
        return err_fail(SCRY_E_IO, "cannot read %s: %s", path, strerror(saved));
    }
    *len = sb.len;
    *data = sb_detach(&sb);
    return 0;
}

bool cli_parse_percent(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 100)
        return false;
    *out = v;
    return true;
}

int cmd_view(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"cli", no_argument, NULL, 'c'},
        {"cpu-percent-threshold", required_argument, NULL, 't'},
        {"no-color", no_argument, NULL, 'C'},
        {"format", required_argument, NULL, 'F'},
        {"outfile", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool cli = false;
    const char *outfile = NULL, *format = NULL;
    struct profile_text_opts o = {.color = cli_color_stdout(), .threshold = 1.0};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+:ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            cli = true;
            break;
        case 't':
            if (!cli_parse_percent(optarg, &o.threshold))
                return cli_usage_error(false,
                                       "--cpu-percent-threshold needs a percentage from 0 to 100, "
                                       "not '%s'",
                                       optarg);
            break;
        case 'C':
            o.color = false;
            break;
        case 'F':
            format = optarg;
            break;
        case 'o':
            outfile = optarg;
            break;
        case 'h':
            fputs(view_usage, stdout);
            return CLI_EXIT_OK;
        case ':':
            return cli_usage_error(false, "option %s needs a value", argv[optind - 1]);
        default:
            return cli_usage_error(false, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind > 1)
        return cli_usage_error(false, "unexpected argument '%s' (give one profile)",
                               argv[optind + 1]);
    if (format && cli)
        return cli_usage_error(false, "--format exports stacks; it goes without --cli");
    if (format)
        return cli_view_export(optind < argc ? argv[optind] : "scry-profile.json", format,
                               outfile);
    if (outfile)
        return cli_usage_error(false, "-o goes with --format");
    if (!cli)
        return cli_usage_error(false, "the browser view arrives with a later version of scry; "
                                      "use 'scry view --cli' for the terminal view");
    const char *path = optind < argc ? argv[optind] : "scry-profile.json";

    char *data = NULL;
    size_t len = 0;
    struct strbuf out = STRBUF_INIT;
    int status = CLI_EXIT_OK;
    if (cli_read_file(path, &data, &len) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (profile_text_render_bytes(data, len, path, &o, &out) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (cli_write_stdout(&out) != 0)
        status = cli_report_error(false);
out:
    free(data);
    sb_release(&out);
    return status;
}
