/* The agent loaded through CPython's remote debugging support (PEP 768; record_remote.h,
 * docs/record-memory.md). Python 3.14 keeps in each thread state a pending flag and a script
 * path for a debugger: a process that may write the target's memory puts the path of a Python
 * file there, sets the flag and one bit of the thread's eval breaker; the interpreter, at its
 * next eval-breaker check in that thread (between bytecodes, holding the GIL, inside no lock of
 * the C library), clears the flag and runs the file. The offsets of these fields are in the
 * debugger_support section that ends the target's _Py_DebugOffsets block (the start of
 * _PyRuntime). The file scry writes loads the agent with ctypes, calls scry_agent_attach (or
 * scry_agent_detach) and writes its value into the part directory. */
#include "attach/record_remote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/arena.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "cpython/threads.h"
#include "platform/infile.h"
#include "platform/mem_access.h"
#include "platform/outfile.h"
#include "platform/proc_info.h"

#define EVAL_PLEASE_STOP_BIT (1u << 5) /* _PY_EVAL_PLEASE_STOP_BIT: any set bit is looked at */
#define DEBUGGER_FIELDS 6              /* the debugger_support section's fields, at the end */

/* debugger_support of _Py_DebugOffsets (3.14, 3.15), in its order. */
struct dbg_support {
    uint64_t eval_breaker;      /* offset in PyThreadState */
    uint64_t remote_support;    /* offset of _PyRemoteDebuggerSupport in PyThreadState */
    uint64_t enabled;           /* offset of config.remote_debug (int) in PyInterpreterState */
    uint64_t pending_call;      /* offset in _PyRemoteDebuggerSupport (int) */
    uint64_t script_path;       /* offset in _PyRemoteDebuggerSupport (char[]) */
    uint64_t script_path_size;  /* its size */
};

static int read_support(struct py_runtime *rt, struct dbg_support *s)
{
    size_t n = py_debug_offsets_size(rt->minor, false);
    uint64_t at = rt->runtime_addr + n - DEBUGGER_FIELDS * 8;
    char cookie[8];
    int err = rd_read(rt->rd, rt->runtime_addr, cookie, sizeof(cookie));
    if (!err && memcmp(cookie, "xdebugpy", 8) != 0)
        err = err_fail(SCRY_E_UNSUPPORTED_PYTHON, "no _Py_DebugOffsets block");
    if (!err)
        err = rd_read(rt->rd, at, s, sizeof(*s));
    if (err)
        return err;
    uint64_t limit = 1 << 20;
    if (s->eval_breaker >= limit || s->remote_support >= limit || s->enabled >= limit ||
        s->pending_call >= 4096 || s->script_path >= 4096 || s->script_path_size < 64 ||
        s->script_path_size > 4096)
        return err_fail(SCRY_E_UNSUPPORTED_PYTHON,
                        "the debugger offsets of this Python 3.%d do not have the expected shape",
                        rt->minor);
    return 0;
}

/* The main thread's state (the main interpreter's thread whose kernel id is the pid), 0 if
 * none, and whether it holds the GIL. */
static int main_tstate(struct py_runtime *rt, int pid, uint64_t *interp, uint64_t *tstate,
                       bool *holds_gil)
{
    struct arena a = ARENA_INIT;
    struct py_thread *th;
    size_t n;
    *tstate = 0;
    int err = py_list_threads(rt, &a, &th, &n);
    for (size_t i = 0; !err && i < n; i++) {
        if (th[i].native_id == pid && th[i].interp_id == 0) {
            *tstate = th[i].tstate;
            *interp = th[i].interp;
            *holds_gil = th[i].holds_gil;
        }
    }
    arena_free(&a);
    return err;
}

/* Whether the main thread may take the request soon: it holds the GIL, runs, or waits on a
 * futex (for the GIL, most likely). Not when it waits in another system call (a read, a sleep):
 * the request would wait with it, and ptrace's safe point is just that. */
static bool main_may_run(int pid, bool holds_gil)
{
    if (holds_gil)
        return true;
    long nr;
    switch (pf_thread_call(pid, pid, &nr)) {
    case PF_CALL_RUNNING:
        return true;
    case PF_CALL_SYSCALL:
        return pf_syscall_is_lock_wait(nr);
    default:
        return false;
    }
}

static int write_at(int pid, uint64_t addr, const void *buf, size_t len)
{
    if (pf_mem_write(pid, addr, buf, len) != (long)len)
        return err_fail(SCRY_E_PERMISSION_DENIED, "cannot write into process %d: %s", pid,
                        strerror(errno));
    return 0;
}

/* A Python bytes literal of s (every byte escaped: any path is safe in it). */
static void bytes_literal(struct strbuf *sb, const char *s)
{
    sb_adds(sb, "b'");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        sb_addf(sb, "\\x%02x", *p);
    sb_addch(sb, '\'');
}

/* dir/FN-PID: where the script writes fn's value. */
static void answer_path(const char *dir, int pid, const char *fn, char *path, size_t size)
{
    snprintf(path, size, "%s/%s-%d", dir, fn, pid);
}

/* The script: never raises from the program's point of view (an error is the value -1), writes
 * the value of fn(arg) (fn() when arg is NULL) into answer_path. It does nothing once this
 * process is gone (a request left pending by a scry killed with SIGKILL). It runs in a namespace of its
 * own; `import ctypes` is the one trace it leaves (the module in sys.modules). */
static int write_script(const char *dir, int pid, const char *agent, const char *fn,
                        const char *arg, char *path, size_t size)
{
    char answer[PATH_MAX + 64];
    answer_path(dir, pid, fn, answer, sizeof(answer));
    struct strbuf sb = STRBUF_INIT;
    sb_adds(&sb, "def _scry_call(owner, agent, fn, arg, answer):\n"
                 "    import os\n"
                 "    rc = -1\n"
                 "    try:\n"
                 "        os.kill(owner, 0)\n"
                 "    except ProcessLookupError:\n"
                 "        return\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "    try:\n"
                 "        import ctypes\n"
                 "        call = getattr(ctypes.CDLL(os.fsdecode(agent)), os.fsdecode(fn))\n"
                 "        call.argtypes = (ctypes.c_char_p,) if arg is not None else ()\n"
                 "        call.restype = ctypes.c_int\n"
                 "        rc = call(arg) if arg is not None else call()\n"
                 "    except Exception:\n"
                 "        pass\n"
                 "    try:\n"
                 "        fd = os.open(answer, os.O_WRONLY | os.O_CREAT | os.O_EXCL | "
                 "os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)\n"
                 "        os.write(fd, b'%d\\n' % rc)\n"
                 "        os.close(fd)\n"
                 "    except OSError:\n"
                 "        pass\n"
                 "\n"
                 "_scry_call(");
    sb_addf(&sb, "%d, ", (int)getpid());
    const char *const args[] = {agent, fn, arg, answer};
    for (size_t i = 0; i < sizeof(args) / sizeof(*args); i++) {
        sb_adds(&sb, i ? ", " : "");
        if (args[i])
            bytes_literal(&sb, args[i]);
        else
            sb_adds(&sb, "None");
    }
    sb_adds(&sb, ")\n");
    if (sb_failed(&sb)) {
        sb_release(&sb);
        return err_fail(SCRY_E_NO_MEMORY, "out of memory");
    }
    snprintf(path, size, "%s/%s.py", dir, fn);
    int err = outfile_write_all(path, sb_str(&sb), sb.len, OUTFILE_PRIVATE);
    sb_release(&sb);
    return err;
}

bool pep768_result(const char *dir, int pid, const char *fn, double wait_s, int64_t *ret)
{
    char path[PATH_MAX + 64];
    answer_path(dir, pid, fn, path, sizeof(path));
    for (double waited = 0;; waited += 0.005) {
        char *text;
        size_t len;
        struct stat st;
        /* Complete once it ends with its newline. */
        if (lstat(path, &st) == 0 &&
            infile_read_all(path, "the agent's answer", 64, &text, &len) == 0) {
            bool done = len > 1 && text[len - 1] == '\n';
            if (done) {
                text[len - 1] = 0;
                char *end;
                long long v = strtoll(text, &end, 10);
                *ret = *end ? -1 : v;
            }
            free(text);
            if (done)
                return true;
        }
        err_clear();
        if (waited >= wait_s || (kill(pid, 0) != 0 && errno == ESRCH))
            return false;
        struct timespec ms5 = {0, 5000000};
        nanosleep(&ms5, NULL);
    }
}

int pep768_call(struct py_runtime *rt, int pid, const char *dir, const char *agent,
                const char *fn, const char *arg, double wait_s, enum remote_outcome *out,
                int64_t *ret, const char **why)
{
    *out = REMOTE_DECLINED;
    if (rt->minor < 14 || rt->layout.free_threaded) {
        *why = "Python 3.14+ only";
        return 0;
    }
    struct dbg_support s;
    uint64_t interp = 0, ts = 0;
    bool holds_gil = false;
    int32_t enabled = 0;
    if (read_support(rt, &s) != 0 || main_tstate(rt, pid, &interp, &ts, &holds_gil) != 0 ||
        !ts || rd_read(rt->rd, interp + s.enabled, &enabled, sizeof(enabled)) != 0) {
        err_clear();
        *why = "its debugger fields could not be read";
        return 0;
    }
    if (!enabled) {
        *why = "the process disables remote debugging (PYTHON_DISABLE_REMOTE_DEBUG, "
               "-X disable-remote-debug, or a build without it)";
        return 0;
    }
    if (!main_may_run(pid, holds_gil)) {
        *why = "its main thread runs no Python code now (it waits in a system call, where "
               "ptrace is safe)";
        return 0;
    }
    char script[PATH_MAX + 64];
    char answer[PATH_MAX + 64];
    answer_path(dir, pid, fn, answer, sizeof(answer));
    unlink(answer);
    int err = write_script(dir, pid, agent, fn, arg, script, sizeof(script));
    if (err)
        return err;
    if (strlen(script) >= s.script_path_size) {
        *why = "the script's path is longer than the interpreter takes";
        return 0;
    }
    uint64_t rds = ts + s.remote_support;
    int32_t one = 1, zero = 0;
    uint64_t breaker;
    /* The path, then the flag, then the bit: the interpreter reads them in the opposite order. */
    err = write_at(pid, rds + s.script_path, script, strlen(script) + 1);
    if (!err)
        err = write_at(pid, rds + s.pending_call, &one, sizeof(one));
    if (!err)
        err = rd_read_u64(rt->rd, ts + s.eval_breaker, &breaker);
    if (!err) {
        breaker |= EVAL_PLEASE_STOP_BIT;
        err = write_at(pid, ts + s.eval_breaker, &breaker, sizeof(breaker));
    }
    if (err) {
        write_at(pid, rds + s.pending_call, &zero, sizeof(zero));
        return err;
    }
    if (pep768_result(dir, pid, fn, wait_s, ret)) {
        *out = REMOTE_DONE;
        return 0;
    }
    /* Not taken in time (a long call into C holding the GIL, an audit hook refusing it):
     * withdrawn; the interpreter may have taken it just now (pep768_result then says so). */
    write_at(pid, rds + s.pending_call, &zero, sizeof(zero));
    err_clear();
    *out = REMOTE_PENDING;
    *why = "the interpreter did not run the script in time";
    return 0;
}
