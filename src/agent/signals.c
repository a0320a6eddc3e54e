/* The agent's signal dispositions, kept whatever the program does with sigaction()/signal(),
 * which are interposed for these signals only (the program always sees its own settings):
 * - the CPU-timer signal: a program that resets every signal (a loop over signal.signal(sig,
 *   SIG_DFL)) would otherwise be killed by the next timer expiry; its requests are remembered
 *   and reported back, and the agent's handler stays;
 * - SIGINT, SIGTERM, SIGHUP: whenever the program's disposition is the default (terminate), the
 *   agent's flush handler stands in for it: it writes the profile part, restores the default and
 *   raises the signal again, so the program ends exactly as it would have. CPython's own exit
 *   after an unhandled KeyboardInterrupt (it resets SIGINT to SIG_DFL and kills itself) goes
 *   through here too. Handlers and SIG_IGN set by the program are installed as asked. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "platform/os_process.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static const int flush_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NFLUSH (sizeof(flush_signals) / sizeof(flush_signals[0]))

static struct sigaction timer_view;           /* the program's idea of the timer signal */
static struct sigaction flush_view[NFLUSH];   /* ... and of the flush signals */
static _Atomic bool guard_timer, guard_flush;

static sigaction_fn real_sigaction(void)
{
    static sigaction_fn fn;
    if (!fn)
        fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    return fn;
}

static int flush_index(int sig)
{
    for (size_t i = 0; i < NFLUSH; i++)
        if (flush_signals[i] == sig)
            return (int)i;
    return -1;
}

static bool is_default(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

static void on_flush_signal(int sig)
{
    int saved = errno;
    ag_flush_for_exit();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    real_sigaction()(sig, &dfl, NULL);
    /* Pending until this handler returns, then the default action ends the process. */
    pf_thread_kill(pf_getpid(), pf_gettid(), sig);
    errno = saved;
}

/* Installs, for flush signal i, what the program asked for, or the flush handler in place of
 * the default. */
static int apply_flush(int i, const struct sigaction *want)
{
    if (!is_default(want))
        return real_sigaction()(flush_signals[i], want, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_flush_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    return real_sigaction()(flush_signals[i], &sa, NULL);
}

int ag_install_signal(int sig, const struct sigaction *sa)
{
    sigaction_fn fn = real_sigaction();
    if (!fn || fn(sig, sa, NULL) != 0)
        return -1;
    memset(&timer_view, 0, sizeof(timer_view));
    timer_view.sa_handler = SIG_DFL;
    atomic_store(&guard_timer, true);
    return 0;
}

void ag_install_flush_handlers(void)
{
    sigaction_fn fn = real_sigaction();
    if (!fn)
        return;
    for (size_t i = 0; i < NFLUSH; i++) {
        if (fn(flush_signals[i], NULL, &flush_view[i]) != 0)
            continue;
        if (is_default(&flush_view[i]))
            apply_flush((int)i, &flush_view[i]);
    }
    atomic_store(&guard_flush, true);
}

AG_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn fn = real_sigaction();
    if (!fn) {
        errno = ENOSYS;
        return -1;
    }
    if (atomic_load(&guard_timer) && sig == ag_signal) {
        if (old)
            *old = timer_view;
        if (act)
            timer_view = *act;
        return 0;
    }
    int i = atomic_load(&guard_flush) ? flush_index(sig) : -1;
    if (i < 0)
        return fn(sig, act, old);
    struct sigaction prev = flush_view[i];
    if (act && apply_flush(i, act) != 0)
        return -1;
    if (act)
        flush_view[i] = *act;
    if (old)
        *old = prev;
    return 0;
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
    return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}
