/* Unit tests for the option table (src/cli/options.c, option_table.c): the table itself (each
 * option defined once, no two options of a command answering to one name), the agent settings
 * scry run hands over, run's --config keys, and values checked with the usage error's words. */
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "common/error.h"
#include "testlib.h"

/* cli_common.c names the command table; this test has no commands. */
const struct cli_command cli_commands[] = {{"options", NULL, "", "", 0, 0, 0, NULL}};
const size_t cli_ncommands = 1;

static void test_defined_once(void)
{
    for (size_t i = 0; i < opt_ndefs; i++) {
        CHECK(opt_defs[i].id > OPT_END && opt_defs[i].id < OPT__COUNT);
        for (size_t j = 0; j < i; j++)
            if (opt_defs[j].id == opt_defs[i].id)
                tl_fail(__FILE__, __LINE__, "option %d (--%s) is defined twice", opt_defs[i].id,
                        opt_defs[i].name ? opt_defs[i].name : "");
        const struct opt_def *d = &opt_defs[i];
        CHECK(d->name || d->short_name);
        if (d->type != OT_FLAG)
            CHECK(d->value_name != NULL);
        if (d->type == OT_INT || d->type == OT_NUMBER || d->type == OT_PID)
            CHECK(d->needs != NULL);
    }
    for (size_t i = 0; i < opt_nuses; i++)
        if (!opt_def_of(opt_uses[i].id))
            tl_fail(__FILE__, __LINE__, "use %zu: option %d has no definition", i, opt_uses[i].id);
}

/* Within one command no two options share a long name or a short form. */
static void test_names_per_command(void)
{
    for (unsigned cmd = 1; cmd <= OC_MCP; cmd <<= 1) {
        struct opt_parser p;
        char *argv[] = {"x", NULL};
        opt_begin(&p, cmd, 1, argv, 0);
        CHECK(p.n < OPT_MAX_PER_COMMAND);
        for (size_t i = 0; i < p.n; i++)
            for (size_t j = 0; j < i; j++) {
                const struct opt_def *a = p.by_val[i], *b = p.by_val[j];
                if (a->name && b->name && strcmp(a->name, b->name) == 0)
                    tl_fail(__FILE__, __LINE__, "command bit %#x: --%s twice", cmd, a->name);
                if (p.shorts[i] && p.shorts[i] == p.shorts[j])
                    tl_fail(__FILE__, __LINE__, "command bit %#x: -%c is --%s and --%s", cmd,
                            p.shorts[i], a->name ? a->name : "", b->name ? b->name : "");
            }
    }
}

/* The names the agent reads (src/agent): scry run sets each from its option's definition. */
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
    TL(test_defined_once), TL(test_names_per_command), TL(test_agent_env),
    TL(test_run_config_keys), TL(test_values),
};
TL_MAIN(tests)
