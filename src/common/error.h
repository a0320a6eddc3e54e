/* Error codes shared by every module: one X-macro list gives each error a stable string code
 * (what scripts and the --json error documents match on) and a default hint saying what to do. */
#ifndef SCRY_COMMON_ERROR_H
#define SCRY_COMMON_ERROR_H

#include <stdarg.h>

/* X(NAME, "code", "default hint") - codes are a public contract: never rename one. */
#define SCRY_ERRORS(X)                                                                             \
    X(OK, "ok", "")                                                                                \
    X(USAGE, "usage", "run 'scry help' to see the commands and their options")                     \
    X(NO_SUCH_PROCESS, "no_such_process",                                                          \
      "check the pid with 'ps'; the process may have exited")                                     \
    X(PERMISSION_DENIED, "permission_denied",                                                      \
      "run as root or with CAP_SYS_PTRACE (sudo setcap cap_sys_ptrace+ep build/scry), or set "     \
      "/proc/sys/kernel/yama/ptrace_scope to 0; in a container start it with "                     \
      "--cap-add SYS_PTRACE")                                                                      \
    X(NOT_PYTHON, "not_python",                                                                    \
      "point scry at a CPython 3.11-3.15 process or core; for a core of a program whose "         \
      "executable moved, pass --exe PATH")                                                         \
    X(UNSUPPORTED_PYTHON, "unsupported_python",                                                    \
      "scry supports release (non-debug) builds of CPython 3.11-3.15, and 3.13's free-threaded " \
      "build (3.13t) for stacks and run")                                                          \
    X(BAD_CORE, "bad_core",                                                                        \
      "make the core with 'gcore PID' or let the kernel dump it; check that it is complete")      \
    X(BAD_MINIDUMP, "bad_minidump",                                                                \
      "write the dump with full memory (procdump -ma PID, Task Manager's \"Create dump file\"); "  \
      "check that it is complete")                                                                 \
    X(BAD_SNAPSHOT, "bad_snapshot", "the snapshot is damaged or truncated; dump the process again") \
    X(BAD_PROFILE, "bad_profile",                                                                  \
      "the file is damaged or not a profile that scry or Scalene wrote; profile the program "    \
      "again")                                                                                     \
    X(NOT_FOUND, "not_found",                                                                      \
      "list what the snapshot holds with 'scry analyze' or 'scry query --type'")                 \
    X(IO, "io_error", "check that the path exists and is readable")                                \
    X(NO_MEMORY, "out_of_memory", "free some memory and try again")                                \
    X(READ_FAILED, "read_failed",                                                                  \
      "the target's memory changed or is unmapped; try again")                                    \
    X(INTERNAL, "internal_error",                                                                  \
      "this is a bug in scry: please report it with SCRY_LOG=debug output")                      \
    X(TOO_LARGE, "too_large",                                                                      \
      "the file is larger than scry reads; check that it is the file you meant")                  \
    X(NO_API_KEY, "no_api_key",                                                                    \
      "export the provider's key in the variable named (docs/optimize.md), or name another "      \
      "with --api-key-env")                                                                        \
    X(PROVIDER_UNREACHABLE, "provider_unreachable",                                                \
      "check --base-url and the network; a slow model may need a longer --timeout")               \
    X(PROVIDER_ERROR, "provider_error",                                                            \
      "the provider refused the request: check the key, the model's name and the account")        \
    X(BAD_ANSWER, "bad_answer",                                                                    \
      "the model's answer held no code to propose; try again or try another model")                \
    X(NO_ALLOCATIONS, "no_allocations",                                                            \
      "take the snapshot of a program under scry run (scry dump --pid), with scry run "           \
      "--heap-at-exit, or of any process with scry record --allocations --dump")                 \
    X(INJECT_REFUSED, "inject_refused",                                                            \
      "scry did not load its agent into the process (docs/record-memory.md says when it "        \
      "refuses); try again, or start the program with 'scry run --memory'")                    \
    X(BPF_UNAVAILABLE, "bpf_unavailable",                                                          \
      "run scry as root (or with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE) on Linux 5.8 or later; " \
      "or start the program with 'scry run' and use 'scry dump --pid' (docs/allocations.md)")    \
    X(BAD_CONFIG, "bad_config",                                                                    \
      "a config is a mapping of options to values (docs/scalene-options.md): check the file "   \
      "is the one you meant")

enum scry_err {
#define SCRY_ERR_ENUM(name, code, hint) SCRY_E_##name,
    SCRY_ERRORS(SCRY_ERR_ENUM)
#undef SCRY_ERR_ENUM
        SCRY_E__COUNT
};

/* Records the message (and, with err_fail_hint, a hint replacing the default one) for the error
 * being returned, and returns -code so that callers can write `return err_fail(...)`. */
int err_fail(enum scry_err code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int err_fail_hint(enum scry_err code, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int err_failv(enum scry_err code, const char *hint, const char *fmt, va_list ap);

/* The last error recorded on this thread. */
enum scry_err err_last_code(void);
const char *err_last_message(void);
const char *err_last_hint(void);
void err_clear(void);

const char *err_code_name(enum scry_err code);
const char *err_default_hint(enum scry_err code);
/* Maps a negative return value to its enum value (SCRY_E_INTERNAL for unknown values). */
enum scry_err err_from_ret(int ret);

#endif
