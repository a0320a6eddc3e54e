/* `scry control PID on|off`: turns profiling on or off in a program that `scry run` is
 * profiling, from another shell (Scalene's --on/--off with --pid). PID is any process of the
 * run, or `scry run` itself; the switch holds for every process of the run, the ones started
 * later included. It writes "on" or "off" into the run's control file, in the part directory
 * the processes share (SCRY_PART_DIR in their environment); each process's agent looks at it
 * at every tick of its collector (src/agent/control.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/error.h"
#include "common/outfile.h"
#include "common/sanitize.h"

const char cmd_control_usage[] =
    "usage: scry control PID on|off\n"
    "\n"
    "Turns profiling on or off in a program that scry run is profiling, from another shell.\n"
    "PID is any process of the run (the program, one of its children, or scry run itself);\n"
    "the switch holds for all of the run's processes, within one sampling interval. Start the\n"
    "program with profiling off with scry run --off; in the program itself, scry.start() and\n"
    "scry.stop() do the same for its own process.\n";

/* The part directory named in pid's environment, into dir (false: none there). Records an
 * error for a process that cannot be read. */
static int run_dir_of(int pid, char *dir, size_t size, bool *found)
{
    char path[64];
    char *env;
    size_t len;
    *found = false;
    snprintf(path, sizeof(path), "/proc/%d/environ", pid);
    if (cli_read_file(path, &env, &len) != 0) {
        if (access(path, F_OK) != 0 && errno == ENOENT)
            return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
        return err_fail_hint(SCRY_E_PERMISSION_DENIED,
                             "run scry control as the user who runs the program, or as root",
                             "cannot read the environment of pid %d: %s", pid,
                             san_str(err_last_message()));
    }
    static const char key[] = "SCRY_PART_DIR=";
    for (size_t i = 0; i < len; i += strlen(env + i) + 1) {
        if (strncmp(env + i, key, sizeof(key) - 1) == 0 && env[i + sizeof(key) - 1]) {
            snprintf(dir, size, "%s", env + i + sizeof(key) - 1);
            *found = true;
            break;
        }
    }
    free(env);
    /* Only a run's own part directory, owned by the process's user: an environment can name
     * any directory. */
    struct stat st;
    snprintf(path, sizeof(path), "/proc/%d", pid);
    if (*found && (stat(path, &st) != 0 || !cli_is_part_dir(dir, st.st_uid)))
        *found = false;
    return 0;
}

/* pid is `scry run` itself: its environment is its own; the run's is its children's. */
static int run_dir_of_children(int pid, char *dir, size_t size, bool *found)
{
    char path[64];
    char *kids;
    size_t len;
    *found = false;
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
    if (cli_read_file(path, &kids, &len) != 0)
        return 0;
    char *save = NULL;
    for (char *tok = strtok_r(kids, " \n", &save); tok && !*found;
         tok = strtok_r(NULL, " \n", &save)) {
        int child;
        if (cli_parse_pid(tok, &child) && run_dir_of(child, dir, size, found) != 0)
            err_clear();
    }
    free(kids);
    return 0;
}

int cmd_control(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return cli_help();
    if (argc != 3)
        return cli_usage("give a pid and on or off: scry control PID on|off");
    int pid;
    if (!cli_parse_pid(argv[1], &pid))
        return cli_usage("PID must be a process id (a positive number), not '%s'", argv[1]);
    bool on = strcmp(argv[2], "on") == 0;
    if (!on && strcmp(argv[2], "off") != 0)
        return cli_usage("say on or off, not '%s'", argv[2]);
    char dir[4096];
    bool found;
    int err = run_dir_of(pid, dir, sizeof(dir), &found);
    if (err)
        return err;
    if (!found && (err = run_dir_of_children(pid, dir, sizeof(dir), &found)))
        return err;
    if (!found)
        return err_fail_hint(SCRY_E_NOT_FOUND,
                             "start the program with scry run (with --off to start with "
                             "profiling off), then give the pid of one of its processes",
                             "pid %d is not a program that scry run is profiling", pid);
    char path[4200];
    snprintf(path, sizeof(path), "%s/control", dir);
    const char *text = on ? "on\n" : "off\n";
    if ((err = outfile_write_all(path, text, strlen(text), OUTFILE_PRIVATE)) != 0)
        return err;
    printf("scry: profiling %s for the run of pid %d\n", on ? "on" : "off", pid);
    return 0;
}
