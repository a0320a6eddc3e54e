/* The native side of CPU samples (--stacks): each sample's native chain, its frames named once
 * per address with dladdr, and the combined stack where each eval-loop frame stands for the Python
 * frames it runs. Collector thread only (collector_internal.h). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/collector_internal.h"
#include "platform/os_process.h"

static char self_exe[4096];
static const void *agent_base;
static char *(*cxa_demangle)(const char *, char *, size_t *, int *);
static bool demangle_looked_up;

static enum ag_nkind kind_of(const char *sym)
{
    static const char *const startup[] = {
        "_start",     "__libc_start_main", "__libc_start_call_main", "main", "Py_BytesMain",
        "Py_RunMain", "Py_Main",           "pymain_main",            "pymain_run_python"};
    if (strcmp(sym, "_PyEval_EvalFrameDefault") == 0)
        return AG_N_EVAL;
    if (strcmp(sym, "__restore_rt") == 0)
        return AG_N_TRAMPOLINE;
    for (size_t i = 0; i < sizeof(startup) / sizeof(startup[0]); i++)
        if (strcmp(sym, startup[i]) == 0)
            return AG_N_STARTUP;
    return AG_N_OTHER;
}

/* The native frame of return address ip (leaf: the interrupted PC itself), named with dladdr
 * once per address: the address looked up is ip - 1 for return addresses, so that a call at
 * the very end of a function is not taken for the next one. UINT32_MAX when out of memory. */
static uint32_t native_frame(uint64_t ip, bool leaf)
{
    uint64_t addr = leaf ? ip : ip - 1;
    uint32_t idx;
    if (ag_stats_nframe_find(&ag_col_stats, addr, &idx))
        return idx;
    struct ag_nframe f = {.ip = ip};
    const char *module = "[unknown]", *sym = "";
    char *demangled = NULL;
    Dl_info info;
    memset(&info, 0, sizeof(info));
    if (dladdr((void *)(uintptr_t)addr, &info) && info.dli_fbase) {
        module = info.dli_fname && info.dli_fname[0] ? info.dli_fname : self_exe;
        if (info.dli_sname && info.dli_saddr) {
            sym = info.dli_sname;
            f.offset = ip - (uint64_t)(uintptr_t)info.dli_saddr;
        } else {
            f.offset = ip - (uint64_t)(uintptr_t)info.dli_fbase;
        }
        if (info.dli_fbase == agent_base)
            f.kind = AG_N_TRAMPOLINE;
    }
    if (sym[0] == '_' && sym[1] == 'Z') {
        if (!demangle_looked_up) {
            *(void **)&cxa_demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
            demangle_looked_up = true;
        }
        int status = -1;
        if (cxa_demangle && (demangled = cxa_demangle(sym, NULL, NULL, &status)) && status == 0)
            sym = demangled;
    }
    uint64_t eval_start;
    if (ag_eval_loop_start(addr, &eval_start)) {
        /* the eval loop, maybe a clone no symbol names: named as such (sampler.c) */
        sym = "_PyEval_EvalFrameDefault";
        f.offset = ip - eval_start;
    }
    if (f.kind == AG_N_OTHER)
        f.kind = kind_of(sym);
    int err = ag_stats_intern(&ag_col_stats, module, &f.module);
    if (!err)
        err = ag_stats_intern(&ag_col_stats, sym, &f.symbol);
    free(demangled);
    if (err || ag_stats_nframe(&ag_col_stats, addr, &f, &idx))
        return UINT32_MAX;
    return idx;
}

/* Records a CPU sample's native chain, and its combined stack: the native chain from the root
 * where each _PyEval_EvalFrameDefault stands for the profiled Python frames it runs. The k-th
 * eval-loop frame from the leaf runs group k of the Python frames (struct ag_sample.group);
 * groups with no eval-loop frame in the chain (its root cut off at AG_MAX_NATIVE frames, or
 * not unwound) go first. Start-up frames (everything under the outermost eval loop) are left
 * out, as are the agent's own frames and the signal trampoline. */
void ag_col_native_sample(const struct ag_sample *s, const struct ag_attr *a)
{
    static uint32_t nat[AG_MAX_NATIVE];
    static struct ag_citem out[AG_MAX_DEPTH + AG_MAX_NATIVE];
    uint32_t m = 0, evals = 0, k = 0;
    for (uint32_t i = s->native_depth; i-- > 0;) {
        uint32_t idx = native_frame(s->ips[i], i == 0);
        if (idx == UINT32_MAX)
            continue;
        nat[m++] = idx;
        if (ag_col_stats.nframes[idx].kind == AG_N_EVAL)
            evals++;
    }
    if (m)
        (void)ag_chains_hit(&ag_col_stats.native_stacks, nat, m); /* out of memory: one hit fewer */
    if (a->kind != AG_ATTR_LINE || ag_col_pychain.n == 0)
        return;
    for (uint32_t p = 0; p < ag_col_pychain.n; p++)
        if (ag_col_pychain.group[p] >= evals)
            out[k++] = (struct ag_citem){0, ag_col_pychain.f[p].file, ag_col_pychain.f[p].func,
                                         ag_col_pychain.f[p].line};
    uint32_t j = 0;
    if (!s->native_truncated) {
        if (evals > 0)
            while (j < m && ag_col_stats.nframes[nat[j]].kind != AG_N_EVAL)
                j++;
        else
            while (j < m && ag_col_stats.nframes[nat[j]].kind == AG_N_STARTUP)
                j++;
    }
    for (uint32_t e = 0; j < m; j++) {
        const struct ag_nframe *f = &ag_col_stats.nframes[nat[j]];
        if (f->kind == AG_N_EVAL) {
            uint32_t g = evals - 1 - e++;
            for (uint32_t p = 0; p < ag_col_pychain.n; p++)
                if (ag_col_pychain.group[p] == g)
                    out[k++] = (struct ag_citem){0, ag_col_pychain.f[p].file,
                                                 ag_col_pychain.f[p].func,
                                                 ag_col_pychain.f[p].line};
        } else if (f->kind != AG_N_TRAMPOLINE) {
            out[k++] = (struct ag_citem){1, nat[j], 0, 0};
        }
    }
    if (k)
        (void)ag_chains_hit(&ag_col_stats.combined_stacks, out, k);
}

void ag_col_native_names_init(void)
{
    Dl_info info;
    if (dladdr((void *)&ag_col_native_names_init, &info))
        agent_base = info.dli_fbase;
    pf_self_exe(self_exe, sizeof(self_exe));
}
