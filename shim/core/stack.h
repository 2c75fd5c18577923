/*
 * stack.h - call stacks: capture (libunwind, frame pointers, or just the
 * call site) and interning into global ids.
 *
 * Ids are shared by all threads: a lock-free open-addressing table of
 * stacks in mmap'd memory, each slot one 64-bit word holding a tag of the
 * stack's hash and its id; ids are dense (1, 2, ... in the order stacks are
 * first seen) and drawn before the slot is claimed, so an id is usable as
 * soon as its slot is claimed (no publication window). The
 * thread that claims a slot writes the STACK record into its own buffer;
 * other threads may use the id earlier in the file (the reader allows it).
 *
 * Invariants:
 * - Two stacks whose 64-bit hashes agree in their top 20 bits (the index)
 *   and their low 40 (the tag) share an id (a collision is a ~2^-60 event
 *   per pair; the trace's STACK record is the one store of the
 *   frames, so no frame arena is kept in memory).
 * - When the table is 7/8 full, no new stack is interned: events carry stack
 *   0, the loss is counted and noted once.
 * - Nothing here allocates through the hooked heap; libunwind's own
 *   allocations happen under the hook's gate and pass through.
 */
#ifndef MALLOCK_SHIM_STACK_H
#define MALLOCK_SHIM_STACK_H

#include "config.h"
#include "stackcache.h"
#include "tls.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <stdatomic.h>
#include <stdint.h>

#define STACK_MAX_DEPTH 64
#define UNW_SKIP_MAX 8 /* own frames above the hook's caller, at most */

/* Maps the table, sets libunwind up (its FDE lookup lock-free when libc
 * has _dl_find_object). Returns 0, or -1 (then every id is 0). */
int stack_init(void);
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
	if (g_cfg.unwind == CONFIG_UNWIND_NONE)
		return stack_site(t, ra); /* the same id, through the cache */
	return stack_here_slow(t, ra, fp);
}

/* Stacks that could not be interned (table full). */
uint64_t stack_lost(void);

#endif
