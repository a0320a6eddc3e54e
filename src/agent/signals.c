/* Keeping the agent's CPU-timer signal its own: a program that resets every signal (a loop over
 * signal.signal(sig, SIG_DFL), a library that installs handlers wholesale) would otherwise make
 * the next timer expiry kill it. sigaction() and signal() are interposed for that one signal
 * only: the program's request is remembered and reported back, and the agent's handler stays. */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "agent/agent.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static struct sigaction program_view; /* what the program believes is installed */
static _Atomic bool guarding;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn fn;
    if (!fn)
        fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return fn;
}

int ag_install_signal(int sig, const struct sigaction *sa)
{
    sigaction_fn fn = real_sigaction();
    if (!fn || fn(sig, sa, NULL) != 0)
        return -1;
    memset(&program_view, 0, sizeof(program_view));
    program_view.sa_handler = SIG_DFL;
    atomic_store(&guarding, true);
    return 0;
}

AG_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (atomic_load(&guarding) && sig == ag_signal) {
        if (old)
            *old = program_view;
        if (act)
            program_view = *act;
        return 0;
    }
    sigaction_fn fn = real_sigaction();
    return fn ? fn(sig, act, old) : -1;
}

AG_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}
