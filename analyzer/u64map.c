/*
 * u64map.c - growth and deletion of the open-addressing map (u64map.h).
 * Deletion shifts the following cluster back instead of leaving tombstones,
 * so a map with as many deletes as inserts (live blocks) never degrades.
 */
#include "u64map.h"

#include "util.h"

#include <stdlib.h>

static void rehash(u64map_t *m, uint32_t cap)
{
	u64map_slot_t *old = m->slot;
	uint32_t oldcap = m->slot ? m->mask + 1 : 0;
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
