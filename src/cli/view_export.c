/* `scry view --format pprof|trace|firefox -o FILE`: exports that read the whole profile document (time
 * split and memory per line, call stacks) rather than only its stacks. cmd_flamegraph.c's
 * cli_view_export hands these formats over. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/profile_doc.h"
#include "cli/cli.h"
#include "common/error.h"
#include "render/firefox_profile.h"
#include "render/pprof.h"
#include "render/trace_event.h"

bool cli_view_doc_format(const char *format)
{
    return strcmp(format, "pprof") == 0 || strcmp(format, "trace") == 0 ||
           strcmp(format, "firefox") == 0;
}

int cli_view_export_doc(const char *path, const char *format, const char *outfile)
{
    char *data = NULL;
    size_t len = 0;
    struct pdoc d;
    struct strbuf out = STRBUF_INIT;
    int status = CLI_EXIT_OK;
    memset(&d, 0, sizeof(d));
    if (strcmp(format, "pprof") == 0 && (!outfile || strcmp(outfile, "-") == 0) &&
        isatty(1)) {
        status = cli_usage_error(false, "--format pprof writes gzipped binary data: give -o FILE");
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
