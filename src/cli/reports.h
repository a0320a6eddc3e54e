/* The commands' reports as functions: what `scry stacks`, `dump`, `analyze`, `query`, `diff` and
 * `compare` print, made by the same code the command runs, into a buffer instead of stdout, for
 * `scry mcp` (the commands call them too). Each returns 0, or a negative error it recorded
 * (err_fail: the stable code, the message and the hint) and leaves out empty. */
#ifndef SCRY_CLI_REPORTS_H
#define SCRY_CLI_REPORTS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/strbuf.h"

/* `scry stacks --pid PID [--json]`. */
int cli_stacks_report(int pid, bool json, struct strbuf *out);
/* `scry dump --pid PID -o OUTPUT [--json]`: writes the snapshot, reports what was written. */
int cli_dump_report(int pid, const char *output, bool json, struct strbuf *out);
/* The same with the live allocation samples from ask (asked before and after the walk, as of an
 * agent: `scry record --allocations --dump`), which fills t (struct alloc_table,
 * attach/run_link.h). */
struct alloc_table;
int cli_dump_report_samples(int pid, const char *output, bool json,
                            int (*ask)(void *ctx, struct alloc_table *t), void *ctx,
                            struct strbuf *out);
/* `scry analyze --top LIMIT PATH [--json]`. */
int cli_analyze_report(const char *path, size_t limit, bool json, struct strbuf *out);
/* `scry query PATH --type ARG | --retaining-path ARG | --locate ARG [--json]`. */
enum cli_query { CLI_QUERY_TYPE, CLI_QUERY_PATH, CLI_QUERY_LOCATE };
int cli_query_report(const char *path, enum cli_query q, const char *arg, bool json,
                     struct strbuf *out);
/* `scry diff --top LIMIT BEFORE AFTER [--json]`. */
int cli_diff_report(const char *before, const char *after, size_t limit, bool json,
                    struct strbuf *out);
/* `scry compare [--normalize] BEFORE AFTER --json`. */
int cli_compare_report(const char *before, const char *after, bool normalize, struct strbuf *out);
/* A profile document read into flat tables (analysis/profile_doc.h), as compare reads it. */
struct pdoc;
int cli_load_pdoc(const char *path, struct pdoc *d);

#endif
