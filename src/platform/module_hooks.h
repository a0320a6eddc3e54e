/* Hooking functions in a process that is already running: every loaded module's calls to (and
 * references taken of) each hooked function are made to go to the caller's hook instead, and
 * put back later. The agent uses it when it is loaded late (`scry record --pid --memory`), where
 * preloading cannot interpose its memory hooks. linux/module_hooks_elf.c: the relocation entries
 * (GOT and PLT slots) of every loaded ELF object, x86-64. Not on a signal path; not thread-safe
 * against itself. */
#ifndef SCRY_PLATFORM_MODULE_HOOKS_H
#define SCRY_PLATFORM_MODULE_HOOKS_H

/* The hook for the function called name, or NULL to leave it alone. */
typedef void *(*pf_hook_lookup)(const char *name);

/* Points every loaded module's imports of the functions hook_for names at their hooks, saving
 * what was there; the module holding the address own (the caller's), the dynamic loader and
 * the vDSO are left alone. 0, or -1 when nothing could be hooked. */
int pf_hooks_install(pf_hook_lookup hook_for, const void *own);

/* Puts back every saved value, newest first. */
void pf_hooks_remove(void);

#endif
