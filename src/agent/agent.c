/* libscry-agent.so's life cycle: the constructor decides whether this process is a Python that
 * `scry run` profiles (SCRY_PART_DIR set, a CPython runtime present) and starts sampling; the
 * part file is written however the process ends: exit (destructor), os._exit (the _exit
 * interposer), SIGTERM/SIGHUP (a handler that flushes, then lets the signal do what it would
 * have done). A forked child starts over with empty statistics. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/gpu.h"
#include "agent/memory.h"
#include "common/error.h"
#include "common/log.h"
#include "platform/os_process.h"
#include "platform/outfile.h"
#include "reader/reader.h"

struct ag_config ag_cfg;
struct py_runtime ag_rt;
int ag_pid;
int ag_signal = -1;
_Atomic bool ag_running;
_Atomic bool ag_enabled = true;
uint64_t ag_main_thread_id;

bool ag_low_fds_closed;
bool ag_attached; /* started by scry_agent_attach, not by `scry run` */

static bool active;
static struct rd_reader *self_reader;

/* Where the settings come from: the environment (`scry run`), or the file that `scry record
 * --pid --memory` hands scry_agent_attach (attach.c). */
static const char *from_env(const char *name)
{
    return getenv(name);
}

static const char *(*setting)(const char *name) = from_env;

static bool env_flag(const char *name)
{
    const char *v = setting(name);
    return v && strcmp(v, "1") == 0;
}

static void env_str(const char *name, char *out, size_t size)
{
    const char *v = setting(name);
    snprintf(out, size, "%s", v ? v : "");
}

/* A positive byte count; anything else keeps the default (with a warning). */
static void env_bytes(const char *name, uint64_t *out)
{
    const char *v = setting(name);
    if (!v || !*v)
        return;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || n == 0 || v[0] == '-')
        log_warn("agent: ignoring %s=%s (not a positive number of bytes)", name, v);
    else
        *out = n;
}

static void read_config(void)
{
    env_str("SCRY_PART_DIR", ag_cfg.part_dir, sizeof(ag_cfg.part_dir));
    ag_cfg.rate_sec = 0.01;
    const char *rate = setting("SCRY_CPU_SAMPLING_RATE");
    if (rate && *rate) {
        char *end;
        double r = strtod(rate, &end);
        if (*end || !(r > 0 && r < 3600))
            log_warn("agent: ignoring SCRY_CPU_SAMPLING_RATE=%s (not a positive number of "
                     "seconds)",
                     rate);
        else
            ag_cfg.rate_sec = r;
    }
    ag_cfg.virtual_time = env_flag("SCRY_VIRTUAL_TIME");
    ag_cfg.profile_all = env_flag("SCRY_PROFILE_ALL");
    ag_cfg.system_libraries = env_flag("SCRY_PROFILE_SYSTEM_LIBRARIES");
    ag_cfg.stacks = env_flag("SCRY_STACKS");
    env_str("SCRY_PROGRAM_PATH", ag_cfg.program_path, sizeof(ag_cfg.program_path));
    env_str("SCRY_PROFILE_ONLY", ag_cfg.profile_only, sizeof(ag_cfg.profile_only));
    env_str("SCRY_PROFILE_EXCLUDE", ag_cfg.profile_exclude, sizeof(ag_cfg.profile_exclude));
    ag_cfg.memory = env_flag("SCRY_MEMORY");
    env_bytes("SCRY_ALLOCATION_WINDOW", &ag_mem_window);
    env_bytes("SCRY_COPY_WINDOW", &ag_copy_window);
    const char *snap = setting("SCRY_SNAPSHOT_INTERVAL");
    if (snap && *snap) {
        char *end;
        double r = strtod(snap, &end);
        if (*end || !(r >= 0 && r <= 86400))
            log_warn("agent: ignoring SCRY_SNAPSHOT_INTERVAL=%s (not a number of seconds)", snap);
        else
            ag_cfg.snapshot_sec = r;
    }
    const char *hx = setting("SCRY_HEAP_AT_EXIT");
    if (hx && *hx)
        ag_cfg.heap_at_exit_pid = atoi(hx);
    const char *cp = setting("SCRY_COLLECT_PID");
    if (cp && *cp && atoi(cp) > 0) {
        ag_cfg.collect_pid = atoi(cp);
        ag_cfg.collect_for = pf_getpid();
    }
    ag_sstream_on = env_flag("SCRY_TIMELINE");
    const char *tlmax = setting("SCRY_TIMELINE_MAX");
    if (tlmax && *tlmax) {
        char *end;
        unsigned long long m = strtoull(tlmax, &end, 10);
        if (*end || m < SST_MIN_MAX || m > 100000000ULL)
            log_warn("agent: ignoring SCRY_TIMELINE_MAX=%s (not a number of samples from %d "
                     "to 100000000)",
                     tlmax, SST_MIN_MAX);
        else
            ag_sstream_max = (size_t)m;
    }
    const char *leak = setting("SCRY_LEAK_DETECTOR");
    ag_leak_on = !leak || strcmp(leak, "0") != 0;
}

int ag_fd_keep(struct ag_fd *id, int fd)
{
    struct stat st;
    id->fd = -1;
    fd = fd_above_stdio(fd);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->fd = fd;
    return fd;
}

int ag_fd_get(const struct ag_fd *id)
{
    struct stat st;
    int saved = errno;
    bool same = id->fd >= 0 && fstat(id->fd, &st) == 0 && st.st_dev == id->dev &&
                st.st_ino == id->ino;
    errno = saved;
    return same ? id->fd : -1;
}

static bool is_ours(void)
{
    /* A vfork child shares our memory but is another process: it must not touch anything. */
    return active && pf_getpid() == ag_pid;
}

bool ag_agent_active(void)
{
    return is_ours();
}

/* The part written, then (scry.start() in a plain python run) the profile. */
static void finish_for_exit(void)
{
    ag_collector_finish();
    ag_collect_at_exit_wait();
}

void ag_flush_for_exit(void)
{
    if (is_ours())
        finish_for_exit();
}

static bool unwind_clean; /* no unwind was in flight when the process forked */

static void before_fork(void)
{
    if (is_ours()) {
        ag_collector_pause();
        unwind_clean = ag_unwind_fork_prepare();
    }
}

static void after_fork_parent(void)
{
    if (!is_ours())
        return;
    ag_unwind_fork_done(false, unwind_clean);
    if (!atomic_load(&ag_python_fork) && (ag_pyhooks_installed() || !ag_pyhooks_defer_resume()))
        ag_collector_resume();
}

static void after_fork_child(void)
{
    ag_mem_fork_child();
    if (!active)
        return;
    ag_memq_fork_child();
    ag_pid = pf_getpid();
    ag_main_thread_id = (uint64_t)pthread_self();
    ag_unwind_fork_done(true, unwind_clean);
    ag_collector_reset_child();
    ag_gpu_reset_child();
    if (!atomic_load(&ag_python_fork))
        ag_collector_resume();
}

/* Starts profiling with the settings that `get` gives (0), or says why not (-1, logged). */
static int start(const char *(*get)(const char *name))
{
    ag_mtls.guard++; /* the agent's own start-up is not the program's memory */
    setting = get;
    read_config();
    setting = from_env;
    ag_control_init();
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            ag_low_fds_closed = true;
    ag_pid = pf_getpid();
    ag_main_thread_id = (uint64_t)pthread_self();
    if (!self_reader &&
        (rd_open_self(&self_reader) != 0 || py_runtime_open_self(self_reader, &ag_rt) != 0)) {
        log_warn("agent: not profiling pid %d: %s", ag_pid, err_last_message());
        self_reader = NULL;
        ag_mtls.guard--;
        return -1;
    }
    if (ag_cfg.memory && ag_rt.layout.free_threaded && !ag_mi_layout_known(ag_rt.minor)) {
        ag_cfg.memory = false; /* CPU only: the part says why, `scry run` warns */
        ag_cfg.memory_unsupported = true;
    }
    if (ag_cfg.memory && ag_memq_init() != 0) {
        log_warn("agent: memory profiling is off in pid %d (no memory for its queue)", ag_pid);
        ag_cfg.memory = false;
    }
    if (ag_sampler_init() != 0)
        log_warn("agent: CPU sampling is off in pid %d", ag_pid);
    if (ag_collector_start() != 0) {
        log_warn("agent: cannot start the collector in pid %d: %s", ag_pid, strerror(errno));
        ag_mtls.guard--;
        return -1;
    }
    ag_gpu_start();
    ag_mtls.guard--;
    return 0;
}

__attribute__((constructor)) static void ag_init(void)
{
    ag_mem_hooks_init();
    const char *dir = getenv("SCRY_PART_DIR");
    if (!dir || !*dir)
        return;
    if (!dlsym(RTLD_DEFAULT, "Py_Version") && !dlsym(RTLD_DEFAULT, "_PyRuntime"))
        return; /* not a Python: a shell, a compiler, ... */
    if (start(from_env) != 0)
        return;
    ag_mtls.guard++;
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    ag_install_flush_handlers();
    ag_pyhooks_at_start();
    active = true;
    if (ag_cfg.memory && atomic_load(&ag_enabled))
        atomic_store(&ag_mem_on, true);
    ag_mtls.guard--;
}

bool ag_started_by_run(void)
{
    return active && !ag_attached;
}

/* scry_agent_attach (attach.c): the same start, settings from its file; no fork or exit
 * handlers (the program's own exit path writes nothing: `scry record` asks for the part). */
int ag_attach_start(const char *(*get)(const char *name))
{
    if (ag_attached) { /* attached before: start over, in the new part directory */
        ag_part_forget_dir();
        ag_collector_reset_child();
        ag_part_forget_dir();
    }
    if (start(get) != 0)
        return -1;
    ag_attached = true;
    active = true;
    return 0;
}

/* After scry_agent_detach wrote the part: idle until the next attach. */
void ag_attach_stopped(void)
{
    active = false;
    ag_part_forget_dir();
}

__attribute__((destructor)) static void ag_fini(void)
{
    if (is_ours())
        finish_for_exit();
}

/* os._exit() and C code calling _exit() skip the destructors: flush first. */
AG_EXPORT void _exit(int status)
{
    if (is_ours())
        finish_for_exit();
    pf_exit_now(status);
}

AG_EXPORT void _Exit(int status)
{
    _exit(status);
}
