/*
 * u64map.h - an open-addressing hash map from 64-bit keys to 32-bit values,
 * the analyzer's hot-path index (live blocks by pointer, locks, stacks and
 * (lock, stack) pairs by id).
 *
 * Why not a chained table (uthash): the live-block map sees one insert or
 * delete per allocator event (tens of millions per trace); linear probing
 * over a flat array with backward-shift deletion does it without a
 * per-entry allocation or a pointer chase.
 *
 * Invariants: the key UINT64_MAX is reserved (never stored: callers map it
 * away); the load factor stays <= 1/2; capacity is a power of two; the hash
 * is keyed per process (below), so no trace can choose colliding keys.
 */
#ifndef MALLOCK_U64MAP_H
#define MALLOCK_U64MAP_H

#include <stdint.h>

#define U64MAP_EMPTY UINT64_MAX

/* 12 bytes a slot, not 16: packed with 4-byte alignment (the key is read
 * unaligned, which x86-64 and arm64 do at no cost), key and value in one
 * cache line but for a slot in 16 (the lock and (lock, thread) maps of a
 * million-lock trace held 170 MB of padding). */
typedef struct __attribute__((packed, aligned(4))) u64map_slot {
	uint64_t key;
	uint32_t val;
} u64map_slot_t;

typedef struct u64map {
	u64map_slot_t *slot;
	uint32_t mask; /* capacity - 1 (0 when unallocated) */
	uint32_t n;
} u64map_t;

/*
 * The hash is keyed: simple tabulation hashing (the key's 8 bytes index 8
 * tables of random words, the results are XORed) over tables drawn from
 * getrandom() when the process makes its first map (u64map.c). Keys come
 * from the trace (pointers, lock, stack and thread ids), and the old fixed
 * hash could be inverted: a forged trace of keys that all shared one home
 * slot made every map quadratic (a 1.2 MB trace took 4 s, x4 per doubling).
 * A trace is written before the tables are drawn and sees no hash value,
 * and simple tabulation is 3-independent, which makes linear probing take
 * O(1) expected probes for any set of keys (Patrascu and Thorup, "The
 * power of simple tabulation hashing", 2011). It costs 8 loads from an
 * 8 KB table, cheaper here than SipHash-1-3 (docs/reliability.md).
 *
 * Nothing may depend on where a key lands: no output iterates over a map's
 * slots, so reports stay byte-identical from run to run whatever the tables.
 */
extern uint32_t u64map_tab[8][256];

/* Only valid once a map has been allocated (u64map.c fills the tables
 * then); finds on an empty map never hash. */
static inline uint32_t u64map_hash(uint64_t k)
{
	return u64map_tab[0][k & 255] ^ u64map_tab[1][k >> 8 & 255] ^
	       u64map_tab[2][k >> 16 & 255] ^ u64map_tab[3][k >> 24 & 255] ^
	       u64map_tab[4][k >> 32 & 255] ^ u64map_tab[5][k >> 40 & 255] ^
	       u64map_tab[6][k >> 48 & 255] ^ u64map_tab[7][k >> 56];
}

/* u64map_find of a key whose hash h (u64map_hash(key)) the caller has
 * already computed (to prefetch its slot): the hash is 8 table loads. */
static inline uint32_t *u64map_find_h(const u64map_t *m, uint64_t key,
                                      uint32_t h)
{
	if (!m->slot)
		return 0;
	for (uint32_t i = h & m->mask;; i = (i + 1) & m->mask) {
		if (m->slot[i].key == key)
			return &m->slot[i].val;
		if (m->slot[i].key == U64MAP_EMPTY)
			return 0;
	}
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

/* Asks the CPU to load key's home slot: a caller that knows the keys of
 * its next few finds ahead (the live-block map, keyed by pointers that
 * land anywhere in a table of megabytes) overlaps their cache misses. A
 * hint only: the map may grow before the find, and nothing changes. */
/* Asks the CPU to load the cache line at a (a hint: nothing changes). */
static inline void prefetch_line(const void *a)
{
#if defined(__x86_64__)
	/* GCC 12.2 -O2 compiled __builtin_prefetch in u64map_prefetch to
	 * nothing (no prefetch in the binary); the instruction is kept. */
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)a));
#else
	__builtin_prefetch(a);
#endif
}

static inline void u64map_prefetch(const u64map_t *m, uint64_t key)
{
	if (m->slot)
		prefetch_line(&m->slot[u64map_hash(key) & m->mask]);
}

/* Finds key or inserts it (value 0, *added = 1). Returns the value's
 * address, valid until the next insert or remove. May allocate (exits on
 * out of memory). */
uint32_t *u64map_put(u64map_t *m, uint64_t key, int *added);

/* Sizes an empty map for n keys: the capacity n puts would grow it to (no
 * more memory), allocated once instead of doubled from 64 with a rehash
 * at each step. A rebuild of a map of a hundred thousand keys spent most
 * of its time in those rehashes. Nothing when n is 0 or the map has a
 * table already. May allocate (exits on out of memory). */
void u64map_reserve(u64map_t *m, uint32_t n);

/* Removes key; returns 1 and its value in *val, or 0 if absent. */
int u64map_del(u64map_t *m, uint64_t key, uint32_t *val);

void u64map_free(u64map_t *m);

/*
 * A direct-mapped cache in front of a map whose entries are never removed
 * or changed (stacks, locks, pairs by id): the last key seen in each of
 * U64CACHE_SLOTS slots and its value. The per-event loop looks the same
 * few ids up millions of times; a hit costs one multiply and one compare
 * instead of the keyed hash and a probe. A miss falls back to the map, so
 * keys a trace makes collide here cost no more than the map alone.
 * Zeroed memory is an empty cache (val1 0: no entry).
 */
#define U64CACHE_BITS 8
#define U64CACHE_SLOTS (1u << U64CACHE_BITS)
typedef struct u64cache {
	uint64_t key[U64CACHE_SLOTS];
	uint32_t val1[U64CACHE_SLOTS]; /* value + 1; 0: empty */
} u64cache_t;

static inline uint32_t u64cache_slot(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >>
	                  (64 - U64CACHE_BITS));
}

/* Returns the cached value + 1 of key, or 0 when it is not cached. */
static inline uint32_t u64cache_get(const u64cache_t *c, uint64_t key)
{
	uint32_t i = u64cache_slot(key);
	return c->key[i] == key ? c->val1[i] : 0;
}

static inline void u64cache_set(u64cache_t *c, uint64_t key, uint32_t val)
{
	uint32_t i = u64cache_slot(key);
	c->key[i] = key;
	c->val1[i] = val + 1;
}

#endif
