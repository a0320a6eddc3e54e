/* Human-readable numbers shared by every text view. */
#ifndef SCRY_COMMON_FMT_H
#define SCRY_COMMON_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes with a binary unit: "512 B", "1.5 KiB", "3.0 GiB". */
void fmt_bytes(uint64_t bytes, char *out, size_t size);

#endif
