/* Where a uprobe goes inside a function so that the kernel need not single-step it
 * (uprobe_point.c; docs/allocations.md, "Frees"). */
#ifndef SCRY_EBPF_UPROBE_POINT_H
#define SCRY_EBPF_UPROBE_POINT_H

#include <stddef.h>
#include <stdint.h>

/* The offset, in the x86-64 code that starts a function (code, len bytes of it), of the push that
 * follows a leading `test %rdi,%rdi; je` (an optional endbr64 first): a point where the first
 * argument is still in %rdi and every call with a non-zero first argument passes. 0 (the entry)
 * when the code does not start exactly so. */
size_t up_after_null_test(const uint8_t *code, size_t len);

#endif
