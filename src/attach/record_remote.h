/* `scry record --pid --memory` on Python 3.14+: the agent loaded through CPython's own remote
 * debugging support (PEP 768, what sys.remote_exec does), record_remote.c. */
#ifndef SCRY_ATTACH_RECORD_REMOTE_H
#define SCRY_ATTACH_RECORD_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpython/runtime.h"

/* What pep768_call did. */
enum remote_outcome {
    REMOTE_DONE,      /* the script ran: *ret is the function's value */
    REMOTE_DECLINED,  /* not used (why says why): load the agent with ptrace instead */
    REMOTE_PENDING,   /* withdrawn unanswered; the target may still run it (pep768_result) */
};

/* Asks the interpreter of rt (process pid, a 3.14+ non-free-threaded CPython) to run a script,
 * written into the part directory dir, that loads agent and calls its function fn(arg) (fn()
 * when arg is NULL: scry_agent_attach(settings), scry_agent_detach()) in the main thread at its
 * next eval-breaker check, and waits up to wait_s for its value. Only when the target allows remote debugging and its main thread
 * may run Python soon (it holds the GIL, runs, or waits on a futex: not blocked in
 * another system call, where the ptrace path is the safe one); otherwise declined,
 * with why (static text) saying why. Returns 0 with *out, or an error (io_error: the script
 * could not be written). */
int pep768_call(struct py_runtime *rt, int pid, const char *dir, const char *agent,
                const char *fn, const char *arg, double wait_s, enum remote_outcome *out,
                int64_t *ret, const char **why);

/* After REMOTE_PENDING: whether the script's value of fn came after all (within wait_s), *ret
 * that value. */
bool pep768_result(const char *dir, int pid, const char *fn, double wait_s, int64_t *ret);

#endif
