/* platform/inject.h on Linux (x86-64): ptrace. The process's main thread is stopped at a point
 * where it holds no lock of the C library's or the dynamic loader's (blocked in one of a few
 * waiting system calls, or running code outside libc, the loader and the agent), made to call
 * dlopen(agent) if the agent is not loaded yet and then the agent's function, after which its
 * registers, vector state included, are put back exactly and it is let go (an interrupted system
 * call restarts as the kernel would have restarted it). Each call returns to address 0, whose
 * fault stops the thread again. */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/sanitize.h"
#include "platform/inject.h"
#include "platform/mem_access.h"
#include "reader/reader_impl.h"

#define PICK_TRIES 400      /* stops of the main thread looking for a safe point (~4 s) */
#define STACK_SKIP 1024     /* bytes left alone below the thread's stack pointer */

#if defined(__x86_64__)

/* ---- the target's mappings ---- */

/* Whether pc lies in an executable mapping of one of the objects where a stopped thread may
 * hold a lock that dlopen or the agent's start takes. */
static bool pc_unsafe(int pid, uint64_t pc)
{
    static const char *const objects[] = {"libc.so", "libc-", "ld-linux", "ld-", "libpthread",
                                          "libdl", "libgcc_s", "libstdc++", "libscry-agent"};
    struct arena a = ARENA_INIT;
    struct rd_mapping *maps = NULL;
    size_t n = 0;
    bool unsafe = false, seen = false;
    if (rd_maps_read(pid, &a, &maps, &n) != 0)
        err_clear();
    for (size_t i = 0; i < n && !seen; i++) {
        if (pc < maps[i].start || pc >= maps[i].end)
            continue;
        seen = true;
        const char *slash = strrchr(maps[i].path, '/');
        for (size_t k = 0; slash && k < sizeof(objects) / sizeof(*objects); k++)
            if (strncmp(slash + 1, objects[k], strlen(objects[k])) == 0)
                unsafe = true;
    }
    free(maps);
    arena_free(&a);
    return unsafe || !seen;
}

/* ---- stopping the main thread at a safe point ---- */

#define XSTATE_BYTES 16384 /* more than the largest XSAVE area (with AMX, about 11 KiB) */

struct inj {
    int pid;
    pf_symbol_fn symbol;
    struct user_regs_struct saved;
    /* The vector, x87 and MXCSR state, put back with the general registers: the injected calls
     * (the loader's string and memory functions) use the vector registers, and the interrupted
     * code may hold live values there (pymalloc links a pool with one SSE store of two
     * pointers). In the XSAVE layout when the kernel gives it, else FXSAVE's (x87 and SSE). */
    uint8_t xstate[XSTATE_BYTES];
    size_t xstate_len; /* 0: fp holds it */
    struct user_fpregs_struct fp;
    bool held;
};

static int save_vector_state(struct inj *in)
{
    struct iovec iov = {in->xstate, sizeof(in->xstate)};
    if (ptrace(PTRACE_GETREGSET, in->pid, (void *)(uintptr_t)NT_X86_XSTATE, &iov) == 0 &&
        iov.iov_len > 0) {
        in->xstate_len = iov.iov_len;
        return 0;
    }
    in->xstate_len = 0;
    return ptrace(PTRACE_GETFPREGS, in->pid, 0, &in->fp) == 0 ? 0 : -1;
}

static void restore_vector_state(struct inj *in)
{
    struct iovec iov = {in->xstate, in->xstate_len};
    if (in->xstate_len)
        ptrace(PTRACE_SETREGSET, in->pid, (void *)(uintptr_t)NT_X86_XSTATE, &iov);
    else
        ptrace(PTRACE_SETFPREGS, in->pid, 0, &in->fp);
}

/* Blocking system calls during which a thread holds none of the locks dlopen takes. */
static bool waiting_syscall(long nr)
{
    static const long ok[] = {0 /* read */,      7 /* poll */,      23 /* select */,
                              34 /* pause */,    35 /* nanosleep */, 43 /* accept */,
                              45 /* recvfrom */, 47 /* recvmsg */,   61 /* wait4 */,
                              128 /* rt_sigtimedwait */, 130 /* rt_sigsuspend */,
                              230 /* clock_nanosleep */, 232 /* epoll_wait */,
                              247 /* waitid */, 270 /* pselect6 */, 271 /* ppoll */,
                              281 /* epoll_pwait */, 288 /* accept4 */, 441 /* epoll_pwait2 */};
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
        if (nr == ok[i])
            return true;
    return false;
}

/* Whether the thread blocks SIGSEGV (the injected call returns through one, which must reach
 * us rather than be forced on a blocked thread). */
static bool blocks_segv(int pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    bool blocked = true;
    while (fgets(buf, sizeof(buf), f))
        if (strncmp(buf, "SigBlk:", 7) == 0)
            blocked = (strtoull(buf + 7, NULL, 16) >> (SIGSEGV - 1)) & 1;
    fclose(f);
    return blocked;
}

static int lost(int pid)
{
    return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d exited while scry was loading its agent",
                    pid);
}

/* Waits for the next stop of the main thread: 0 with *status, or an error if it ended. */
static int wait_stop(int pid, int *status)
{
    for (;;) {
        pid_t r = waitpid(pid, status, __WALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || WIFEXITED(*status) || WIFSIGNALED(*status))
            return lost(pid);
        return 0;
    }
}

/* Seizes and stops the main thread, keeping it only where it is safe to call into the loader. */
static int hold_main_thread(struct inj *in)
{
    int pid = in->pid;
    for (int tries = 0; tries < PICK_TRIES; tries++) {
        if (blocks_segv(pid))
            return err_fail(SCRY_E_INJECT_REFUSED,
                                 "the main thread of process %d blocks SIGSEGV, through which "
                                 "scry's injected call returns",
                                 pid);
        if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0) {
            if (errno == ESRCH)
                return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process %d", pid);
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to trace process %d: %s", pid,
                            strerror(errno));
        }
        int st;
        if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) != 0 || wait_stop(pid, &st) != 0)
            return lost(pid);
        if ((st >> 16) != PTRACE_EVENT_STOP) {
            /* A signal arrived first: hand it over and look again. */
            ptrace(PTRACE_DETACH, pid, 0, (void *)(long)WSTOPSIG(st));
            continue;
        }
        if (ptrace(PTRACE_GETREGS, pid, 0, &in->saved) != 0) {
            ptrace(PTRACE_DETACH, pid, 0, 0);
            return lost(pid);
        }
        long nr = (long)in->saved.orig_rax;
        bool safe = nr >= 0 ? waiting_syscall(nr) : !pc_unsafe(pid, in->saved.rip);
        if (safe && save_vector_state(in) != 0) {
            ptrace(PTRACE_DETACH, pid, 0, 0);
            return err_fail(SCRY_E_INJECT_REFUSED,
                            "cannot read the vector registers of process %d's main thread "
                            "(PTRACE_GETREGSET): an injected call would lose them",
                            pid);
        }
        if (safe) {
            in->held = true;
            return 0;
        }
        ptrace(PTRACE_DETACH, pid, 0, 0);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return err_fail(SCRY_E_INJECT_REFUSED,
                         "the main thread of process %d was never at a safe point to load scry's "
                         "agent (it was always inside the C library, the loader or a lock wait)",
                         pid);
}

/* Puts the registers back and lets the thread go (a pending SIGSEGV of ours is dropped). */
static void release_main_thread(struct inj *in)
{
    if (!in->held)
        return;
    ptrace(PTRACE_SETREGS, in->pid, 0, &in->saved);
    restore_vector_state(in);
    ptrace(PTRACE_DETACH, in->pid, 0, 0);
    in->held = false;
}

/* Makes the held thread call fn(arg0, arg1), where a string `text` (if any) is copied below its
 * stack and passed as arg0; the call returns to address 0, whose fault stops it again. */
static int remote_call(struct inj *in, uint64_t fn, const char *text, uint64_t arg1,
                       uint64_t *ret)
{
    int pid = in->pid;
    struct user_regs_struct r = in->saved;
    uint64_t sp = (in->saved.rsp - STACK_SKIP) & ~(uint64_t)15;
    uint64_t arg0 = 0;
    if (text) {
        size_t len = strlen(text) + 1;
        sp = (sp - len) & ~(uint64_t)15;
        arg0 = sp;
        if (pf_mem_write(pid, sp, text, len) != (long)len)
            return err_fail(SCRY_E_PERMISSION_DENIED, "cannot write into process %d: %s", pid,
                            strerror(errno));
    }
    sp -= 16;
    uint64_t zero = 0;
    sp -= 8; /* the return address: rsp % 16 == 8 at the callee's entry, as after a call */
    if (pf_mem_write(pid, sp, &zero, 8) != 8)
        return err_fail(SCRY_E_PERMISSION_DENIED, "cannot write into process %d: %s", pid,
                        strerror(errno));
    r.rsp = sp;
    r.rip = fn;
    r.rdi = arg0;
    r.rsi = arg1;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1; /* no system call to restart under the call */
    r.eflags &= ~0x400ULL; /* the direction flag: clear at a call, as the ABI wants */
    if (ptrace(PTRACE_SETREGS, pid, 0, &r) != 0 || ptrace(PTRACE_CONT, pid, 0, 0) != 0)
        return lost(pid);
    for (;;) {
        int st;
        if (wait_stop(pid, &st) != 0) {
            in->held = false;
            return -(int)err_last_code();
        }
        int sig = WSTOPSIG(st);
        if ((st >> 16) == PTRACE_EVENT_STOP) {
            ptrace(PTRACE_CONT, pid, 0, 0);
            continue;
        }
        if (sig == SIGSEGV) {
            struct user_regs_struct now;
            if (ptrace(PTRACE_GETREGS, pid, 0, &now) != 0)
                return lost(pid);
            if (now.rip == 0) {
                *ret = now.rax;
                return 0;
            }
            /* A fault inside the call: it is abandoned, the thread goes on where it was. */
            return err_fail(SCRY_E_INTERNAL, "the injected call faulted in process %d at %#llx",
                            pid, (unsigned long long)now.rip);
        }
        ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig); /* the program's own signal */
    }
}

/* Calls fn of the agent (already loaded, else loaded first) in the held thread. */
static int agent_call(struct inj *in, const char *agent, const char *fn, const char *text,
                      int64_t *ret)
{
    uint64_t addr = in->symbol(in->pid, "libscry-agent.so", fn), r = 0;
    if (!addr) {
        uint64_t dlopen_at = in->symbol(in->pid, "libc.so", "dlopen");
        if (!dlopen_at)
            dlopen_at = in->symbol(in->pid, "libdl.so", "dlopen");
        if (!dlopen_at)
            return err_fail(SCRY_E_INJECT_REFUSED,
                                 "process %d has no dlopen (a static executable?): scry cannot "
                                 "load its agent there",
                                 in->pid);
        int err = remote_call(in, dlopen_at, agent, 2 /* RTLD_NOW */, &r);
        if (err)
            return err;
        addr = r ? in->symbol(in->pid, "libscry-agent.so", fn) : 0;
        if (!addr)
            return err_fail(SCRY_E_INJECT_REFUSED, "process %d could not load %s", in->pid,
                            san_str(agent));
    }
    int err = remote_call(in, addr, text, 0, &r);
    *ret = (int32_t)(uint32_t)r;
    return err;
}

/* One call into the agent in process pid, with the main thread held around it. */
int pf_inject_call(int pid, const char *agent, const char *fn, const char *text,
                   pf_symbol_fn symbol, int64_t *ret)
{
    struct inj in = {.pid = pid, .symbol = symbol};
    int err = hold_main_thread(&in);
    if (!err)
        err = agent_call(&in, agent, fn, text, ret);
    release_main_thread(&in);
    return err;
}

#else

int pf_inject_call(int pid, const char *agent, const char *fn, const char *text,
                   pf_symbol_fn symbol, int64_t *ret)
{
    (void)agent;
    (void)symbol;
    (void)fn;
    (void)text;
    (void)ret;
    return err_fail(SCRY_E_INJECT_REFUSED,
                    "scry loads its agent into a running process on x86-64 only (process %d)",
                    pid);
}

#endif
