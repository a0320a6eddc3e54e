/* Symbols, sections and load addresses of an ELF file on disk (an executable or libpython), read
 * with libelf. Used to find _PyRuntime and friends for live processes and cores alike. */
#ifndef SCRY_READER_ELF_IMAGE_H
#define SCRY_READER_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_image;

/* Opens path; fails with io_error (cannot open) or not_python/bad input ("not an ELF file").
 * Only 64-bit little-endian ELF files are accepted. */
int elf_open(const char *path, struct elf_image **out);
/* Same over a memory buffer (for tests and fuzzing); the buffer must outlive the image. */
int elf_open_mem(const void *data, size_t size, struct elf_image **out);
void elf_close(struct elf_image *img);

/* Looks name up in .dynsym, then .symtab. Returns true and the symbol's st_value (a link-time
 * virtual address) and st_size. */
bool elf_symbol(struct elf_image *img, const char *name, uint64_t *value, uint64_t *size);
/* The function symbol (.symtab, else .dynsym) whose range holds the link-time address vaddr, or
 * the nearest one below it; *name stays valid until elf_close. False when there is none. */
bool elf_symbol_at(struct elf_image *img, uint64_t vaddr, const char **name, uint64_t *start);
/* Finds a section by name; returns true with its sh_addr and sh_size. */
bool elf_section(struct elf_image *img, const char *name, uint64_t *addr, uint64_t *size);
/* The p_vaddr of the first PT_LOAD rounded down to its p_align (the link-time base): a runtime
 * address is load_base + (vaddr - elf_first_load_vaddr). */
uint64_t elf_first_load_vaddr(struct elf_image *img);
/* Reads len bytes at link-time virtual address vaddr from the file contents (PT_LOAD p_filesz
 * ranges; bytes of p_memsz beyond p_filesz read as zero). Returns 0 or -SCRY_E_READ_FAILED. */
int elf_read_vaddr(struct elf_image *img, uint64_t vaddr, void *buf, size_t len);
/* e_type (ET_EXEC, ET_DYN, ET_CORE). */
int elf_type(struct elf_image *img);
/* The GNU build id (NT_GNU_BUILD_ID), or 0 length. */
size_t elf_build_id(struct elf_image *img, uint8_t *buf, size_t size);

#endif
