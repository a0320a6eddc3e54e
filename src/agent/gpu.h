/* GPU sampling (NVIDIA, through NVML loaded with dlopen): a thread of its own reads the devices'
 * utilisation and this process's device memory and publishes the latest reading; the collector
 * charges that reading to every sample it attributes (attribution.c ag_col_charge), so a line's GPU
 * figures are the readings while it ran. Nothing here runs on a signal or malloc-hook path.
 * docs/gpu.md says what each number means. */
#ifndef SCRY_AGENT_GPU_H
#define SCRY_AGENT_GPU_H

#include <stdbool.h>

struct json_writer;

/* The latest published reading: load 0..1 (averaged over the devices), memory in MiB. */
struct ag_gpu_reading {
    double load;
    double mem_mb;
};

/* Starts the sampler thread when SCRY_GPU is "1" (asked for) or "auto" (a device looked
 * visible to `scry run`); nothing is loaded otherwise. */
void ag_gpu_start(void);
/* The latest reading; false when there is none (no GPU, not yet, or the sampler stopped). */
bool ag_gpu_read(struct ag_gpu_reading *out);
/* Stops the sampler (bounded wait) and shuts NVML down; idempotent. */
void ag_gpu_stop(void);
/* In a forked child: the parent's sampler thread does not exist here; start afresh. */
void ag_gpu_reset_child(void);
/* The part's "gpu" object (docs/agent-protocol.md), after ag_gpu_stop; nothing when GPU sampling
 * was not asked for or found nothing worth a word. */
void ag_gpu_write_part(struct json_writer *w);

#endif
