/*
 * zchunks.c - rewrites a trace with every chunk zstd-compressed as the
 * shim would store it (format 1.2), for tests/format/test_compressed.py.
 *
 * usage: zchunks IN OUT
 * Chunks that do not shrink stay as they are, as the shim leaves them. The
 * header fields other than payload_len, flags and crc32 are kept, so a
 * report of OUT must equal a report of IN.
 */
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: zchunks IN OUT\n");
		return 2;
	}
	FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
	if (!in || !out) {
		perror("zchunks");
		return 1;
	}
	uint8_t fh[FMT_FILE_HEADER_SIZE], hb[FMT_CHUNK_HEADER_SIZE];
	if (fread(fh, 1, sizeof fh, in) != sizeof fh)
		return 1;
	fmt_file_header(fh); /* 1.2 */
	fwrite(fh, 1, sizeof fh, out);
	uint8_t *payload = malloc(FMT_CHUNK_MAX_PAYLOAD);
	size_t zcap = FMT_CHUNK_HEADER_SIZE + FMT_ZSTD_PREFIX +
	              ZSTD_compressBound(FMT_CHUNK_MAX_PAYLOAD);
	uint8_t *z = malloc(zcap);
	unsigned n = 0, packed = 0;
	/* level 1 with a checksum, as the shim */
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	while (fread(hb, 1, sizeof hb, in) == sizeof hb) {
		fmt_chunk_header_t h;
		if (fmt_chunk_parse(hb, &h) != 0 ||
		    fread(payload, 1, h.payload_len, in) != h.payload_len ||
		    fmt_chunk_verify(hb, &h, payload) != 0 || h.flags) {
			fprintf(stderr, "zchunks: %s: bad chunk %u\n", argv[1],
			        n + 1);
			return 1;
		}
		n++;
		uint8_t *body = z + FMT_CHUNK_HEADER_SIZE;
		size_t k = ZSTD_compress2(cc, body + FMT_ZSTD_PREFIX,
		                          zcap - FMT_CHUNK_HEADER_SIZE -
		                              FMT_ZSTD_PREFIX,
		                          payload, h.payload_len);
		if (!ZSTD_isError(k) && k + FMT_ZSTD_PREFIX < h.payload_len &&
		    h.payload_len <=
		        FMT_ZSTD_MAX_RATIO * (k + FMT_ZSTD_PREFIX)) {
			for (int i = 0; i < 4; i++)
				body[i] = (uint8_t)(h.payload_len >> (8 * i));
			h.payload_len = (uint32_t)(k + FMT_ZSTD_PREFIX);
			h.flags = FMT_CHUNKF_ZSTD;
			fmt_chunk_seal(z, &h, body);
			fwrite(z, 1, FMT_CHUNK_HEADER_SIZE + h.payload_len,
			       out);
			packed++;
		} else {
			fmt_chunk_seal(hb, &h, payload);
			fwrite(hb, 1, sizeof hb, out);
			fwrite(payload, 1, h.payload_len, out);
		}
	}
	printf("%u chunks, %u compressed\n", n, packed);
	ZSTD_freeCCtx(cc);
	free(payload);
	free(z);
	fclose(in);
	return fclose(out) == 0 ? 0 : 1;
}
