/* Test library for tests/targets/mem_native_thread.py: allocations made by a thread that never
 * runs Python (a raw pthread), which a memory profiler must still count. Built by the e2e test
 * with `gcc -shared -fPIC -pthread` into a temporary directory. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (1u << 20)
#define MAX_CHUNKS 1024

static unsigned char *kept[MAX_CHUNKS]; /* never freed: the thread's allocations stay alive */

struct job {
    unsigned chunks;
    uint64_t checksum;
    int failed;
};

static void *worker(void *arg)
{
    struct job *job = arg;

    for (unsigned i = 0; i < job->chunks; i++) {
        unsigned char *p = malloc(CHUNK);
        if (!p) {
            job->failed = 1;
            return NULL;
        }
        memset(p, (int)(i & 0xff), CHUNK);
        kept[i] = p;
        job->checksum += p[CHUNK - 1] + i;
    }
    return NULL;
}

/* Allocates `mib` MiB in 1 MiB blocks (kept) on a new pthread and waits for it: returns a
 * checksum of the blocks' contents, or -1 if anything failed. */
int64_t alloc_in_thread(unsigned mib)
{
    struct job job = {mib > MAX_CHUNKS ? MAX_CHUNKS : mib, 0, 0};
    pthread_t thread;

    if (pthread_create(&thread, NULL, worker, &job) != 0)
        return -1;
    if (pthread_join(thread, NULL) != 0 || job.failed)
        return -1;
    return (int64_t)job.checksum;
}
