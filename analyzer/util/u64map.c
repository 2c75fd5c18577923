/*
 * u64map.c - growth and deletion of the open-addressing map (u64map.h).
 * Deletion shifts the following cluster back instead of leaving tombstones,
 * so a map with as many deletes as inserts (live blocks) never degrades.
 * The hash key is drawn here, before the first map holds a key.
 */
#define _GNU_SOURCE /* getrandom, clock_gettime */
#include "u64map.h"

#include "util.h"

#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint32_t u64map_tab[8][256];
static int seeded;

/* Fills the hash tables from getrandom(). Should that fail (a kernel
 * without it, a seccomp filter), a splitmix64 sequence seeded by the clock,
 * the pid and an ASLR address stands in: weaker, but still nothing a trace
 * written beforehand can know. The analyzer is single-threaded, so a plain
 * flag suffices. */
static void u64map_seed(void)
{
	size_t got = 0;
	char *p = (char *)u64map_tab;
	while (got < sizeof u64map_tab) {
		ssize_t r = getrandom(p + got, sizeof u64map_tab - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got < sizeof u64map_tab) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
		             (uint64_t)getpid() << 20 ^
		             (uint64_t)(uintptr_t)&ts;
		for (size_t i = 0; i < 8 * 256; i++) {
			uint64_t z = (x += 0x9e3779b97f4a7c15ull);
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			u64map_tab[i / 256][i % 256] =
			    (uint32_t)(z ^ (z >> 31));
		}
	}
	seeded = 1;
}

static void rehash(u64map_t *m, uint32_t cap)
{
	u64map_slot_t *old = m->slot;
	uint32_t oldcap = m->slot ? m->mask + 1 : 0;
	if (!seeded)
		u64map_seed();
	m->slot = xmalloc((size_t)cap * sizeof *m->slot);
	for (uint32_t i = 0; i < cap; i++)
		m->slot[i].key = U64MAP_EMPTY;
	m->mask = cap - 1;
	for (uint32_t i = 0; i < oldcap; i++) {
		if (old[i].key == U64MAP_EMPTY)
			continue;
		uint32_t j = u64map_hash(old[i].key) & m->mask;
		while (m->slot[j].key != U64MAP_EMPTY)
			j = (j + 1) & m->mask;
		m->slot[j] = old[i];
	}
	free(old);
}

uint32_t *u64map_put(u64map_t *m, uint64_t key, int *added)
{
	if (!m->slot || (m->n + 1) * 2 > m->mask + 1)
		rehash(m, m->slot ? (m->mask + 1) * 2 : 64);
	uint32_t i = u64map_hash(key) & m->mask;
	for (;; i = (i + 1) & m->mask) {
		if (m->slot[i].key == key) {
			*added = 0;
			return &m->slot[i].val;
		}
		if (m->slot[i].key == U64MAP_EMPTY)
			break;
	}
	m->slot[i].key = key;
	m->slot[i].val = 0;
	m->n++;
	*added = 1;
	return &m->slot[i].val;
}

void u64map_reserve(u64map_t *m, uint32_t n)
{
	if (m->slot || !n)
		return;
	/* u64map_put grows when (n + 1) * 2 > capacity, from 64. */
	uint64_t cap = 64;
	while (cap < (uint64_t)n * 2)
		cap *= 2;
	rehash(m, (uint32_t)cap);
}

int u64map_del(u64map_t *m, uint64_t key, uint32_t *val)
{
	if (!m->slot)
		return 0;
	uint32_t i = u64map_hash(key) & m->mask;
	for (;; i = (i + 1) & m->mask) {
		if (m->slot[i].key == U64MAP_EMPTY)
			return 0;
		if (m->slot[i].key == key)
			break;
	}
	*val = m->slot[i].val;
	/* Backward-shift: move later entries of the cluster into the hole when
	 * their home slot is not between the hole and themselves. */
	uint32_t hole = i;
	for (uint32_t j = (i + 1) & m->mask; m->slot[j].key != U64MAP_EMPTY;
	     j = (j + 1) & m->mask) {
		uint32_t home = u64map_hash(m->slot[j].key) & m->mask;
		if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
			m->slot[hole] = m->slot[j];
			hole = j;
		}
	}
	m->slot[hole].key = U64MAP_EMPTY;
	m->n--;
	return 1;
}

void u64map_free(u64map_t *m)
{
	free(m->slot);
	m->slot = 0;
	m->mask = m->n = 0;
}
