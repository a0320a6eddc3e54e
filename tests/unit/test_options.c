/* The option table (src/options/option_table.c) and its engine (src/options/options.c): the
 * table is consistent (each option defined once, each use names a definition, no command takes
 * two options of one name or one short form), every option a command takes is in its help, and
 * parsing checks values against their definitions with the one form of usage error. */
#include <string.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "testlib.h"

/* cli_common.c's command table: a command for the usage errors' hint. */
const struct cli_command cli_commands[] = {
    {.name = "view", .usage = "usage: scry view\n\n", .opts = OC_VIEW, .opt_column = 32}};
const size_t cli_ncommands = 1;

static const unsigned all_cmds[] = {
    OC_RUN,     OC_RECORD, OC_RECORD_ALLOC, OC_TOP,     OC_VIEW,    OC_STACKS,
    OC_DUMP,    OC_ANALYZE, OC_QUERY,       OC_CHECK,   OC_DIFF,    OC_COMPARE,
    OC_FLAMEGRAPH, OC_OPTIMIZE, OC_COLLECT,  OC_KERNEL, OC_MCP,
};
#define NCMDS (sizeof(all_cmds) / sizeof(all_cmds[0]))

/* Options taken but deliberately not listed in a help: --help itself, --api-key (refused with
 * a message of its own), flamegraph's second name of --output, and scry collect's (the Python
 * package's way in: its help says what it is for, not how the package calls it). */
static bool unlisted(const struct opt_use *u)
{
    return u->id == OPT_HELP || u->id == OPT_API_KEY ||
           (u->id == OPT_OUTFILE && u->cmds == OC_FLAMEGRAPH) || u->cmds == OC_COLLECT;
}

static void test_definitions_are_whole_and_once(void)
{
    for (size_t i = 0; i < opt_ndefs; i++) {
        const struct opt_def *d = &opt_defs[i];
        CHECK(d->id > OPT_END && d->id < OPT__COUNT);
        CHECK(d->name || d->short_name);
        CHECK(opt_def_of(d->id) == d); /* no second definition of the id */
        bool used = false;
        for (size_t j = 0; j < opt_nuses && !used; j++)
            used = opt_uses[j].id == d->id;
        if (!used)
            tl_fail(__FILE__, __LINE__, "--%s is defined but no command takes it", d->name);
        if (d->type == OT_INT || d->type == OT_NUMBER || d->type == OT_NAME ||
            d->type == OT_PID)
            CHECK(d->needs != NULL);
        if (d->type == OT_INT || d->type == OT_NUMBER)
            CHECK(d->min <= d->max);
        CHECK((d->type == OT_FLAG) == (d->value_name == NULL));
        if (d->agent_env)
            CHECK(strncmp(d->agent_env, "SCRY_", 5) == 0);
    }
    for (size_t j = 0; j < opt_nuses; j++) {
        CHECK(opt_def_of(opt_uses[j].id) != NULL);
        CHECK(opt_uses[j].cmds != 0);
    }
}

static void test_no_command_takes_a_name_twice(void)
{
    for (size_t c = 0; c < NCMDS; c++) {
        struct opt_parser p;
        char *argv[] = {"x", NULL};
        opt_begin(&p, all_cmds[c], 1, argv, 0);
        for (size_t a = 0; a < p.n; a++)
            for (size_t b = a + 1; b < p.n; b++) {
                const struct opt_def *x = p.by_val[a], *y = p.by_val[b];
                if (x->name && y->name && strcmp(x->name, y->name) == 0)
                    tl_fail(__FILE__, __LINE__, "command %#x takes --%s twice", all_cmds[c],
                            x->name);
                if (p.shorts[a] && p.shorts[a] == p.shorts[b])
                    tl_fail(__FILE__, __LINE__, "command %#x gives -%c to --%s and --%s",
                            all_cmds[c], p.shorts[a], x->name, y->name);
            }
    }
}

static void test_every_option_is_in_its_help(void)
{
    for (size_t c = 0; c < NCMDS; c++) {
        struct strbuf help = STRBUF_INIT;
        opt_help(all_cmds[c], 30, &help);
        for (size_t j = 0; j < opt_nuses; j++) {
            const struct opt_use *u = &opt_uses[j];
            const struct opt_def *d = opt_def_of(u->id);
            if (!(u->cmds & all_cmds[c]) || unlisted(u) || !d || !d->name)
                continue;
            char want[80];
            snprintf(want, sizeof(want), "--%s", d->name);
            const char *at = sb_str(&help);
            bool found = false;
            size_t n = strlen(want);
            /* a whole name: --cli is not found in --client */
            while (!found && (at = strstr(at, want)) != NULL) {
                char next = at[n];
                found = !(next == '-' || (next >= 'a' && next <= 'z'));
                at += n;
            }
            if (!found)
                tl_fail(__FILE__, __LINE__, "command %#x takes %s but its help leaves it out",
                        all_cmds[c], want);
        }
        sb_release(&help);
    }
}

static void test_help_layout(void)
{
    struct strbuf help = STRBUF_INIT;
    opt_help(OC_VIEW, 32, &help);
    /* the short form, the long name and the value, the help at the column */
    CHECK(strstr(sb_str(&help),
                 "\n  -o, --outfile FILE            where the page goes (--html, --standalone, "
                 "or the default)\n") != NULL);
    /* a long label puts its help on the next line, at the column */
    CHECK(strstr(sb_str(&help), "      --format folded|speedscope\n"
                                "                                export the profile's") != NULL);
    /* the second line of a help is at the column too */
    CHECK(strstr(sb_str(&help), "the page gets only a key typed there") == NULL);
    CHECK(strstr(sb_str(&help), "\n                                page gets only a key typed "
                                "there\n") != NULL);
    sb_release(&help);
}

/* Runs a parse of view's options over args; the ids returned, 0-terminated, into ids. Returns
 * opt_next's last value. */
static int parse_view(char **argv, int argc, int *ids, struct opt_parser *p)
{
    opt_begin(p, OC_VIEW, argc, argv, OP_PERMUTE);
    int c, n = 0;
    while ((c = opt_next(p)) > 0)
        ids[n++] = c;
    ids[n] = 0;
    return c;
}

static void test_parse_and_check_values(void)
{
    err_clear();
    int ids[16];
    struct opt_parser p;
    char *ok[] = {"view", "--cli", "prof.json", "--cpu-percent-threshold=2.5", "-o", "x", NULL};
    CHECK_EQ(parse_view(ok, 6, ids, &p), OPT_END);
    CHECK_EQ(ids[0], OPT_CLI);
    CHECK_EQ(ids[1], OPT_CPU_PERCENT_THRESHOLD);
    CHECK_EQ(ids[2], OPT_OUTFILE);
    CHECK_EQ(ids[3], 0);
    CHECK_STR(ok[opt_operand(&p)], "prof.json"); /* operands after the options (permuted) */

    char *bad[] = {"view", "--port", "70000", NULL};
    CHECK_EQ(parse_view(bad, 3, ids, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--port needs a port from 1 to 65535, not '70000'");

    char *range[] = {"view", "--cpu-percent-threshold", "100.5", NULL};
    CHECK_EQ(parse_view(range, 3, ids, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(),
              "--cpu-percent-threshold needs a percentage from 0 to 100, not '100.5'");

    char *missing[] = {"view", "--port", NULL};
    CHECK_EQ(parse_view(missing, 2, ids, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "option --port needs a value");

    char *unknown[] = {"view", "--pid", "3", NULL}; /* an option of other commands */
    CHECK_EQ(parse_view(unknown, 3, ids, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "unknown option '--pid'");

    /* a prefix of two options names both */
    char *amb[] = {"record", "--alloc", NULL};
    opt_begin(&p, OC_RECORD, 2, amb, OP_STOP_AT_OPERAND);
    CHECK_EQ(opt_next(&p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "option '--alloc' is ambiguous: it could be "
                                  "--allocation-sampling-window, --allocations");
    /* a prefix of one is that option (getopt's rule) */
    char *pre[] = {"view", "--stand", NULL};
    CHECK_EQ(parse_view(pre, 2, ids, &p), OPT_END);
    CHECK_EQ(ids[0], OPT_STANDALONE);

    /* an id's short form and value: stacks -p 42 */
    char *st[] = {"stacks", "-p", "42", "-j", NULL};
    opt_begin(&p, OC_STACKS, 4, st, OP_STOP_AT_OPERAND);
    CHECK_EQ(opt_next(&p), OPT_PID);
    CHECK_EQ(p.ival, 42);
    CHECK_EQ(opt_next(&p), OPT_JSON);
    CHECK_EQ(opt_next(&p), OPT_END);
    char *noname[] = {"dump", "-o", "", NULL};
    opt_begin(&p, OC_DUMP, 3, noname, OP_STOP_AT_OPERAND);
    CHECK_EQ(opt_next(&p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--output needs a file name");
}

static void test_schema_from_definition(void)
{
    json_t *s = opt_schema(OPT_PORT, NULL);
    CHECK(s != NULL);
    CHECK_STR(json_string_value(json_object_get(s, "type")), "integer");
    CHECK_EQ(json_integer_value(json_object_get(s, "minimum")), 1);
    CHECK_EQ(json_integer_value(json_object_get(s, "maximum")), 65535);
    CHECK_STR(json_string_value(json_object_get(s, "description")),
              "the port --serve listens on (default: any free one)");
    json_decref(s);
    s = opt_schema(OPT_NORMALIZE, "divide out a machine speed change first");
    CHECK_STR(json_string_value(json_object_get(s, "type")), "boolean");
    CHECK_STR(json_string_value(json_object_get(s, "description")),
              "divide out a machine speed change first");
    json_decref(s);
}

static void test_agent_env(void)
{
    static const struct {
        enum opt_id id;
        const char *env;
    } want[] = {
        {OPT_CPU_SAMPLING_RATE, "SCRY_CPU_SAMPLING_RATE"},
        {OPT_USE_VIRTUAL_TIME, "SCRY_VIRTUAL_TIME"},
        {OPT_PROGRAM_PATH, "SCRY_PROGRAM_PATH"},
        {OPT_PROFILE_ALL, "SCRY_PROFILE_ALL"},
        {OPT_PROFILE_ONLY, "SCRY_PROFILE_ONLY"},
        {OPT_PROFILE_EXCLUDE, "SCRY_PROFILE_EXCLUDE"},
        {OPT_PROFILE_SYSTEM_LIBRARIES, "SCRY_PROFILE_SYSTEM_LIBRARIES"},
        {OPT_STACKS, "SCRY_STACKS"},
        {OPT_TIMELINE, "SCRY_TIMELINE"},
        {OPT_MEMORY, "SCRY_MEMORY"},
        {OPT_ALLOCATION_SAMPLING_WINDOW, "SCRY_ALLOCATION_WINDOW"},
        {OPT_MEMORY_LEAK_DETECTOR, "SCRY_LEAK_DETECTOR"},
        {OPT_OFF, "SCRY_OFF"},
        {OPT_HEAP_AT_EXIT, "SCRY_HEAP_AT_EXIT"},
        {OPT_PROFILE_INTERVAL, "SCRY_SNAPSHOT_INTERVAL"},
        {OPT_GPU, "SCRY_GPU"},
        {OPT_GPU_INTERVAL, "SCRY_GPU_INTERVAL_MS"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *env = opt_agent_env(want[i].id);
        CHECK(env != NULL);
        if (env)
            CHECK_STR(env, want[i].env);
    }
    CHECK(opt_agent_env(OPT_OUTFILE) == NULL);
}

static bool listed(const char *const *names, const char *name)
{
    for (; *names; names++)
        if (strcmp(*names, name) == 0)
            return true;
    return false;
}

/* --config's keys are run's long options (Scalene's names among them), --tag the one list. */
static void test_run_config_keys(void)
{
    struct opt_config_keys k;
    opt_config_keys(OC_RUN, &k);
    size_t n = 0;
    while (k.longopts[n].name)
        n++;
    CHECK_EQ(n, 44);
    CHECK(listed(k.repeatable, "tag"));
    CHECK(k.repeatable[1] == NULL);
    CHECK(listed(k.skip, "config") && listed(k.skip, "help"));
    CHECK(k.skip[2] == NULL);
    bool cpu_rate = false, viewer = false;
    for (size_t i = 0; i < n; i++) {
        cpu_rate |= strcmp(k.longopts[i].name, "cpu-sampling-rate") == 0 &&
                    k.longopts[i].has_arg == required_argument;
        viewer |= strcmp(k.longopts[i].name, "viewer") == 0 &&
                  k.longopts[i].has_arg == no_argument;
    }
    CHECK(cpu_rate && viewer);
}

/* Parses argv (NULL-terminated) for cmd and returns the first option's result. */
static int first(unsigned cmd, char **argv, struct opt_parser *p)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    opt_begin(p, cmd, argc, argv, OP_STOP_AT_OPERAND);
    return opt_next(p);
}

static void test_values(void)
{
    struct opt_parser p;
    char *a[] = {"run", "--cpu-sampling-rate", "0", "x.py", NULL};
    CHECK_EQ(first(OC_RUN, a, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(),
              "--cpu-sampling-rate needs a number of seconds above 0 (such as 0.01), not '0'");
    char *b[] = {"run", "--gpu-interval=50", NULL};
    CHECK_EQ(first(OC_RUN, b, &p), OPT_GPU_INTERVAL);
    CHECK_EQ(p.ival, 50);
    char *c[] = {"run", "--gpu-interval", "9", NULL};
    CHECK_EQ(first(OC_RUN, c, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--gpu-interval needs a number of milliseconds from 10 to "
                                  "60000 (such as 50), not '9'");
    char *d[] = {"record", "-p", "1", "-r", "10001", NULL};
    CHECK_EQ(first(OC_RECORD, d, &p), OPT_PID);
    CHECK_EQ(opt_next(&p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--rate needs samples per second from 1 to 10000, not '10001'");
    char *e[] = {"record", "--duration", "0", NULL};
    CHECK_EQ(first(OC_RECORD, e, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--duration needs a number of seconds above 0, not '0'");
    char *f[] = {"run", "--python", "", NULL};
    CHECK_EQ(first(OC_RUN, f, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--python needs the path of a Python");
    /* top's -s is --sort (record has no -s: --subprocesses has no short form there) */
    char *g[] = {"top", "-s", "own", NULL};
    CHECK_EQ(first(OC_TOP, g, &p), OPT_SORT);
    char *h[] = {"record", "-s", NULL};
    CHECK_EQ(first(OC_RECORD, h, &p), -SCRY_E_USAGE);
    /* run: -m takes the module, its short form only */
    char *m[] = {"run", "-m", "mod", "--x", NULL};
    CHECK_EQ(first(OC_RUN, m, &p), OPT_MODULE);
    CHECK_STR(p.arg, "mod");
    char *o[] = {"mcp", "--max-dump-mb", "0", NULL};
    CHECK_EQ(first(OC_MCP, o, &p), -SCRY_E_USAGE);
    CHECK_STR(err_last_message(), "--max-dump-mb needs a number from 1 to 1000000, not '0'");
}

static const struct tl_test tests[] = {
    TL(test_definitions_are_whole_and_once), TL(test_no_command_takes_a_name_twice),
    TL(test_every_option_is_in_its_help),    TL(test_help_layout),
    TL(test_parse_and_check_values),         TL(test_schema_from_definition),
    TL(test_agent_env),                      TL(test_run_config_keys),
    TL(test_values),
};
TL_MAIN(tests)
