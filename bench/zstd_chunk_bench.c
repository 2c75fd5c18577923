/*
 * zstd_chunk_bench - zstd levels as the shim uses them (shim/core/compress.c):
 * each 64 KiB piece of a file (an uncompressed trace, MALLOCK_COMPRESS=0)
 * compressed on its own with ZSTD_compress2 and the frame checksum on.
 * Prints, per level, the compressed/original ratio and the best-of-5 time
 * per 64 KiB; the levels alternate within each round, so a change of the
 * machine's state hits them alike. Run under `valgrind --tool=callgrind`
 * for instruction counts that load does not move.
 *
 *   cc -O2 bench/zstd_chunk_bench.c -o zstd_chunk_bench -lzstd
 *   ./zstd_chunk_bench FILE [LEVEL...]     (default levels -3 -1 1 2 3)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

#define CHUNK 65536

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: zstd_chunk_bench FILE [LEVEL...]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	size_t cap = 64u << 20, len = 0;
	unsigned char *in = malloc(cap);
	if (!in)
		return 1;
	len = fread(in, 1, cap, f);
	fclose(f);
	size_t nchunks = len / CHUNK;
	if (!nchunks) {
		fprintf(stderr, "zstd_chunk_bench: %s: shorter than 64 KiB\n",
		        argv[1]);
		return 1;
	}
	int levels[16] = {-3, -1, 1, 2, 3}, nl = 5;
	if (argc > 2) {
		nl = 0;
		for (int i = 2; i < argc && nl < 16; i++)
			levels[nl++] = atoi(argv[i]);
	}
	size_t ocap = ZSTD_compressBound(CHUNK);
	unsigned char *out = malloc(ocap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	double best[16];
	size_t bytes[16];
	for (int l = 0; l < nl; l++)
		best[l] = 1e30;
	for (int round = 0; round < 5; round++) {
		for (int l = 0; l < nl; l++) {
			ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
			ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
			                       levels[l]);
			ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
			size_t tot = 0;
			double t0 = now_ns();
			for (size_t c = 0; c < nchunks; c++) {
				size_t n = ZSTD_compress2(
				    cc, out, ocap, in + c * CHUNK, CHUNK);
				if (ZSTD_isError(n)) {
					fprintf(stderr, "zstd: %s\n",
					        ZSTD_getErrorName(n));
					return 1;
				}
				tot += n;
			}
			double ns = (now_ns() - t0) / (double)nchunks;
			if (ns < best[l])
				best[l] = ns;
			bytes[l] = tot;
		}
	}
	printf("%6s %8s %12s %8s\n", "level", "ratio", "us/64KiB", "MB/s");
	for (int l = 0; l < nl; l++)
		printf("%6d %8.3f %12.1f %8.0f\n", levels[l],
		       (double)(nchunks * CHUNK) / (double)bytes[l],
		       best[l] / 1e3, CHUNK / best[l] * 1e3);
	ZSTD_freeCCtx(cc);
	free(out);
	free(in);
	return 0;
}
