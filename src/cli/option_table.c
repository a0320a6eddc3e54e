/* Every option of scry's commands (options.h): each defined once, then each command's list of the
 * options it takes, in the order of its help. Data only. */
#include "cli/options.h"

#include <limits.h>

/* ---- the definitions ----------------------------------------------------------------------- */

#define FLAG(id_, name_, short_) {.id = id_, .name = name_, .short_name = short_, .type = OT_FLAG}
#define NAME(id_, name_, short_, value_, needs_)                                                   \
    {.id = id_, .name = name_, .short_name = short_, .type = OT_NAME, .value_name = value_,      \
     .needs = needs_}
#define TEXT(id_, name_, short_, value_)                                                           \
    {.id = id_, .name = name_, .short_name = short_, .type = OT_TEXT, .value_name = value_}

const struct opt_def opt_defs[] = {
    /* shared */
    {.id = OPT_HELP, .name = "help", .short_name = 'h', .type = OT_FLAG, .flags = OF_NO_CONFIG},
    FLAG(OPT_JSON, "json", 'j'),
    FLAG(OPT_QUIET, "quiet", 'q'),
    NAME(OPT_OUTFILE, "outfile", 'o', "FILE", "a file name"),
    NAME(OPT_OUTPUT, "output", 'o', "FILE", "a file name"),
    {.id = OPT_PID, .name = "pid", .short_name = 'p', .type = OT_PID, .value_name = "PID",
     .needs = "a process id"},
    {.id = OPT_TOP, .name = "top", .short_name = 't', .type = OT_INT, .value_name = "N",
     .min = 1, .max = 100000, .needs = "a count from 1 to 100000", .dflt = "20"},
    FLAG(OPT_NO_COLOR, "no-color", 0),
    FLAG(OPT_NATIVE, "native", 'n'),
    FLAG(OPT_HTML, "html", 0),
    FLAG(OPT_CLI, "cli", 0),
    FLAG(OPT_ALLOCATIONS_FLAG, "allocations", 0),
    /* targets */
    TEXT(OPT_CORE, "core", 'c', "FILE"),
    TEXT(OPT_EXE, "exe", 'e', "PYTHON"),
    TEXT(OPT_MINIDUMP, "minidump", 'm', "FILE"),
    /* stacks */
    FLAG(OPT_LOCALS, "locals", 'l'),
    FLAG(OPT_ASYNC, "async", 'a'),
    FLAG(OPT_SUBPROCESSES, "subprocesses", 's'),
    /* dump */
    FLAG(OPT_CAPTURE_CONTENTS, "capture-contents", 0),
    {.id = OPT_MAX_STR, .name = "max-str", .type = OT_INT, .value_name = "N", .min = 0,
     .max = 1u << 20, .needs = "a byte count from 0 to 1048576", .dflt = "128"},
    TEXT(OPT_GRAPH, "graph", 0, "FILE"),
    TEXT(OPT_ALLOCATIONS_FILE, "allocations", 0, "F"),
    /* view */
    FLAG(OPT_STANDALONE, "standalone", 0),
    {.id = OPT_CPU_PERCENT_THRESHOLD, .name = "cpu-percent-threshold", .type = OT_NUMBER,
     .value_name = "P", .min = 0, .max = 100, .needs = "a percentage from 0 to 100",
     .dflt = "1"},
    TEXT(OPT_FORMAT, "format", 0, "FORMAT"),
    FLAG(OPT_SERVE, "serve", 0),
    FLAG(OPT_PROPOSE, "propose", 0),
    {.id = OPT_PORT, .name = "port", .type = OT_INT, .value_name = "P", .min = 1, .max = 65535,
     .needs = "a port from 1 to 65535"},
    /* a language model's provider */
    TEXT(OPT_PROVIDER, "provider", 0, "P"),
    TEXT(OPT_BASE_URL, "base-url", 0, "URL"),
    TEXT(OPT_MODEL, "model", 0, "M"),
    TEXT(OPT_DEPLOYMENT, "deployment", 0, "D"),
    TEXT(OPT_API_VERSION, "api-version", 0, "V"),
    TEXT(OPT_REGION, "region", 0, "R"),
    TEXT(OPT_API_KEY_ENV, "api-key-env", 0, "NAME"),
    TEXT(OPT_API_KEY, "api-key", 0, "KEY"),

    /* ---- record, top, run, collect, kernel, mcp ---- */
};
const size_t opt_ndefs = sizeof(opt_defs) / sizeof(opt_defs[0]);

/* ---- each command's options, in the order of its help ------------------------------------- */

#define USE(cmds_, id_, help_) {.cmds = (cmds_), .id = (id_), .help = (help_)}
#define USE_AS(cmds_, id_, help_, label_)                                                        \
    {.cmds = (cmds_), .id = (id_), .help = (help_), .label = (label_)}
#define USE_NO_SHORT(cmds_, id_, help_) {.cmds = (cmds_), .id = (id_), .help = (help_), .no_short = true}

#define TARGET_CMDS (OC_STACKS | OC_DUMP)

const struct opt_use opt_uses[] = {
    /* ---- view ---- */
    USE(OC_VIEW, OPT_CLI, "the terminal view"),
    USE(OC_VIEW, OPT_HTML, "write the page to scry-profile.html (or -o FILE) and print\n"
                        "its path; nothing is opened"),
    USE(OC_VIEW, OPT_STANDALONE, "the same single self-contained file (--html is one too)"),
    USE(OC_VIEW, OPT_OUTFILE, "where the page goes (--html, --standalone, or the default)"),
    USE(OC_VIEW, OPT_CPU_PERCENT_THRESHOLD,
     "hide lines, functions and files under P% of the time\n"
     "(default 1; 0 shows every line); in the page, the level\n"
     "under which \"hide quiet lines\" hides a line"),
    USE(OC_VIEW, OPT_NO_COLOR, "no colours even on a terminal"),
    USE_AS(OC_VIEW, OPT_SERVE,
     "serve the page from 127.0.0.1 at a URL with a random\n"
     "token instead of writing it, with a \"propose\" action\n"
     "that asks a language model for a faster version of a\n"
     "line, region or function (docs/optimize.md); Ctrl-C\n"
     "stops it",
     "    --serve, --propose"),
    USE(OC_VIEW, OPT_PROPOSE, NULL),
    USE(OC_VIEW, OPT_PORT, "the port --serve listens on (default: any free one)"),
    USE_AS(OC_VIEW, OPT_PROVIDER,
     "with --serve: the provider whose key (from scry's\n"
     "environment, as for `scry optimize`) the page's proposals\n"
     "may use, and its settings; the environment's key goes to\n"
     "this provider and base URL only (without --provider: to\n"
     "each provider's own endpoint); a base URL typed in the\n"
     "page gets only a key typed there",
     "    --provider P, --base-url URL, --model M, --deployment D, --api-version V,\n"
     "      --region R, --api-key-env NAME"),
    USE(OC_VIEW, OPT_BASE_URL, NULL),
    USE(OC_VIEW, OPT_MODEL, NULL),
    USE(OC_VIEW, OPT_DEPLOYMENT, NULL),
    USE(OC_VIEW, OPT_API_VERSION, NULL),
    USE(OC_VIEW, OPT_REGION, NULL),
    USE(OC_VIEW, OPT_API_KEY_ENV, NULL),
    USE(OC_VIEW, OPT_API_KEY, NULL), /* refused: a key on the command line is seen by every user */
    USE_AS(OC_VIEW, OPT_FORMAT,
     "export the profile's call stacks (scry run --stacks)\n"
     "as folded stacks or a speedscope file, to -o FILE or\n"
     "standard output",
     "    --format folded|speedscope"),
    USE_AS(OC_VIEW, OPT_FORMAT,
     "export the whole profile: gzipped pprof (go tool\n"
     "pprof, Pyroscope), Trace Event JSON (Perfetto), the\n"
     "Firefox Profiler's format (docs/export-formats.md)",
     "    --format pprof|trace|firefox"),

    /* ---- stacks and dump ---- */
    USE(OC_STACKS, OPT_PID, "read a live process (it is stopped for a moment, then resumed)"),
    USE(OC_DUMP, OPT_PID, "dump a live process"),
    USE(OC_STACKS, OPT_CORE, "read an ELF core file instead"),
    USE(OC_DUMP, OPT_CORE, "dump from an ELF core file (gcore, kernel) instead"),
    USE(TARGET_CMDS, OPT_EXE, "the Python executable that made the core, if it has moved"),
    USE(OC_STACKS, OPT_MINIDUMP, "read a full-memory minidump of a 64-bit Windows CPython 3.13\n"
                              "(procdump -ma, Task Manager's \"Create dump file\")"),
    USE(OC_DUMP, OPT_MINIDUMP, "dump from a full-memory minidump of a 64-bit Windows CPython\n"
                            "3.13 (procdump -ma, Task Manager) instead"),
    USE(OC_STACKS, OPT_LOCALS, "each frame's local variables, values shortened; a secret-sounding\n"
                            "name or a value that looks like a secret shows as <redacted>"),
    USE(OC_STACKS, OPT_NATIVE, "native frames too (libunwind-ptrace), each call of the eval loop\n"
                            "replaced by the Python frames it runs (live processes only)"),
    USE(OC_STACKS, OPT_ASYNC, "the asyncio task tree: each task, its coroutine chain and what it\n"
                           "awaits (Python 3.11-3.15, 3.13t)"),
    USE(OC_STACKS, OPT_SUBPROCESSES, "its children (and theirs) too, each under its own header"),
    USE(OC_STACKS, OPT_JSON, "print a JSON document (docs/json-schema.md)"),
    USE(OC_STACKS, OPT_NO_COLOR, "no colours even on a terminal"),
    USE(OC_DUMP, OPT_OUTPUT, "the snapshot to write (e.g. app.heap)"),
    USE(OC_DUMP, OPT_CAPTURE_CONTENTS,
     "store str/bytes contents (capped, secrets redacted); without\n"
     "it no string or bytes content is stored at all (keys and\n"
     "names that look secret are redacted either way)"),
    USE(OC_DUMP, OPT_MAX_STR, "bytes of contents kept per object (default 128)"),
    USE(OC_DUMP, OPT_ALLOCATIONS_FILE,
     "store the live allocation samples of F, written by 'scry record\n"
     "--pid PID --allocations -o F' from the same process"),
    USE(OC_DUMP, OPT_JSON, "print what was written as a JSON document (docs/json-schema.md)"),
    USE(OC_DUMP, OPT_QUIET, "no progress line on the terminal while it copies, walks, writes"),
    USE(OC_DUMP, OPT_GRAPH, "also write the graph as JSON lines (for tests and debugging)"),

    /* ---- record, top, run, collect, kernel, mcp ---- */

    /* every command takes --help; it is not listed */
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC | OC_TOP | OC_VIEW | OC_STACKS | OC_DUMP | OC_ANALYZE |
         OC_QUERY | OC_CHECK | OC_DIFF | OC_COMPARE | OC_FLAMEGRAPH | OC_OPTIMIZE | OC_COLLECT |
         OC_KERNEL | OC_MCP,
     OPT_HELP, NULL),
};
const size_t opt_nuses = sizeof(opt_uses) / sizeof(opt_uses[0]);
