/* GPU sampling on NVIDIA through NVML (libnvidia-ml.so.1, or SCRY_NVML_LIBRARY), loaded with
 * dlopen by a thread of its own: no NVIDIA header at build time (the few types and layouts used
 * are declared here from the documented ABI), nothing loaded unless SCRY_GPU asks for it, never a
 * call from a signal handler or a hook. The thread polls every SCRY_GPU_INTERVAL_MS (at least 10,
 * default 50): utilisation at every poll; this process's own SM utilisation and device memory,
 * the costly process-list calls, at most every PROC_INTERVAL_NS; and publishes the reading in a
 * seqlock that the collector reads as it charges each sample (attribution.c ag_col_charge).
 *
 * Sources, best first (the part says which one the figures come from):
 *  utilisation: "process": nvmlDeviceGetProcessUtilization's samples of this pid (other tenants
 *               excluded), once this pid has appeared in them; "device": the device-wide rate.
 *  memory:      "process": usedGpuMemory of this pid in the compute-process list (0 while it is
 *               not there: no CUDA context); "device": the device's used memory less its value at
 *               start, when the list holds only pids that do not exist here (a container whose PID
 *               namespace the driver does not translate) and never this one.
 * Errors: anything failing at start (library, symbols, init, no device) gives no GPU data and a
 * note; a device lost or a call failing mid-run stops the sampler, keeps what was gathered and
 * says so. */
#include "agent/gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/memory.h"
#include "common/log.h"
#include "platform/os_process.h"
#include "platform/wake.h"
#include "render/json_writer.h"

/* ---- NVML's ABI (reference/gpu.md sections 2-4): return codes, opaque handles, structs ---- */

typedef int nvml_ret; /* nvmlReturn_t, a 4-byte enum */
typedef void *nvml_dev;

enum {
    NV_SUCCESS = 0,
    NV_ERROR_NOT_SUPPORTED = 3,
    NV_ERROR_NOT_FOUND = 6,
    NV_ERROR_INSUFFICIENT_SIZE = 7,
    NV_ERROR_DRIVER_NOT_LOADED = 9,
    NV_ERROR_GPU_IS_LOST = 15,
};

struct nv_util { /* nvmlUtilization_t */
    uint32_t gpu, memory;
};
struct nv_memory { /* nvmlMemory_t, bytes */
    uint64_t total, free, used;
};
struct nv_proc_v1 { /* nvmlProcessInfo_v1_t (16 bytes) */
    uint32_t pid;
    uint64_t used;
};
struct nv_proc_v2 { /* nvmlProcessInfo_t = _v2 (24 bytes) */
    uint32_t pid;
    uint64_t used;
    uint32_t gpu_instance, compute_instance;
};
struct nv_putil { /* nvmlProcessUtilizationSample_t (32 bytes) */
    uint32_t pid;
    uint64_t timestamp; /* microseconds */
    uint32_t sm, mem, enc, dec;
};
_Static_assert(sizeof(struct nv_proc_v1) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(struct nv_proc_v2) == 24, "nvmlProcessInfo_t");
_Static_assert(sizeof(struct nv_putil) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(sizeof(struct nv_memory) == 24, "nvmlMemory_t");

static struct {
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*count)(unsigned *);
    nvml_ret (*handle)(unsigned, nvml_dev *);
    nvml_ret (*util)(nvml_dev, struct nv_util *);
    nvml_ret (*meminfo)(nvml_dev, struct nv_memory *);
    nvml_ret (*procs)(nvml_dev, unsigned *, void *);
    size_t proc_size; /* record size of the procs version found */
    nvml_ret (*putil)(nvml_dev, struct nv_putil *, unsigned *, unsigned long long);
    nvml_ret (*name)(nvml_dev, char *, unsigned);
    const char *(*errstr)(nvml_ret);
} nv;

/* ---- state ---- */

#define GPU_MAX_DEVICES 16
#define GPU_MAX_PROCS 256
#define PROC_INTERVAL_NS 200000000ULL /* process lists (milliseconds each on real drivers) */
#define PUTIL_STALE_NS 1000000000ULL  /* no new per-process sample for 1 s: this pid is idle */
#define STOP_WAIT_MS 2000

static bool asked;       /* SCRY_GPU=1: the user asked (a missing library is worth a note) */
static bool started;     /* a thread was started in this process */
static uint64_t interval_ns = 50000000ULL;
static void *lib;
static bool nvml_up; /* nvmlInit succeeded: one nvmlShutdown owed */
static pthread_t thread;
static int wake_fd = -1;
static _Atomic bool stop_flag, exited;
static int own_pid;

static nvml_dev devs[GPU_MAX_DEVICES];
static unsigned ndevs;
static uint64_t dev_total[GPU_MAX_DEVICES], dev_used_start[GPU_MAX_DEVICES];
static char device_name[256];

/* Per device, per-process utilisation bookkeeping. */
static unsigned long long putil_seen_us[GPU_MAX_DEVICES];
static uint64_t putil_new_ns[GPU_MAX_DEVICES];
static double putil_own[GPU_MAX_DEVICES];
static bool putil_ok;     /* the per-process call works on this driver */
static bool putil_found;  /* this pid has appeared in its samples */
static bool procs_found;  /* this pid has appeared in the compute-process list */
static bool procs_foreign; /* a list of other namespaces' pids was read instead (device growth) */
static double mem_mb;     /* the last memory reading */
static uint64_t last_proc_ns;

/* Written by the sampler thread, read by ag_gpu_write_part after ag_gpu_stop. */
static char note[512];
static uint64_t polls;
static double sampler_cpu_sec, start_sec, stopped_at_sec;
static _Atomic bool have_data; /* a poll succeeded (device_name is written before) */
static bool lost;

/* The published reading: a seqlock (the writer is the sampler thread, the reader the collector). */
static _Atomic uint32_t pub_seq;
static _Atomic uint64_t pub_load_bits, pub_mem_bits;
static _Atomic bool pub_valid;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void set_note(const char *fmt, ...)
{
    if (note[0])
        return; /* the first reason is the one that matters */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof(note), fmt, ap);
    va_end(ap);
}

static const char *err_name(nvml_ret r)
{
    static char buf[32];
    const char *s = nv.errstr ? nv.errstr(r) : NULL;
    if (s && *s)
        return s;
    snprintf(buf, sizeof(buf), "NVML error %d", r);
    return buf;
}

static void publish(double load, double mb)
{
    uint64_t lb, mbits;
    memcpy(&lb, &load, sizeof(lb));
    memcpy(&mbits, &mb, sizeof(mbits));
    atomic_fetch_add_explicit(&pub_seq, 1, memory_order_acq_rel); /* odd: writing */
    atomic_store_explicit(&pub_load_bits, lb, memory_order_relaxed);
    atomic_store_explicit(&pub_mem_bits, mbits, memory_order_relaxed);
    atomic_store_explicit(&pub_valid, true, memory_order_relaxed);
    atomic_fetch_add_explicit(&pub_seq, 1, memory_order_release);
}

bool ag_gpu_read(struct ag_gpu_reading *out)
{
    if (!atomic_load_explicit(&pub_valid, memory_order_acquire))
        return false;
    for (;;) {
        uint32_t s0 = atomic_load_explicit(&pub_seq, memory_order_acquire);
        if (s0 & 1)
            continue;
        uint64_t lb = atomic_load_explicit(&pub_load_bits, memory_order_relaxed);
        uint64_t mbits = atomic_load_explicit(&pub_mem_bits, memory_order_relaxed);
        bool valid = atomic_load_explicit(&pub_valid, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pub_seq, memory_order_relaxed) != s0)
            continue;
        memcpy(&out->load, &lb, sizeof(lb));
        memcpy(&out->mem_mb, &mbits, sizeof(mbits));
        return valid;
    }
}

/* ---- loading ---- */

static void *sym(const char *name)
{
    return dlsym(lib, name);
}

/* The newest version of a function the library has (reference/gpu.md section 1). */
static void *sym_versioned(const char *const *names, size_t n, size_t *which)
{
    for (size_t i = 0; i < n; i++) {
        void *f = sym(names[i]);
        if (f) {
            if (which)
                *which = i;
            return f;
        }
    }
    return NULL;
}

#define VERSIONS(...) (const char *const[]){__VA_ARGS__}, \
                      sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

/* Loads the library and its symbols; false (with a note when it is worth one) if unusable. */
static bool load(void)
{
    const char *path = getenv("SCRY_NVML_LIBRARY");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        if (asked)
            set_note("GPU: cannot load %s (%s): no NVIDIA driver?", path, dlerror());
        return false;
    }
    nv.errstr = (const char *(*)(nvml_ret))sym("nvmlErrorString");
    nv.init = (nvml_ret(*)(void))sym_versioned(VERSIONS("nvmlInit_v2", "nvmlInit"), NULL);
    nv.shutdown = (nvml_ret(*)(void))sym("nvmlShutdown");
    nv.count = (nvml_ret(*)(unsigned *))sym_versioned(
        VERSIONS("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"), NULL);
    nv.handle = (nvml_ret(*)(unsigned, nvml_dev *))sym_versioned(
        VERSIONS("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"), NULL);
    nv.util = (nvml_ret(*)(nvml_dev, struct nv_util *))sym("nvmlDeviceGetUtilizationRates");
    nv.meminfo = (nvml_ret(*)(nvml_dev, struct nv_memory *))sym("nvmlDeviceGetMemoryInfo");
    size_t which = 0;
    nv.procs = (nvml_ret(*)(nvml_dev, unsigned *, void *))sym_versioned(
        VERSIONS("nvmlDeviceGetComputeRunningProcesses_v3",
                 "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses"),
        &which);
    nv.proc_size = which == 2 ? sizeof(struct nv_proc_v1) : sizeof(struct nv_proc_v2);
    nv.putil = (nvml_ret(*)(nvml_dev, struct nv_putil *, unsigned *, unsigned long long))sym(
        "nvmlDeviceGetProcessUtilization");
    nv.name = (nvml_ret(*)(nvml_dev, char *, unsigned))sym("nvmlDeviceGetName");
    const char *missing = !nv.init                    ? "nvmlInit_v2"
                          : !nv.shutdown              ? "nvmlShutdown"
                          : !nv.count                 ? "nvmlDeviceGetCount_v2"
                          : !nv.handle                ? "nvmlDeviceGetHandleByIndex_v2"
                          : !nv.util                  ? "nvmlDeviceGetUtilizationRates"
                          : !nv.meminfo               ? "nvmlDeviceGetMemoryInfo"
                                                      : NULL;
    if (missing) {
        set_note("GPU: %s has no %s: GPU profiling is off", path, missing);
        return false;
    }
    return true;
}

/* nvmlInit and the devices; false (with a note when it is worth one) if none can be used. */
static bool open_devices(void)
{
    nvml_ret r = nv.init();
    if (r != NV_SUCCESS) {
        if (asked || r != NV_ERROR_DRIVER_NOT_LOADED)
            set_note("GPU: nvmlInit failed: %s", err_name(r));
        return false;
    }
    nvml_up = true;
    unsigned n = 0;
    if ((r = nv.count(&n)) != NV_SUCCESS) {
        set_note("GPU: nvmlDeviceGetCount failed: %s", err_name(r));
        return false;
    }
    char names[GPU_MAX_DEVICES][96];
    for (unsigned i = 0; i < n && ndevs < GPU_MAX_DEVICES; i++) {
        nvml_dev d;
        if (nv.handle(i, &d) != NV_SUCCESS)
            continue; /* a counted device this user may not open */
        struct nv_memory m;
        if ((r = nv.meminfo(d, &m)) != NV_SUCCESS) {
            set_note("GPU: nvmlDeviceGetMemoryInfo on device %u failed: %s", i, err_name(r));
            return false;
        }
        dev_total[ndevs] = m.total;
        dev_used_start[ndevs] = m.used;
        names[ndevs][0] = 0;
        if (!nv.name || nv.name(d, names[ndevs], sizeof(names[ndevs])) != NV_SUCCESS)
            snprintf(names[ndevs], sizeof(names[ndevs]), "NVIDIA GPU");
        names[ndevs][sizeof(names[ndevs]) - 1] = 0;
        devs[ndevs++] = d;
    }
    if (ndevs == 0) {
        if (asked || n > 0)
            set_note("GPU: %s", n ? "no device could be opened" : "no NVIDIA device");
        return false;
    }
    bool same = true;
    for (unsigned i = 1; i < ndevs; i++)
        same = same && strcmp(names[i], names[0]) == 0;
    if (ndevs == 1)
        snprintf(device_name, sizeof(device_name), "%s", names[0]);
    else if (same)
        snprintf(device_name, sizeof(device_name), "%u x %s", ndevs, names[0]);
    else {
        size_t len = 0;
        for (unsigned i = 0; i < ndevs && len < sizeof(device_name); i++)
            len += (size_t)snprintf(device_name + len, sizeof(device_name) - len, "%s%s",
                                    i ? ", " : "", names[i]);
    }
    /* Does this driver give per-process utilisation? (NOT_FOUND: it does, nothing new yet.) */
    if (nv.putil) {
        unsigned cnt = 0;
        r = nv.putil(devs[0], NULL, &cnt, 0);
        putil_ok = r == NV_SUCCESS || r == NV_ERROR_NOT_FOUND || r == NV_ERROR_INSUFFICIENT_SIZE;
    }
    return true;
}

/* ---- polling ---- */

/* This pid's SM utilisation on device i from the samples newer than the last seen; false when
 * the call failed (r set). */
static bool poll_putil(unsigned i, uint64_t now, nvml_ret *r)
{
    static struct nv_putil buf[GPU_MAX_PROCS];
    unsigned cnt = GPU_MAX_PROCS;
    *r = nv.putil(devs[i], buf, &cnt, putil_seen_us[i]);
    /* Nothing new (or more processes than the buffer holds, this round): the last value holds
     * for a while. */
    if (*r == NV_ERROR_NOT_FOUND || *r == NV_ERROR_INSUFFICIENT_SIZE) {
        if (now - putil_new_ns[i] > PUTIL_STALE_NS)
            putil_own[i] = 0;
        return true;
    }
    if (*r != NV_SUCCESS)
        return false;
    uint64_t newest_own = 0;
    double own = 0;
    for (unsigned k = 0; k < cnt && k < GPU_MAX_PROCS; k++) {
        if (buf[k].timestamp > putil_seen_us[i])
            putil_seen_us[i] = buf[k].timestamp;
        if ((int)buf[k].pid == own_pid && buf[k].timestamp >= newest_own && buf[k].sm <= 100) {
            newest_own = buf[k].timestamp;
            own = buf[k].sm;
            putil_found = true;
        }
    }
    putil_own[i] = own;
    putil_new_ns[i] = now;
    return true;
}

/* This process's device memory (MiB) over the devices; false when a call failed (r set). */
static bool poll_memory(nvml_ret *r, const char **what)
{
    static unsigned char buf[GPU_MAX_PROCS * sizeof(struct nv_proc_v2)];
    uint64_t own = 0, device = 0;
    bool found = false, listed = false, local = false;
    for (unsigned i = 0; i < ndevs; i++) {
        if (nv.procs) {
            unsigned cnt = GPU_MAX_PROCS;
            *what = "nvmlDeviceGetComputeRunningProcesses";
            *r = nv.procs(devs[i], &cnt, buf);
            if (*r != NV_SUCCESS && *r != NV_ERROR_INSUFFICIENT_SIZE)
                return false;
            for (unsigned k = 0; *r == NV_SUCCESS && k < cnt && k < GPU_MAX_PROCS; k++) {
                uint32_t pid;
                uint64_t used;
                memcpy(&pid, buf + k * nv.proc_size, sizeof(pid));
                memcpy(&used, buf + k * nv.proc_size + 8, sizeof(used));
                /* NOT_AVAILABLE (all ones) or more than the device holds: not a reading. */
                if ((int)pid == own_pid && used <= dev_total[i]) {
                    own += used;
                    found = true;
                }
                listed = true;
                /* A pid of this namespace (even one this user may not signal)? */
                if (pid > 0 && pid <= INT32_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
                    local = true;
            }
        }
        struct nv_memory m;
        *what = "nvmlDeviceGetMemoryInfo";
        if ((*r = nv.meminfo(devs[i], &m)) != NV_SUCCESS)
            return false;
        if (m.used > dev_used_start[i])
            device += m.used - dev_used_start[i];
    }
    if (found)
        procs_found = true;
    /* This pid's own figure (0 when it is not listed: no CUDA context); the device's growth
     * since start when the list is of pids that do not exist here and this pid never showed. */
    bool foreign = !found && !procs_found && listed && !local;
    if (foreign || !nv.procs)
        procs_foreign = true;
    mem_mb = (double)(foreign || !nv.procs ? device : own) / 1048576.0;
    *r = NV_SUCCESS;
    return true;
}

/* One poll of every device; false (with a note) when sampling has to stop. */
static bool poll_once(uint64_t now)
{
    double load = 0;
    nvml_ret r = NV_SUCCESS;
    bool proc_due = now - last_proc_ns >= PROC_INTERVAL_NS || polls == 0;
    for (unsigned i = 0; i < ndevs; i++) {
        struct nv_util u;
        if ((r = nv.util(devs[i], &u)) != NV_SUCCESS) {
            set_note("GPU: nvmlDeviceGetUtilizationRates on device %u failed after %.1f s: %s", i,
                     (double)now / 1e9 - start_sec, err_name(r));
            return false;
        }
        double dev_load = u.gpu <= 100 ? u.gpu : 0;
        if (putil_ok && proc_due && !poll_putil(i, now, &r)) {
            set_note("GPU: nvmlDeviceGetProcessUtilization on device %u failed after %.1f s: %s",
                     i, (double)now / 1e9 - start_sec, err_name(r));
            return false;
        }
        /* This process's rate, never more than the device's (a rate held while the driver had
         * no newer sample must not outlive the device going idle). */
        load += putil_found ? (putil_own[i] < dev_load ? putil_own[i] : dev_load) : dev_load;
    }
    if (proc_due) {
        const char *what = "";
        if (!poll_memory(&r, &what)) {
            set_note("GPU: %s failed after %.1f s: %s", what, (double)now / 1e9 - start_sec,
                     err_name(r));
            return false;
        }
        last_proc_ns = now;
    }
    publish(load / ndevs / 100.0, mem_mb);
    polls++;
    atomic_store(&have_data, true);
    return true;
}

static void sampler_stopped(void)
{
    atomic_store(&pub_valid, false);
    stopped_at_sec = (double)mono_ns() / 1e9 - start_sec;
    lost = true;
}

static void *sampler_main(void *arg)
{
    (void)arg;
    ag_mtls.guard = 1; /* NVML's allocations are not the program's */
    start_sec = (double)mono_ns() / 1e9;
    if (load() && open_devices()) {
        for (;;) {
            uint64_t now = mono_ns();
            if (!poll_once(now)) {
                sampler_stopped();
                break;
            }
            struct timespec ts;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            sampler_cpu_sec = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
            if (pf_wake_wait(wake_fd, interval_ns) || atomic_load(&stop_flag))
                break;
        }
    }
    atomic_store(&exited, true);
    return NULL;
}

void ag_gpu_start(void)
{
    const char *v = getenv("SCRY_GPU");
    if (!v || (strcmp(v, "1") != 0 && strcmp(v, "auto") != 0))
        return;
    asked = strcmp(v, "1") == 0;
    const char *iv = getenv("SCRY_GPU_INTERVAL_MS");
    if (iv && *iv) {
        char *end;
        unsigned long ms = strtoul(iv, &end, 10);
        if (*end || ms < 10 || ms > 60000 || iv[0] == '-')
            log_warn("agent: ignoring SCRY_GPU_INTERVAL_MS=%s (a number of milliseconds from 10 "
                     "to 60000)",
                     iv);
        else
            interval_ns = ms * 1000000ULL;
    }
    own_pid = pf_getpid();
    wake_fd = pf_wake_open();
    if (wake_fd < 0) {
        set_note("GPU: cannot start the sampler: %s", strerror(errno));
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the sampler takes no signals */
    int rc = pthread_create(&thread, NULL, sampler_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        set_note("GPU: cannot start the sampler: %s", strerror(rc));
        return;
    }
    started = true;
}

void ag_gpu_stop(void)
{
    if (!started)
        return;
    started = false;
    atomic_store(&stop_flag, true);
    pf_wake_post(wake_fd);
    /* A first nvmlInit can take seconds (a GPU not in persistence mode): wait, but not forever. */
    for (int i = 0; i < STOP_WAIT_MS && !atomic_load(&exited); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (!atomic_load(&exited)) {
        set_note("GPU: NVML did not answer within %d ms of the end: figures may be missing",
                 STOP_WAIT_MS);
        atomic_store(&pub_valid, false);
        return; /* the thread is stuck in the driver: leave it and the library alone */
    }
    pthread_join(thread, NULL);
    atomic_store(&pub_valid, false);
    if (nvml_up)
        nv.shutdown();
    nvml_up = false;
}

void ag_gpu_reset_child(void)
{
    /* The sampler thread is the parent's; NVML may have been mid-call (holding its locks) when
     * the process forked, so it is not used here again. The child says so in its part. */
    if (!started)
        return;
    started = false;
    nvml_up = false;
    atomic_store(&have_data, false);
    atomic_store(&pub_valid, false);
    note[0] = 0;
    set_note("GPU: a process forked without exec is not sampled (NVML is not fork-safe): its "
             "lines have no GPU figures");
}

void ag_gpu_write_part(struct json_writer *w)
{
    bool data = atomic_load(&have_data);
    if (!data && !note[0])
        return;
    jw_key(w, "gpu");
    jw_obj_begin(w);
    if (data) {
        jw_key(w, "device");
        jw_str(w, device_name);
        jw_key(w, "devices");
        jw_uint(w, ndevs);
        jw_key(w, "utilization_source");
        jw_str(w, putil_found ? "process" : "device");
        jw_key(w, "memory_source");
        jw_str(w, procs_foreign ? "device" : "process");
        jw_key(w, "polls");
        jw_uint(w, polls);
        jw_key(w, "interval_sec");
        jw_double(w, (double)interval_ns / 1e9);
        jw_key(w, "sampler_cpu_sec");
        jw_double(w, sampler_cpu_sec);
        if (lost) {
            jw_key(w, "stopped_at_sec");
            jw_double(w, stopped_at_sec);
        }
    }
    if (note[0]) {
        jw_key(w, "note");
        jw_str(w, note);
    }
    jw_obj_end(w);
}
