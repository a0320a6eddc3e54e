/* Every option of scry's commands (options.h): each defined once, then each command's list of the
 * options it takes, in the order of its help. Data only. */
#include "options/options.h"

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

    /* query */
    TEXT(OPT_TYPE, "type", 0, "T"),
    TEXT(OPT_RETAINING_PATH, "retaining-path", 0, "A"),
    TEXT(OPT_LOCATE, "locate", 0, "NAME"),
    /* compare */
    {.id = OPT_FAIL_ABOVE, .name = "fail-above", .type = OT_NUMBER, .value_name = "PCT",
     .min = 0, .max = 1e300, .needs = "a percentage of at least 0"},
    FLAG(OPT_NORMALIZE, "normalize", 0),
    {.id = OPT_TOP_OR_ALL, .name = "top", .short_name = 't', .type = OT_INT, .value_name = "N",
     .min = 0, .max = 1000000, .needs = "a count of at least 0", .dflt = "20"},
    /* flamegraph */
    FLAG(OPT_MEMORY, "memory", 0),
    FLAG(OPT_FOLDED, "folded", 0),
    FLAG(OPT_DIFF, "diff", 0),
    {.id = OPT_MIN_PCT, .name = "min-pct", .type = OT_NUMBER, .value_name = "P", .min = 0,
     .max = 100, .needs = "a percentage from 0 to 100"},
    {.id = OPT_MIN_BYTES, .name = "min-bytes", .type = OT_NUMBER, .value_name = "N", .min = 0,
     .max = 1e300, .needs = "a number of bytes"},
    {.id = OPT_MAX_DEPTH, .name = "max-depth", .type = OT_INT, .value_name = "N", .min = 1,
     .max = 100000, .needs = "a depth from 1 to 100000"},
    TEXT(OPT_TITLE, "title", 0, "TEXT"),
    TEXT(OPT_COLORS, "colors", 0, "MODE"),
    {.id = OPT_WIDTH, .name = "width", .type = OT_INT, .value_name = "PX", .min = 100,
     .max = 100000, .needs = "a width in pixels from 100 to 100000", .dflt = "1200"},
    /* optimize */
    TEXT(OPT_FUNCTION, "function", 0, "NAME"),
    {.id = OPT_TIMEOUT, .name = "timeout", .type = OT_NUMBER, .value_name = "S", .min = 1,
     .max = 3600, .needs = "seconds from 1 to 3600", .dflt = "120"},
    FLAG(OPT_SHOW_PROMPT, "show-prompt", 0),
    FLAG(OPT_NO_REDACT, "no-redact", 0),

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

    /* ---- the snapshot reports: analyze, query, check, diff ---- */
    USE(OC_ANALYZE, OPT_TOP, "how many retainers and types to list (default 20)"),
    USE(OC_DIFF, OPT_TOP, "how many sites and types to list (default 20)"),
    USE(OC_ANALYZE, OPT_ALLOCATIONS_FLAG,
        "under each retainer, the lines that allocated what it retains\n"
        "(bytes, share, sampling error): a snapshot of a program under\n"
        "scry run (docs/allocations.md)"),
    USE(OC_QUERY, OPT_TYPE, "instances of type T (its qualified name, or the part after the last\n"
                           "dot): how many, their sizes, the largest and what holds them"),
    USE(OC_QUERY, OPT_ALLOCATIONS_FLAG,
        "with --type: the lines that allocated its instances (a snapshot\n"
        "of a program under scry run: docs/allocations.md)"),
    USE(OC_QUERY, OPT_RETAINING_PATH,
        "the path from a root to the object at address A (hex or decimal),\n"
        "root first, one labelled reference per line"),
    USE(OC_QUERY, OPT_LOCATE, "file:line of a function, class or module named NAME (dotted, as in\n"
                             "app.session.Session.close, or its last parts)"),
    USE(OC_ANALYZE | OC_QUERY | OC_CHECK | OC_DIFF, OPT_JSON,
        "one JSON document on stdout (docs/json-schema.md)"),
    USE(OC_ANALYZE, OPT_QUIET, "no progress line on the terminal while it reads and computes"),
    USE(OC_DIFF, OPT_QUIET, "no progress line on the terminal while it reads and compares"),

    /* ---- compare ---- */
    USE(OC_COMPARE, OPT_FAIL_ABOVE,
        "exit with status 1 when a function or line got significantly\n"
        "slower, or allocated or kept significantly more, by more than\n"
        "PCT percent; the regressed entries are listed"),
    USE(OC_COMPARE, OPT_NORMALIZE,
        "first divide after's times by the speed ratio of the function\n"
        "at the time-weighted median of every function's after/before\n"
        "ratio: for machines whose speed varies between runs (shared CI\n"
        "runners), when most of the time is in code that did not change"),
    USE(OC_COMPARE, OPT_TOP_OR_ALL, "show at most N functions and N lines (default 20; 0: all)"),
    USE(OC_COMPARE, OPT_JSON, "the whole comparison as JSON (docs/json-schema.md)"),
    USE(OC_COMPARE, OPT_HTML,
        "write the report as a self-contained HTML page (every entry that\n"
        "changed significantly, most significant first; a switch shows the\n"
        "others) to scry-compare.html, or -o FILE, and print its path"),
    USE(OC_COMPARE, OPT_OUTFILE, "where --html writes the page"),

    /* ---- flamegraph ---- */
    USE(OC_FLAMEGRAPH, OPT_OUTPUT, "write to FILE (default: standard output)"),
    USE_NO_SHORT(OC_FLAMEGRAPH, OPT_OUTFILE, NULL), /* --output's other name, not listed */
    USE(OC_FLAMEGRAPH, OPT_MEMORY, "the memory flame graph: widths are the MB each call stack\n"
                                   "allocated (a profile recorded with --stacks, memory on)"),
    USE(OC_FLAMEGRAPH, OPT_FOLDED, "write folded stacks ('frame;frame;frame COUNT', outermost frame\n"
                                   "first, one line per stack) instead of the SVG"),
    USE_AS(OC_FLAMEGRAPH, OPT_DIFF,
           "differential graph of profile A (before) and B (after): width is\n"
           "after, red frames grew, blue shrank; with --folded the lines read\n"
           "'stack BEFORE AFTER'",
           "    --diff A B"),
    USE(OC_FLAMEGRAPH, OPT_MIN_PCT, "fold frames narrower than P% of the total into one [other] frame\n"
                                    "per parent (default 0: none); the other frames keep their widths"),
    USE(OC_FLAMEGRAPH, OPT_MAX_DEPTH, "fold frames deeper than N into [other] (default: no limit)"),
    USE(OC_FLAMEGRAPH, OPT_MIN_BYTES, "for heap snapshots: fold frames retaining fewer than N bytes"),
    USE(OC_FLAMEGRAPH, OPT_ALLOCATIONS_FLAG,
        "for a heap snapshot of a program under scry run: the retained\n"
        "bytes by the Python stack that allocated them (docs/allocations.md)"),
    USE(OC_FLAMEGRAPH, OPT_TITLE, "the graph's title"),
    USE(OC_FLAMEGRAPH, OPT_COLORS, "kind (Python warm, native blue; the default) or hash (one colour\n"
                                   "per name)"),
    USE(OC_FLAMEGRAPH, OPT_WIDTH, "image width (default 1200)"),

    /* ---- optimize ---- */
    USE(OC_OPTIMIZE, OPT_PROVIDER, "openai (any OpenAI-compatible server: OpenAI, Ollama, vLLM),\n"
                                   "anthropic, azure, gemini, bedrock"),
    USE(OC_OPTIMIZE, OPT_MODEL, "the model (defaults: docs/optimize.md; bedrock: the modelId;\n"
                                "azure: the deployment, when --deployment is not given)"),
    USE(OC_OPTIMIZE, OPT_BASE_URL,
        "the provider's endpoint (openai: the base of /chat/completions,\n"
        "such as http://localhost:11434/v1 for Ollama; azure: the\n"
        "resource's https://NAME.openai.azure.com)"),
    USE(OC_OPTIMIZE, OPT_FUNCTION, "the function to optimise (Class.method or method)"),
    USE(OC_OPTIMIZE, OPT_DEPLOYMENT, "azure: the model deployment"),
    USE(OC_OPTIMIZE, OPT_API_VERSION, "azure: the API version (default 2024-10-21)"),
    USE(OC_OPTIMIZE, OPT_REGION, "bedrock: the AWS region (default $AWS_REGION)"),
    USE(OC_OPTIMIZE, OPT_API_KEY_ENV,
        "read the key from the variable NAME instead of the provider's\n"
        "(OPENAI_API_KEY, ANTHROPIC_API_KEY, AZURE_OPENAI_API_KEY,\n"
        "GEMINI_API_KEY or GOOGLE_API_KEY; bedrock: AWS_ACCESS_KEY_ID,\n"
        "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN). There is no option\n"
        "for the key itself: a command line is visible in ps"),
    USE(OC_OPTIMIZE, OPT_API_KEY, NULL), /* refused: a key on the command line is seen by all */
    USE(OC_OPTIMIZE, OPT_TIMEOUT, "give up after S seconds (default 120)"),
    USE(OC_OPTIMIZE, OPT_SHOW_PROMPT, "print what would be sent and send nothing (with --json:\n"
                                      "{\"system\", \"user\"})"),
    USE(OC_OPTIMIZE, OPT_NO_REDACT,
        "send the source as it is: by default, string literals, names\n"
        "and comments that look like secrets (and strings assigned to\n"
        "names such as DB_PASSWORD or API_KEY) are sent as <redacted>,\n"
        "and what was is listed on stderr before sending"),
    USE(OC_OPTIMIZE, OPT_JSON, "the proposal as JSON: file, first_line, last_line, function,\n"
                               "provider, model, code, diff, reasons"),

    /* ---- record, top, run, collect, kernel, mcp ---- */

    /* every command takes --help; it is not listed */
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC | OC_TOP | OC_VIEW | OC_STACKS | OC_DUMP | OC_ANALYZE |
         OC_QUERY | OC_CHECK | OC_DIFF | OC_COMPARE | OC_FLAMEGRAPH | OC_OPTIMIZE | OC_COLLECT |
         OC_KERNEL | OC_MCP,
     OPT_HELP, NULL),
};
const size_t opt_nuses = sizeof(opt_uses) / sizeof(opt_uses[0]);
