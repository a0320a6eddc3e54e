/* `scry kernel install`: the Jupyter kernel "Python 3 (scry)", which starts ipykernel under scry
 * run with profiling off, so that the magics (%%scry, %scrun) profile memory too. Jupyter's
 * folders and kernel-spec rules are jupyter_client's: this command checks its options, then runs
 * the package's python/scry/_kernel.py with the chosen interpreter (the one the kernel will run),
 * lending it scry's package when that lies next to this binary (the wheel's scry/_bin, a
 * checkout's build/). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "options/options.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/os_process.h"

const char cmd_kernel_usage[] =
    "usage: scry kernel install [--user|--sys-prefix|--prefix DIR] [--name NAME]\n"
    "                           [--display-name TEXT] [--python PATH]\n"
    "\n"
    "Installs the Jupyter kernel \"Python 3 (scry)\": ipykernel started under scry run with\n"
    "profiling off, so that %%scry and %scrun (%load_ext scry) profile a cell's memory as well\n"
    "as its CPU time (a plain kernel gives CPU time only). The kernel's Python needs ipykernel\n"
    "and scry's package (pip install scry).\n"
    "\n";

/* The folder holding scry's package (scry/_kernel.py) next to the binary self, into dir; false
 * when there is none (a binary installed on its own: the Python must have the package). */
static bool package_dir(const char *self, char *dir, size_t size)
{
    char bin[PATH_MAX];
    snprintf(bin, sizeof(bin), "%s", self);
    char *slash = strrchr(bin, '/');
    if (!slash)
        return false;
    *slash = 0;
    /* The wheel: <site>/scry/_bin/scry; a checkout: <repo>/build/scry and <repo>/python/scry. */
    static const char *const where[] = {"%s/../..", "%s/../python"};
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        char cand[PATH_MAX + 16], probe[PATH_MAX + 48];
        snprintf(cand, sizeof(cand), where[i], bin);
        snprintf(probe, sizeof(probe), "%s/scry/_kernel.py", cand);
        if (access(probe, R_OK) == 0 && realpath(cand, dir) && strlen(dir) < size)
            return true;
    }
    return false;
}

int cmd_kernel(int argc, char **argv)
{
    const char *py = getenv("SCRY_PYTHON");
    const char *python = py && *py ? py : "python3";
    const char *where = NULL, *prefix = NULL, *name = NULL, *display = NULL;
    int places = 0;
    struct opt_parser p;
    opt_begin(&p, OC_KERNEL, argc, argv, OP_PERMUTE);
    int c;
    while ((c = opt_next(&p)) > 0) {
        switch (c) {
        case OPT_USER:
            where = "--user";
            places++;
            break;
        case OPT_SYS_PREFIX:
            where = "--sys-prefix";
            places++;
            break;
        case OPT_PREFIX:
            where = "--prefix";
            prefix = p.arg;
            places++;
            break;
        case OPT_NAME:
            name = p.arg;
            break;
        case OPT_DISPLAY_NAME:
            display = p.arg;
            break;
        case OPT_PYTHON:
            python = p.arg;
            break;
        case OPT_HELP:
            return cli_help();
        }
    }
    if (c < 0)
        return c;
    int action = opt_operand(&p); /* "install" */
    if (action >= argc)
        return cli_usage("say what to do: scry kernel install");
    if (strcmp(argv[action], "install") != 0)
        return cli_usage("unknown action '%s' (scry kernel install)", san_str(argv[action]));
    if (action + 1 < argc)
        return cli_usage("unexpected argument '%s'", san_str(argv[action + 1]));
    if (places > 1)
        return cli_usage("give one of --user, --sys-prefix and --prefix");
    if (name && (!*name || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789._-") != strlen(name)))
        return cli_usage("a kernel name is letters, digits, '.', '_' and '-', not '%s'",
                         san_str(name));

    char self[PATH_MAX];
    if (pf_self_exe(self, sizeof(self)) <= 0)
        return err_fail(SCRY_E_IO, "cannot find scry's own executable: %s", strerror(errno));

    char pkg[PATH_MAX];
    bool lend = package_dir(self, pkg, sizeof(pkg));
    const char *av[16];
    size_t n = 0;
    av[n++] = python;
    av[n++] = "-m";
    av[n++] = "scry._kernel";
    av[n++] = "install";
    av[n++] = "--scry";
    av[n++] = self;
    if (where)
        av[n++] = where;
    if (prefix)
        av[n++] = prefix;
    if (name) {
        av[n++] = "--name";
        av[n++] = name;
    }
    if (display) {
        av[n++] = "--display-name";
        av[n++] = display;
    }
    if (lend) {
        av[n++] = "--package-path";
        av[n++] = pkg;
        const char *old = getenv("PYTHONPATH");
        char *path = NULL;
        if (asprintf(&path, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "") < 0)
            return err_fail(SCRY_E_NO_MEMORY, "out of memory");
        setenv("PYTHONPATH", path, 1);
        free(path);
    }
    av[n] = NULL;
    fflush(NULL);
    execvp(python, (char *const *)av);
    return err_fail_hint(SCRY_E_NOT_FOUND, "name an installed Python with --python",
                         "cannot run %s: %s", san_str(python), strerror(errno));
}
