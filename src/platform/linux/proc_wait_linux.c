/* platform/proc_wait.h on Linux: woken by the process's pidfd and by inotify on the directory;
 * without them (an old kernel, no inotify instance left), a look every 20 ms. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/os_process.h"
#include "platform/proc_wait.h"

void pf_wait_exit_or_file(int pid, const char *dir, const char *name)
{
    char mark[PATH_MAX];
    struct stat st;
    snprintf(mark, sizeof(mark), "%s/%s", dir, name);
    int pfd = pf_process_handle(pid);
    int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (ifd >= 0 && inotify_add_watch(ifd, dir, IN_CREATE) < 0) {
        close(ifd);
        ifd = -1;
    }
    while (lstat(mark, &st) != 0) {
        if (pfd < 0 && kill((pid_t)pid, 0) != 0 && errno != EPERM)
            break;
        struct pollfd pl[2] = {{pfd, POLLIN, 0}, {ifd, POLLIN, 0}};
        int n = poll(pl, 2, pfd >= 0 && ifd >= 0 ? -1 : 20);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (pl[0].revents & POLLIN))
            break; /* ended */
        if (n > 0 && (pl[1].revents & POLLIN)) {
            char events[4096];
            while (read(ifd, events, sizeof(events)) > 0)
                ;
        }
    }
    if (pfd >= 0)
        close(pfd);
    if (ifd >= 0)
        close(ifd);
}
