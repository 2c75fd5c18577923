/*
 * compress.c - zstd compression of chunks from a pool of static contexts
 * (compress.h).
 *
 * Level 1 on 64 KiB chunks: bench/performance-notes.md ("Chunk
 * compression") has the ratio and speed measured on recorded traces.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx, sizes */
#include "compress.h"

#include "config.h"
#include "prim.h"

#include "trace_format.h"

#include <stdatomic.h>
#include <zstd.h>

#define SLOTS 4
#define LEVEL 1
#define MIN_LEN 256 /* smaller chunks are written as they are */

typedef struct zslot {
	_Atomic int busy;
	int broken; /* its memory could not be mapped: never used again */
	ZSTD_CCtx *cctx;
	void *ws;
	size_t wslen;
	uint8_t *out; /* header room, prefix, frame */
	size_t outcap;
} zslot_t;

static zslot_t slots[SLOTS];

/* Maps the slot's context and output buffer for payloads up to len bytes.
 * Called with the slot owned. 0, or -1. */
static int slot_ready(zslot_t *z, size_t len)
{
	size_t need =
	    FMT_CHUNK_HEADER_SIZE + FMT_ZSTD_PREFIX + ZSTD_compressBound(len);
	if (!z->cctx) {
		/* Sized for the largest chunk this process writes: the
		 * per-thread buffer (MALLOCK_BUFFER_KB). */
		size_t most = (size_t)g_cfg.buffer_kb << 10;
		if (most < len)
			most = len;
		ZSTD_compressionParameters cp = ZSTD_getCParams(LEVEL, most, 0);
		z->wslen = ZSTD_estimateCCtxSize_usingCParams(cp);
		z->ws = prim_map(z->wslen);
		if (!z->ws)
			return -1;
		z->cctx = ZSTD_initStaticCCtx(z->ws, z->wslen);
		/* The frame carries zstd's checksum of the records: a frame
		 * that decompresses into wrong records (a forged file whose
		 * CRC matches) is refused by the reader, not misread. */
		if (z->cctx && (ZSTD_isError(ZSTD_CCtx_setParameter(
		                    z->cctx, ZSTD_c_compressionLevel, LEVEL)) ||
		                ZSTD_isError(ZSTD_CCtx_setParameter(
		                    z->cctx, ZSTD_c_checksumFlag, 1))))
			z->cctx = NULL;
		if (!z->cctx) {
			prim_unmap(z->ws, z->wslen);
			z->ws = NULL;
			return -1;
		}
	}
	if (z->outcap < need) {
		if (z->out)
			prim_unmap(z->out, z->outcap);
		z->out = prim_map(need);
		z->outcap = z->out ? need : 0;
		if (!z->out)
			return -1;
	}
	return 0;
}

uint8_t *compress_chunk(const uint8_t *payload, size_t len, size_t *stored,
                        int *slot)
{
	if (!g_cfg.compress || len < MIN_LEN)
		return NULL;
	for (int i = 0; i < SLOTS; i++) {
		zslot_t *z = &slots[i];
		int expect = 0;
		if (z->broken ||
		    atomic_load_explicit(&z->busy, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&z->busy, &expect, 1))
			continue;
		if (slot_ready(z, len) != 0) {
			z->broken = 1;
			atomic_store(&z->busy, 0);
			return NULL;
		}
		uint8_t *dst = z->out + FMT_CHUNK_HEADER_SIZE;
		size_t cap =
		    z->outcap - FMT_CHUNK_HEADER_SIZE - FMT_ZSTD_PREFIX;
		size_t n = ZSTD_compress2(z->cctx, dst + FMT_ZSTD_PREFIX, cap,
		                          payload, len);
		size_t total = n + FMT_ZSTD_PREFIX;
		if (ZSTD_isError(n) || total >= len ||
		    len > (size_t)FMT_ZSTD_MAX_RATIO * total) {
			atomic_store(&z->busy, 0);
			return NULL;
		}
		dst[0] = (uint8_t)len;
		dst[1] = (uint8_t)(len >> 8);
		dst[2] = (uint8_t)(len >> 16);
		dst[3] = (uint8_t)(len >> 24);
		*stored = total;
		*slot = i;
		return z->out;
	}
	return NULL;
}

void compress_release(int slot)
{
	atomic_store(&slots[slot].busy, 0);
}

void compress_fork_child(void)
{
	for (int i = 0; i < SLOTS; i++)
		atomic_store(&slots[i].busy, 0);
}
