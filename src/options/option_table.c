/* Every option of scry's commands (options.h): each defined once, then each command's list of the
 * options it takes, in the order of its help. Data only. */
#include "options/options.h"

#include <float.h>
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
    /* sampling from outside: record, top, record --allocations */
    {.id = OPT_DURATION, .name = "duration", .short_name = 'd', .type = OT_NUMBER,
     .value_name = "S", .min = 0, .max = DBL_MAX, .needs = "a number of seconds above 0",
     .flags = OF_ABOVE_MIN},
    {.id = OPT_RATE, .name = "rate", .short_name = 'r', .type = OT_NUMBER, .value_name = "HZ",
     .min = 1, .max = 10000, .needs = "samples per second from 1 to 10000", .dflt = "100"},
    FLAG(OPT_IDLE, "idle", 0),
    /* the file filter (and the agent's settings for it) */
    {.id = OPT_PROFILE_ALL, .name = "profile-all", .type = OT_FLAG,
     .agent_env = "SCRY_PROFILE_ALL"},
    {.id = OPT_PROFILE_ONLY, .name = "profile-only", .type = OT_TEXT, .value_name = "A,B",
     .agent_env = "SCRY_PROFILE_ONLY"},
    {.id = OPT_PROFILE_EXCLUDE, .name = "profile-exclude", .type = OT_TEXT, .value_name = "A,B",
     .agent_env = "SCRY_PROFILE_EXCLUDE"},
    {.id = OPT_PROFILE_SYSTEM_LIBRARIES, .name = "profile-system-libraries", .type = OT_FLAG,
     .agent_env = "SCRY_PROFILE_SYSTEM_LIBRARIES"},
    {.id = OPT_PROGRAM_PATH, .name = "program-path", .type = OT_TEXT, .value_name = "DIR",
     .agent_env = "SCRY_PROGRAM_PATH"},
    /* memory: run, record */
    {.id = OPT_MEMORY, .name = "memory", .type = OT_FLAG, .agent_env = "SCRY_MEMORY"},
    {.id = OPT_ALLOCATION_SAMPLING_WINDOW, .name = "allocation-sampling-window", .type = OT_INT,
     .value_name = "B", .min = 1, .max = (double)(1ull << 62),
     .needs = "a number of bytes above 0 (such as 1048576)", .dflt = "1048576",
     .agent_env = "SCRY_ALLOCATION_WINDOW"},
    {.id = OPT_TIMELINE, .name = "timeline", .type = OT_FLAG, .agent_env = "SCRY_TIMELINE"},
    /* pushing to a profile server: run, record */
    TEXT(OPT_PUSH, "push", 0, "URL"),
    {.id = OPT_PUSH_INTERVAL, .name = "push-interval", .type = OT_NUMBER, .value_name = "S",
     .min = 0.1, .max = 86400, .needs = "a number of seconds from 0.1 to 86400 (such as 10)",
     .dflt = "10"},
    {.id = OPT_TAG, .name = "tag", .type = OT_TEXT, .value_name = "KEY=VALUE",
     .flags = OF_REPEAT},
    TEXT(OPT_SERVICE_NAME, "service-name", 0, "NAME"),
    TEXT(OPT_PUSH_TENANT, "push-tenant", 0, "ID"),
    /* record */
    FLAG(OPT_BLOCKING, "blocking", 0),
    NAME(OPT_HEAP_AT_END, "heap-at-end", 0, "FILE", "a file name"),
    NAME(OPT_DUMP_AT_END, "dump", 0, "FILE", "a file name"),
    /* top */
    FLAG(OPT_ONCE, "once", 0),
    {.id = OPT_INTERVAL, .name = "interval", .short_name = 'i', .type = OT_NUMBER,
     .value_name = "S", .min = 0.1, .max = 3600, .needs = "seconds from 0.1 to 3600",
     .dflt = "1"},
    {.id = OPT_SORT, .name = "sort", .short_name = 's', .type = OT_TEXT, .value_name = "KEY",
     .needs = "own, total, python, native, system, owntime, totaltime or name",
     .dflt = "own"}, /* the names are cmd_top.c's */
    FLAG(OPT_LINES, "lines", 0),
    NAME(OPT_THREAD, "thread", 't', "TID|NAME", "a thread's native id or name"),
    /* run */
    {.id = OPT_MODULE, .short_name = 'm', .type = OT_TEXT, .value_name = "MODULE",
     .flags = OF_NO_CONFIG}, /* not a key: the program comes from the command line */
    {.id = OPT_CONFIG, .name = "config", .short_name = 'c', .type = OT_TEXT,
     .value_name = "FILE", .flags = OF_NO_CONFIG},
    NAME(OPT_PYTHON, "python", 0, "PATH", "the path of a Python"),
    FLAG(OPT_CPU_ONLY, "cpu-only", 0),
    FLAG(OPT_CPU, "cpu", 0),
    {.id = OPT_GPU, .name = "gpu", .type = OT_FLAG, .agent_env = "SCRY_GPU"},
    FLAG(OPT_NO_GPU, "no-gpu", 0),
    {.id = OPT_GPU_INTERVAL, .name = "gpu-interval", .type = OT_INT, .value_name = "MS",
     .min = 10, .max = 60000,
     .needs = "a number of milliseconds from 10 to 60000 (such as 50)", .dflt = "50",
     .agent_env = "SCRY_GPU_INTERVAL_MS"},
    FLAG(OPT_NO_VIEW, "no-view", 0),
    FLAG(OPT_JSON_PROFILE_ONLY, "json", 0),
    FLAG(OPT_WEB, "web", 0),
    FLAG(OPT_VIEWER, "viewer", 0),
    FLAG(OPT_NO_BROWSER, "no-browser", 0),
    {.id = OPT_MALLOC_THRESHOLD, .name = "malloc-threshold", .type = OT_NUMBER,
     .value_name = "MB", .min = 0, .max = DBL_MAX, .needs = "a number of MB from 0 (such as 10)",
     .dflt = "0"},
    {.id = OPT_MEMORY_LEAK_DETECTOR, .name = "memory-leak-detector", .type = OT_FLAG,
     .dflt = "true", .agent_env = "SCRY_LEAK_DETECTOR"},
    FLAG(OPT_NO_MEMORY_LEAK_DETECTOR, "no-memory-leak-detector", 0),
    {.id = OPT_CPU_SAMPLING_RATE, .name = "cpu-sampling-rate", .type = OT_NUMBER,
     .value_name = "S", .min = 0, .max = 3600,
     .needs = "a number of seconds above 0 (such as 0.01)", .dflt = "0.01",
     .flags = OF_ABOVE_MIN, .agent_env = "SCRY_CPU_SAMPLING_RATE"},
    {.id = OPT_USE_VIRTUAL_TIME, .name = "use-virtual-time", .type = OT_FLAG,
     .agent_env = "SCRY_VIRTUAL_TIME"},
    FLAG(OPT_REDUCED_PROFILE, "reduced-profile", 0),
    {.id = OPT_STACKS, .name = "stacks", .type = OT_FLAG, .agent_env = "SCRY_STACKS"},
    FLAG(OPT_NO_STACKS, "no-stacks", 0),
    FLAG(OPT_NO_TIMELINE, "no-timeline", 0),
    {.id = OPT_OFF, .name = "off", .type = OT_FLAG, .agent_env = "SCRY_OFF"},
    FLAG(OPT_ON, "on", 0),
    {.id = OPT_PROFILE_INTERVAL, .name = "profile-interval", .type = OT_NUMBER,
     .value_name = "S", .min = 0.1, .max = 86400,
     .needs = "a number of seconds from 0.1 to 86400 (such as 1)",
     .agent_env = "SCRY_SNAPSHOT_INTERVAL"},
    {.id = OPT_HEAP_AT_EXIT, .name = "heap-at-exit", .type = OT_TEXT, .value_name = "FILE",
     .agent_env = "SCRY_HEAP_AT_EXIT"},
    /* collect */
    TEXT(OPT_PART_DIR, "part-dir", 0, "DIR"),
    TEXT(OPT_PROGRAM, "program", 0, "PATH"),
    TEXT(OPT_PART, "part", 0, "AFTER"),
    TEXT(OPT_SINCE, "since", 0, "BEFORE"),
    /* kernel */
    FLAG(OPT_USER, "user", 0),
    FLAG(OPT_SYS_PREFIX, "sys-prefix", 0),
    TEXT(OPT_PREFIX, "prefix", 0, "DIR"),
    TEXT(OPT_NAME, "name", 0, "NAME"),
    TEXT(OPT_DISPLAY_NAME, "display-name", 0, "TEXT"),
    /* mcp */
    FLAG(OPT_ALLOW_RUN, "allow-run", 0),
    FLAG(OPT_ALLOW_DUMP, "allow-dump", 0),
    {.id = OPT_MAX_DUMP_MB, .name = "max-dump-mb", .type = OT_INT, .value_name = "N", .min = 1,
     .max = 1000000, .needs = "a number from 1 to 1000000", .dflt = "4096"},
    {.id = OPT_RUN_TIMEOUT, .name = "run-timeout", .type = OT_INT, .value_name = "S", .min = 1,
     .max = 1000000, .needs = "a number from 1 to 1000000", .dflt = "300"},
    {.id = OPT_ROOT, .name = "root", .type = OT_TEXT, .value_name = "DIR", .flags = OF_REPEAT},
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

    /* run, record (and record --allocations: its options are in record's help) and top,
     * interleaved: a use two or three of them share sits where it comes in each one's help */
    /* run */
    USE(OC_RUN, OPT_OUTFILE,
     "where to write the profile (default scry-profile.json)"),
    USE(OC_RUN, OPT_CONFIG,
     "options from a YAML file (option: value, a list for\n"
     "--tag, true/false for flags); the command line wins"),
    USE(OC_RUN, OPT_PYTHON,
     "the Python to run (default: $SCRY_PYTHON, else python3\n"
     "on PATH; python -m scry: its own interpreter)"),
    USE(OC_RUN, OPT_MODULE,
     "run a module, as python -m does"),
    USE(OC_RUN, OPT_CPU_ONLY,
     "profile CPU time only (no memory, copies or leaks)"),
    USE(OC_RUN, OPT_CPU,
     "CPU time; without --memory, CPU time only (Scalene's\n"
     "mode flags)"),
    USE(OC_RUN, OPT_MEMORY,
     "profile memory too (the default)"),
    USE(OC_RUN, OPT_ALLOCATION_SAMPLING_WINDOW,
     "bytes a thread allocates (net) between two memory\n"
     "samples (default 1048576)"),
    USE_AS(OC_RUN, OPT_MEMORY_LEAK_DETECTOR,
     "report lines whose allocations look leaked (default on)",
     "    --memory-leak-detector / --no-memory-leak-detector"),
    USE(OC_RUN, OPT_NO_MEMORY_LEAK_DETECTOR, NULL),
    USE_AS(OC_RUN, OPT_GPU,
     "GPU utilisation and memory per line, NVIDIA through NVML\n"
     "(default: on when a device is visible; --gpu is also a\n"
     "mode flag: --gpu without --memory is CPU and GPU only)",
     "    --gpu / --no-gpu"),
    USE(OC_RUN, OPT_NO_GPU, NULL),
    USE(OC_RUN, OPT_GPU_INTERVAL,
     "milliseconds between two GPU readings (10 to 60000,\n"
     "default 50)"),
    USE(OC_RUN, OPT_CPU_SAMPLING_RATE,
     "mean seconds between samples (default 0.01)"),
    USE(OC_RUN, OPT_USE_VIRTUAL_TIME,
     "count time on the CPU only, not sleep or I/O"),
    /* record */
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_PID,
     "the process to record"),
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_DURATION,
     "stop after S seconds (default: until Ctrl-C or its exit)"),
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_OUTFILE,
     "where to write the profile (default scry-profile.json)"),
    /* top */
    USE(OC_TOP, OPT_PID,
     "the process to watch"),
    USE(OC_TOP, OPT_ONCE,
     "sample for --duration (default 2.5 s), print one screen\n"
     "and exit (for scripts and tests)"),
    USE(OC_TOP, OPT_DURATION,
     "stop after S seconds (default: until q or Ctrl-C)"),
    USE(OC_TOP, OPT_INTERVAL,
     "seconds between screens (default 1)"),
    /* record and top */
    USE(OC_RECORD | OC_TOP, OPT_RATE,
     "samples per second (default 100, at most 10000)"),
    /* top */
    USE(OC_TOP, OPT_SORT,
     "own, total, python, native, system, owntime,\n"
     "totaltime or name (default own)"),
    USE(OC_TOP, OPT_LINES,
     "one row per line instead of per function"),
    USE(OC_TOP, OPT_THREAD,
     "only this thread (its native id or its name)"),
    USE_NO_SHORT(OC_TOP, OPT_SUBPROCESSES,
     "also its children (and theirs) that run Python"),
    USE(OC_TOP, OPT_IDLE,
     "also count the off-CPU time of threads with none of your\n"
     "code on their stack"),
    USE(OC_TOP, OPT_NO_COLOR,
     "no colour (also when NO_COLOR is set or not a terminal)"),
    USE(OC_TOP, OPT_PROFILE_ALL,
     "every file, the standard library included"),
    /* record */
    USE_NO_SHORT(OC_RECORD, OPT_SUBPROCESSES,
     "also record its children (and theirs) that run Python"),
    USE(OC_RECORD, OPT_IDLE,
     "also count the off-CPU time of threads with none of your\n"
     "code on their stack (as system time, in no line)"),
    USE(OC_RECORD, OPT_BLOCKING,
     "stop the process while each sample is read (consistent\n"
     "stacks; slows it down)"),
    USE_NO_SHORT(OC_RECORD, OPT_NATIVE,
     "also the native call chain of each running thread\n"
     "(libunwind-ptrace; stops the process for each sample)"),
    USE(OC_RECORD, OPT_MEMORY,
     "also its memory, as scry run --memory: loads scry's agent\n"
     "into the process (Python 3.14+: through CPython's remote\n"
     "debugging where allowed; else ptrace), which samples it\n"
     "from inside and goes idle at the end\n"
     "(docs/record-memory.md)"),
    USE(OC_RECORD, OPT_HEAP_AT_END,
     "with --memory: a heap snapshot with the allocation samples\n"
     "as the recording ends, before the agent detaches (scry\n"
     "analyze --allocations FILE; docs/allocations.md)"),
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_ALLOCATION_SAMPLING_WINDOW,
     "with --memory: one allocation sample per B allocated\n"
     "bytes on average (default 1048576, as scry run's)"),
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_ALLOCATIONS_FLAG,
     "instead: its allocations, with eBPF uprobes on malloc,\n"
     "calloc, realloc and free (nothing loaded into it; root or\n"
     "CAP_BPF+CAP_PERFMON); needs --dump FILE: the heap snapshot\n"
     "taken at the end, with the live samples for analyze,\n"
     "query and flamegraph --allocations (docs/allocations.md),\n"
     "or -o FILE: the samples, for scry dump --allocations FILE;\n"
     "takes --duration, --json, --quiet,\n"
     "--allocation-sampling-window B (default 1048576)\n"
     "and the --profile-* and --program-path filter below:\n"
     "a sample's line is its innermost frame of your code"),
    USE(OC_RECORD_ALLOC, OPT_DUMP_AT_END, NULL), /* in --allocations' help */
    USE(OC_RECORD_ALLOC, OPT_JSON, NULL),
    /* the file filter */
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC, OPT_PROFILE_ALL,
     "profile every file, the standard library included"),
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC | OC_TOP, OPT_PROFILE_ONLY,
     "only files whose path contains one of these"),
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC | OC_TOP, OPT_PROFILE_EXCLUDE,
     "never files whose path contains one of these"),
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC, OPT_PROFILE_SYSTEM_LIBRARIES,
     "also profile the standard library and site-packages"),
    /* top */
    USE(OC_TOP, OPT_PROFILE_SYSTEM_LIBRARIES,
     "also the standard library and site-packages"),
    USE(OC_TOP, OPT_PROGRAM_PATH,
     "your code: files under DIR (default: the script's\n"
     "directory, else the process's working directory)"),
    /* run */
    USE(OC_RUN, OPT_PROGRAM_PATH,
     "your code: files under DIR are profiled (default: the\n"
     "program's directory; for -m the current directory)"),
    USE(OC_RUN, OPT_CPU_PERCENT_THRESHOLD,
     "the view hides lines under P% of the time (default 1);\n"
     "with --reduced-profile the JSON leaves them out too"),
    USE(OC_RUN, OPT_REDUCED_PROFILE,
     "keep only lines and functions at or above the threshold\n"
     "(or with memory: see --malloc-threshold)"),
    USE(OC_RUN, OPT_MALLOC_THRESHOLD,
     "a line under the time threshold stays in the reduced\n"
     "profile and the view for its memory only when it\n"
     "allocated at least MB megabytes (default 0: any)"),
    USE(OC_RUN, OPT_CLI,
     "print the terminal view at the end (the default)"),
    USE_AS(OC_RUN, OPT_NO_VIEW,
     "do not print it: the JSON profile only",
     "    --no-view, --json"),
    USE(OC_RUN, OPT_JSON_PROFILE_ONLY, NULL),
    USE(OC_RUN, OPT_QUIET,
     "say nothing but warnings and errors: no progress line\n"
     "at the end, no line saying what was written (the view\n"
     "is still printed unless --no-view)"),
    USE(OC_RUN, OPT_HTML,
     "also write the browser page next to the profile\n"
     "(scry-profile.html for scry-profile.json)"),
    USE_AS(OC_RUN, OPT_WEB,
     "open the browser view at the end instead of printing the\n"
     "terminal view ($BROWSER or xdg-open, with a display;\n"
     "otherwise the terminal view)",
     "    --web, --viewer"),
    USE(OC_RUN, OPT_VIEWER, NULL),
    USE(OC_RUN, OPT_NO_BROWSER,
     "write the page next to the profile; open nothing"),
    USE_AS(OC_RUN, OPT_STACKS,
     "record the call stacks of your code (for flame graphs;\n"
     "default off)",
     "    --stacks / --no-stacks"),
    USE(OC_RUN, OPT_NO_STACKS, NULL),
    USE_AS(OC_RUN, OPT_TIMELINE,
     "record each sample's time and thread (the per-thread\n"
     "timelines of view --format trace and firefox; default\n"
     "off)",
     "    --timeline / --no-timeline"),
    USE(OC_RUN, OPT_NO_TIMELINE, NULL),
    USE_AS(OC_RUN, OPT_OFF,
     "start with profiling off (or on, the default); turn it\n"
     "on and off with scry.start()/scry.stop() in the program\n"
     "or scry control PID on|off from another shell",
     "    --off / --on"),
    USE(OC_RUN, OPT_ON, NULL),
    USE(OC_RUN, OPT_HEAP_AT_EXIT,
     "as the program ends (after its own atexit handlers,\n"
     "before the interpreter finalizes) take a heap snapshot\n"
     "with its live allocation samples into FILE, for scry\n"
     "analyze --allocations (docs/allocations.md)"),
    USE(OC_RUN, OPT_PROFILE_INTERVAL,
     "rewrite the profile every S seconds while the program\n"
     "runs (each write atomic: a viewer may read it any time)"),
    /* record */
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_PROGRAM_PATH,
     "your code: files under DIR are profiled (default: the\n"
     "script's directory, else the process's working directory)"),
    USE(OC_RECORD, OPT_TIMELINE,
     "also keep each sample's time and thread (the per-thread\n"
     "timelines of view --format trace and firefox)"),
    USE(OC_RECORD | OC_RECORD_ALLOC, OPT_QUIET,
     "say nothing but warnings and errors: no progress line\n"
     "(elapsed time, samples), no line saying what it records\n"
     "and what it wrote (with --memory and --allocations too)"),
    /* pushing to a profile server: run and record */
    USE(OC_RUN | OC_RECORD, OPT_PUSH,
     "continuous profiling: send a pprof profile of each\n"
     "interval to the Pyroscope server at URL (its /ingest),\n"
     "and one of the last interval at the end"),
    USE(OC_RUN | OC_RECORD, OPT_PUSH_INTERVAL,
     "seconds between pushes (default 10)"),
    USE(OC_RUN | OC_RECORD, OPT_SERVICE_NAME,
     "the application name on the server (default: the\n"
     "program's name)"),
    USE(OC_RUN | OC_RECORD, OPT_TAG,
     "a label of every pushed profile (repeatable)"),
    USE(OC_RUN | OC_RECORD, OPT_PUSH_TENANT,
     "the tenant (X-Scope-OrgID) of a multi-tenant server;\n"
     "basic authentication comes from\n"
     "PYROSCOPE_BASIC_AUTH_USER and _PASSWORD"),

    /* collect (the Python package's; its help lists none) */
    USE(OC_COLLECT, OPT_PID, NULL),
    USE(OC_COLLECT, OPT_PART_DIR, NULL),
    USE(OC_COLLECT, OPT_OUTFILE, NULL),
    USE(OC_COLLECT, OPT_PROGRAM, NULL),
    USE(OC_COLLECT, OPT_PROGRAM_PATH, NULL),
    USE(OC_COLLECT, OPT_PART, NULL),
    USE(OC_COLLECT, OPT_SINCE, NULL),
    /* kernel */
    USE(OC_KERNEL, OPT_USER,
     "for you only (the default): Jupyter's data folder in your\n"
     "home"),
    USE(OC_KERNEL, OPT_SYS_PREFIX,
     "into the Python's environment (a virtualenv or conda)"),
    USE(OC_KERNEL, OPT_PREFIX,
     "under DIR/share/jupyter/kernels"),
    USE(OC_KERNEL, OPT_NAME,
     "the kernel's name (default scry; jupyter's --kernel NAME)"),
    USE(OC_KERNEL, OPT_DISPLAY_NAME,
     "the name shown in Jupyter (default \"Python 3 (scry)\")"),
    USE(OC_KERNEL, OPT_PYTHON,
     "the kernel's Python (default: $SCRY_PYTHON, else python3 on\n"
     "PATH; python -m scry: its own interpreter)"),
    /* mcp */
    USE(OC_MCP, OPT_ROOT,
     "also allow the files under DIR (repeatable): the tools read and\n"
     "write only regular files under the server's working directory,\n"
     "these roots and the server's own directory, symlinks resolved"),
    USE(OC_MCP, OPT_ALLOW_RUN,
     "allow run_profile (runs commands the agent gives)"),
    USE(OC_MCP, OPT_ALLOW_DUMP,
     "allow capture_heap (stops a process while its heap is read)"),
    USE(OC_MCP, OPT_MAX_DUMP_MB,
     "capture_heap refuses processes with more RSS (default 4096)"),
    USE(OC_MCP, OPT_RUN_TIMEOUT,
     "run_profile's longest run, in seconds (default 300)"),

    /* every command takes --help; it is not listed */
    USE(OC_RUN | OC_RECORD | OC_RECORD_ALLOC | OC_TOP | OC_VIEW | OC_STACKS | OC_DUMP | OC_ANALYZE |
         OC_QUERY | OC_CHECK | OC_DIFF | OC_COMPARE | OC_FLAMEGRAPH | OC_OPTIMIZE | OC_COLLECT |
         OC_KERNEL | OC_MCP,
     OPT_HELP, NULL),
};
const size_t opt_nuses = sizeof(opt_uses) / sizeof(opt_uses[0]);
