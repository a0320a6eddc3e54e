/* `scry optimize profile.json FILE[:LINE[-LINE]] --provider P`: sends a region of a profiled
 * file with its figures to the language model the user picks and shows the proposed code as a
 * diff, with the model's reasons (docs/optimize.md). The key comes from the environment only:
 * a command line is visible to every user of the machine. What looks secret in the source is
 * redacted before it is sent, and said on stderr (--no-redact opts out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "llm/llm_providers.h"
#include "llm/optimize_prompt.h"

const char cmd_optimize_usage[] =
    "usage: scry optimize [options] profile.json FILE[:LINE[-LINE]] --provider P\n"
    "\n"
    "Asks a language model for a faster version of a region of a profiled file: the region's\n"
    "source lines with their figures from the profile (Python/native/system time, memory,\n"
    "copy volume), the lines around it, the file's imports and the function it is in are\n"
    "sent to the provider; its proposal is shown as a diff of the region, with its reasons.\n"
    "FILE is a file of the profile (its path, or the end of it); without lines, the region\n"
    "is the file's hottest function (--function NAME: that function). Nothing is changed on\n"
    "disk. What is sent, and what never is: docs/optimize.md.\n"
    "\n";

/* The diff and the reasons for a terminal: every line cleaned (a model's answer is
 * untrusted). */
static void add_clean_lines(struct strbuf *out, const char *indent, const char *t)
{
    while (*t) {
        size_t n = strcspn(t, "\n");
        sb_adds(out, indent);
        san_addn(out, t, n);
        sb_addch(out, '\n');
        t += n + (t[n] == '\n');
    }
}

/* doc (a new reference, released here; NULL: out of memory) as indented JSON and a newline. */
static int add_json(struct strbuf *out, json_t *doc)
{
    char *s = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    json_decref(doc);
    if (!s)
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    sb_addf(out, "%s\n", s);
    free(s);
    return 0;
}

/* Before anything is sent: what redaction took out (line numbers and names, never values). */
static void say_redactions(const struct opt_result *res)
{
    if (!res->redactions.len)
        return;
    fprintf(stderr, "scry: redacted before sending (what looks like a secret is sent as "
                    "<redacted>; --no-redact sends it as it is):\n");
    struct strbuf sb = STRBUF_INIT;
    add_clean_lines(&sb, "  ", sb_str(&res->redactions));
    fputs(sb_str(&sb), stderr);
    sb_release(&sb);
}

int cmd_optimize(int argc, char **argv)
{
    struct llm_config cfg = {0};
    struct opt_request req = {0};
    const char *provider = NULL;
    bool json = false, show = false;
    struct opt_parser p;
    opt_begin(&p, OC_OPTIMIZE, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_PROVIDER:
            provider = p.arg;
            break;
        case OPT_MODEL:
            cfg.model = p.arg;
            break;
        case OPT_BASE_URL:
            cfg.base_url = p.arg;
            break;
        case OPT_FUNCTION:
            req.function = p.arg;
            break;
        case OPT_DEPLOYMENT:
            cfg.deployment = p.arg;
            break;
        case OPT_API_VERSION:
            cfg.api_version = p.arg;
            break;
        case OPT_REGION:
            cfg.region = p.arg;
            break;
        case OPT_API_KEY_ENV:
            if (!*p.arg || strspn(p.arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                         "0123456789_") != strlen(p.arg))
                return cli_usage("--api-key-env takes the NAME of a variable holding the key, "
                                 "not a key");
            cfg.key_env = p.arg;
            break;
        case OPT_API_KEY:
            /* The value is not repeated: it is a secret. */
            return cli_usage("scry takes no key on the command line (every user sees it in "
                             "ps); export it, or name its variable with --api-key-env");
        case OPT_TIMEOUT:
            cfg.timeout_sec = p.num;
            break;
        case OPT_SHOW_PROMPT:
            show = true;
            break;
        case OPT_NO_REDACT:
            req.no_redact = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case OPT_HELP:
            return cli_help();
        }
    }
    if (c < 0)
        return c;
    if (argc - optind != 2)
        return cli_usage("give the profile and the region: scry optimize profile.json "
                         "FILE[:LINE[-LINE]] --provider P");
    if (!show && !provider)
        return cli_usage("give the provider with --provider (%s)", llm_names());
    if (provider && !(cfg.provider = llm_find(provider)))
        return cli_usage("unknown provider '%s' (%s)", provider, llm_names());
    int err = opt_parse_location(argv[optind + 1], &req);
    if (err)
        return err;
    if (req.first && req.function)
        return cli_usage("give lines or --function, not both");
    if (cfg.key_env && cfg.provider && !llm_takes_key(cfg.provider))
        return cli_usage("bedrock signs with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; "
                         "--api-key-env is for the other providers");

    char *data = NULL;
    size_t len = 0;
    struct pdoc profile = {0};
    struct opt_result res = {0};
    struct strbuf out = STRBUF_INIT;
    if ((err = cli_read_file(argv[optind], &data, &len)))
        goto out;
    if ((err = pdoc_load_bytes(&profile, data, len, argv[optind])))
        goto out;
    if ((err = opt_prepare(&profile, &req, &res)))
        goto out;
    say_redactions(&res);
    if (show && json) {
        err = add_json(&out, json_pack("{s:s,s:s}", "system", opt_system_prompt, "user",
                                       sb_str(&res.prompt)));
        goto out;
    }
    if (show) {
        sb_addf(&out, "system:\n");
        add_clean_lines(&out, "  ", opt_system_prompt);
        sb_addf(&out, "user:\n");
        add_clean_lines(&out, "  ", sb_str(&res.prompt));
        goto out;
    }
    if ((err = opt_send(&cfg, &res)))
        goto out;
    if (json) {
        err = add_json(&out, opt_result_json(&res));
        goto out;
    }
    sb_addf(&out, "proposal of %s (%s) for %s:%ld-%ld", san_str(res.provider),
            san_str(res.model), san_str(res.file), res.first, res.last);
    if (*res.function)
        sb_addf(&out, " (in %s)", san_str(res.function));
    sb_adds(&out, "\n\n");
    add_clean_lines(&out, "", sb_str(&res.diff));
    sb_adds(&out, "\nreasons:\n");
    add_clean_lines(&out, "  ", sb_str(&res.reasons));
    sb_adds(&out, "\nnothing was changed on disk; review the code and its tests before using "
                  "it\n");
out:
    if (!err)
        cli_print(&out);
    sb_release(&out);
    opt_result_free(&res);
    pdoc_free(&profile);
    free(data);
    return err;
}
