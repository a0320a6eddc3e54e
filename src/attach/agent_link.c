/* The attached agent's record, read from outside (agent_link.h, common/agent_link.h). */
#include "attach/agent_link.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/agent_link.h"
#include "common/arena.h"
#include "common/error.h"
#include "platform/mem_access.h"
#include "platform/proc_info.h"
#include "reader/elf_image.h"
#include "reader/reader_impl.h"

/* The load address and file of the first mapping whose file's name starts with prefix (read
 * with the reader's /proc/PID/maps parser); false if there is none. */
static bool find_object(int pid, const char *prefix, uint64_t *base, char *path, size_t size)
{
    struct arena a = ARENA_INIT;
    struct rd_mapping *maps = NULL;
    size_t n = 0;
    bool found = false;
    if (rd_maps_read(pid, &a, &maps, &n) == 0) {
        for (size_t i = 0; i < n && !found; i++) {
            const char *slash = strrchr(maps[i].path, '/');
            if (maps[i].path[0] != '/' || maps[i].offset != 0 ||
                strncmp(slash + 1, prefix, strlen(prefix)) != 0)
                continue;
            *base = maps[i].start;
            snprintf(path, size, "%s", maps[i].path);
            found = true;
        }
    }
    err_clear();
    free(maps);
    arena_free(&a);
    return found;
}

uint64_t agent_link_symbol(int pid, const char *prefix, const char *sym)
{
    uint64_t base, value, size;
    char path[PATH_MAX], rooted[PATH_MAX + 64];
    if (!find_object(pid, prefix, &base, path, sizeof(path)))
        return 0;
    pf_process_file_path(pid, path, rooted, sizeof(rooted));
    struct elf_image *img;
    if (elf_open(rooted, &img) != 0 && elf_open(path, &img) != 0) {
        err_clear();
        return 0;
    }
    uint64_t addr = 0;
    if (elf_symbol(img, sym, &value, &size) && value)
        addr = base + value - elf_first_load_vaddr(img);
    elf_close(img);
    return addr;
}

static bool read_at(int pid, uint64_t addr, void *buf, size_t len)
{
    return pf_mem_read(pid, addr, buf, len) == (long)len;
}

int agent_link_dir(int pid, char *dir, size_t size, bool *found)
{
    *found = false;
    long uid = pf_process_owner(pid);
    if (uid < 0)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    uint64_t at = agent_link_symbol(pid, "libscry-agent.so", AGENT_LINK_SYMBOL);
    if (!at)
        return 0;
    /* A consistent copy: the same even seq before and after the record was read. */
    static struct agent_link l;
    for (int tries = 0; tries < 100; tries++) {
        uint64_t seq;
        if (!read_at(pid, at, &l, sizeof(l)) ||
            !read_at(pid, at + offsetof(struct agent_link, seq), &seq, sizeof(seq)))
            return 0;
        if (seq == l.seq && !(seq & 1))
            break;
        l.attached = 0;
    }
    if (memcmp(l.magic, AGENT_LINK_MAGIC, sizeof(l.magic)) != 0 ||
        l.version != AGENT_LINK_VERSION || l.attached != 1 || l.pid != pid)
        return 0;
    l.part_dir[sizeof(l.part_dir) - 1] = 0;
    /* The record is the target's memory: only a private part directory of the process's own
     * user is taken (never a path the target could point anywhere else). */
    if (l.part_dir[0] != '/' || strlen(l.part_dir) >= size || !cli_is_part_dir(l.part_dir, (uid_t)uid))
        return 0;
    snprintf(dir, size, "%s", l.part_dir);
    *found = true;
    return 0;
}
