/* scry's command-line options, declared once (option_table.c) and used everywhere from there:
 * getopt's tables, each command's --help, --config's keys, the SCRY_* settings an option becomes
 * for the agent, and the MCP tools' argument schemas. An option is defined once (struct opt_def:
 * its name, short form, value and the values it accepts, default, --config key, agent setting);
 * a command lists the options it takes, in the order of its help, each with the help it has
 * there (struct opt_use). Parsing goes through opt_next, which checks a value against its
 * definition, so that every bad value is the same usage error: "--NAME needs WHAT, not 'VALUE'",
 * with the hint that names the command's --help (cli_usage). */
#ifndef SCRY_OPTIONS_OPTIONS_H
#define SCRY_OPTIONS_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "common/strbuf.h"

/* The commands that take options, one bit each (a use lists the commands it belongs to). `scry
 * record --allocations` (src/ebpf) is a command of its own here: it takes other options. */
enum opt_cmd {
    OC_RUN = 1u << 0,
    OC_RECORD = 1u << 1,
    OC_RECORD_ALLOC = 1u << 2,
    OC_TOP = 1u << 3,
    OC_VIEW = 1u << 4,
    OC_STACKS = 1u << 5,
    OC_DUMP = 1u << 6,
    OC_ANALYZE = 1u << 7,
    OC_QUERY = 1u << 8,
    OC_CHECK = 1u << 9,
    OC_DIFF = 1u << 10,
    OC_COMPARE = 1u << 11,
    OC_FLAMEGRAPH = 1u << 12,
    OC_OPTIMIZE = 1u << 13,
    OC_COLLECT = 1u << 14,
    OC_KERNEL = 1u << 15,
    OC_MCP = 1u << 16,
};

/* Every option; what opt_next returns. A name that means two things (run's --json, the
 * reports' --json) is two options. */
enum opt_id {
    OPT_END = 0, /* opt_next: no more options */
    /* shared by many commands */
    OPT_HELP, OPT_JSON, OPT_QUIET, OPT_OUTFILE, OPT_OUTPUT, OPT_PID, OPT_TOP, OPT_NO_COLOR,
    OPT_DURATION, OPT_RATE, OPT_PYTHON, OPT_MEMORY, OPT_NATIVE, OPT_HTML, OPT_CLI,
    OPT_ALLOCATIONS_FLAG, OPT_ALLOCATION_SAMPLING_WINDOW, OPT_TIMELINE,
    /* the file filter: run, record, top, record --allocations, collect */
    OPT_SUBPROCESSES, OPT_IDLE, OPT_PROFILE_ALL, OPT_PROFILE_ONLY, OPT_PROFILE_EXCLUDE,
    OPT_PROFILE_SYSTEM_LIBRARIES, OPT_PROGRAM_PATH,
    /* pushing to a profile server: run, record */
    OPT_PUSH, OPT_PUSH_INTERVAL, OPT_TAG, OPT_SERVICE_NAME, OPT_PUSH_TENANT,
    /* targets: stacks, dump */
    OPT_CORE, OPT_EXE, OPT_MINIDUMP,
    /* stacks */
    OPT_LOCALS, OPT_ASYNC,
    /* dump */
    OPT_CAPTURE_CONTENTS, OPT_MAX_STR, OPT_GRAPH, OPT_ALLOCATIONS_FILE,
    /* query */
    OPT_TYPE, OPT_RETAINING_PATH, OPT_LOCATE,
    /* view */
    OPT_STANDALONE, OPT_CPU_PERCENT_THRESHOLD, OPT_FORMAT, OPT_SERVE, OPT_PROPOSE, OPT_PORT,
    /* a language model's provider: view --serve, optimize */
    OPT_PROVIDER, OPT_BASE_URL, OPT_MODEL, OPT_DEPLOYMENT, OPT_API_VERSION, OPT_REGION,
    OPT_API_KEY_ENV, OPT_API_KEY,
    /* optimize */
    OPT_FUNCTION, OPT_TIMEOUT, OPT_SHOW_PROMPT, OPT_NO_REDACT,
    /* compare */
    OPT_FAIL_ABOVE, OPT_NORMALIZE, OPT_TOP_OR_ALL,
    /* flamegraph */
    OPT_FOLDED, OPT_DIFF, OPT_MIN_PCT, OPT_MIN_BYTES, OPT_MAX_DEPTH, OPT_TITLE, OPT_COLORS,
    OPT_WIDTH,
    /* kernel */
    OPT_USER, OPT_SYS_PREFIX, OPT_PREFIX, OPT_NAME, OPT_DISPLAY_NAME,
    /* mcp */
    OPT_ALLOW_RUN, OPT_ALLOW_DUMP, OPT_MAX_DUMP_MB, OPT_RUN_TIMEOUT, OPT_ROOT,
    /* collect */
    OPT_PART_DIR, OPT_PROGRAM, OPT_PART, OPT_SINCE,
    /* top */
    OPT_ONCE, OPT_INTERVAL, OPT_SORT, OPT_LINES, OPT_THREAD,
    /* record */
    OPT_BLOCKING, OPT_HEAP_AT_END, OPT_DUMP_AT_END,
    /* run */
    OPT_MODULE, OPT_CONFIG, OPT_CPU_ONLY, OPT_CPU, OPT_GPU, OPT_NO_GPU, OPT_GPU_INTERVAL,
    OPT_NO_VIEW, OPT_JSON_PROFILE_ONLY, OPT_WEB, OPT_VIEWER, OPT_NO_BROWSER,
    OPT_MALLOC_THRESHOLD, OPT_MEMORY_LEAK_DETECTOR, OPT_NO_MEMORY_LEAK_DETECTOR,
    OPT_CPU_SAMPLING_RATE, OPT_USE_VIRTUAL_TIME, OPT_REDUCED_PROFILE, OPT_STACKS, OPT_NO_STACKS,
    OPT_NO_TIMELINE, OPT_OFF, OPT_ON, OPT_PROFILE_INTERVAL, OPT_HEAP_AT_EXIT,
    OPT__COUNT
};

/* What an option's value is, and so how opt_next checks it. */
enum opt_type {
    OT_FLAG,   /* no value */
    OT_TEXT,   /* any text, the empty one included */
    OT_NAME,   /* text that is not empty (a file, a name) */
    OT_INT,    /* a whole number from min to max */
    OT_NUMBER, /* a finite number from min to max (above min with OF_ABOVE_MIN) */
    OT_PID,    /* a process id: a whole number from 1 to INT_MAX */
};

enum opt_flags {
    OF_REPEAT = 1u << 0,    /* may be given more than once (a --config list) */
    OF_NO_CONFIG = 1u << 1, /* not a --config key (--config, --help) */
    OF_ABOVE_MIN = 1u << 2, /* OT_NUMBER: min itself is refused */
};

/* An option, once. */
struct opt_def {
    enum opt_id id;
    const char *name;       /* the long name, without "--"; NULL: short form only */
    char short_name;        /* 0: none */
    enum opt_type type;
    const char *value_name; /* the value in help: FILE, PID; NULL for a flag */
    double min, max;        /* OT_INT, OT_NUMBER: the values accepted */
    const char *needs;      /* the usage error's WHAT: "a percentage from 0 to 100" */
    const char *dflt;       /* its default, as a value would be given; NULL: none */
    unsigned flags;         /* enum opt_flags */
    const char *agent_env;  /* the SCRY_* setting it becomes for the agent; NULL: none */
};

/* An option as a command (or several) takes it: the order of a command's uses is its help's. */
struct opt_use {
    unsigned cmds; /* enum opt_cmd bits */
    enum opt_id id;
    /* Its help: lines with '\n' between them (no final one), the first beside the option, the
     * others under it. NULL: taken but listed under another use's label (--propose, --no-gpu)
     * or not listed at all (--api-key: refused with a message of its own). */
    const char *help;
    const char *label; /* the left column when not "-s, --name VALUE" (several options) */
    bool no_short;     /* without the definition's short form here (top: -s is --sort) */
};

extern const struct opt_def opt_defs[];
extern const size_t opt_ndefs;
extern const struct opt_use opt_uses[];
extern const size_t opt_nuses;

/* The definition of id; NULL if the table has none (a defect the tests catch). */
const struct opt_def *opt_def_of(enum opt_id id);

/* ---- parsing ------------------------------------------------------------------------------- */

#define OPT_MAX_PER_COMMAND 72

enum opt_parse_mode {
    OP_PERMUTE = 0,      /* operands and options in any order (getopt's default) */
    OP_STOP_AT_OPERAND = 1u << 0, /* options end at the first operand (a program, its args) */
};

struct opt_parser {
    unsigned cmd;
    int argc;
    char **argv;
    struct option longopts[OPT_MAX_PER_COMMAND + 1];
    const struct opt_def *by_val[OPT_MAX_PER_COMMAND]; /* getopt's val - OPT_VAL_BASE */
    char shorts[OPT_MAX_PER_COMMAND];                  /* each one's short form here, or 0 */
    char shortopts[2 * OPT_MAX_PER_COMMAND + 4];
    size_t n;
    /* The option opt_next returned last, and its value checked. */
    const struct opt_def *def;
    const char *arg; /* the value as given; NULL for a flag */
    double num;      /* OT_INT, OT_NUMBER */
    long long ival;  /* OT_INT, OT_PID */
};

/* Starts parsing argv (argv[0]: the command's name) for command cmd (one enum opt_cmd bit). */
void opt_begin(struct opt_parser *p, unsigned cmd, int argc, char **argv, unsigned mode);
/* The next option: its id, with p->arg/num/ival set and checked; OPT_END when there is no more
 * (opt_operand gives the index of the first operand); -SCRY_E_USAGE (recorded with cli_usage)
 * for an unknown option, a missing value or a value its definition refuses. */
int opt_next(struct opt_parser *p);
/* The index in argv of the next argument to read (getopt's optind; 1 before the first
 * opt_next): once opt_next has returned OPT_END, the first operand. */
int opt_operand(const struct opt_parser *p);
/* The usage error for the current option's value (opt_next's form, for a command's own checks
 * of a value, such as --format's): returns -SCRY_E_USAGE. */
int opt_bad_value(const struct opt_parser *p);

/* ---- what is made from the table ----------------------------------------------------------- */

/* The options part of cmd's help: a line (or more) per listed use, the help starting at column
 * (counted from 0). */
void opt_help(unsigned cmd, int column, struct strbuf *out);
/* cmd's options as a getopt_long table (NUL-terminated; what --config's keys are checked
 * against, run/run_config.h), with repeatable and skip: the names of its OF_REPEAT and
 * OF_NO_CONFIG options (NULL-terminated). The arrays are p's. */
struct opt_config_keys {
    struct option longopts[OPT_MAX_PER_COMMAND + 1];
    const char *repeatable[OPT_MAX_PER_COMMAND + 1], *skip[OPT_MAX_PER_COMMAND + 1];
};
void opt_config_keys(unsigned cmd, struct opt_config_keys *k);
/* The agent setting (SCRY_*) of id; NULL if it becomes none. */
const char *opt_agent_env(enum opt_id id);
/* A JSON schema for an MCP tool's argument standing for option id: its type (boolean, integer,
 * number, string), range and default from the definition, described by description (NULL: the
 * help of the option's first use, its lines joined). A new reference, NULL on no memory. */
json_t *opt_schema(enum opt_id id, const char *description);

#endif
