/*
 * u64map.h - an open-addressing hash map from 64-bit keys to 32-bit values,
 * the analyzer's hot-path index (live blocks by pointer, locks, stacks and
 * (lock, stack) pairs by id).
 *
 * Why not uthash here: the live-block map sees one insert or delete per
 * allocator event (tens of millions per trace); linear probing over a flat
 * array with backward-shift deletion does it without a per-entry allocation
 * or a pointer chase. uthash stays for cold, string-keyed tables.
 *
 * Invariants: the key UINT64_MAX is reserved (never stored: callers map it
 * away); the load factor stays <= 1/2; capacity is a power of two.
 */
#ifndef MALLOCK_U64MAP_H
#define MALLOCK_U64MAP_H

#include <stdint.h>

#define U64MAP_EMPTY UINT64_MAX

typedef struct u64map_slot {
	uint64_t key;
	uint32_t val;
} u64map_slot_t;

typedef struct u64map {
	u64map_slot_t *slot;
	uint32_t mask; /* capacity - 1 (0 when unallocated) */
	uint32_t n;
} u64map_t;

static inline uint32_t u64map_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k;
}

/* Returns a pointer to the value of key, or NULL. The pointer is valid
 * until the next insert or remove. */
static inline uint32_t *u64map_find(const u64map_t *m, uint64_t key)
{
	if (!m->slot)
		return 0;
	for (uint32_t i = u64map_hash(key) & m->mask;; i = (i + 1) & m->mask) {
		if (m->slot[i].key == key)
			return &m->slot[i].val;
		if (m->slot[i].key == U64MAP_EMPTY)
			return 0;
	}
}

/* Finds key or inserts it (value 0, *added = 1). Returns the value's
 * address, valid until the next insert or remove. May allocate (exits on
 * out of memory). */
uint32_t *u64map_put(u64map_t *m, uint64_t key, int *added);

/* Removes key; returns 1 and its value in *val, or 0 if absent. */
int u64map_del(u64map_t *m, uint64_t key, uint32_t *val);

void u64map_free(u64map_t *m);

#endif
