/*
 * compress.h - zstd compression of event chunks, on the thread that
 * flushes them (trace format 1.2, FMT_CHUNKF_ZSTD; MALLOCK_COMPRESS=0
 * turns it off).
 *
 * Invariants: never blocks and never allocates through malloc. A small
 * pool of static zstd contexts (mmap'd at first use) is shared by the
 * threads; a thread that finds every context busy, or a chunk that would
 * not shrink (or would shrink more than a reader accepts), writes the
 * chunk uncompressed. libzstd's static contexts take no lock and call no
 * allocator, so a flush may run this inside any hook.
 */
#ifndef MALLOCK_SHIM_COMPRESS_H
#define MALLOCK_SHIM_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Compresses the len payload bytes at payload. Returns a buffer whose first
 * FMT_CHUNK_HEADER_SIZE bytes are left for the caller's header, followed by
 * *stored bytes of compressed payload (the length prefix and the frame);
 * *slot is what compress_release() wants back. NULL when the chunk is to
 * be written as it is.
 */
uint8_t *compress_chunk(const uint8_t *payload, size_t len, size_t *stored,
                        int *slot);
void compress_release(int slot);

/* In a fork child: contexts busy in threads that no longer exist are free. */
void compress_fork_child(void);

#endif
