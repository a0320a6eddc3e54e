/* `scry control PID on|off`: turns profiling on or off in a program that `scry run` is
 * profiling, from another shell (Scalene's --on/--off with --pid). PID is any process of the
 * run, or `scry run` itself; the switch holds for every process of the run, the ones started
 * later included. It writes "on" or "off" into the run's control file, in the part directory
 * the processes share (SCRY_PART_DIR in their environment); each process's agent looks at it
 * at every tick of its collector (src/agent/control.c). The directory is opened component by
 * component, refusing links and directories that another user could change
 * (attach/run_link.c), and written through its descriptor. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/run_link.h"
#include "cli/cli.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"

const char cmd_control_usage[] =
    "usage: scry control PID on|off\n"
    "\n"
    "Turns profiling on or off in a program that scry run is profiling, from another shell.\n"
    "PID is any process of the run (the program, one of its children, or scry run itself);\n"
    "the switch holds for all of the run's processes, within one sampling interval. Start the\n"
    "program with profiling off with scry run --off; in the program itself, scry.start() and\n"
    "scry.stop() do the same for its own process.\n";

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
    int err = run_link_dir(pid, dir, sizeof(dir), &found);
    if (err)
        return err;
    if (!found)
        return err_fail_hint(SCRY_E_NOT_FOUND,
                             "start the program with scry run (with --off to start with "
                             "profiling off), then give the pid of one of its processes",
                             "pid %d is not a program that scry run is profiling", pid);
    /* The directory comes from the process's environment, which its user chose: root must not
     * follow a link or a directory another user can change on the way there (issue 26). */
    long uid = pf_process_owner(pid);
    if (uid < 0)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    int fd;
    if ((err = run_link_open_dir(dir, (uid_t)uid, &fd)) != 0)
        return err;
    const char *text = on ? "on\n" : "off\n";
    err = outfile_write_all_at(fd, dir, "control", text, strlen(text), OUTFILE_PRIVATE);
    close(fd);
    if (err)
        return err;
    printf("scry: profiling %s for the run of pid %d\n", on ? "on" : "off", pid);
    return 0;
}
