/*
 * stack.h - call stacks: capture (libunwind, frame pointers, or just the
 * call site) and interning into global ids.
 *
 * Ids are shared by all threads: a lock-free open-addressing table of 64-bit
 * stack hashes in mmap'd memory; a stack's id is its slot index + 1, so an id
 * is usable as soon as its slot is claimed (no publication window). The
 * thread that claims a slot writes the STACK record into its own buffer;
 * other threads may use the id earlier in the file (the reader allows it).
 *
 * Invariants:
 * - Two stacks with the same 64-bit hash share an id (a collision is a
 *   ~2^-64 event per pair; the trace's STACK record is the one store of the
 *   frames, so no frame arena is kept in memory).
 * - When the table is 7/8 full, no new stack is interned: events carry stack
 *   0, the loss is counted and noted once.
 * - Nothing here allocates through the hooked heap; libunwind's own
 *   allocations happen under the hook's gate and pass through.
 */
#ifndef MALLOCK_SHIM_STACK_H
#define MALLOCK_SHIM_STACK_H

#include "config.h"
#include "tls.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <stdatomic.h>
#include <stdint.h>

#define STACK_MAX_DEPTH 64

/* Maps the table, sets libunwind up (its FDE lookup lock-free when libc
 * has _dl_find_object). Returns 0, or -1 (then every id is 0). */
int stack_init(void);
/* 1 when libunwind never takes the loader's lock inside a hook. */
int stack_unwind_lockfree(void);
/* Empties the table in place (fork child); empties every thread's
 * stack cache. */
void stack_reset(void);
/* Empties every thread's stack cache (an object is being unloaded). */
void stack_invalidate(void);

/*
 * Interns frames[0..n) and returns its id (0 when the table is full). A new
 * stack's STACK record goes into t's buffer. Lock-free; may flush t.
 */
uint32_t stack_intern(tls_t *t, const uintptr_t *frames, unsigned n);

/*
 * Captures the stack of the hook's caller: frames[0] is ra (the hook's return
 * address), then up to MALLOCK_STACK_DEPTH-1 callers, by the configured
 * unwinder. fp is the hook's __builtin_frame_address(0). Returns the count.
 */
unsigned stack_capture(tls_t *t, uintptr_t *frames, uintptr_t ra, void *fp);

/* The general path of stack_here(): any unwinder, any number of own
 * frames to skip. */
uint32_t stack_here_slow(tls_t *t, uintptr_t ra, void *fp);

/*
 * The validated stack cache (libunwind only; MALLOCK_STACK_CACHE=0 turns it
 * off). unw_backtrace costs ~90 ns for 16 frames; a server calls malloc
 * from the same few paths at the same depths over and over. Per thread, a
 * small table maps a call's key, (return address, the caller's stack
 * pointer = the hook's CFA), to the interned stack id and to the list of
 * stack words the unwind depended on: the return-address slot of every
 * frame, and the slots rbp was restored from for the frames whose CFA is
 * rbp + 16. A frame's unwind rule depends only on its pc, so when the key
 * and every listed word are unchanged, libunwind would walk the same
 * frames: the cached id is the id it would give.
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
 * it may stall others (db_bench fillrandom, 4 threads: charged 4 times,
 * 34,000 walks a run and no gain over the cache being off; charged 16
 * times, 3,800 walks, 95% hits and 80% of bare instead of 70%). A thread
 * whose stacks do not repeat often enough to pay for learning them learns
 * less, down to nothing. While the thread holds a lock it learns at most
 * 64 stacks, plus one per 65536 hits: a stall inside a critical section
 * stalls every waiter too, but the allocation under a lock is the very
 * pattern mallock looks for, and its few paths should be cached.
 */
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
	uintptr_t lo, hi;     /* the thread's stack */
	size_t entry_size;    /* bytes per entry, a multiple of 8 */
	unsigned cap;         /* checks per entry */
	int64_t credit;       /* learning budget, TSC ticks */
	uint64_t walk_ticks;  /* running mean of an unwind's cost */
	uint64_t hits, learned, walked; /* for the exit note */
	uint64_t held_learned; /* learning walks made while holding a lock */
	uint64_t seen[SC_SETS * 2]; /* key hashes missed once */
	unsigned char entries[]; /* SC_SETS * 2 entries */
} scache_t;

#define SC_CREDIT0 3000000       /* a new thread's learning budget (ticks) */
#define SC_CREDIT_MAX 30000000   /* the most it saves up */
#define SC_LEARN_WEIGHT 16       /* a learning walk is charged 16x its time */
#define SC_HELD_LEARNS 64        /* learning walks under a lock, at first */

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
	return (const uintptr_t *)(const void *)((const unsigned char *)(e + 1) +
	                                         ((c->cap * 4 + 7) & ~7u));
}

/* 1 when e holds the key and its words are unchanged. */
static inline int sc_valid(const scache_t *c, const sc_entry_t *e, uintptr_t ra,
                           uintptr_t cfa, uintptr_t rbp)
{
	if (e->ra != ra || e->cfa != cfa || ((e->rbp ^ rbp) & e->rbp_mask) ||
	    e->epoch != atomic_load_explicit(&g_stack_epoch,
	                                     memory_order_relaxed))
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
static inline uint32_t sc_lookup(tls_t *t, uintptr_t ra, void *fp,
                                 uint64_t *h)
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

/* The cache's slow paths (stack.c): the thread's first stack (sets the
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

/*
 * The full stack id of the hook's caller: capture and intern. Inlined into
 * the hook so that libunwind starts in the hook's own frame: the caller's
 * return address is then frame 1, and only depth + 1 frames are walked
 * (libunwind costs ~5 ns a frame). When it is not there (the hook called a
 * helper that was not inlined), stack_here_slow() searches further.
 */
__attribute__((always_inline)) static inline uint32_t
stack_here(tls_t *t, uintptr_t ra, void *fp)
{
	if (likely(g_cfg.unwind == CONFIG_UNWIND_LIBUNWIND)) {
		scache_t *c = t->sc;
		if (likely(c != NULL)) {
			uint64_t h;
			uint32_t id = sc_lookup(t, ra, fp, &h);
			if (likely(id != 0))
				return id;
			/* A key missed twice in a row may be learned. */
			unsigned si = (unsigned)h & (SC_SETS * 2 - 1);
			if (c->seen[si] == h) {
				id = stack_here_learn(t, ra, fp, h);
				if (id)
					return id;
			} else {
				c->seen[si] = h;
			}
			if ((c->walked++ & 63) == 0)
				return stack_here_timed(t, ra, fp);
		} else if (g_cfg.stack_cache && !t->sc_failed) {
			return stack_here_first(t, ra, fp);
		}
		void *buf[STACK_MAX_DEPTH + 1];
		unsigned depth = (unsigned)g_cfg.depth;
		int got = unw_backtrace(buf, (int)depth + 1);
		if (likely(got > 1 && (uintptr_t)buf[1] == ra))
			return stack_intern(t, (uintptr_t *)(buf + 1),
			                    (unsigned)got - 1);
	}
	return stack_here_slow(t, ra, fp);
}

uint32_t stack_site_slow(tls_t *t, uintptr_t pc);

/* The id of the one-frame stack {pc} (a lock call site), through the
 * thread's direct-mapped cache: no hashing of deep stacks on the hot path. */
static inline uint32_t stack_site(tls_t *t, uintptr_t pc)
{
	unsigned i = (unsigned)(pc ^ (pc >> 6)) & (TLS_SITE_CACHE - 1);
	if (likely(t->site[i].pc == pc))
		return t->site[i].id;
	return stack_site_slow(t, pc);
}

/* Stacks that could not be interned (table full). */
uint64_t stack_lost(void);

#endif
