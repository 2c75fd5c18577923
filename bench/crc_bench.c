/*
 * crc_bench - what a chunk checksum costs: zlib's crc32
 * (the format's chunk CRC), CRC-32C with SSE4.2's crc32 instruction, and
 * XXH3-64 (libxxhash), each over the same 64 KiB buffer of a file's bytes
 * (a recorded trace) or of pseudo-random bytes.
 *
 *   cc -O2 -msse4.2 bench/crc_bench.c -o crc_bench -lz -lxxhash
 *   ./crc_bench [FILE]     prints "name ns_per_64KiB GB_per_s", best of 7
 *
 * Not built by CMake: libxxhash-dev is not a build dependency of mallock
 * (the measurement did not pay for a switch: bench/performance-notes.md).
 */
#define _POSIX_C_SOURCE 200809L
#include <nmmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#include <zlib.h>

#define LEN 65536
#define ROUNDS 2000

static unsigned char buf[LEN];
static volatile uint64_t sink;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t crc32c(const unsigned char *p, size_t n)
{
	uint64_t c = 0xffffffffu;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, p + i, 8);
		c = _mm_crc32_u64(c, v);
	}
	for (; i < n; i++)
		c = _mm_crc32_u8((uint32_t)c, p[i]);
	return c ^ 0xffffffffu;
}

static uint64_t zlib_crc(const unsigned char *p, size_t n)
{
	return crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

static uint64_t xxh3(const unsigned char *p, size_t n)
{
	return XXH3_64bits(p, n);
}

static void bench(const char *name,
                  uint64_t (*fn)(const unsigned char *, size_t))
{
	double best = 1e30;
	for (int r = 0; r < 7; r++) {
		double t0 = now_ns();
		for (int i = 0; i < ROUNDS; i++)
			sink += fn(buf, LEN);
		double ns = (now_ns() - t0) / ROUNDS;
		if (ns < best)
			best = ns;
	}
	printf("%-12s %9.0f %6.2f\n", name, best, LEN / best);
}

int main(int argc, char **argv)
{
	size_t got = 0;
	if (argc > 1) {
		FILE *f = fopen(argv[1], "rb");
		if (!f) {
			perror(argv[1]);
			return 1;
		}
		got = fread(buf, 1, LEN, f);
		fclose(f);
	}
	uint64_t s = 88172645463325252ull;
	for (size_t i = got; i < LEN; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		buf[i] = (unsigned char)s;
	}
	printf("%-12s %9s %6s\n", "checksum", "ns/64KiB", "GB/s");
	bench("zlib_crc32", zlib_crc);
	bench("crc32c_sse42", crc32c);
	bench("xxh3_64", xxh3);
	return 0;
}
