/* Names looked up in the dynamic symbol tables of the objects loaded in this process, walked with
 * dl_iterate_phdr: no allocation, no lock of scry's, no dlsym (which the agent interposes) and no
 * libelf. Used by the agent to find libc's real dlsym (agent/dlsym_hooks.c) and CPython's runtime
 * and type objects in the interpreter it runs in (cpython/runtime_self.c). A static interpreter
 * exports them in its .dynsym too (Python links with -export-dynamic). */
#ifndef SCRY_READER_SELF_SYMBOLS_H
#define SCRY_READER_SELF_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct self_sym_query {
    /* Which object: one whose file name starts with file_prefix ("libc.so"), or, when it is NULL,
     * the one with a loaded segment containing the address `contains`. */
    const char *file_prefix;
    uint64_t contains;
    const char *const *names; /* n names */
    void **found;             /* n entries: each name's address (its default version when it has
                                 versions), left as it was (NULL) when absent */
    size_t n;
};

/* Looks q's names up in the first object that matches (and, for a prefix, in the following ones
 * that match until every name is found). Returns true when every name was found. */
bool self_symbols_find(struct self_sym_query *q);

#endif
