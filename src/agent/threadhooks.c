/* Threads counted from their creation: pthread_create is interposed, and a thread whose start
 * routine lies in the interpreter's own code (CPython's thread bootstrap: every `threading`
 * thread, _thread.start_new_thread) gets its sampling slot claimed by its creator; the new thread
 * arms its own CPU timer before it runs anything, and a pthread key destructor (run however the
 * thread ends: return, pthread_exit, cancellation) hands the CPU time since its last sample to
 * the collector. So a thread shorter than a sampling interval, or than the collector's scan,
 * loses none of its time. Threads of other start routines (C libraries' pools, the agent's own
 * collector) are left to the collector's scan, as before: they are counted only once they have
 * a Python thread state. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "agent/agent.h"
#include "agent/memory.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static create_fn real_create;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_ok;

static void on_thread_exit(void *value)
{
    ag_mtls.guard++;
    ag_thread_end(value);
    ag_mem_thread_end();
    ag_mtls.guard--;
}

static void make_key(void)
{
    key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

static void *thread_start(void *p)
{
    struct ag_thread *t = p;
    void *(*start_routine)(void *) = t->start_routine;
    void *arg = t->start_arg;
    ag_mtls.guard++;
    if (pthread_setspecific(exit_key, t) == 0)
        ag_thread_begin(t);
    else
        ag_thread_unclaim(t); /* without its end, the thread would be half counted */
    ag_mtls.guard--;
    return start_routine(arg);
}

AG_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                             void *(*start_routine)(void *), void *arg)
{
    if (!real_create) {
        create_fn f;
        *(void **)&f = dlsym(RTLD_NEXT, "pthread_create");
        if (!f)
            return EAGAIN;
        real_create = f;
    }
    struct ag_thread *t = NULL;
    /* The agent's own code counts as the interpreter's for the sampler (its interposers), but a
     * thread it starts (the collector) is not the program's: claimed, it was sampled and its
     * waits for a CPU were summed as the program's (0.2-0.7 s in a 2 s run at load 7). */
    uint64_t pc = (uint64_t)(uintptr_t)start_routine;
    if (atomic_load(&ag_running) && ag_pc_in_interpreter(pc) && !ag_pc_in_agent(pc)) {
        pthread_once(&key_once, make_key);
        if (key_ok) {
            ag_mtls.guard++;
            t = ag_thread_claim(start_routine, arg);
            ag_mtls.guard--;
        }
    }
    if (!t)
        return real_create(thread, attr, start_routine, arg);
    int rc = real_create(thread, attr, thread_start, t);
    if (rc != 0)
        ag_thread_unclaim(t);
    return rc;
}
