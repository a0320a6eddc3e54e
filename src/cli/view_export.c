/* `scry view --format FORMAT [-o FILE]`: the profile for other tools. folded and speedscope
 * carry its call stacks (read as `scry flamegraph` reads them; speedscope a profile per thread
 * in time order from the sample stream when there is one); pprof, trace and firefox read the
 * whole profile document (time split and memory per line, call stacks). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/profile_doc.h"
#include "analysis/stacks.h"
#include "cli/cli.h"
#include "common/error.h"
#include "render/firefox_profile.h"
#include "render/pprof.h"
#include "render/speedscope.h"
#include "render/trace_event.h"

static bool doc_format(const char *format)
{
    return strcmp(format, "pprof") == 0 || strcmp(format, "trace") == 0 ||
           strcmp(format, "firefox") == 0;
}

static int export_doc(const char *path, const char *format, const char *outfile)
{
    char *data = NULL;
    size_t len = 0;
    struct pdoc d;
    struct strbuf out = STRBUF_INIT;
    int status = CLI_EXIT_OK;
    memset(&d, 0, sizeof(d));
    if (strcmp(format, "pprof") == 0 && (!outfile || strcmp(outfile, "-") == 0) &&
        isatty(1)) {
        status = cli_usage("--format pprof writes gzipped binary data: give -o FILE");
        goto out;
    }
    if (cli_read_file(path, &data, &len) != 0 || pdoc_load_bytes(&d, data, len, path) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (strcmp(format, "pprof") == 0) {
        struct pprof_opts po = {.exporter = "scry " SCRY_VERSION};
        if (pprof_write(&d, &po, &out) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else if (strcmp(format, "firefox") == 0) {
        struct firefox_opts fo = {.exporter = "scry " SCRY_VERSION};
        if (firefox_profile_write(&d, &fo, &out) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else {
        struct trace_opts to = {.exporter = "scry@" SCRY_VERSION};
        trace_event_write(&d, &to, &out);
    }
    if (cli_write_output(outfile, &out) != 0)
        status = cli_report_error(false);
out:
    free(data);
    pdoc_free(&d);
    sb_release(&out);
    return status;
}

/* speedscope of a profile with a sample stream (--timeline): a profile per thread, in time
 * order. 1 when the profile has no stream (or is not one this reads): the merged call tree. */
static int speedscope_stream(const char *path, const char *outfile)
{
    char *data = NULL;
    size_t len = 0;
    struct pdoc d;
    struct strbuf out = STRBUF_INIT;
    int status = 1;
    memset(&d, 0, sizeof(d));
    if (cli_read_file(path, &data, &len) == 0 && pdoc_load_bytes(&d, data, len, path) == 0 &&
        d.have_stream && d.nss_samples && d.nss_threads) {
        struct speedscope_opts so = {.name = d.program[0] ? d.program : NULL,
                                     .exporter = "scry@" SCRY_VERSION};
        status = speedscope_write_stream(&d, &so, &out) != 0 || cli_write_output(outfile, &out)
                     ? cli_report_error(false)
                     : CLI_EXIT_OK;
    }
    free(data);
    pdoc_free(&d);
    sb_release(&out);
    return status;
}

int cli_view_export(const char *path, const char *format, const char *outfile)
{
    bool folded = strcmp(format, "folded") == 0;
    if (doc_format(format))
        return export_doc(path, format, outfile);
    int ss = strcmp(format, "speedscope") == 0 ? speedscope_stream(path, outfile) : 1;
    if (ss != 1)
        return ss;
    if (!folded && strcmp(format, "speedscope") != 0)
        return cli_usage("--format takes folded, speedscope, pprof, trace or firefox, not '%s'",
                         format);
    struct stk_tree t;
    stk_init(&t, false);
    struct strbuf out = STRBUF_INIT;
    struct pdoc doc = {0};
    int status = CLI_EXIT_OK;
    if (cli_load_profile_stacks(path, &t, false, false, &doc) != 0 || stk_finish(&t) != 0) {
        status = cli_report_error(false);
        goto out;
    }
    if (folded) {
        if (stk_write_folded(&t, &out) != 0) {
            status = cli_report_error(false);
            goto out;
        }
    } else {
        struct speedscope_opts so = {.name = cli_profile_program(&doc), .unit = "none",
                                     .exporter = "scry@" SCRY_VERSION};
        speedscope_write(&t, &so, &out);
    }
    if (cli_write_output(outfile, &out) != 0)
        status = cli_report_error(false);
out:
    pdoc_free(&doc);
    sb_release(&out);
    stk_free(&t);
    return status;
}

