/* Unit tests for the progress line (common/progress.h): nothing in the first half second, at most
 * one redraw per 100 ms however often it is updated, the line erased when done and before a log
 * message, cut to the terminal's width, its text cleaned by the sanitizer, and nothing at all
 * when quiet or when stderr is not a terminal. Time is a fake clock: no test depends on load. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/progress.h"
#include "testlib.h"

static double fake_ms;
static double fake_now(void)
{
    return fake_ms;
}

static int pfd[2] = {-1, -1};

static void open_pipe(void)
{
    if (pfd[0] >= 0) {
        close(pfd[0]);
        close(pfd[1]);
    }
    CHECK_EQ(pipe(pfd), 0);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
}

/* Everything written since the last call, NUL-terminated (static buffer). */
static const char *drain(void)
{
    static char buf[1 << 16];
    ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = 0;
    return buf;
}

/* What the terminal got since the last call: a marker is written after it and everything up to
 * the marker read (a pseudo-terminal passes bytes on in order, but not at once). */
static const char *pty_take(int master, int slave)
{
    static char buf[4096];
    size_t n = 0;
    CHECK_EQ(write(slave, "#", 1), 1);
    while (n < sizeof(buf) - 1) {
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1)
            break; /* not there in 10 s: the check below fails */
        ssize_t r = read(master, buf + n, sizeof(buf) - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (buf[n - 1] == '#')
            break;
    }
    CHECK(n > 0 && buf[n - 1] == '#');
    buf[n ? n - 1 : 0] = 0;
    return buf;
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static void test_first_half_second_and_rate(void)
{
    open_pipe();
    fake_ms = 1000;
    prog_configure_for_test(pfd[1], fake_now, 80, false);
    prog_phase("walking objects", PROG_COUNT, 0, "objects", NULL);
    for (int i = 0; i < 499; i++) {
        fake_ms += 1;
        prog_update((uint64_t)i);
    }
    CHECK_STR(drain(), ""); /* quicker than half a second: nothing */
    /* 10 s of updates every millisecond: about one redraw per 100 ms, not 10000 */
    for (int i = 0; i < 10000; i++) {
        fake_ms += 1;
        prog_update((uint64_t)i);
    }
    const char *out = drain();
    size_t draws = count(out, "\r");
    CHECK(draws >= 95 && draws <= 101);
    CHECK(strstr(out, "\rscry: walking objects: 600 objects\033[K") != NULL);
    prog_done();
    CHECK_STR(drain(), "\r\033[K");
    prog_update(5); /* the phase is over: nothing */
    prog_done();    /* nothing shown: nothing to erase */
    CHECK_STR(drain(), "");
}

static void test_totals_and_units(void)
{
    open_pipe();
    fake_ms = 1000;
    prog_configure_for_test(pfd[1], fake_now, 80, true);
    prog_phase("copying memory", PROG_BYTES, 4u << 20, NULL, NULL);
    CHECK_STR(drain(), ""); /* drawn at its first update */
    prog_update(1u << 20);
    prog_update(2u << 20); /* within 100 ms of the first line: not drawn */
    fake_ms += 100;
    prog_update(3u << 20);
    CHECK_STR(drain(), "\rscry: copying memory: 1.0 MiB of 4.0 MiB (25%)\033[K"
                       "\rscry: copying memory: 3.0 MiB of 4.0 MiB (75%)\033[K");
    prog_phase("recording", PROG_SECONDS, 30, NULL, "samples");
    prog_update(0);
    CHECK_STR(drain(), "\rscry: recording: 0 s of 30 s (0%), 0 samples\033[K");
    fake_ms += 200;
    prog_update2(6, 612);
    CHECK_STR(drain(), "\rscry: recording: 6 s of 30 s (20%), 612 samples\033[K");
    prog_phase("merging", PROG_COUNT, 40, "parts", NULL);
    prog_update(0);
    fake_ms += 200;
    prog_update(50); /* more than the total: never over 100% */
    CHECK_STR(drain(), "\rscry: merging: 0/40 parts (0%)\033[K"
                       "\rscry: merging: 50/40 parts (100%)\033[K");
    prog_phase("computing dominators", PROG_PERCENT, 300, NULL, NULL);
    prog_update(100);
    CHECK_STR(drain(), "\rscry: computing dominators: 33%\033[K");
    prog_phase("writing the snapshot", PROG_NONE, 0, NULL, NULL);
    CHECK_STR(drain(), "\rscry: writing the snapshot...\033[K");
    prog_done();
    CHECK_STR(drain(), "\r\033[K");
}

static void test_log_message_erases_first(void)
{
    open_pipe();
    int saved = dup(2);
    dup2(pfd[1], 2);
    fake_ms = 1000;
    prog_configure_for_test(pfd[1], fake_now, 80, true);
    prog_phase("reading", PROG_COUNT, 0, "objects", NULL);
    prog_update(0);
    log_warn("something");
    fake_ms += 200;
    prog_update(3); /* drawn again after the message */
    prog_done();
    dup2(saved, 2);
    close(saved);
    CHECK_STR(drain(), "\rscry: reading: 0 objects\033[K\r\033[Kscry: warning: something\n"
                       "\rscry: reading: 3 objects\033[K\r\033[K");
}

static void test_cut_and_sanitized(void)
{
    open_pipe();
    fake_ms = 1000;
    prog_configure_for_test(pfd[1], fake_now, 20, true);
    prog_phase("a\033]0;title\007 b", PROG_COUNT, 0, "objects", NULL);
    prog_update(0);
    /* 19 columns of "scry: a?]0;title? b: 0 objects", the controls shown as '?' */
    CHECK_STR(drain(), "\rscry: a?]0;title? b\033[K");
    prog_done();
    CHECK_STR(drain(), "\r\033[K");
}

static void test_quiet_and_not_a_terminal(void)
{
    open_pipe();
    fake_ms = 1000;
    prog_configure_for_test(pfd[1], fake_now, 80, true);
    setenv("SCRY_PROGRESS", "always", 1);
    prog_init(false); /* a pipe is not a terminal: nothing, even when asked for at once */
    prog_phase("walking", PROG_COUNT, 0, "objects", NULL);
    fake_ms += 5000;
    prog_update(1);
    prog_done();
    CHECK_STR(drain(), "");

    /* a pseudo-terminal is one */
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    CHECK(master >= 0);
    CHECK_EQ(grantpt(master), 0);
    CHECK_EQ(unlockpt(master), 0);
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    CHECK(slave >= 0);
    prog_configure_for_test(slave, fake_now, 80, false);
    prog_init(true); /* --json or --quiet: nothing on a terminal either */
    prog_phase("walking", PROG_COUNT, 0, "objects", NULL);
    prog_update(1);
    prog_done();
    CHECK_STR(pty_take(master, slave), "");
    prog_configure_for_test(slave, fake_now, 80, false);
    prog_init(false); /* SCRY_PROGRESS=always: drawn from the start on a terminal */
    prog_phase("walking", PROG_COUNT, 0, "objects", NULL);
    prog_update(0);
    prog_done();
    CHECK_STR(pty_take(master, slave), "\rscry: walking: 0 objects\033[K\r\033[K");
    setenv("SCRY_PROGRESS", "never", 1);
    prog_configure_for_test(slave, fake_now, 80, false);
    prog_init(false);
    prog_phase("walking", PROG_COUNT, 0, "objects", NULL);
    fake_ms += 5000;
    prog_update(1);
    prog_done();
    CHECK_STR(pty_take(master, slave), "");
    unsetenv("SCRY_PROGRESS");
    prog_configure_for_test(slave, fake_now, 80, false);
    prog_init(false); /* by default: a terminal, after the first half second */
    prog_phase("walking", PROG_COUNT, 0, "objects", NULL);
    prog_update(1);
    CHECK_STR(pty_take(master, slave), "");
    fake_ms += 600;
    prog_update(2);
    prog_done();
    CHECK_STR(pty_take(master, slave), "\rscry: walking: 2 objects\033[K\r\033[K");
    close(slave);
    close(master);
}

static const struct tl_test tests[] = {
    TL(test_first_half_second_and_rate), TL(test_totals_and_units),
    TL(test_log_message_erases_first), TL(test_cut_and_sanitized),
    TL(test_quiet_and_not_a_terminal),
};
TL_MAIN(tests)
