/* A stand-in for libFuzzer where clang's is unavailable: runs LLVMFuzzerTestOneInput on every seed,
 * then on random mutations of them (bit flips, byte sets, interesting integers, truncations,
 * insertions, chunk copies) for -max_total_time seconds. Built with AddressSanitizer and UBSan,
 * which abort on the first error; the death callback saves the input that caused it under
 * -artifact_prefix. Accepts the libFuzzer flags scripts/run-fuzz.sh passes. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sanitizer/common_interface_defs.h>

#define DRIVER_MAX_INPUT (256 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seed {
    uint8_t *data;
    size_t len;
};

static struct seed *seeds;
static size_t nseeds;
static uint8_t *current;
static size_t current_len;
static char artifact_prefix[512] = "crash-";

static void save_current(void)
{
    char path[600];
    snprintf(path, sizeof(path), "%s%lx", artifact_prefix, (unsigned long)time(NULL));
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(current, 1, current_len, f);
    fclose(f);
    fprintf(stderr, "driver: crashing input (%zu bytes) saved to %s\n", current_len, path);
}

static void add_seed_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    uint8_t *buf = malloc(DRIVER_MAX_INPUT);
    size_t n = fread(buf, 1, DRIVER_MAX_INPUT, f);
    fclose(f);
    seeds = realloc(seeds, (nseeds + 1) * sizeof(*seeds));
    seeds[nseeds].data = buf;
    seeds[nseeds].len = n;
    nseeds++;
}

static void add_seeds(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) < 0)
        return;
    if (!S_ISDIR(sb.st_mode)) {
        add_seed_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
        add_seed_file(p);
    }
    closedir(d);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void mutate(void)
{
    static const uint64_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff,
                                           0xffffffff, 0x1000, 0x7fffffffffffffffULL, UINT64_MAX};
    int rounds = 1 + (int)(rnd() % 6);
    for (int r = 0; r < rounds; r++) {
        size_t len = current_len;
        switch (rnd() % 7) {
        case 0: /* bit flip */
            if (len)
                current[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1: /* random byte */
            if (len)
                current[rnd() % len] = (uint8_t)rnd();
            break;
        case 2: { /* interesting integer, 1 to 8 bytes */
            size_t w = (size_t)1 << (rnd() % 4);
            if (len >= w) {
                uint64_t v = interesting[rnd() % (sizeof(interesting) / sizeof(interesting[0]))];
                memcpy(current + rnd() % (len - w + 1), &v, w);
            }
            break;
        }
        case 3: /* truncation */
            if (len)
                current_len = rnd() % len;
            break;
        case 4: { /* insertion of random bytes */
            size_t n = 1 + rnd() % 16;
            if (len + n <= DRIVER_MAX_INPUT) {
                size_t at = len ? rnd() % (len + 1) : 0;
                memmove(current + at + n, current + at, len - at);
                for (size_t i = 0; i < n; i++)
                    current[at + i] = (uint8_t)rnd();
                current_len = len + n;
            }
            break;
        }
        case 5: { /* copy a chunk over another place */
            if (len > 2) {
                size_t n = 1 + rnd() % (len / 2);
                size_t from = rnd() % (len - n + 1), to = rnd() % (len - n + 1);
                memmove(current + to, current + from, n);
            }
            break;
        }
        default: /* small add/subtract on a byte, to walk sizes and counts */
            if (len)
                current[rnd() % len] += (uint8_t)(rnd() % 33) - 16;
            break;
        }
    }
}

int main(int argc, char **argv)
{
    long seconds = 10;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-max_total_time=", 16) == 0)
            seconds = atol(argv[i] + 16);
        else if (strncmp(argv[i], "-artifact_prefix=", 17) == 0)
            snprintf(artifact_prefix, sizeof(artifact_prefix), "%s", argv[i] + 17);
        else if (strncmp(argv[i], "-seed=", 6) == 0)
            rng_state = (uint64_t)atoll(argv[i] + 6) | 1;
        else if (argv[i][0] != '-')
            add_seeds(argv[i]);
    }
    if (rng_state == 0x9e3779b97f4a7c15ULL)
        rng_state ^= (uint64_t)time(NULL) << 16;
    current = malloc(DRIVER_MAX_INPUT);
    __sanitizer_set_death_callback(save_current);
    for (size_t i = 0; i < nseeds; i++) {
        memcpy(current, seeds[i].data, seeds[i].len);
        current_len = seeds[i].len;
        LLVMFuzzerTestOneInput(current, current_len);
    }
    time_t end = time(NULL) + seconds;
    unsigned long runs = 0;
    while (time(NULL) < end) {
        for (int k = 0; k < 64; k++, runs++) {
            if (nseeds) {
                struct seed *s = &seeds[rnd() % nseeds];
                memcpy(current, s->data, s->len);
                current_len = s->len;
            } else {
                current_len = 0;
            }
            mutate();
            LLVMFuzzerTestOneInput(current, current_len);
        }
    }
    fprintf(stderr, "driver: %lu runs over %zu seeds in %ld s, no crash\n", runs, nseeds, seconds);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].data);
    free(seeds);
    free(current);
    return 0;
}
