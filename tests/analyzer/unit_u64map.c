/*
 * unit_u64map.c - unit tests of analyzer/u64map.[ch], the open-addressing
 * map from 64-bit keys to 32-bit values: find, put (and its growth), delete
 * by backward shift, and the per-process hash key.
 *
 * Each test checks the map against a plain reference (which keys are in,
 * with what value) after every step that could break it, and the map's own
 * invariants (capacity a power of two, load at most 1/2, n the number of
 * keys). The backward-shift test builds clusters on purpose: it reads the
 * process's hash tables to pick keys that share a home slot, so clusters
 * overlap and wrap around the table's end, then deletes from their middle.
 *
 * `unit_u64map --hash` prints a few hashes and exits: the seeding test runs
 * the program twice that way and expects different tables (getrandom).
 */
#define _GNU_SOURCE /* popen, fmemopen, readlink */
#include "test.h"
#include "u64map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The map's invariants, and that it holds exactly the n keys of ref. */
static void check_shape(const u64map_t *m, uint32_t n)
{
	check_eq(m->n, n);
	if (!m->slot)
		return;
	uint32_t cap = m->mask + 1, used = 0;
	check((cap & m->mask) == 0);
	check(2 * (uint64_t)m->n <= cap);
	for (uint32_t i = 0; i < cap; i++)
		used += m->slot[i].key != U64MAP_EMPTY;
	check_eq(used, n);
}

/* Key i of a mix of shapes: small integers, heap-like pointers (multiples
 * of 16), and keys that differ only in their high bytes. */
static uint64_t key_of(uint32_t i)
{
	switch (i % 3) {
	case 0:
		return i;
	case 1:
		return 0x7f0000000000ull + (uint64_t)i * 16;
	default:
		return (uint64_t)i << 40 | 0xabc;
	}
}

static void test_empty(void)
{
	u64map_t m = {0};
	uint32_t v = 7;
	check(u64map_find(&m, 1) == NULL);
	check(u64map_del(&m, 1, &v) == 0);
	check_eq(v, 7);
	check(m.slot == NULL);
	u64map_free(&m);
	check(m.slot == NULL && m.n == 0);
}

/* u64map_reserve(n) gives an empty map the capacity n puts would grow it
 * to, and those n puts then need no growth (the same table, the same
 * slots); on a map that has a table, or for n = 0, it does nothing. */
static void test_reserve(void)
{
	static const uint32_t ns[] = {0, 1, 31, 32, 33, 64, 1000, 100000};
	for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
		u64map_t a = {0}, b = {0};
		u64map_reserve(&a, ns[k]);
		check(ns[k] ? a.slot != NULL : a.slot == NULL);
		const void *table = a.slot;
		int added;
		for (uint32_t i = 0; i < ns[k]; i++) {
			*u64map_put(&a, 0x1000 + 8 * (uint64_t)i, &added) = i;
			*u64map_put(&b, 0x1000 + 8 * (uint64_t)i, &added) = i;
		}
		check_eq(a.mask, b.mask);
		check_eq(a.n, ns[k]);
		if (ns[k])
			check(a.slot == table);
		for (uint32_t i = 0; i < ns[k]; i += 97) {
			uint32_t *v = u64map_find(&a, 0x1000 + 8 * (uint64_t)i);
			check(v && *v == i);
		}
		uint32_t mask = a.mask;
		if (ns[k]) { /* a table already: nothing */
			u64map_reserve(&a, 4 * ns[k] + 64);
			check_eq(a.mask, mask);
		}
		u64map_free(&a);
		u64map_free(&b);
	}
}

/* Many keys: insert (growing from 64 slots to 2^19), find, re-put, delete
 * every other one, find again, re-insert the deleted ones. */
static void test_many(void)
{
	enum { N = 200000 };
	u64map_t m = {0};
	int added;
	uint32_t grows = 0, cap = 0, bad = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *v = u64map_put(&m, key_of(i), &added);
		check(v && added == 1);
		*v = i + 1;
		bad += 2 * (uint64_t)m.n > (uint64_t)m.mask + 1;
		if (m.mask + 1 != cap) {
			cap = m.mask + 1;
			grows++;
			check_shape(&m, i + 1);
		}
	}
	check_shape(&m, N);
	check(grows >= 13); /* 64 -> 524288 */
	check_eq(bad, 0);   /* the load never passed 1/2 */
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *v = u64map_find(&m, key_of(i));
		bad += !v || *v != i + 1;
	}
	check_eq(bad, 0);
	/* A key already in: found, not added, value kept. */
	uint32_t *v = u64map_put(&m, key_of(12345), &added);
	check(added == 0 && v && *v == 12346);
	check_eq(m.n, N);
	/* Absent keys. */
	check(u64map_find(&m, 0x7f0000000008ull) == NULL);
	check(u64map_find(&m, (uint64_t)N << 40) == NULL);

	uint32_t val;
	for (uint32_t i = 0; i < N; i += 2) {
		val = 0;
		bad += !u64map_del(&m, key_of(i), &val) || val != i + 1;
	}
	check_eq(bad, 0);
	check_shape(&m, N / 2);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *p = u64map_find(&m, key_of(i));
		if (i % 2 == 0)
			bad += p != NULL;
		else
			bad += !p || *p != i + 1;
	}
	check_eq(bad, 0);
	check(u64map_del(&m, key_of(0), &val) == 0); /* twice: absent */
	for (uint32_t i = 0; i < N; i += 2) {
		uint32_t *p = u64map_put(&m, key_of(i), &added);
		bad += !p || added != 1 || *p != 0;
		*p = i + 1;
	}
	check_eq(bad, 0);
	check_shape(&m, N);
	for (uint32_t i = 0; i < N; i++) {
		uint32_t *p = u64map_find(&m, key_of(i));
		bad += !p || *p != i + 1;
	}
	check_eq(bad, 0);
	u64map_free(&m);
	check(m.slot == NULL && m.n == 0 && m.mask == 0);
}

/*
 * Backward-shift deletion on clusters made on purpose: in a 64-slot map,
 * 30 keys whose home slots are 60..63 and 0..1 (so the cluster wraps), in
 * an interleaved order; then every deletion order of a prefix, checked
 * against the reference after each delete. A shift that moves an entry
 * before its home, or stops early, loses keys or finds deleted ones.
 */
static void test_clusters(void)
{
	enum { K = 30 };
	u64map_t m = {0};
	int added;
	u64map_put(&m, 0, &added); /* seeds the tables, allocates 64 slots */
	uint32_t v;
	check(u64map_del(&m, 0, &v) == 1);
	check_eq(m.mask, 63);
	static const uint32_t homes[] = {60, 61, 62, 63, 0, 1};
	uint64_t keys[K];
	uint32_t n = 0;
	for (uint64_t k = 1; n < K; k++) {
		uint32_t h = u64map_hash(k) & 63;
		/* Take keys round-robin over the homes: 5 per home. */
		if (h == homes[n % 6])
			keys[n++] = k;
	}
	for (int round = 0; round < 40; round++) {
		uint32_t nin = 0;
		int in[K];
		for (uint32_t i = 0; i < K; i++) {
			uint32_t *p = u64map_put(&m, keys[i], &added);
			check(p && added);
			*p = i + 100;
			in[i] = 1;
			nin++;
		}
		check_eq(m.mask, 63); /* 30 keys: no growth */
		/* Delete in an order that changes per round (i * 7 + round,
		 * mod 30, as 7 is prime to 30 a permutation), checking all. */
		uint32_t bad = 0;
		for (uint32_t s = 0; s < K; s++) {
			uint32_t i = (s * 7 + (uint32_t)round) % K;
			bad += !u64map_del(&m, keys[i], &v) || v != i + 100;
			in[i] = 0;
			nin--;
			for (uint32_t j = 0; j < K; j++) {
				uint32_t *p = u64map_find(&m, keys[j]);
				bad += in[j] ? !p || *p != j + 100 : p != NULL;
			}
			check_shape(&m, nin);
		}
		check_eq(bad, 0);
	}
	u64map_free(&m);
}

/* Hashes of fixed keys, as this process's tables give them. */
static void print_hashes(FILE *o)
{
	u64map_t m = {0};
	int added;
	u64map_put(&m, 1, &added); /* draws the tables */
	for (uint64_t k = 0; k < 8; k++)
		fprintf(o, "%08" PRIx32 " ",
		        u64map_hash(k * 0x0101010101010101ull));
	fputc('\n', o);
	u64map_free(&m);
}

/*
 * The hash is keyed per process: nothing drawn before the first map; after
 * it, tables that are not all one value; another process draws other
 * tables (two getrandom draws of 256 bits' worth agreeing: never).
 */
static void test_seeded(const char *self)
{
	uint32_t nonzero = 0;
	for (size_t i = 0; i < 8 * 256; i++)
		nonzero += u64map_tab[i / 256][i % 256] != 0;
	/* test_empty only: no map has held a key in this process yet. */
	check_eq(nonzero, 0);
	char mine[128], a[128] = "", b[128] = "";
	FILE *o = fmemopen(mine, sizeof mine, "w");
	check(o != NULL);
	if (!o)
		return;
	print_hashes(o);
	fclose(o);
	nonzero = 0;
	uint32_t distinct = 0;
	for (size_t i = 0; i < 8 * 256; i++) {
		nonzero += u64map_tab[i / 256][i % 256] != 0;
		distinct += i && u64map_tab[i / 256][i % 256] !=
		                     u64map_tab[(i - 1) / 256][(i - 1) % 256];
	}
	check(nonzero > 8 * 256 - 8);
	check(distinct > 8 * 256 - 8);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "'%s' --hash", self);
	for (int r = 0; r < 2; r++) {
		FILE *p = popen(cmd, "r");
		check(p != NULL);
		if (!p)
			return;
		char *dst = r ? b : a;
		check(fgets(dst, 128, p) != NULL);
		check(pclose(p) == 0);
	}
	check(strlen(a) == 8 * 9 + 1);
	check(strcmp(a, b) != 0);
	check(strcmp(a, mine) != 0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--hash")) {
		print_hashes(stdout);
		return 0;
	}
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		fprintf(stderr, "unit_u64map: /proc/self/exe: cannot read\n");
		return 1;
	}
	self[n] = 0;
	test_run(test_empty);
	test_seeded(self);
	test_run(test_many);
	test_run(test_clusters);
	test_run(test_reserve);
	return test_done();
}
