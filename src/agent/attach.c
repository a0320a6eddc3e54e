/* The agent in a process that scry did not start (`scry record --pid PID --memory`,
 * docs/record-memory.md): the command stops one thread of the process at a safe point, makes it
 * call dlopen(agent) and then scry_agent_attach(settings file), and lets it go; later it makes
 * a thread call scry_agent_detach, which writes the part and leaves the agent loaded and idle
 * (dlclose would unmap code that a pointer saved while attached may still reach). A second
 * attach starts over with empty statistics.
 *
 * Both entry points run on a thread the command hijacked, at a point where it holds no lock of
 * the C library's or the loader's: they take no lock of Python's, and what needs the GIL (the
 * PyMem wrappers, in and out) is done from pending calls scheduled by other threads. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "common/agent_link.h"
#include "common/log.h"
#include "platform/module_hooks.h"

#define SETTINGS_MAX 65536
#define SETTINGS_KEYS 64

static char settings_text[SETTINGS_MAX];
static const char *keys[SETTINGS_KEYS], *values[SETTINGS_KEYS];
static size_t nkeys;
static _Atomic bool attached_now; /* from attach until the detach thread is done */
static _Atomic bool detaching;

/* Where `scry dump --pid` finds this agent's part directory (common/agent_link.h). */
AG_EXPORT struct agent_link scry_agent_link = {.magic = AGENT_LINK_MAGIC,
                                               .version = AGENT_LINK_VERSION};

/* Fills (dir) or empties (NULL) the link record, seq odd meanwhile. */
static void link_set(const char *dir)
{
    volatile struct agent_link *l = &scry_agent_link;
    __atomic_store_n(&l->seq, l->seq + 1, __ATOMIC_SEQ_CST);
    l->attached = 0;
    l->pid = ag_pid;
    size_t n = dir ? strnlen(dir, sizeof(l->part_dir) - 1) : 0;
    for (size_t i = 0; i < sizeof(l->part_dir); i++)
        l->part_dir[i] = i < n ? dir[i] : 0;
    l->attached = dir ? 1 : 0;
    __atomic_store_n(&l->seq, l->seq + 1, __ATOMIC_SEQ_CST);
}

/* SCRY_* settings, one NAME=VALUE a line (the names and meanings of docs/agent-protocol.md). */
static const char *from_file(const char *name)
{
    for (size_t i = 0; i < nkeys; i++)
        if (strcmp(keys[i], name) == 0)
            return values[i];
    return NULL;
}

/* The settings file: a regular file of this user's, not a link (0, or -1). */
static int read_settings(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_size < SETTINGS_MAX)
        n = read(fd, settings_text, SETTINGS_MAX - 1);
    close(fd);
    if (n < 0)
        return -1;
    settings_text[n] = 0;
    nkeys = 0;
    for (char *line = settings_text, *next; line && *line && nkeys < SETTINGS_KEYS; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        keys[nkeys] = line;
        values[nkeys++] = eq + 1;
    }
    return 0;
}

/* 0: profiling; -1: could not start (logged); -2: `scry run` profiles this process already;
 * -3: attached already; -4: the previous detach is still under way (try again). */
AG_EXPORT int scry_agent_attach(const char *settings_path)
{
    int saved = errno;
    int rc = 0;
    if (ag_started_by_run()) {
        rc = -2;
    } else if (atomic_exchange(&attached_now, true)) {
        rc = atomic_load(&detaching) ? -4 : -3;
    } else if (read_settings(settings_path) != 0 || ag_attach_start(from_file) != 0) {
        atomic_store(&attached_now, false);
        rc = -1;
    } else if (ag_cfg.memory) {
        /* The interpreter runs Python already: a sample's stack means something from the first
         * one (under `scry run`, the pending call that wraps the allocators says so, after
         * start-up), so that the allocations made before that call runs keep their lines. */
        atomic_store(&ag_mem_python_ready, true);
        if (pf_hooks_install(ag_hook_for, (const void *)&ag_hook_for) != 0)
            log_warn("agent: no relocation entry to hook in pid %d: C allocations are not seen",
                     ag_pid);
        if (atomic_load(&ag_enabled))
            atomic_store(&ag_mem_on, true);
        log_debug("agent: attached to pid %d, memory %s (guard %d)", ag_pid,
                  atomic_load(&ag_mem_on) ? "on" : "off", ag_mtls.guard);
    }
    if (rc == 0)
        link_set(ag_cfg.part_dir);
    errno = saved;
    return rc;
}

/* The detach itself, on a thread of its own: the hijacked thread that asked for it only starts
 * this one and returns (it must not wait: a wait of its own would replace what the kernel keeps
 * to restart the system call it was stopped in). */
static void *detach_main(void *arg)
{
    (void)arg;
    ag_mtls.guard = 1;
    link_set(NULL); /* no more answers from here on */
    pf_hooks_remove();
    ag_collector_finish(); /* counting stops, the part is written, timers deleted */
    ag_pyhooks_detach();
    ag_attach_stopped();
    atomic_store(&detaching, false);
    atomic_store(&attached_now, false);
    return NULL;
}

/* Starts the detach (0), or -1 when not attached or no thread can be started. The part's
 * appearance says that it is done. */
AG_EXPORT int scry_agent_detach(void)
{
    if (!atomic_load(&attached_now) || atomic_exchange(&detaching, true))
        return -1;
    int saved = errno;
    ag_mtls.guard++;
    pthread_t t;
    pthread_attr_t attr;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the detach takes no signal of the program's */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, detach_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        atomic_store(&detaching, false);
    ag_mtls.guard--;
    errno = saved;
    return rc == 0 ? 0 : -1;
}
