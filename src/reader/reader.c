/* The parts of the reader interface that do not depend on what holds the memory: dispatch to the
 * per-kind operations, the mapping table and its lookups, paths, and the ELF note iterator. */
#include "platform/proc_info.h"
#include "reader/reader_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

struct rd_reader *rd_alloc(enum rd_kind kind, const struct rd_ops *ops)
{
    struct rd_reader *rd = calloc(1, sizeof(*rd));
    if (!rd)
        return NULL;
    rd->kind = kind;
    rd->ops = ops;
    return rd;
}

void rd_set_exe_from_link(struct rd_reader *rd, const char *link)
{
    char exe[PATH_MAX];
    ssize_t n = readlink(link, exe, sizeof(exe) - 1);
    if (n > 0)
        rd->exe_path = arena_strndup(&rd->arena, exe, (size_t)n);
}

void rd_close(struct rd_reader *rd)
{
    if (!rd)
        return;
    if (rd->ops && rd->ops->resume)
        rd->ops->resume(rd);
    if (rd->ops && rd->ops->close)
        rd->ops->close(rd);
    free(rd->maps);
    free(rd->threads);
    arena_free(&rd->arena);
    free(rd);
}

enum rd_kind rd_kind(const struct rd_reader *rd) { return rd->kind; }

int rd_pid(const struct rd_reader *rd) { return rd->pid; }

int rd_read(struct rd_reader *rd, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (addr + len < addr)
        return err_fail(SCRY_E_READ_FAILED, "cannot read %zu bytes at 0x%llx: range wraps around",
                        len, (unsigned long long)addr);
    return rd->ops->read(rd, addr, buf, len);
}

int rd_read_u64(struct rd_reader *rd, uint64_t addr, uint64_t *out)
{
    int ret = rd_read(rd, addr, out, sizeof(*out));
    if (ret < 0)
        *out = 0;
    return ret;
}

int rd_read_u32(struct rd_reader *rd, uint64_t addr, uint32_t *out)
{
    int ret = rd_read(rd, addr, out, sizeof(*out));
    if (ret < 0)
        *out = 0;
    return ret;
}

const struct rd_mapping *rd_mappings(const struct rd_reader *rd, size_t *count)
{
    *count = rd->nmaps;
    return rd->maps;
}

const struct rd_mapping *rd_find_mapping(const struct rd_reader *rd, uint64_t addr)
{
    size_t lo = 0, hi = rd->nmaps;
    /* Finds the last mapping with start <= addr. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rd->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct rd_mapping *m = &rd->maps[lo - 1];
    return addr < m->end ? m : NULL;
}

const char *rd_exe_path(const struct rd_reader *rd) { return rd->exe_path; }

const char *rd_host_path(const struct rd_reader *rd, const char *target_path, char *buf,
                         size_t size)
{
    if (size == 0)
        return buf;
    switch (rd->kind) {
    case RD_PID:
        pf_process_file_path(rd->pid, target_path, buf, size);
        break;
    case RD_CORE:
        if (rd->exe_override &&
            ((rd->exe_target && strcmp(target_path, rd->exe_target) == 0) ||
             strcmp(target_path, rd->exe_override) == 0))
            snprintf(buf, size, "%s", rd->exe_override);
        else
            snprintf(buf, size, "%s", target_path);
        break;
    case RD_SELF:
    default:
        snprintf(buf, size, "%s", target_path);
        break;
    }
    return buf;
}

int rd_threads(struct rd_reader *rd, const struct rd_thread **out, size_t *count)
{
    int ret = rd->ops->threads(rd);
    if (ret < 0) {
        *out = NULL;
        *count = 0;
        return ret;
    }
    *out = rd->threads;
    *count = rd->nthreads;
    return 0;
}

int rd_pause(struct rd_reader *rd) { return rd->ops->pause ? rd->ops->pause(rd) : 0; }

void rd_resume(struct rd_reader *rd)
{
    if (rd->ops->resume)
        rd->ops->resume(rd);
}

bool rd_note_next(struct cursor *c, size_t align, struct rd_note *n)
{
    if (!cur_ok(c) || cur_remaining(c) == 0)
        return false;
    uint32_t namesz = cur_u32(c);
    uint32_t descsz = cur_u32(c);
    n->type = cur_u32(c);
    const uint8_t *name = cur_bytes(c, namesz);
    cur_align(c, align);
    const uint8_t *desc = cur_bytes(c, descsz);
    /* The last note may end without its padding. */
    if (cur_ok(c) && cur_remaining(c) > 0)
        cur_align(c, align);
    if (!cur_ok(c))
        return false;
    n->name = (const char *)name;
    n->namesz = namesz;
    if (namesz > 0 && name[namesz - 1] == 0)
        n->namesz = namesz - 1;
    n->desc = desc;
    n->descsz = descsz;
    return true;
}

bool rd_note_is(const struct rd_note *n, const char *name, uint32_t type)
{
    size_t len = strlen(name);
    return n->type == type && n->namesz == len && memcmp(n->name, name, len) == 0;
}
