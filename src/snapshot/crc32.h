/* CRC-32 (ISO-HDLC, as zlib's crc32): the checksum of snapshot chunks and headers. */
#ifndef SCRY_SNAPSHOT_CRC32_H
#define SCRY_SNAPSHOT_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc (0 to start) over len bytes: snap_crc32(snap_crc32(0, a, n), b, m) equals the
 * CRC of a followed by b. Thread-safe. */
uint32_t snap_crc32(uint32_t crc, const void *data, size_t len);

#endif
