/* platform/proc_info.h and os_process.h on this machine, against what this test knows of itself
 * and of a child it starts: ids, states, command line, environment, owner, memory, children,
 * start time, and a child's end. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "platform/os_process.h"
#include "platform/proc_info.h"
#include "testlib.h"

static void test_self(void)
{
    int pid = getpid();
    CHECK_EQ(pf_getpid(), pid);
    CHECK_EQ(pf_gettid(), pid); /* the main thread */
    CHECK_EQ(pf_thread_state(pid, pid), 'R');
    CHECK_EQ(pf_thread_state(0, pid), 'R');
    /* A thread reading its own state is inside that read. */
    long nr = -2;
    CHECK_EQ(pf_thread_call(pid, pid, &nr), PF_CALL_SYSCALL);
#if defined(__x86_64__)
    CHECK_EQ(nr, 0); /* read(2) */
#endif
    /* Some CPU time, then a switch, so that the kernel has counted it. */
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000000L);
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    uint64_t cpu = 0, wait = 0;
    if (pf_thread_sched(pid, pid, &cpu, &wait)) /* the kernel may keep no schedstat */
        CHECK(cpu >= 20000000ULL);
    char name[32];
    pf_thread_name(0, pid, name, sizeof(name));
    CHECK(name[0] != 0 && strchr(name, '\n') == NULL);
    CHECK_EQ(pf_process_parent(pid), getppid());
    CHECK_EQ(pf_process_owner(pid), (long)getuid());
    CHECK(pf_process_alive(pid));
    CHECK(!pf_process_ending(pid));
    double rss = pf_process_rss(0);
    CHECK(rss > 0);
    CHECK(pf_process_rss(pid) > 0);
    CHECK(pf_process_peak_rss(0) >= rss); /* the peak, read after, is at least that */
    CHECK(pf_memory_available() > 0);
    uint64_t started = pf_process_start_time(pid);
    CHECK(started > 0);
    CHECK_EQ_U64(pf_process_start_time(pid), started);
    /* pid 0 is this process for every call that takes a pid */
    CHECK_EQ_U64(pf_process_start_time(0), started);
    CHECK_EQ(pf_process_parent(0), getppid());
    CHECK_EQ(pf_process_owner(0), (long)getuid());
    CHECK(pf_process_alive(0));

    char cmd[4096];
    ssize_t n = pf_process_cmdline(pid, cmd, sizeof(cmd));
    CHECK(n > 0);
    CHECK(strstr(cmd, "test_proc_info") != NULL); /* argv[0] */
    char cwd[4096], real[4096];
    pf_process_cwd(pid, cwd, sizeof(cwd));
    CHECK(getcwd(real, sizeof(real)) != NULL);
    CHECK_STR(cwd, real);
    char exe[4096];
    CHECK(pf_self_exe(exe, sizeof(exe)) > 0);
    CHECK(strstr(exe, "test_proc_info") != NULL);

    char *env = NULL;
    size_t len = 0;
    CHECK_EQ(pf_process_environ(pid, &env, &len), 0);
    CHECK(len > 0);
    free(env);
    CHECK_EQ(pf_process_environ(0x3fffffff, &env, &len), -ENOENT);

    char path[256];
    pf_process_file_path(pid, "/etc/hostname", path, sizeof(path));
    char want[256];
    snprintf(want, sizeof(want), "/proc/%d/root/etc/hostname", pid);
    CHECK_STR(path, want);
    pf_process_file_path(pid, "relative", path, sizeof(path));
    CHECK_STR(path, "relative");

    int pids[65536];
    size_t np = 0;
    CHECK_EQ(pf_process_list(pids, 65536, &np), 0);
    bool seen = false;
    for (size_t i = 0; i < np; i++)
        seen = seen || pids[i] == pid;
    CHECK(seen);
}

static void found_child(int child, void *ctx)
{
    int *c = ctx;
    if (child == c[0])
        c[1] = 1;
}

/* A child that sleeps: seen as a child, sleeping, in a system call, with its own environment;
 * once killed and reaped, gone. */
static void test_child(void)
{
    int p[2];
    CHECK_EQ(pipe(p), 0);
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        char *envp[] = {"SCRY_PROC_INFO_CHILD=yes-7", NULL};
        char *argv[] = {"sleep", "30", NULL};
        close(p[1]);
        execve("/bin/sleep", argv, envp);
        _exit(127);
    }
    close(p[1]);
    char b;
    CHECK_EQ(read(p[0], &b, 1), 0); /* closed by the exec */
    close(p[0]);
    /* Until it sleeps. */
    for (int i = 0; i < 500 && pf_thread_state(child, child) != 'S'; i++) {
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    CHECK_EQ(pf_thread_state(child, child), 'S');
    long nr = -1;
    CHECK_EQ(pf_thread_call(child, child, &nr), PF_CALL_SYSCALL);
    CHECK(nr >= 0);
    CHECK(!pf_syscall_is_lock_wait(nr)); /* a sleep, not a futex */
    int c[2] = {child, 0};
    pf_process_children(getpid(), found_child, c);
    CHECK_EQ(c[1], 1);
    CHECK_EQ(pf_process_parent(child), getpid());
    char *env = NULL;
    size_t len = 0;
    CHECK_EQ(pf_process_environ(child, &env, &len), 0);
    CHECK(len > 0 && memmem(env, len, "SCRY_PROC_INFO_CHILD=yes-7", 26) != NULL);
    free(env);
    char cmd[256];
    ssize_t n = pf_process_cmdline(child, cmd, sizeof(cmd));
    CHECK(n > 0);
    CHECK_STR(cmd, "sleep");
    CHECK_STR(cmd + strlen(cmd) + 1, "30");
    CHECK(pf_process_alive(child));

    int h = pf_process_handle(child);
    kill(child, SIGKILL);
    /* A zombie: not alive, and ending. */
    for (int i = 0; i < 500 && pf_process_alive(child); i++) {
        struct timespec ms = {0, 2000000};
        nanosleep(&ms, NULL);
    }
    CHECK(!pf_process_alive(child));
    CHECK(pf_process_ending(child));
    int st;
    CHECK_EQ(waitpid(child, &st, 0), child);
    CHECK(pf_process_ending(child));
    CHECK_EQ(pf_process_owner(child), -1);
    CHECK_EQ(pf_process_start_time(child), 0);
    if (h >= 0)
        close(h);
}

static const struct tl_test tests[] = {
    TL(test_self),
    TL(test_child),
};

TL_MAIN(tests)
