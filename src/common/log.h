/* Diagnostics on stderr, filtered by the SCRY_LOG environment variable
 * (error, warn, info, debug; default warn). Uses write(2) so it is safe in the agent too. */
#ifndef SCRY_COMMON_LOG_H
#define SCRY_COMMON_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int log_enabled(enum log_level level);
/* fn is called before each message is written: the CLI's progress line (common/progress.h) is
 * erased so that the message does not land in the middle of it. NULL: nothing. */
void log_set_before_write(void (*fn)(void));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
    do {                                                                                           \
        if (log_enabled(LOG_DEBUG))                                                                \
            log_msg(LOG_DEBUG, __VA_ARGS__);                                                       \
    } while (0)

#endif
