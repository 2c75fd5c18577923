/*
 * clock_bench.c - what one read of each clock costs on this machine: rdtsc
 * (the shim's stamp), rdtscp, clock_gettime(CLOCK_MONOTONIC) and its
 * _COARSE form; 10^7 reads each, three times, ns per read.
 *
 *   build/bin/clock_bench
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

#define READS 10000000

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(void)
{
	volatile uint64_t sink = 0;
	for (int k = 0; k < 3; k++) {
		unsigned aux;
		struct timespec t;
		uint64_t a = now_ns();
		for (int i = 0; i < READS; i++)
			sink += __rdtsc();
		uint64_t b = now_ns();
		for (int i = 0; i < READS; i++)
			sink += __rdtscp(&aux);
		uint64_t c = now_ns();
		for (int i = 0; i < READS; i++)
			sink += now_ns();
		uint64_t d = now_ns();
		for (int i = 0; i < READS; i++) {
			clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
			sink += (uint64_t)t.tv_nsec;
		}
		uint64_t e = now_ns();
		printf(
		    "rdtsc %.1f  rdtscp %.1f  clock_gettime %.1f  coarse %.1f "
		    "ns per read\n",
		    (double)(b - a) / READS, (double)(c - b) / READS,
		    (double)(d - c) / READS, (double)(e - d) / READS);
	}
	return 0;
}
