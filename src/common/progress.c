/* The one progress line on stderr (progress.h): a long step shows how far it is, redrawn in place
 * and erased when done. Drawn only on a terminal, after half a second of work, at most 10 times a
 * second, and cut to the terminal's width: a wrapped line could not be erased with \r. */
#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/sanitize.h"
#include "common/strbuf.h"

#define PROG_FIRST_MS 500.0  /* a command quicker than this shows nothing */
#define PROG_EVERY_MS 100.0  /* at most 10 redraws a second */
#define PROG_MAX_COLS 200

/* Held while the line is written or erased: a warning logged by another thread (run's and
 * record's push sender) erases it through log.c's hook while the main thread may be drawing. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    bool decided, on, force, shown, registered;
    int fd, width;
    double (*now_ms)(void);
    double start_ms, last_ms;
    /* the phase */
    bool active;
    const char *what, *noun, *extra_noun;
    enum prog_unit unit;
    uint64_t total, done, extra;
} P = {.fd = 2};

static double clock_ms(void)
{
    struct timespec ts;
    /* the coarse clock is a read of shared memory: cheap enough for every update */
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now(void)
{
    return P.now_ms ? P.now_ms() : clock_ms();
}

static void put(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(P.fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* a terminal that went away: nothing to erase either */
        s += w;
        n -= (size_t)w;
    }
}

static void at_exit_clear(void)
{
    prog_clear();
}

static void before_log(void)
{
    prog_clear();
}

void prog_init(bool quiet)
{
    const char *env = getenv("SCRY_PROGRESS");
    P.decided = true;
    P.force = env && strcmp(env, "always") == 0;
    P.on = !quiet && !(env && strcmp(env, "never") == 0) && isatty(P.fd) == 1;
    P.start_ms = now();
    P.last_ms = 0;
    if (P.on && !P.registered) {
        P.registered = true;
        atexit(at_exit_clear);
        log_set_before_write(before_log);
    }
}

void prog_configure_for_test(int fd, double (*now_ms)(void), int width, bool force)
{
    P.fd = fd;
    P.now_ms = now_ms;
    P.width = width;
    P.force = force;
    P.on = true;
    P.decided = true;
    P.shown = false;
    P.active = false;
    P.start_ms = now();
    P.last_ms = 0;
    log_set_before_write(before_log);
}

static int columns(void)
{
    if (P.width > 0)
        return P.width;
    struct winsize ws;
    if (ioctl(P.fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

/* "12.0 MiB of 40.0 MiB (30%)", "1234 objects", "3/40 parts (7%)", "5 s of 30 s (17%)" */
static void describe(struct strbuf *sb)
{
    char a[32], b[32];
    sb_addf(sb, "scry: %s: ", P.what);
    switch (P.unit) {
    case PROG_BYTES:
        fmt_bytes(P.done, a, sizeof(a));
        sb_adds(sb, a);
        if (P.total) {
            fmt_bytes(P.total, b, sizeof(b));
            sb_addf(sb, " of %s", b);
        }
        break;
    case PROG_SECONDS:
        sb_addf(sb, "%llu s", (unsigned long long)P.done);
        if (P.total)
            sb_addf(sb, " of %llu s", (unsigned long long)P.total);
        break;
    case PROG_PERCENT: {
        uint64_t d = P.done > P.total ? P.total : P.done;
        sb_addf(sb, "%d%%", P.total ? (int)((double)d * 100.0 / (double)P.total) : 0);
        return;
    }
    case PROG_NONE:
        sb->len -= 2; /* "scry: writing the snapshot..." */
        sb_adds(sb, "...");
        return;
    case PROG_COUNT:
        sb_addf(sb, "%llu", (unsigned long long)P.done);
        if (P.total)
            sb_addf(sb, "/%llu", (unsigned long long)P.total);
        if (P.noun)
            sb_addf(sb, " %s", P.noun);
        break;
    }
    if (P.total) {
        uint64_t d = P.done > P.total ? P.total : P.done;
        sb_addf(sb, " (%d%%)", (int)((double)d * 100.0 / (double)P.total));
    }
    if (P.extra_noun)
        sb_addf(sb, ", %llu %s", (unsigned long long)P.extra, P.extra_noun);
}

static void draw(void)
{
    struct strbuf text = STRBUF_INIT, line = STRBUF_INIT;
    describe(&text);
    /* cut to the width less one column: a line that fills the last column wraps on some
     * terminals, and \r would then erase only its second half */
    size_t max = (size_t)columns() - 1;
    if (max > PROG_MAX_COLS)
        max = PROG_MAX_COLS;
    if (text.len > max)
        text.len = max; /* the text is ASCII but for names; the sanitizer mends a cut character */
    sb_addch(&line, '\r');
    san_addn(&line, text.buf ? text.buf : "", text.len);
    sb_adds(&line, "\033[K");
    if (!sb_failed(&line)) {
        pthread_mutex_lock(&lock);
        put(line.buf, line.len);
        P.shown = true;
        pthread_mutex_unlock(&lock);
    }
    sb_release(&text);
    sb_release(&line);
}

static void maybe_draw(void)
{
    if (!P.on || !P.active)
        return;
    double t = now();
    if (!P.force && t - P.start_ms < PROG_FIRST_MS)
        return;
    if (P.last_ms && t - P.last_ms < PROG_EVERY_MS)
        return;
    P.last_ms = t;
    draw();
}

void prog_phase(const char *what, enum prog_unit unit, uint64_t total, const char *noun,
                const char *extra_noun)
{
    if (!P.decided)
        return;
    P.active = true;
    P.what = what;
    P.unit = unit;
    P.total = total;
    P.noun = noun;
    P.extra_noun = extra_noun;
    P.done = P.extra = 0;
    P.last_ms = 0; /* a new phase is shown at its first update (once the first half second is
                      over); one without a count at once */
    if (unit == PROG_NONE)
        maybe_draw();
}

void prog_update(uint64_t done)
{
    P.done = done;
    maybe_draw();
}

void prog_update2(uint64_t done, uint64_t extra)
{
    P.done = done;
    P.extra = extra;
    maybe_draw();
}

void prog_clear(void)
{
    pthread_mutex_lock(&lock);
    if (P.shown) {
        P.shown = false;
        P.last_ms = 0;
        put("\r\033[K", 4);
    }
    pthread_mutex_unlock(&lock);
}

void prog_done(void)
{
    prog_clear();
    P.active = false;
}
