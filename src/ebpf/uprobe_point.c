/* A probe point past a function's NULL test. The kernel emulates some instructions at a uprobe
 * (push, jumps) and single-steps the others out of line; a single step is a debug trap, which
 * costs tens of microseconds on some virtual machines. glibc's free starts with
 * `test %rdi,%rdi; je` (single-stepped); the push after it is emulated. Only that exact shape is
 * recognised: a wrong offset would put the breakpoint inside an instruction of the target. */
#include "ebpf/uprobe_point.h"

#include <stdbool.h>

static bool is_push(const uint8_t *c, size_t at, size_t len)
{
    if (at < len && c[at] >= 0x50 && c[at] <= 0x57) /* push %rax..%rdi */
        return true;
    return at + 1 < len && c[at] == 0x41 && c[at + 1] >= 0x50 && c[at + 1] <= 0x57; /* %r8.. */
}

size_t up_after_null_test(const uint8_t *c, size_t len)
{
    size_t k = 0;
    if (len >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) /* endbr64 */
        k = 4;
    if (k + 3 > len || c[k] != 0x48 || c[k + 1] != 0x85 || c[k + 2] != 0xff) /* test %rdi,%rdi */
        return 0;
    k += 3;
    size_t next;
    if (k + 2 <= len && c[k] == 0x74) /* je rel8 */
        next = k + 2;
    else if (k + 6 <= len && c[k] == 0x0f && c[k + 1] == 0x84) /* je rel32 */
        next = k + 6;
    else
        return 0;
    return is_push(c, next, len) ? next : 0;
}
