/* The progress line of a long step of a command (dump's copy and walk, analyze's dominators, the
 * merge at the end of run, record's duration, with --memory its detach, with --allocations the
 * probes' load): one line on stderr, redrawn in place at most
 * 10 times a second, erased when the step ends, before any message, and at exit. It is drawn only
 * when stderr is a terminal and the command was not asked for --json or --quiet, and only once
 * the command has worked for half a second (a quick command shows nothing). SCRY_PROGRESS=never
 * turns it off; SCRY_PROGRESS=always draws it from the start (for tests: still only on a terminal,
 * never with --json or --quiet). The text goes
 * through the one sanitizer (common/sanitize.h). One line per process, drawn by one thread; any
 * thread's log message erases it first. */
#ifndef SCRY_COMMON_PROGRESS_H
#define SCRY_COMMON_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* What a phase counts. */
enum prog_unit {
    PROG_COUNT,   /* items: "1234 objects", "3/40 parts" */
    PROG_BYTES,   /* "12.0 MiB of 40.0 MiB" */
    PROG_SECONDS, /* "5 s of 30 s" */
    PROG_PERCENT, /* "42%": done of total in units of no meaning to a person */
    PROG_NONE,    /* the phase's name alone: a step that cannot say how far it is */
};

/* Decides once, at the start of a command, whether the line may be drawn: not with quiet (the
 * command's --json or --quiet), not when stderr is not a terminal (a pipe, a file), unless
 * SCRY_PROGRESS says otherwise. Commands that never call it draw nothing. */
void prog_init(bool quiet);
/* A new phase: what is done ("walking objects"), what its count is and its total (0: unknown).
 * It is drawn at its first update (a PROG_NONE phase, which has none, at once).
 * noun names the items of PROG_COUNT ("objects"); extra_noun, if not NULL, names a second count
 * passed to prog_update2 ("samples"). The strings must outlive the phase. */
void prog_phase(const char *what, enum prog_unit unit, uint64_t total, const char *noun,
                const char *extra_noun);
/* How far the phase is. Cheap when no redraw is due (one coarse monotonic clock read); callers
 * of very hot loops call it every few thousand items. */
void prog_update(uint64_t done);
void prog_update2(uint64_t done, uint64_t extra);
/* Erases the line if one is shown (\r, erase to the end of the line) and ends the phase. */
void prog_done(void);
/* Erases the line if one is shown, keeping the phase (its next update draws it again): called
 * before anything else is written to stderr (common/log.c's messages, the CLI's errors). */
void prog_clear(void);

/* For tests: the line goes to fd, time comes from now_ms (NULL: the monotonic clock), the
 * terminal is width columns wide (0: asked of fd); drawn whether fd is a terminal or not, from
 * the start with force (else after the first half second). prog_init decides again. */
void prog_configure_for_test(int fd, double (*now_ms)(void), int width, bool force);

#endif
