/* Fuzz target: an arbitrary buffer opened as an ELF image, then symbol and section lookups, load
 * addresses, reads by virtual address and the build id. The input is copied because libelf's
 * elf_memory takes a writable buffer and libFuzzer forbids writes to its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reader/elf_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    struct elf_image *img = NULL;
    if (elf_open_mem(copy, size, &img) == 0) {
        static const char *const names[] = {"_PyRuntime", "Py_Version", "local_only",
                                            "static_dup", "sym_7",      "undef_import"};
        uint64_t v = 0, s = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (elf_symbol(img, names[i], &v, &s)) {
                uint8_t buf[64];
                elf_read_vaddr(img, v, buf, s < sizeof(buf) ? (size_t)s : sizeof(buf));
            }
        }
        elf_section(img, ".PyRuntime", &v, &s);
        elf_section(img, ".bss", &v, &s);
        uint64_t base = elf_first_load_vaddr(img);
        uint8_t buf[512];
        elf_read_vaddr(img, base, buf, sizeof(buf));
        elf_read_vaddr(img, base + 0x2300, buf, 0x100);
        uint8_t id[64];
        elf_build_id(img, id, sizeof(id));
        elf_type(img);
        elf_close(img);
    }
    free(copy);
    return 0;
}
