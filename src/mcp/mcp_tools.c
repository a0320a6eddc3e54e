/* `scry mcp`'s tool table and tools (mcp_tools.h). Every tool calls the code of the command it
 * stands for (cli/reports.h: stacks, dump, analyze, query, diff, compare; analysis/profile_doc.h,
 * the profile model, for a profile's totals, lines, functions and source text: no tool reads
 * the profile document itself), takes that code's JSON document and hands it to
 * mcp_answer, which cuts it to the call's limit and token budget. */
#include "mcp/mcp_tools.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/profile_doc.h"
#include "cli/cli.h"
#include "options/options.h"
#include "cli/reports.h"
#include "common/error.h"
#include "common/log.h"
#include "cpython/runtime.h"
#include "mcp/mcp_answer.h"
#include "mcp/mcp_compare.h"
#include "mcp/mcp_paths.h"
#include "mcp/mcp_schema.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"
#include "reader/reader.h"
#include "reader/reader_impl.h"

#define DEFAULT_LIMIT 20
#define DEFAULT_BUDGET 4000
#define MAX_PROCESSES 4096
#define OUTPUT_TAIL 2000

/* ---- the schemas (JSON text; parsed once, sent by tools/list, checked on every call) ------- */

#define S_LIMIT                                                                                 \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":20,"              \
    "\"description\":\"the most rows of each list in the answer\"}"
#define S_BUDGET                                                                                \
    "\"token_budget\":{\"type\":\"integer\",\"minimum\":200,\"maximum\":200000,\"default\":4000," \
    "\"description\":\"the answer's size in tokens (bytes/4, text and JSON together); rows are " \
    "dropped from the bottom to fit, and the answer says how many\"}"
#define S_PATH(name, what)                                                                      \
    "\"" name "\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"" what \
    "\"}"
#define S_SNAPSHOT S_PATH("snapshot", "path of a heap snapshot (capture_heap, scry dump)")
#define S_PROFILE S_PATH("profile", "path of a profile (run_profile, scry run: scry-profile.json)")
/* An argument that stands for a command-line option has only its description here: its type,
 * range and default come from the option table (option_props, below). */
#define S_PID "\"pid\":{\"description\":\"process id (list_processes)\"}"
#define SCHEMA(props, req)                                                                      \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req "],"                    \
    "\"additionalProperties\":false}"
#define BOUNDED S_LIMIT "," S_BUDGET

struct mcp_call {
    const json_t *args;
    size_t limit, budget;
};

struct tool {
    const char *name, *title, *description, *schema;
    bool read_only;
    json_t *(*call)(const struct mcp_call *c);
    json_t *parsed; /* schema, parsed */
};

static const struct mcp_config *config;
static char work_dir[PATH_MAX - 64]; /* the server's own directory: profiles, snapshots, logs */
static unsigned serial;

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *arg_str(const struct mcp_call *c, const char *key)
{
    return json_string_value(json_object_get(c->args, key));
}

static long long arg_int(const struct mcp_call *c, const char *key, long long dflt)
{
    const json_t *v = json_object_get(c->args, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static bool arg_bool(const struct mcp_call *c, const char *key, bool dflt)
{
    const json_t *v = json_object_get(c->args, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

/* The file named by the argument key, resolved into out (PATH_MAX bytes): a regular file under
 * the server's roots (mcp_paths.h). False with the error recorded. */
static bool arg_file(const struct mcp_call *c, const char *key, char *out)
{
    return mcp_path_read(arg_str(c, key), key, out, PATH_MAX) == 0;
}

/* A report's JSON text parsed; NULL with an internal error recorded if it does not parse. */
static json_t *parse_report(const struct strbuf *sb)
{
    json_error_t e;
    json_t *doc = json_loadb(sb->buf ? sb->buf : "", sb->len, 0, &e);
    if (!json_is_object(doc)) {
        json_decref(doc);
        err_fail(SCRY_E_INTERNAL, "a report is not a JSON object: %s", e.text);
        return NULL;
    }
    return doc;
}

/* The answer of a report function's result (0 and its JSON in sb, or a recorded error). */
static json_t *report_answer(int err, struct strbuf *sb, const struct mcp_call *c,
                             const char *title, const char *next)
{
    json_t *doc = err ? NULL : parse_report(sb);
    sb_release(sb);
    return doc ? mcp_answer(doc, title, c->limit, c->budget, next) : mcp_answer_error();
}

/* The server's directory for what its tools write (mode 0700, made on first use). */
static int ensure_work_dir(void)
{
    if (work_dir[0])
        return 0;
    const char *tmp = getenv("TMPDIR");
    char templ[sizeof(work_dir)];
    if ((size_t)snprintf(templ, sizeof(templ), "%s/scry-mcp-XXXXXX", tmp && *tmp ? tmp : "/tmp") >=
            sizeof(templ) ||
        !mkdtemp(templ))
        return err_fail(SCRY_E_IO, "cannot make a directory in %s: %s", tmp ? tmp : "/tmp",
                        strerror(errno));
    memcpy(work_dir, templ, sizeof(work_dir));
    /* What the tools write there is read back by the next calls (heap_summary of a capture). */
    int err = mcp_roots_add(work_dir);
    if (err) {
        work_dir[0] = 0;
        return err;
    }
    log_info("mcp: writing profiles and snapshots under %s", work_dir);
    return 0;
}

static int refuse_disabled(const char *tool, const char *flag)
{
    char hint[160];
    snprintf(hint, sizeof(hint), "start the server with 'scry mcp %s' to allow it", flag);
    return err_fail_hint(SCRY_E_PERMISSION_DENIED, hint, "%s is off in this server (%s)", tool,
                         flag);
}

/* ---- list_processes ------------------------------------------------------------------------ */

/* Whether the process's mappings name a Python (libpython, or an executable called python*);
 * -1 when they cannot be read. */
static int maps_name_python(int pid)
{
    struct arena a = ARENA_INIT;
    struct rd_mapping *maps = NULL;
    size_t n = 0;
    int found = rd_maps_read(pid, &a, &maps, &n) == 0 ? 0 : -1;
    if (found < 0)
        err_clear();
    for (size_t i = 0; i < n && !found; i++) {
        const char *slash = strrchr(maps[i].path, '/');
        found = slash && (strncmp(slash + 1, "libpython", 9) == 0 ||
                          strncmp(slash + 1, "python", 6) == 0);
    }
    free(maps);
    arena_free(&a);
    return found;
}

static json_t *process_entry(int pid)
{
    char cmd[4096];
    ssize_t got = pf_process_cmdline(pid, cmd, sizeof(cmd));
    if (got <= 0)
        return NULL; /* a kernel thread, a zombie, or gone */
    size_t n = (size_t)got;
    const char *argv0 = cmd, *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    while (n > 0 && cmd[n - 1] == 0)
        n--;
    for (size_t i = 0; i < n; i++)
        if (cmd[i] == 0)
            cmd[i] = ' ';
    int maps = maps_name_python(pid);
    bool named = strstr(base, "python") != NULL;
    if (maps == 0 || (maps < 0 && !named))
        return NULL;
    json_t *e = json_pack("{s:i,s:s%}", "pid", pid, "command", cmd, n);
    if (!e)
        return NULL;
    long uid = pf_process_owner(pid);
    if (uid >= 0) {
        struct passwd *pw = getpwuid((uid_t)uid);
        json_object_set_new(e, "user", pw ? json_string(pw->pw_name) : json_sprintf("%ld", uid));
    }
    double rss = pf_process_rss(pid);
    if (rss >= 0)
        json_object_set_new(e, "rss_bytes", json_integer((json_int_t)rss));
    struct rd_reader *rd = NULL;
    struct py_runtime rt;
    int err = rd_open_pid(pid, &rd);
    if (!err)
        err = py_runtime_open(rd, &rt);
    if (rd)
        rd_close(rd);
    if (err && err_last_code() == SCRY_E_NOT_PYTHON && !named) {
        json_decref(e);
        return NULL;
    }
    if (err) {
        json_object_set_new(e, "readable", json_false());
        json_object_set_new(e, "reason", json_sprintf("%s: %s", err_code_name(err_last_code()),
                                                      err_last_message()));
    } else {
        json_object_set_new(e, "readable", json_true());
        json_object_set_new(e, "python_version", json_string(rt.version_str));
    }
    return e;
}

static int by_rss(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "rss_bytes"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "rss_bytes"));
    return x < y ? 1 : x > y ? -1 : 0;
}

#define MAX_PIDS 262144 /* processes looked at; a system has far fewer */

static json_t *tool_list_processes(const struct mcp_call *c)
{
    size_t npids = 0;
    int *pids = malloc(MAX_PIDS * sizeof(*pids));
    json_t **found = calloc(MAX_PROCESSES, sizeof(*found));
    if (!pids || !found) {
        free(pids);
        free(found);
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        return mcp_answer_error();
    }
    if (pf_process_list(pids, MAX_PIDS, &npids) != 0) {
        err_fail(SCRY_E_IO, "cannot list the processes: %s", strerror(errno));
        free(pids);
        free(found);
        return mcp_answer_error();
    }
    size_t nfound = 0;
    int self = getpid();
    for (size_t i = 0; i < npids && nfound < MAX_PROCESSES; i++) {
        json_t *e = pids[i] == self ? NULL : process_entry(pids[i]);
        if (e)
            found[nfound++] = e;
    }
    free(pids);
    qsort(found, nfound, sizeof(*found), by_rss);
    json_t *list = json_array();
    for (size_t i = 0; i < nfound; i++)
        json_array_append_new(list, found[i]);
    free(found);
    char next[128] = "";
    if (nfound)
        snprintf(next, sizeof(next), "stacks {\"pid\": %lld} for what one is doing",
                 (long long)json_integer_value(json_object_get(json_array_get(list, 0), "pid")));
    json_t *doc = json_pack("{s:I,s:o}", "count", (json_int_t)nfound, "processes", list);
    return mcp_answer(doc, "Python processes, largest RSS first", c->limit, c->budget, next);
}

/* ---- stacks, capture_heap ------------------------------------------------------------------ */

static json_t *tool_stacks(const struct mcp_call *c)
{
    struct strbuf sb = STRBUF_INIT;
    int err = cli_stacks_report((int)arg_int(c, "pid", 0), true, &sb);
    return report_answer(err, &sb, c, "Python threads of the process, stacks innermost first",
                         NULL);
}

static unsigned long long rss_mb(int pid)
{
    double rss = pf_process_rss(pid);
    return rss > 0 ? (unsigned long long)rss >> 20 : 0;
}

static json_t *tool_capture_heap(const struct mcp_call *c)
{
    if (!config->allow_dump) {
        refuse_disabled("capture_heap", "--allow-dump");
        return mcp_answer_error();
    }
    int pid = (int)arg_int(c, "pid", 0);
    const char *given = arg_str(c, "output");
    char path[PATH_MAX];
    unsigned long long mb = rss_mb(pid);
    if (mb > config->max_dump_mb) {
        err_fail_hint(SCRY_E_TOO_LARGE,
                      "start the server with a larger --max-dump-mb to dump it (the snapshot is "
                      "of the order of half the RSS)",
                      "process %d has %llu MB resident, over this server's limit of %lu MB", pid,
                      mb, config->max_dump_mb);
        return mcp_answer_error();
    }
    if (given) {
        if (mcp_path_new(given, "output", path, sizeof(path)) != 0)
            return mcp_answer_error();
    } else {
        if (ensure_work_dir() != 0)
            return mcp_answer_error();
        snprintf(path, sizeof(path), "%s/heap-%d-%u.heap", work_dir, pid, ++serial);
    }
    struct strbuf sb = STRBUF_INIT;
    int err = cli_dump_report(pid, path, true, &sb);
    char next[PATH_MAX + 64];
    snprintf(next, sizeof(next), "heap_summary {\"snapshot\": \"%s\"}", path);
    return report_answer(err, &sb, c, "Heap snapshot written", next);
}

/* ---- heap snapshots ------------------------------------------------------------------------ */

/* The analyze document's first row's string field. */
static const char *first_of(const json_t *doc, const char *list, const char *field)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(doc, list), 0), field));
}

static json_t *analyze_answer(const struct mcp_call *c, bool summary)
{
    char snap[PATH_MAX];
    if (!arg_file(c, "snapshot", snap))
        return mcp_answer_error();
    struct strbuf sb = STRBUF_INIT;
    int err = cli_analyze_report(snap, c->limit, true, &sb);
    json_t *doc = err ? NULL : parse_report(&sb);
    sb_release(&sb);
    if (!doc)
        return mcp_answer_error();
    char next[PATH_MAX * 2 + 256] = "";
    const char *addr = first_of(doc, "top_retainers", "address");
    const char *type = first_of(doc, "types", "type");
    if (addr)
        snprintf(next, sizeof(next),
                 "retaining_path {\"snapshot\": \"%s\", \"address\": \"%s\"} (the top retainer); "
                 "type_instances {\"snapshot\": \"%s\", \"type\": \"%s\"}",
                 snap, addr, snap, type ? type : "");
    if (summary) {
        /* The totals first, for a reader: the lists move behind them. */
        const char *const lists[] = {"top_retainers", "types"};
        for (size_t i = 0; i < 2; i++) {
            json_t *l = json_incref(json_object_get(doc, lists[i]));
            json_object_del(doc, lists[i]);
            json_object_set_new(doc, lists[i], l ? l : json_array());
        }
    } else {
        /* Only the list, with what names the snapshot. */
        json_t *keep = json_pack("{s:O,s:O}", "snapshot", json_object_get(doc, "snapshot"),
                                 "top_retainers", json_object_get(doc, "top_retainers"));
        json_decref(doc);
        doc = keep;
    }
    return mcp_answer(doc,
                      summary ? "Heap summary: totals, top retainers by retained size, types"
                              : "Top retainers by retained size (what would be freed without them)",
                      c->limit, c->budget, next);
}

static json_t *tool_heap_summary(const struct mcp_call *c)
{
    return analyze_answer(c, true);
}

static json_t *tool_top_retainers(const struct mcp_call *c)
{
    return analyze_answer(c, false);
}

static json_t *query_answer(const struct mcp_call *c, enum cli_query q, const char *key,
                            const char *title)
{
    char snap[PATH_MAX];
    if (!arg_file(c, "snapshot", snap))
        return mcp_answer_error();
    struct strbuf sb = STRBUF_INIT;
    int err = cli_query_report(snap, q, arg_str(c, key), true, &sb);
    return report_answer(err, &sb, c, title, NULL);
}

static json_t *tool_retaining_path(const struct mcp_call *c)
{
    /* A path cut by limit would lose its end, the object asked about: only the budget cuts. */
    struct mcp_call whole = *c;
    whole.limit = SIZE_MAX;
    return query_answer(&whole, CLI_QUERY_PATH, "address",
                        "Retaining path, root first, one reference per row");
}

static json_t *tool_type_instances(const struct mcp_call *c)
{
    return query_answer(c, CLI_QUERY_TYPE, "type",
                        "Instances of the type, the largest by retained size first");
}

static json_t *tool_locate(const struct mcp_call *c)
{
    return query_answer(c, CLI_QUERY_LOCATE, "name", "Where the name is defined (file:line)");
}

static json_t *tool_diff_heaps(const struct mcp_call *c)
{
    char before[PATH_MAX], after[PATH_MAX];
    if (!arg_file(c, "before", before) || !arg_file(c, "after", after))
        return mcp_answer_error();
    struct strbuf sb = STRBUF_INIT;
    int err = cli_diff_report(before, after, c->limit, true, &sb);
    return report_answer(err, &sb, c,
                         "What grew between the snapshots: sites (retaining paths) and types, "
                         "largest growth first",
                         NULL);
}

/* ---- profiles ------------------------------------------------------------------------------ */

/* Seconds to the microsecond, MB to the kilobyte: what the samples can tell, without the float
 * noise of sums. */
static double usec(double s)
{
    return round(s * 1e6) / 1e6;
}

static double mb(double bytes)
{
    return round(bytes / 1048576.0 * 1000) / 1000;
}

static double total_sec(const struct pdoc_entry *e)
{
    return e->python_sec + e->native_sec + e->sys_sec;
}

static int by_time(const void *a, const void *b)
{
    double x = total_sec(*(struct pdoc_entry *const *)a);
    double y = total_sec(*(struct pdoc_entry *const *)b);
    return x < y ? 1 : x > y ? -1 : 0;
}

static int by_memory(const void *a, const void *b)
{
    double x = (*(struct pdoc_entry *const *)a)->malloc_bytes;
    double y = (*(struct pdoc_entry *const *)b)->malloc_bytes;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* A line's source text from the model ("" if the document has none), as in the file: Scalene's
 * \u0026 \u003c \u003e (docs/json-schema.md, `line`) back to & < >, without the newline. */
static json_t *source_line(const struct pdoc_entry *e)
{
    const char *s = e->text;
    struct strbuf sb = STRBUF_INIT;
    for (size_t i = 0; s && s[i] && s[i] != '\n'; i++) {
        const char *esc = strncmp(s + i, "\\u00", 4) == 0 ? s + i + 4 : "";
        char r = strncmp(esc, "26", 2) == 0   ? '&'
                 : strncmp(esc, "3c", 2) == 0 ? '<'
                 : strncmp(esc, "3e", 2) == 0 ? '>'
                                              : 0;
        sb_addch(&sb, r ? r : s[i]);
        i += r ? 5 : 0;
    }
    json_t *text = json_stringn(sb.buf ? sb.buf : "", sb.len);
    sb_release(&sb);
    return text ? text : json_string("");
}

/* One row of a profile's lines or functions: where, its share of the sampled time, seconds by
 * kind, and memory when the profile has it. */
static json_t *entry_row(const struct pdoc *d, const struct pdoc_entry *e, bool line)
{
    double pct = d->sampled_sec > 0 ? total_sec(e) * 100.0 / d->sampled_sec : 0;
    json_t *r = json_pack("{s:s,s:i,s:s,s:f,s:f,s:f,s:f}", "file", e->file, "line", (int)e->line,
                          "function", e->func, "percent", round(pct * 100) / 100,
                          "python_sec", usec(e->python_sec), "native_sec", usec(e->native_sec),
                          "system_sec", usec(e->sys_sec));
    if (r && d->memory) {
        json_object_set_new(r, "alloc_mb", json_real(mb(e->malloc_bytes)));
        json_object_set_new(r, "kept_mb", json_real(mb(e->kept_bytes)));
        if (e->held_bytes >= 0) /* the most it held at once (docs/json-schema.md) */
            json_object_set_new(r, "max_held_mb", json_real(mb(e->held_bytes)));
    }
    if (r && line)
        json_object_set_new(r, "source", source_line(e));
    return r;
}

/* The rows of entries (n of them) ranked, those with any time or memory, filtered by file. */
static json_t *ranked(const struct pdoc *d, const struct pdoc_entry *entries, size_t n,
                      bool memory, const char *file, bool lines)
{
    const struct pdoc_entry **order = calloc(n ? n : 1, sizeof(*order));
    json_t *rows = json_array();
    size_t m = 0;
    for (size_t i = 0; order && i < n; i++) {
        const struct pdoc_entry *e = &entries[i];
        if ((total_sec(e) > 0 || e->malloc_bytes > 0) && (!file || strstr(e->file, file)))
            order[m++] = e;
    }
    if (order)
        qsort(order, m, sizeof(*order), memory ? by_memory : by_time);
    for (size_t i = 0; order && i < m; i++)
        json_array_append_new(rows, entry_row(d, order[i], lines));
    free(order);
    return rows;
}

static json_t *profile_doc(const struct pdoc *d, const char *path)
{
    double py = 0, nat = 0, sys = 0, alloc = 0;
    for (size_t i = 0; i < d->nfuncs; i++) {
        py += d->funcs[i].python_sec;
        nat += d->funcs[i].native_sec;
        sys += d->funcs[i].sys_sec;
        alloc += d->funcs[i].malloc_bytes;
    }
    json_t *doc = json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:f,s:b}", "profile", path, "program",
                            d->program, "elapsed_sec", usec(d->elapsed_sec), "sampled_sec",
                            usec(d->sampled_sec), "python_sec", usec(py), "native_sec", usec(nat),
                            "system_sec", usec(sys), "memory", d->memory);
    if (doc && d->memory)
        json_object_set_new(doc, "alloc_mb", json_real(mb(alloc)));
    return doc;
}

static json_t *summary_answer(const struct mcp_call *c, const char *path, json_t *extra)
{
    struct pdoc d;
    memset(&d, 0, sizeof(d));
    if (cli_load_pdoc(path, &d) != 0) {
        pdoc_free(&d);
        json_decref(extra);
        return mcp_answer_error();
    }
    json_t *doc = profile_doc(&d, path);
    if (extra)
        json_object_update(doc, extra);
    json_object_set_new(doc, "functions", ranked(&d, d.funcs, d.nfuncs, false, NULL, false));
    json_object_set_new(doc, "lines", ranked(&d, d.lines, d.nlines, false, NULL, true));
    pdoc_free(&d);
    json_decref(extra);
    char next[PATH_MAX + 128];
    snprintf(next, sizeof(next), "hot_lines {\"profile\": \"%s\"} (with by=\"memory\" for "
             "allocations)", path);
    return mcp_answer(doc, "Profile summary: totals, hottest functions and lines (% of sampled time)",
                      c->limit, c->budget, next);
}

static json_t *tool_profile_summary(const struct mcp_call *c)
{
    char path[PATH_MAX];
    if (!arg_file(c, "profile", path))
        return mcp_answer_error();
    return summary_answer(c, path, NULL);
}

static json_t *tool_hot_lines(const struct mcp_call *c)
{
    const char *by = arg_str(c, "by");
    bool memory = by && strcmp(by, "memory") == 0;
    char path[PATH_MAX];
    if (!arg_file(c, "profile", path))
        return mcp_answer_error();
    struct pdoc d;
    memset(&d, 0, sizeof(d));
    if (cli_load_pdoc(path, &d) != 0) {
        pdoc_free(&d);
        return mcp_answer_error();
    }
    if (memory && !d.memory) {
        pdoc_free(&d);
        err_fail_hint(SCRY_E_NOT_FOUND, "profile again with memory on (scry run --memory)",
                      "%s has no memory profile", path);
        return mcp_answer_error();
    }
    json_t *doc = profile_doc(&d, path);
    json_object_set_new(doc, "by", json_string(memory ? "memory" : "time"));
    json_object_set_new(doc, "lines",
                        ranked(&d, d.lines, d.nlines, memory, arg_str(c, "file"), true));
    pdoc_free(&d);
    return mcp_answer(doc,
                      memory ? "Hot lines by memory allocated (MB), with their source"
                             : "Hot lines by time (% of sampled time), with their source",
                      c->limit, c->budget, NULL);
}

static json_t *tool_compare_profiles(const struct mcp_call *c)
{
    char before[PATH_MAX], after[PATH_MAX];
    if (!arg_file(c, "before", before) || !arg_file(c, "after", after))
        return mcp_answer_error();
    struct strbuf sb = STRBUF_INIT;
    int err = cli_compare_report(before, after, arg_bool(c, "normalize", false), &sb);
    json_t *report = err ? NULL : parse_report(&sb);
    sb_release(&sb);
    if (!report)
        return mcp_answer_error();
    json_t *doc = mcp_compare_changes(report);
    json_decref(report);
    return mcp_answer(doc,
                      "Profile comparison: what changed (|z| >= 3), one row per function or line "
                      "and metric, most significant first; rows with no change counted in "
                      "unchanged",
                      c->limit, c->budget, NULL);
}

/* ---- run_profile --------------------------------------------------------------------------- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for the run; at the deadline the whole process group gets SIGTERM (scry run writes the
 * profile of what ran), then SIGKILL 5 s later. */
static int wait_run(pid_t pid, double timeout, bool *timed_out)
{
    double deadline = mono_s() + timeout;
    int status = 0, signalled = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return status;
        if (w < 0 && errno != EINTR)
            return -1;
        if (mono_s() >= deadline) {
            *timed_out = true;
            kill(-pid, signalled ? SIGKILL : SIGTERM);
            signalled++;
            deadline = mono_s() + 5;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static json_t *output_tail(const char *log)
{
    char buf[OUTPUT_TAIL + 1];
    int fd = open(log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return json_string("");
    off_t end = lseek(fd, 0, SEEK_END);
    off_t from = end > OUTPUT_TAIL ? end - OUTPUT_TAIL : 0;
    ssize_t n = pread(fd, buf, OUTPUT_TAIL, from);
    close(fd);
    if (n < 0)
        n = 0;
    json_t *s = json_stringn(buf, (size_t)n);
    if (!s) {
        /* Not UTF-8 (a character cut at the start, binary output): keep what is ASCII. */
        for (ssize_t i = 0; i < n; i++)
            if ((unsigned char)buf[i] >= 0x80)
                buf[i] = '?';
        s = json_stringn(buf, (size_t)n);
    }
    return s ? s : json_string("");
}

static json_t *tool_run_profile(const struct mcp_call *c)
{
    if (!config->allow_run) {
        refuse_disabled("run_profile", "--allow-run");
        return mcp_answer_error();
    }
    const json_t *command = json_object_get(c->args, "command");
    const char *first = json_string_value(json_array_get(command, 0));
    if (first[0] == '-' && (strcmp(first, "-m") != 0 || json_array_size(command) < 2)) {
        err_fail_hint(SCRY_E_USAGE, "give the script first: [\"app.py\", \"arg\"], or "
                      "[\"-m\", \"module\", \"arg\"]",
                      "command starts with the option '%s'", first);
        return mcp_answer_error();
    }
    double timeout = (double)arg_int(c, "timeout_s", config->run_timeout_s);
    if (timeout > config->run_timeout_s)
        timeout = config->run_timeout_s;
    /* The program may write where it runs: the roots rule holds for the directory too. */
    char cwd_buf[PATH_MAX];
    const char *cwd = arg_str(c, "cwd");
    if (cwd && mcp_path_dir(cwd, "cwd", cwd_buf, sizeof(cwd_buf)) != 0)
        return mcp_answer_error();
    cwd = cwd ? cwd_buf : NULL;
    if (ensure_work_dir() != 0)
        return mcp_answer_error();
    unsigned id = ++serial;
    char profile[PATH_MAX], log[PATH_MAX];
    snprintf(profile, sizeof(profile), "%s/profile-%u.json", work_dir, id);
    char logname[32];
    snprintf(logname, sizeof(logname), "run-%u-", id);
    if (outfile_write_new(work_dir, logname, ".log", "", 0, log, sizeof(log)) != 0)
        return mcp_answer_error();
    size_t n = json_array_size(command);
    char **argv = calloc(n + 8, sizeof(*argv));
    if (!argv) {
        err_fail(SCRY_E_NO_MEMORY, "out of memory");
        return mcp_answer_error();
    }
    size_t k = 0;
    argv[k++] = "scry";
    argv[k++] = "run";
    argv[k++] = "--no-view";
    if (!arg_bool(c, "memory", true))
        argv[k++] = "--cpu-only";
    argv[k++] = "-o";
    argv[k++] = profile;
    for (size_t i = 0; i < n; i++)
        argv[k++] = (char *)json_string_value(json_array_get(command, i));
    argv[k] = NULL;
    int logfd = open(log, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    double t0 = mono_s();
    pid_t pid = logfd < 0 ? -1 : fork();
    if (pid == 0) {
        /* The child: its own process group (the timeout ends all of it), no terminal input,
         * output to the log: never the protocol's stdout. */
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL); /* the server ignores it; the program must not inherit that */
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || dup2(in, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0)
            _exit(127);
        if (cwd && chdir(cwd) != 0) {
            dprintf(2, "scry mcp: cannot change to %s: %s\n", cwd, strerror(errno));
            _exit(127);
        }
        execv(pf_self_exec_path(), argv);
        dprintf(2, "scry mcp: cannot run scry: %s\n", strerror(errno));
        _exit(127);
    }
    free(argv);
    if (logfd >= 0)
        close(logfd);
    if (pid < 0) {
        err_fail(SCRY_E_IO, "cannot start scry run: %s", strerror(errno));
        return mcp_answer_error();
    }
    setpgid(pid, pid);
    bool timed_out = false;
    int status = wait_run(pid, timeout, &timed_out);
    double elapsed = mono_s() - t0;
    json_t *tail = output_tail(log);
    struct stat st;
    if (stat(profile, &st) != 0) {
        char how[64];
        if (timed_out)
            snprintf(how, sizeof(how), "stopped after the %.0f s timeout", timeout);
        else if (status >= 0 && WIFSIGNALED(status))
            snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
        else
            snprintf(how, sizeof(how), "exit status %d", status >= 0 ? WEXITSTATUS(status) : -1);
        err_fail_hint(SCRY_E_IO, "read the output above, fix the command and run it again",
                      "scry run wrote no profile (%s); its output (%s) ends:\n%s", how, log,
                      json_string_value(tail));
        json_decref(tail);
        return mcp_answer_error();
    }
    json_t *run = json_pack("{s:s,s:f,s:b,s:o,s:o}", "output_log", log, "run_sec",
                            round(elapsed * 100) / 100, "timed_out", timed_out, "exit_status",
                            WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null(),
                            "output_tail", tail);
    return summary_answer(c, profile, run);
}

/* ---- the table ----------------------------------------------------------------------------- */

static struct tool tools[] = {
    {"list_processes", "List Python processes",
     "Lists the running processes that run CPython (pid, command line, user, Python version, "
     "RSS), largest RSS first; processes scry cannot read are listed with the reason. Reads "
     "/proc only; safe to call repeatedly. Next: stacks or capture_heap with a pid.",
     SCHEMA(BOUNDED, ""), true, tool_list_processes, NULL},
    {"stacks", "Stacks of a process",
     "Every Python thread of a live process with its stack (innermost first, function, "
     "file:line), whether it runs, holds the GIL. Stops the process for about a millisecond; "
     "needs ptrace permission on it.",
     SCHEMA(S_PID "," BOUNDED, "\"pid\""), true, tool_stacks, NULL},
    {"run_profile", "Profile a command",
     "Runs a Python program under scry run (CPU time per line as Python/native/system, memory "
     "allocated per line) and returns the profile's path and summary; off unless the server was "
     "started with --allow-run. Takes as long as the program (timeout_s, at most the server's "
     "--run-timeout). Next: hot_lines {profile}.",
     SCHEMA("\"command\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":256,\"items\":{\"type\":"
            "\"string\",\"minLength\":1,\"maxLength\":4096},\"description\":\"the program and its "
            "arguments: [\\\"app.py\\\", \\\"arg\\\"] or [\\\"-m\\\", \\\"module\\\", ...]\"},"
            "\"cwd\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":"
            "\"directory to run it in, under the server's roots (default: the server's)\"},"
            "\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3600,\"description\":"
            "\"seconds before the program is stopped (default and limit: --run-timeout)\"},"
            "\"memory\":{\"default\":true,\"description\":\"profile memory too (false: CPU "
            "only)\"}," BOUNDED,
            "\"command\""),
     false, tool_run_profile, NULL},
    {"profile_summary", "Summary of a profile",
     "Totals of a profile (elapsed, sampled, Python/native/system seconds, memory) with its "
     "hottest functions and lines, ranked by time (% of the sampled time). Reads the file only.",
     SCHEMA(S_PROFILE "," BOUNDED, "\"profile\""), true, tool_profile_summary, NULL},
    {"hot_lines", "Hot lines of a profile",
     "A profile's lines ranked by time (or by memory allocated), with file:line, function, "
     "seconds by kind and the source text. Reads the file only.",
     SCHEMA(S_PROFILE ",\"by\":{\"type\":\"string\",\"enum\":[\"time\",\"memory\"],\"default\":"
            "\"time\",\"description\":\"rank by time or by MB allocated\"},\"file\":{\"type\":"
            "\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"only files whose "
            "path contains this\"}," BOUNDED,
            "\"profile\""),
     true, tool_hot_lines, NULL},
    {"compare_profiles", "Compare two profiles",
     "What got slower or bigger between two profiles of one program: one row per function or "
     "line and metric that changed beyond the sampling error (|z| >= 3), most significant "
     "first, with before, after, delta, pct and z; unchanged rows counted (scry compare).",
     SCHEMA(S_PATH("before", "the earlier profile") "," S_PATH("after", "the later profile")
            ",\"normalize\":{\"default\":false,\"description\":\"divide out a machine speed "
            "change first (scry compare --normalize)\"}," BOUNDED,
            "\"before\",\"after\""),
     true, tool_compare_profiles, NULL},
    {"capture_heap", "Take a heap snapshot",
     "Writes a heap snapshot of a live Python process (every object, its size and references) "
     "and returns its path; off unless the server was started with --allow-dump, refused over "
     "--max-dump-mb of RSS. Pauses the process about 1 s per million objects; needs ptrace "
     "permission. Next: heap_summary {snapshot}.",
     SCHEMA(S_PID "," S_PATH("output", "where to write it (must not exist, in a "
                                        "directory under the server's roots; default: the "
                                        "server's own directory)") "," BOUNDED,
            "\"pid\""),
     false, tool_capture_heap, NULL},
    {"heap_summary", "Summary of a heap snapshot",
     "What a snapshot retains: totals (objects, reachable bytes, share of RSS), the top "
     "retainers by retained size with their root paths, and sizes by type. Reads the file only.",
     SCHEMA(S_SNAPSHOT "," BOUNDED, "\"snapshot\""), true, tool_heap_summary, NULL},
    {"top_retainers", "Top retainers of a heap snapshot",
     "The objects that retain the most memory (what would be freed without them), with type, "
     "shallow and retained bytes, address and shortest root path. Reads the file only.",
     SCHEMA(S_SNAPSHOT "," BOUNDED, "\"snapshot\""), true, tool_top_retainers, NULL},
    {"retaining_path", "Retaining path of an object",
     "The path from a root to the object at an address (from heap_summary or type_instances), "
     "root first, one labelled reference per row.",
     SCHEMA(S_SNAPSHOT ",\"address\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":32,"
            "\"description\":\"the object's address, hex as 0x7f3a2c41b0d0\"}," BOUNDED,
            "\"snapshot\",\"address\""),
     true, tool_retaining_path, NULL},
    {"type_instances", "Instances of a type",
     "How many instances of a type a snapshot holds, their shallow and retained bytes, and the "
     "largest with what holds them.",
     SCHEMA(S_SNAPSHOT ",\"type\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,"
            "\"description\":\"qualified type name (app.Session) or its last parts\"}," BOUNDED,
            "\"snapshot\",\"type\""),
     true, tool_type_instances, NULL},
    {"diff_heaps", "Diff two heap snapshots",
     "What grew between two snapshots of a process: retaining sites and types by growth, "
     "largest first (objects matched approximately, by type and path).",
     SCHEMA(S_PATH("before", "the earlier snapshot") "," S_PATH("after", "the later snapshot")
            "," BOUNDED,
            "\"before\",\"after\""),
     true, tool_diff_heaps, NULL},
    {"locate", "Where a name is defined",
     "file:line of a function, class or module named in a snapshot (dotted, as "
     "app.session.Session, or its last parts).",
     SCHEMA(S_SNAPSHOT ",\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1024,"
            "\"description\":\"dotted name\"}," BOUNDED,
            "\"snapshot\",\"name\""),
     true, tool_locate, NULL},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

/* The tools' arguments that are command-line options, and the option each stands for. */
static const struct {
    const char *prop;
    enum opt_id id;
} option_props[] = {
    {"pid", OPT_PID},
    {"normalize", OPT_NORMALIZE},
    {"memory", OPT_MEMORY},
};

/* Completes the schema of each argument that is an option from the option table: its type,
 * range and default, where the tool's own text does not say otherwise. */
static bool complete_from_options(json_t *schema)
{
    json_t *props = json_object_get(schema, "properties");
    for (size_t i = 0; i < sizeof(option_props) / sizeof(option_props[0]); i++) {
        json_t *prop = json_object_get(props, option_props[i].prop);
        if (!prop)
            continue;
        json_t *from = opt_schema(option_props[i].id, NULL);
        if (!from || json_object_update_missing(prop, from) != 0) {
            json_decref(from);
            return false;
        }
        json_decref(from);
    }
    return true;
}

bool mcp_tools_init(const struct mcp_config *cfg)
{
    config = cfg;
    for (size_t i = 0; i < NTOOLS; i++) {
        json_error_t e;
        tools[i].parsed = json_loads(tools[i].schema, 0, &e);
        if (!tools[i].parsed) {
            log_warn("mcp: the schema of %s does not parse: %s", tools[i].name, e.text);
            return false;
        }
        if (!complete_from_options(tools[i].parsed)) {
            log_warn("mcp: the schema of %s cannot be completed: out of memory", tools[i].name);
            return false;
        }
    }
    return true;
}

void mcp_tools_free(void)
{
    for (size_t i = 0; i < NTOOLS; i++) {
        json_decref(tools[i].parsed);
        tools[i].parsed = NULL;
    }
}

json_t *mcp_tools_list(void)
{
    json_t *list = json_array();
    for (size_t i = 0; i < NTOOLS; i++) {
        const struct tool *t = &tools[i];
        json_t *o = json_pack(
            "{s:s,s:s,s:s,s:O,s:{s:s},s:{s:s,s:b,s:b,s:b}}", "name", t->name, "title", t->title,
            "description", t->description, "inputSchema", t->parsed, "outputSchema", "type",
            "object", "annotations", "title", t->title, "readOnlyHint", t->read_only,
            "destructiveHint", 0, "openWorldHint", 0);
        json_array_append_new(list, o);
    }
    return json_pack("{s:o}", "tools", list);
}

json_t *mcp_tools_call(const char *name, const json_t *args, int *code, struct strbuf *why)
{
    const struct tool *t = NULL;
    for (size_t i = 0; i < NTOOLS && !t; i++)
        if (strcmp(tools[i].name, name) == 0)
            t = &tools[i];
    if (!t) {
        *code = -32602;
        sb_addf(why, "Unknown tool: %s", name);
        return NULL;
    }
    if (!mcp_schema_check(t->parsed, args, why)) {
        *code = -32602;
        return NULL;
    }
    struct mcp_call c = {.args = args};
    c.limit = (size_t)arg_int(&c, "limit", DEFAULT_LIMIT);
    c.budget = (size_t)arg_int(&c, "token_budget", DEFAULT_BUDGET);
    err_clear();
    return t->call(&c);
}
