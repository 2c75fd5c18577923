/*
 * inflate.c - the records of a compressed chunk (trace_format.h,
 * fmt_chunk_inflate). Part of the analyzer's format library only: it
 * allocates, and the shim never reads a trace.
 */
#include "trace_format.h"

#include <stdlib.h>
#include <zstd.h>

int fmt_chunk_inflate(const fmt_chunk_header_t *h, const uint8_t *stored,
                      uint8_t **buf, size_t *cap, const uint8_t **out,
                      uint32_t *outlen)
{
	if (!(h->flags & FMT_CHUNKF_ZSTD)) {
		*out = stored;
		*outlen = h->payload_len;
		return 0;
	}
	if (h->payload_len < FMT_ZSTD_PREFIX)
		return -1;
	uint32_t raw = (uint32_t)stored[0] | (uint32_t)stored[1] << 8 |
	               (uint32_t)stored[2] << 16 | (uint32_t)stored[3] << 24;
	if (raw > FMT_CHUNK_MAX_PAYLOAD ||
	    raw > (uint64_t)FMT_ZSTD_MAX_RATIO * h->payload_len)
		return -1;
	/* Never a zero-sized buffer: see the reader's note on empty chunks. */
	if (!*buf || *cap < raw) {
		uint8_t *nb = realloc(*buf, raw ? raw : 1);
		if (!nb)
			return -1;
		*buf = nb;
		*cap = raw ? raw : 1;
	}
	size_t n = ZSTD_decompress(*buf, raw, stored + FMT_ZSTD_PREFIX,
	                           h->payload_len - FMT_ZSTD_PREFIX);
	if (ZSTD_isError(n) || n != raw)
		return -1;
	*out = *buf;
	*outlen = raw;
	return 0;
}
