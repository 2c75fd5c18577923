/*
 * stackcache.h - the validated stack cache (libunwind only;
 * MALLOCK_STACK_CACHE=0 turns it off): stack_here()'s (stack.h) shortcut
 * past the unwind. unw_backtrace costs ~90 ns for 16 frames; a server calls
 * malloc from the same few paths at the same depths over and over. Per thread,
 * a small table maps a call's key, (return address, the caller's stack pointer
 * = the hook's CFA), to the interned stack id and to the list of stack words
 * the unwind depended on: the return-address slot of every frame, and the slots
 * rbp was restored from for the frames whose CFA is rbp + 16. A frame's unwind
 * rule depends only on its pc, so when the key and every listed word are
 * unchanged, libunwind would walk the same frames: the cached id is the id it
 * would give.
 *
 * Exactness assumes that every frame's CFA is rsp + offset or rbp + 16 (the
 * rules gcc and clang emit outside prologues and epilogues). A frame whose
 * rbp was not CFA - 16 when learned cannot have the rbp rule, so its rbp
 * (in code without frame pointers, a general register) is not checked; for
 * a frame with it, the slot rbp came from is checked, or, when rbp is still
 * the caller's own, the caller's rbp is part of the key.
 *
 * Safety: only calls whose CFA lies inside the thread's own stack are
 * cached, and every listed word lies between that CFA and the stack's top,
 * so a check never reads unmapped memory (other stacks: coroutines,
 * sigaltstack, are not cached). A stack learned through a signal frame is
 * not cached. Entries carry the global epoch, bumped by a fork child's table
 * reset and by dlclose.
 *
 * A key is learned (a slower unw_init_local/unw_step walk that notes the
 * words: 3 to 15 us, against 0.1 us for unw_backtrace) on its second miss
 * in a row only, and only while the thread's credit lasts. The credit is
 * in TSC ticks: each hit earns what an unwind costs (timed on one miss in
 * 64), each learning walk is charged 16 times what it took: a 10 us stall
 * hurts a program more than the sum of the 100 ns steps it saves, since
 * it may stall others (bench/performance-notes.md has the measurement
 * behind the weight). A thread
 * whose stacks do not repeat often enough to pay for learning them learns
 * less, down to nothing. While the thread holds a lock it learns at most
 * 64 stacks, plus one per 65536 hits: a stall inside a critical section
 * stalls every waiter too, but the allocation under a lock is the very
 * pattern mallock looks for, and its few paths should be cached.
 *
 * The fast path (sc_lookup) is inline here; the set-up, the learning walk
 * and the exit counts are in stackcache.c.
 */
#ifndef MALLOCK_SHIM_STACKCACHE_H
#define MALLOCK_SHIM_STACKCACHE_H

#include "tls.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SC_SET_BITS 6
#define SC_SETS (1u << SC_SET_BITS) /* two ways each */

typedef struct sc_entry {
	uintptr_t ra, cfa, rbp; /* key */
	uintptr_t rbp_mask;     /* ~0: the caller's rbp is part of the key; 0 */
	uint32_t id;            /* interned stack id */
	uint32_t epoch;         /* g_stack_epoch when learned */
	uint32_t nx;            /* checks */
	uint64_t used;          /* hits + learned at its last use (LRU) */
	/* then: uint32_t off[cap] (from cfa), uintptr_t val[cap] */
} sc_entry_t;

typedef struct scache {
	uintptr_t lo, hi;               /* the thread's stack */
	size_t entry_size;              /* bytes per entry, a multiple of 8 */
	unsigned cap;                   /* checks per entry */
	int64_t credit;                 /* learning budget, TSC ticks */
	uint64_t walk_ticks;            /* running mean of an unwind's cost */
	uint64_t hits, learned, walked; /* for the exit note */
	uint64_t held_learned; /* learning walks made while holding a lock */
	uint64_t seen[SC_SETS * 2]; /* key hashes missed once */
	unsigned char entries[];    /* SC_SETS * 2 entries */
} scache_t;

#define SC_CREDIT0 3000000     /* a new thread's learning budget (ticks) */
#define SC_CREDIT_MAX 30000000 /* the most it saves up */
#define SC_LEARN_WEIGHT 16     /* a learning walk is charged 16x its time */
#define SC_HELD_LEARNS 64      /* learning walks under a lock, at first */

extern _Atomic uint32_t g_stack_epoch;

static inline uint64_t sc_hash(uintptr_t ra, uintptr_t cfa)
{
	uint64_t h = (ra ^ (cfa << 17) ^ (cfa >> 3)) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 31);
}

static inline sc_entry_t *sc_entry(scache_t *c, unsigned i)
{
	return (sc_entry_t *)(void *)(c->entries + (size_t)i * c->entry_size);
}

static inline const uint32_t *sc_off(const sc_entry_t *e)
{
	return (const uint32_t *)(const void *)(e + 1);
}

static inline const uintptr_t *sc_val(const scache_t *c, const sc_entry_t *e)
{
	return (
	    const uintptr_t *)(const void *)((const unsigned char *)(e + 1) +
	                                     ((c->cap * 4 + 7) & ~7u));
}

/* 1 when e holds the key and its words are unchanged. */
static inline int sc_valid(const scache_t *c, const sc_entry_t *e, uintptr_t ra,
                           uintptr_t cfa, uintptr_t rbp)
{
	if (e->ra != ra || e->cfa != cfa || ((e->rbp ^ rbp) & e->rbp_mask) ||
	    e->epoch !=
	        atomic_load_explicit(&g_stack_epoch, memory_order_relaxed))
		return 0;
	const uint32_t *off = sc_off(e);
	const uintptr_t *val = sc_val(c, e);
	uintptr_t diff = 0;
	/* Branch-free: all the words are in cache, a mismatch is rare. */
	for (unsigned i = 0, n = e->nx; i < n; i++)
		diff |= *(const uintptr_t *)(cfa + off[i]) ^ val[i];
	return diff == 0;
}

/* The cached id for the hook's caller, or 0 (then *h is the key's hash).
 * fp is the hook's frame. */
static inline uint32_t sc_lookup(tls_t *t, uintptr_t ra, void *fp, uint64_t *h)
{
	scache_t *c = t->sc;
	uintptr_t cfa = (uintptr_t)fp + 16;
	uintptr_t rbp = *(const uintptr_t *)fp;
	*h = sc_hash(ra, cfa);
	unsigned set = (unsigned)(*h >> (64 - SC_SET_BITS));
	for (unsigned w = 0; w < 2; w++) {
		sc_entry_t *e = sc_entry(c, set * 2 + w);
		if (sc_valid(c, e, ra, cfa, rbp)) {
			e->used = ++c->hits + c->learned;
			if (c->credit < SC_CREDIT_MAX)
				c->credit += (int64_t)c->walk_ticks;
			return e->id;
		}
	}
	return 0;
}

/* The cache's slow paths (stackcache.c): the thread's first stack (sets the
 * cache up), a learning walk (0 when the credit or the lock rule says no,
 * or the stack cannot be cached), and an unwind timed for the credit. */
uint32_t stack_here_first(tls_t *t, uintptr_t ra, void *fp);
uint32_t stack_here_learn(tls_t *t, uintptr_t ra, void *fp, uint64_t h);
uint32_t stack_here_timed(tls_t *t, uintptr_t ra, void *fp);
/* Frees the thread's cache (thread exit), adding its counts to the
 * process's. */
void stack_cache_free(tls_t *t);
/* Notes (info) the cache's counts: the exited threads' and the caller's. */
void stack_cache_note(tls_t *t);

#endif
