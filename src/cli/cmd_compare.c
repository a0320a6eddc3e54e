/* `scry compare before.json after.json [--fail-above PCT] [--json|--html [-o FILE]]`: what got
 * slower or bigger between two profiles of one program, per function and per line, with
 * intervals from the sampling error (analysis/compare.h); for CI, --fail-above exits with status
 * 1 when something regressed by more than PCT percent. --html writes the report as a
 * self-contained page (the browser view's, render/profile_html.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/outfile.h"
#include "render/compare_render.h"
#include "render/profile_html.h"

const char cmd_compare_usage[] =
    "usage: scry compare [--fail-above PCT] [--normalize] [--top N]\n"
    "                    [--json | --html [-o FILE]] before.json after.json\n"
    "\n"
    "Compares two profiles of the same program (scry run): per function and per line, the\n"
    "change of the time (and of its Python, native and system parts) and of the memory\n"
    "allocated and kept, with a 95% interval from the sampling error. A change is significant\n"
    "when it is at least 3 standard errors (|z| >= 3); significant changes are listed, the\n"
    "most significant first.\n"
    "\n";

int cli_load_pdoc(const char *path, struct pdoc *d)
{
    char *data = NULL;
    size_t len = 0;
    int err = cli_read_file(path, &data, &len);
    if (!err)
        err = pdoc_load_bytes(d, data, len, path);
    free(data);
    return err;
}

int cli_compare_report(const char *before_path, const char *after_path, bool normalize,
                       struct strbuf *out)
{
    struct pdoc before, after;
    struct cmp_result r = {0};
    struct compare_render_opts o = {.fail_above = -1, .before_path = before_path,
                                    .after_path = after_path, .before = &before,
                                    .after = &after};
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    int err = cli_load_pdoc(before_path, &before);
    if (!err)
        err = cli_load_pdoc(after_path, &after);
    if (!err)
        err = cmp_profiles(&before, &after, normalize, &r);
    if (!err)
        compare_render_json(&r, &o, out);
    cmp_free(&r);
    pdoc_free(&before);
    pdoc_free(&after);
    return err;
}

/* --html: the JSON report, names cleaned by the one sanitizer, embedded in the browser view's
 * page (web/compare.js draws it); written through the output helper, 0600. */
static int write_page(const struct cmp_result *r, const struct compare_render_opts *o,
                      const char *dest, size_t *nreg)
{
    struct compare_render_opts po = *o;
    struct strbuf doc = STRBUF_INIT, page = STRBUF_INIT, title = STRBUF_INIT;
    struct profile_html_opts ho = {.threshold = 1, .scry_version = SCRY_VERSION};
    po.clean = true;
    *nreg = compare_render_json(r, &po, &doc);
    sb_addf(&title, "compare %s \xe2\x86\x92 %s", o->before_path, o->after_path);
    int err = profile_html_render_page(&profile_html_web_assets, "compare", sb_str(&title),
                                       doc.buf, doc.len, &ho, &page);
    if (!err)
        err = outfile_write_all(dest, page.buf ? page.buf : "", page.len, OUTFILE_PRIVATE);
    sb_release(&doc);
    sb_release(&page);
    sb_release(&title);
    return err;
}

int cmd_compare(int argc, char **argv)
{
    bool json = cli_wants_json(argc, argv);
    struct compare_render_opts o = {.fail_above = -1, .top = 20};
    bool normalize = false, html = false;
    const char *outfile = NULL;
    struct opt_parser p;
    opt_begin(&p, OC_COMPARE, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_FAIL_ABOVE:
            o.fail_above = p.num;
            break;
        case OPT_TOP_OR_ALL:
            o.top = (size_t)p.ival;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_NORMALIZE:
            normalize = true;
            break;
        case OPT_HTML:
            html = true;
            break;
        case OPT_OUTFILE:
            outfile = p.arg;
            break;
        case OPT_HELP:
            return cli_help();
        }
    }
    if (c < 0)
        return c;
    if (argc - optind != 2)
        return cli_usage("give two profiles: scry compare before.json after.json");
    if (html && json)
        return cli_usage("give one of --json and --html");
    if (outfile && !html)
        return cli_usage("-o names the page's file: it goes with --html");
    o.before_path = argv[optind];
    o.after_path = argv[optind + 1];

    struct pdoc before, after;
    struct cmp_result r = {0};
    struct strbuf out = STRBUF_INIT;
    int status = CLI_EXIT_OK;
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    if (cli_load_pdoc(o.before_path, &before) != 0 || cli_load_pdoc(o.after_path, &after) != 0 ||
        cmp_profiles(&before, &after, normalize, &r) != 0) {
        status = cli_report_error(json);
        goto out;
    }
    o.before = &before;
    o.after = &after;
    size_t nreg;
    if (html) {
        const char *dest = outfile ? outfile : "scry-compare.html";
        if (write_page(&r, &o, dest, &nreg) != 0) {
            status = cli_report_error(false);
            goto out;
        }
        sb_addf(&out, "%s\n", san_str(dest));
    } else {
        nreg = json ? compare_render_json(&r, &o, &out) : compare_render_text(&r, &o, &out);
    }
    cli_print(&out);
    if (nreg) {
        fprintf(stderr, "scry: %zu entr%s regressed by more than %g%% (--fail-above)\n", nreg,
                nreg == 1 ? "y" : "ies", o.fail_above);
        status = CLI_EXIT_ERROR;
    }
out:
    sb_release(&out);
    cmp_free(&r);
    pdoc_free(&before);
    pdoc_free(&after);
    return status;
}
