/* A fake libnvidia-ml.so.1 for scry's GPU tests (tests/e2e/test_gpu.py): the NVML functions
 * scry's agent looks up, by their versioned names, answering from a script instead of a GPU.
 * Written from the documented ABI (docs/gpu.md); no NVIDIA header.
 *
 * SCRY_FAKE_NVML_SCRIPT names the script, one directive a line ('#' starts a comment):
 *   devices N              how many devices (default 1)
 *   name TEXT              the devices' name (default "Fake GPU")
 *   total_mb N             each device's memory (default 81920)
 *   init_error CODE        nvmlInit answers CODE (an nvmlReturn_t)
 *   lost_after_ms N        every device call answers GPU_IS_LOST N ms after nvmlInit
 *   phase NAME key=value.. util (device 0's utilisation %), util_other (the other devices',
 *                          default util), putil (this process's SM %, default util), mem_mb
 *                          (this process's memory on device 0), other_mem_mb and other_util (a
 *                          second process), foreign=1 (this process appears under another pid:
 *                          a container whose PID namespace the driver does not translate), lost=1
 *                          (every device call answers GPU_IS_LOST from this phase on)
 * SCRY_FAKE_NVML_PHASE_FILE names a file holding the current phase's name, written by the test's
 * target before each section, read at every call: phases do not depend on timing. No file, or a
 * name the script lacks: the phase named "start", else all zero.
 * SCRY_FAKE_NVML_ACK_FILE: each process-list call writes there the name of the phase it answered
 * from, so the target can wait until the sampler has seen a new phase (its slowest reading).
 * SCRY_FAKE_NVML_LOG: at nvmlShutdown, "inits N shutdowns N calls N main_thread_calls N" is
 * written there, so tests can check init/shutdown balance and that no call came from the
 * program's main thread.
 *
 * Variants, built with -D: FAKE_NO_UTIL (no nvmlDeviceGetUtilizationRates), FAKE_OLD (only the
 * unversioned names: nvmlInit, 16-byte process records, no per-process utilisation). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

enum {
    OK = 0,
    UNINITIALIZED = 1,
    INVALID_ARGUMENT = 2,
    NOT_FOUND = 6,
    INSUFFICIENT_SIZE = 7,
    GPU_IS_LOST = 15,
};

#define MAX_DEVICES 8
#define MAX_PHASES 32

struct phase {
    char name[64];
    double util, util_other, putil, mem_mb, other_mem_mb, other_util;
    int foreign;
    int lost; /* from this phase on, the device is lost */
};

static struct {
    bool loaded;
    unsigned devices;
    char name[96];
    double total_mb;
    int init_error;
    long lost_after_ms;
    struct phase phases[MAX_PHASES];
    unsigned nphases;
} cfg;

static int inits, shutdowns;
static _Atomic long calls, main_calls;
static struct timespec t0;
static bool lost; /* a lost=1 phase was seen */
static char handles[MAX_DEVICES]; /* a device handle is a pointer into this */

static void parse_phase(char *rest)
{
    if (cfg.nphases >= MAX_PHASES)
        return;
    struct phase *p = &cfg.phases[cfg.nphases++];
    memset(p, 0, sizeof(*p));
    p->util_other = p->putil = -1;
    char *save = NULL;
    char *tok = strtok_r(rest, " \t", &save);
    if (!tok)
        return;
    snprintf(p->name, sizeof(p->name), "%s", tok);
    while ((tok = strtok_r(NULL, " \t", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = 0;
        double v = strtod(eq + 1, NULL);
        if (!strcmp(tok, "util"))
            p->util = v;
        else if (!strcmp(tok, "util_other"))
            p->util_other = v;
        else if (!strcmp(tok, "putil"))
            p->putil = v;
        else if (!strcmp(tok, "mem_mb"))
            p->mem_mb = v;
        else if (!strcmp(tok, "other_mem_mb"))
            p->other_mem_mb = v;
        else if (!strcmp(tok, "other_util"))
            p->other_util = v;
        else if (!strcmp(tok, "foreign"))
            p->foreign = (int)v;
        else if (!strcmp(tok, "lost"))
            p->lost = (int)v;
    }
    if (p->util_other < 0)
        p->util_other = p->util;
    if (p->putil < 0)
        p->putil = p->util;
}

static void load_script(void)
{
    if (cfg.loaded)
        return;
    cfg.loaded = true;
    cfg.devices = 1;
    snprintf(cfg.name, sizeof(cfg.name), "Fake GPU");
    cfg.total_mb = 81920;
    cfg.lost_after_ms = -1;
    const char *path = getenv("SCRY_FAKE_NVML_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        line[strcspn(line, "\r\n")] = 0;
        char *rest = line + strspn(line, " \t");
        char *sp = rest + strcspn(rest, " \t");
        char *arg = *sp ? sp + 1 + strspn(sp + 1, " \t") : sp;
        *sp = 0;
        if (!strcmp(rest, "devices"))
            cfg.devices = (unsigned)atoi(arg) > MAX_DEVICES ? MAX_DEVICES : (unsigned)atoi(arg);
        else if (!strcmp(rest, "name"))
            snprintf(cfg.name, sizeof(cfg.name), "%s", arg);
        else if (!strcmp(rest, "total_mb"))
            cfg.total_mb = strtod(arg, NULL);
        else if (!strcmp(rest, "init_error"))
            cfg.init_error = atoi(arg);
        else if (!strcmp(rest, "lost_after_ms"))
            cfg.lost_after_ms = atol(arg);
        else if (!strcmp(rest, "phase"))
            parse_phase(arg);
    }
    fclose(f);
}

static const struct phase *current_named(char *name, size_t size);

static const struct phase *current(void)
{
    char name[64];
    return current_named(name, sizeof(name));
}

/* The current phase; name receives the name read from the phase file ("start" without one). */
static const struct phase *current_named(char *name, size_t size)
{
    static const struct phase zero;
    snprintf(name, size, "start");
    const char *path = getenv("SCRY_FAKE_NVML_PHASE_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f) {
        if (fgets(name, (int)size, f))
            name[strcspn(name, " \t\r\n")] = 0;
        fclose(f);
    }
    for (unsigned i = 0; i < cfg.nphases; i++)
        if (!strcmp(cfg.phases[i].name, name))
            return &cfg.phases[i];
    for (unsigned i = 0; i < cfg.nphases; i++)
        if (!strcmp(cfg.phases[i].name, "start"))
            return &cfg.phases[i];
    return &zero;
}

static long ms_since_init(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
}

/* Every device call: counted, checked against the init state and the device's loss. */
static int enter(void *dev, unsigned *index)
{
    calls++;
    if (syscall(SYS_gettid) == getpid())
        main_calls++;
    if (inits <= shutdowns)
        return UNINITIALIZED;
    if (dev) {
        char *h = dev;
        if (h < handles || h >= handles + cfg.devices)
            return INVALID_ARGUMENT;
        *index = (unsigned)(h - handles);
    }
    if (cfg.lost_after_ms >= 0 && ms_since_init() >= cfg.lost_after_ms)
        return GPU_IS_LOST;
    if (lost || current()->lost) {
        lost = true;
        return GPU_IS_LOST;
    }
    return OK;
}

static int do_init(void)
{
    calls++;
    load_script();
    if (cfg.init_error)
        return cfg.init_error;
    if (inits++ == shutdowns)
        clock_gettime(CLOCK_MONOTONIC, &t0);
    return OK;
}

#ifdef FAKE_OLD
API int nvmlInit(void) { return do_init(); }
#else
API int nvmlInit_v2(void) { return do_init(); }
#endif

API int nvmlShutdown(void)
{
    calls++;
    if (inits <= shutdowns)
        return UNINITIALIZED;
    shutdowns++;
    const char *log = getenv("SCRY_FAKE_NVML_LOG");
    FILE *f = log ? fopen(log, "w") : NULL;
    if (f) {
        fprintf(f, "inits %d shutdowns %d calls %ld main_thread_calls %ld\n", inits, shutdowns,
                (long)calls, (long)main_calls);
        fclose(f);
    }
    return OK;
}

API const char *nvmlErrorString(int r)
{
    switch (r) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case 9: return "Driver Not Loaded";
    case GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

static int get_count(unsigned *n)
{
    int r = enter(NULL, NULL);
    if (r == OK)
        *n = cfg.devices;
    return r;
}

static int get_handle(unsigned i, void **dev)
{
    int r = enter(NULL, NULL);
    if (r != OK)
        return r;
    if (i >= cfg.devices)
        return INVALID_ARGUMENT;
    *dev = &handles[i];
    return OK;
}

#ifdef FAKE_OLD
API int nvmlDeviceGetCount(unsigned *n) { return get_count(n); }
API int nvmlDeviceGetHandleByIndex(unsigned i, void **dev) { return get_handle(i, dev); }
#else
API int nvmlDeviceGetCount_v2(unsigned *n) { return get_count(n); }
API int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev) { return get_handle(i, dev); }
#endif

API int nvmlDeviceGetName(void *dev, char *out, unsigned len)
{
    unsigned i;
    int r = enter(dev, &i);
    if (r == OK)
        snprintf(out, len, "%s", cfg.name);
    return r;
}

#ifndef FAKE_NO_UTIL
API int nvmlDeviceGetUtilizationRates(void *dev, uint32_t *util /* gpu, memory */)
{
    unsigned i;
    int r = enter(dev, &i);
    if (r != OK)
        return r;
    const struct phase *p = current();
    util[0] = (uint32_t)(i == 0 ? p->util : p->util_other);
    util[1] = util[0] / 2;
    return OK;
}
#endif

struct entry {
    uint32_t pid;
    double value; /* MiB, or SM % */
};

static double own_mb(const struct phase *p, unsigned i)
{
    return i == 0 ? p->mem_mb : 0;
}

API int nvmlDeviceGetMemoryInfo(void *dev, uint64_t *mem /* total, free, used */)
{
    unsigned i;
    int r = enter(dev, &i);
    if (r != OK)
        return r;
    const struct phase *p = current();
    double used = 300 + own_mb(p, i) + (i == 0 ? p->other_mem_mb : 0);
    mem[0] = (uint64_t)(cfg.total_mb * 1048576.0);
    mem[2] = (uint64_t)(used * 1048576.0);
    mem[1] = mem[0] - mem[2];
    return OK;
}

/* The compute processes of a device: this one (when it has memory there) and the other one. */
static int processes(void *dev, unsigned *count, unsigned char *out, size_t stride)
{
    unsigned i;
    int r = enter(dev, &i);
    if (r != OK)
        return r;
    char name[64];
    const struct phase *p = current_named(name, sizeof(name));
    const char *ack = getenv("SCRY_FAKE_NVML_ACK_FILE");
    FILE *af = ack ? fopen(ack, "w") : NULL;
    if (af) {
        fputs(name, af);
        fclose(af);
    }
    struct entry list[2];
    unsigned n = 0;
    if (own_mb(p, i) > 0)
        list[n++] = (struct entry){(uint32_t)getpid() + (p->foreign ? 100000 : 0), own_mb(p, i)};
    if (i == 0 && p->other_mem_mb > 0)
        list[n++] = (struct entry){1, p->other_mem_mb};
    if (*count < n) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    *count = n;
    for (unsigned k = 0; k < n; k++) {
        unsigned char *rec = out + k * stride;
        memset(rec, 0, stride);
        uint64_t bytes = (uint64_t)(list[k].value * 1048576.0);
        memcpy(rec, &list[k].pid, 4);
        memcpy(rec + 8, &bytes, 8);
        if (stride >= 24)
            memset(rec + 16, 0xff, 8); /* gpuInstanceId, computeInstanceId: MIG off */
    }
    return OK;
}

#ifdef FAKE_OLD
API int nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned *count, void *out)
{
    return processes(dev, count, out, 16);
}
#else
API int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, void *out)
{
    return processes(dev, count, out, 24);
}

/* Samples of processes that used the device since lastSeen (microseconds, wall clock): one per
 * process with a non-zero rate, stamped now. */
API int nvmlDeviceGetProcessUtilization(void *dev, void *out, unsigned *count,
                                        unsigned long long last_seen)
{
    unsigned i;
    int r = enter(dev, &i);
    if (r != OK)
        return r;
    const struct phase *p = current();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
    double own = i == 0 ? p->putil : p->util_other;
    struct entry list[2];
    unsigned n = 0;
    if (own > 0)
        list[n++] = (struct entry){(uint32_t)getpid() + (p->foreign ? 100000 : 0), own};
    if (i == 0 && p->other_util > 0)
        list[n++] = (struct entry){1, p->other_util};
    if (n == 0 || us <= last_seen)
        return NOT_FOUND;
    if (!out || *count < n) {
        *count = n;
        return INSUFFICIENT_SIZE;
    }
    *count = n;
    for (unsigned k = 0; k < n; k++) {
        unsigned char *rec = (unsigned char *)out + k * 32;
        memset(rec, 0, 32);
        uint32_t sm = (uint32_t)list[k].value;
        memcpy(rec, &list[k].pid, 4);
        memcpy(rec + 8, &us, 8);
        memcpy(rec + 16, &sm, 4);
    }
    return OK;
}
#endif
