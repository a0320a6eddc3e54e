/* An optimisation proposal (docs/optimize.md), shared by `scry optimize` and the page that
 * `scry view --serve` serves: the region of a profiled file (lines, a function, or the hottest
 * function), the prompt built from the profile itself (the region's source with its figures,
 * the lines around it, the file's imports, the function it is in), the model's answer split into
 * code and reasons, and a unified diff of the region against the proposed code. */
#ifndef SCRY_LLM_OPTIMIZE_PROMPT_H
#define SCRY_LLM_OPTIMIZE_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "analysis/profile_doc.h"
#include "common/strbuf.h"

struct llm_config;

/* What to optimise: file (as the profile names it, or a path or a unique path suffix), with
 * lines first..last (first 0: not given), or a function by name, or neither: the file's hottest
 * function. */
struct opt_request {
    const char *file;
    long first, last;
    const char *function;
    bool no_redact; /* send the source as it is (--no-redact); by default, redacted */
};

struct opt_result {
    char *file, *function; /* the profile's file name; the enclosing function ("" if none) */
    long first, last;
    char *provider, *model;
    struct strbuf original, code, diff, reasons, prompt;
    /* What redaction took out of the prompt, one "line N: what" per line (never the values);
     * empty when nothing was */
    struct strbuf redactions;
};

#define OPT_REGION_MAX 300 /* lines of a region */
#define OPT_CONTEXT 8      /* lines shown before and after it */

/* Parses FILE, FILE:LINE or FILE:FIRST-LAST into r (file points into spec, which is changed);
 * a usage error otherwise. */
int opt_parse_location(char *spec, struct opt_request *r);
/* Resolves the region in the profile (read and checked by pdoc_load) and builds the prompt (res->prompt holds the
 * user message; the system message is opt_system_prompt). Unless req->no_redact, every text the
 * prompt takes from the profile goes through the snapshot's redaction rule first (cpython/
 * redact.c): in the source, string literals that look secret or are assigned to a name that
 * says it is secret (DB_PASSWORD = "...", "api_key": "..."), names and comments that look
 * secret, become <redacted>; so do the command line's words and the file's path that look
 * secret. res->redactions says what was (res->original, the region, is redacted too: the diff
 * shows what the model changed). Errors: usage (no such file, line or function in the
 * profile). */
int opt_prepare(const struct pdoc *profile, const struct opt_request *req, struct opt_result *res);
extern const char opt_system_prompt[];
/* The model's answer: the first fenced code block is the proposed code (re-indented to the
 * region's indentation when it came back without it), the rest the reasons; then the diff.
 * bad_answer when there is no code block. */
int opt_take_answer(const char *answer, size_t len, struct opt_result *res);
/* Asks the provider with the prepared prompt and takes the answer. */
int opt_send(const struct llm_config *cfg, struct opt_result *res);
/* The redaction of one line of Python source into out (appended): string literals, names,
 * numbers and comments that look secret, and string literals assigned to a secret-sounding
 * name, become <redacted>. *state carries a triple-quoted string across lines (0 at a file's
 * start). What was redacted is appended to what ("; "-separated, without values). Returns
 * whether anything was. */
bool opt_redact_line(const char *t, size_t len, int *state, struct strbuf *out,
                     struct strbuf *what);
/* The whole thing: prepare, ask the provider, take the answer. */
int opt_propose(const struct pdoc *profile, const struct opt_request *req,
                const struct llm_config *cfg, struct opt_result *res);
/* {"file","first_line","last_line","function","provider","model","code","diff","reasons"}. */
json_t *opt_result_json(const struct opt_result *res);
void opt_result_free(struct opt_result *res);

/* A unified diff of old against new (NUL-terminated texts of lines), one hunk, its header
 * numbered from first; appended to out. Returns false when either has more than 4000 lines. */
bool opt_diff(const char *label, long first, const char *old, const char *new_text,
              struct strbuf *out);

#endif
