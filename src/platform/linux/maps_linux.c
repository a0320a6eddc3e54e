/* Linux /proc parsing shared by the self and pid readers: /proc/PID/maps into sorted mappings,
 * and /proc/PID/task/TID/stat into the thread list. Every field is bounds-checked: the text
 * comes from the kernel but a path may contain anything except a newline. */
#include "reader/reader_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/grow.h"

int rd_proc_slurp(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t alloc = 4096, used = 0;
    char *buf = malloc(alloc);
    int ret = 0;
    if (!buf) {
        ret = -ENOMEM;
        goto out;
    }
    for (;;) {
        if (alloc - used < 2 && grow_array(&buf, &alloc, alloc + 1, 1)) {
            ret = -ENOMEM;
            goto out;
        }
        ssize_t n = read(fd, buf + used, alloc - used - 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            ret = -errno;
            goto out;
        }
        if (n == 0)
            break;
        used += (size_t)n;
    }
    buf[used] = 0;
    *out = buf;
    *len = used;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return ret;
}

/* Parses a hexadecimal number at *p (bounded by end); false if there is no digit or it overflows. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = *p;
    while (s < end) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            break;
        if (v >> 60)
            return false;
        v = v << 4 | (uint64_t)d;
        s++;
    }
    if (s == *p)
        return false;
    *p = s;
    *out = v;
    return true;
}

static bool expect(const char **p, const char *end, char ch)
{
    if (*p >= end || **p != ch)
        return false;
    (*p)++;
    return true;
}

/* Skips a field of non-space characters; false if it is empty. */
static bool skip_field(const char **p, const char *end)
{
    const char *s = *p;
    while (s < end && *s != ' ')
        s++;
    if (s == *p)
        return false;
    *p = s;
    return true;
}

/* One line: "start-end perms offset dev inode   path" (path optional, may contain spaces). */
static bool parse_line(const char *s, const char *end, struct arena *a, struct rd_mapping *m)
{
    uint64_t start, endaddr, offset;
    if (!parse_hex(&s, end, &start) || !expect(&s, end, '-') || !parse_hex(&s, end, &endaddr) ||
        !expect(&s, end, ' '))
        return false;
    if (end - s < 4)
        return false;
    unsigned prot = 0;
    if (s[0] == 'r')
        prot |= RD_PROT_R;
    if (s[1] == 'w')
        prot |= RD_PROT_W;
    if (s[2] == 'x')
        prot |= RD_PROT_X;
    s += 4;
    if (!expect(&s, end, ' ') || !parse_hex(&s, end, &offset) || !expect(&s, end, ' ') ||
        !skip_field(&s, end) || !expect(&s, end, ' ') || !skip_field(&s, end))
        return false;
    while (s < end && *s == ' ')
        s++;
    if (endaddr < start)
        return false;
    m->start = start;
    m->end = endaddr;
    m->offset = offset;
    m->prot = prot;
    m->path = arena_strndup(a, s, (size_t)(end - s));
    return m->path != NULL;
}

static int cmp_mapping(const void *pa, const void *pb)
{
    const struct rd_mapping *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return 0;
}

int rd_maps_parse_text(const char *text, size_t len, struct arena *a, struct rd_mapping **out,
                       size_t *count)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    struct rd_mapping *maps = calloc(lines, sizeof(*maps));
    if (!maps)
        return err_fail(SCRY_E_NO_MEMORY, "cannot allocate %zu mappings", lines);
    size_t n = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        if (n < lines && parse_line(p, line_end, a, &maps[n]))
            n++;
        p = nl ? nl + 1 : end;
    }
    qsort(maps, n, sizeof(*maps), cmp_mapping);
    *out = maps;
    *count = n;
    return 0;
}

int rd_maps_read(int pid, struct arena *a, struct rd_mapping **out, size_t *count)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    else
        snprintf(path, sizeof(path), "/proc/self/maps");
    char *text = NULL;
    size_t len = 0;
    int ret = rd_proc_slurp(path, &text, &len);
    if (ret == -ENOENT || ret == -ESRCH)
        return err_fail(SCRY_E_NO_SUCH_PROCESS, "no process with pid %d", pid);
    if (ret == -EACCES || ret == -EPERM)
        return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to read the memory map of pid %d",
                        pid);
    if (ret < 0)
        return err_fail(ret == -ENOMEM ? SCRY_E_NO_MEMORY : SCRY_E_IO, "cannot read %s: %s", path,
                        strerror(-ret));
    ret = rd_maps_parse_text(text, len, a, out, count);
    free(text);
    return ret;
}

char rd_stat_state(const char *stat, size_t len)
{
    const char *paren = NULL;
    for (size_t i = 0; i < len; i++)
        if (stat[i] == ')')
            paren = stat + i;
    if (!paren)
        return 0;
    const char *p = paren + 1, *end = stat + len;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p == '\n' || *p == 0)
        return 0;
    return *p;
}

static int cmp_thread(const void *pa, const void *pb)
{
    const struct rd_thread *a = pa, *b = pb;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

int rd_threads_proc(struct rd_reader *rd, int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (!dir) {
        if (errno == ENOENT || errno == ESRCH)
            return err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has exited", pid);
        if (errno == EACCES || errno == EPERM)
            return err_fail(SCRY_E_PERMISSION_DENIED, "not allowed to list the threads of pid %d",
                            pid);
        return err_fail(SCRY_E_IO, "cannot list %s: %s", path, strerror(errno));
    }
    size_t n = 0, cap = 0;
    struct rd_thread *list = NULL;
    int ret = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        char *endp;
        long tid = strtol(de->d_name, &endp, 10);
        if (*endp || tid <= 0 || tid > 0x7fffffff)
            continue;
        char spath[96], *text = NULL;
        size_t len = 0;
        snprintf(spath, sizeof(spath), "/proc/%d/task/%ld/stat", pid, tid);
        if (rd_proc_slurp(spath, &text, &len) < 0)
            continue; /* the thread exited while we looked */
        char state = rd_stat_state(text, len);
        free(text);
        if (!state)
            continue;
        if ((ret = grow_array(&list, &cap, n + 1, sizeof(*list))) != 0)
            goto out;
        list[n].tid = (int)tid;
        list[n].state = state;
        n++;
    }
    if (n == 0) {
        ret = err_fail(SCRY_E_NO_SUCH_PROCESS, "process %d has no threads left (it exited)", pid);
        goto out;
    }
    qsort(list, n, sizeof(*list), cmp_thread);
    free(rd->threads);
    rd->threads = list;
    rd->nthreads = n;
    list = NULL;
out:
    free(list);
    closedir(dir);
    return ret;
}
