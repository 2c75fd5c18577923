/*
 * stackcache.c - the validated stack cache's slow paths (stackcache.h): the
 * thread's cache set-up, the learning walk, the timed unwind that prices
 * the credit, and the exit counts.
 */
#include "stackcache.h"

#include "config.h"
#include "note.h"
#include "prim.h"
#include "stack.h"

#include <string.h>

static size_t sc_size(const scache_t *c)
{
	return sizeof *c + (size_t)SC_SETS * 2 * c->entry_size;
}

static scache_t *sc_create(tls_t *t)
{
	/* The bounds were learned lock-free (thread.h): this runs inside
	 * whatever the host is doing, pthread_getattr_np included. */
	uintptr_t lo = t->stack_lo, hi = t->stack_hi;
	unsigned cap = 2 * (unsigned)g_cfg.depth + 4;
	size_t esz = sizeof(sc_entry_t) + ((cap * 4 + 7) & ~(size_t)7) +
	             (size_t)cap * sizeof(uintptr_t);
	scache_t *c = NULL;
	if (hi > lo)
		c = prim_map(sizeof *c + (size_t)SC_SETS * 2 * esz);
	if (!c) {
		t->sc_failed = 1;
		return NULL;
	}
	c->lo = lo;
	c->hi = hi;
	c->entry_size = esz;
	c->cap = cap;
	c->credit = SC_CREDIT0;
	t->sc = c;
	return c;
}

static _Atomic uint64_t sc_hits, sc_learned, sc_walked;

void stack_cache_free(tls_t *t)
{
	scache_t *c = t->sc;
	t->sc = NULL;
	if (!c)
		return;
	atomic_fetch_add(&sc_hits, c->hits);
	atomic_fetch_add(&sc_learned, c->learned);
	atomic_fetch_add(&sc_walked, c->walked);
	prim_unmap(c, sc_size(c));
}

void stack_cache_note(tls_t *t)
{
	if (g_cfg.unwind != CONFIG_UNWIND_LIBUNWIND || !g_cfg.stack_cache)
		return;
	const scache_t *c = t->sc;
	uint64_t h = atomic_load(&sc_hits), l = atomic_load(&sc_learned),
	         w = atomic_load(&sc_walked);
	if (c) {
		h += c->hits;
		l += c->learned;
		w += c->walked;
	}
	shim_info("stack cache: %lu hits, %lu learned, %lu unwound "
	          "(exited threads and the last)",
	          (unsigned long)h, (unsigned long)l, (unsigned long)w);
}

/*
 * The learning walk: unwinds with the cursor API from here to the hook's
 * caller (the frame whose pc is ra and whose stack pointer is cfa), then up
 * to depth frames, noting each frame's return-address slot, and the slot
 * each frame's rbp came from when the frame's CFA is rbp + 16 (or, when
 * that rbp is still the caller's own, that the key must hold it). Fills e
 * and returns the interned id, or 0 when the stack cannot be cached (e
 * untouched).
 */
__attribute__((noinline)) static uint32_t sc_learn(tls_t *t, scache_t *c,
                                                   sc_entry_t *e, uintptr_t ra,
                                                   uintptr_t cfa, uintptr_t rbp)
{
	uint32_t epoch = atomic_load(&g_stack_epoch);
	unw_context_t uc;
	unw_cursor_t cur;
	if (unw_getcontext(&uc) != 0 || unw_init_local(&cur, &uc) != 0)
		return 0;
	unw_word_t ip = 0, sp = 0;
	int skip = 0;
	for (;; skip++) {
		if (skip == UNW_SKIP_MAX ||
		    unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &sp) != 0)
			return 0;
		if (ip == ra && sp == cfa)
			break;
		if (unw_step(&cur) <= 0)
			return 0;
	}
	unsigned depth = (unsigned)g_cfg.depth, n = 0, nx = 0;
	uintptr_t frames[STACK_MAX_DEPTH];
	uint32_t xo[2 * STACK_MAX_DEPTH + 4];
	uintptr_t xv[2 * STACK_MAX_DEPTH + 4];
	uintptr_t hi = c->hi, key_rbp = 0;
	/* The slot the current frame's rbp came from (0: the caller's own
	 * rbp, in the key), and whether it is already checked. */
	uintptr_t slot = 0;
	int slot_checked = 0;
	frames[n++] = ra;
	while (n < depth) {
		unw_save_loc_t sl;
		unw_word_t fr_rbp;
		if (unw_get_save_loc(&cur, UNW_X86_64_RBP, &sl) != 0 ||
		    sl.type == UNW_SLT_REG ||
		    unw_get_reg(&cur, UNW_X86_64_RBP, &fr_rbp) != 0)
			return 0;
		uintptr_t here = sl.type == UNW_SLT_MEMORY && sl.u.addr >= cfa
		                     ? (uintptr_t)sl.u.addr
		                     : 0;
		if (here != slot) {
			slot = here;
			slot_checked = 0;
		}
		int r = unw_step(&cur);
		if (r < 0)
			return 0;
		/* Did this frame's CFA come from rbp? Then what rbp came
		 * from must not change. (At the end of the stack the CFA is
		 * unknown: keep rbp if it points into the stack.) */
		unw_word_t next_sp = 0;
		int uses_rbp;
		if (r == 0)
			uses_rbp = fr_rbp - c->lo < hi - c->lo;
		else if (unw_get_reg(&cur, UNW_REG_SP, &next_sp) != 0)
			return 0;
		else
			uses_rbp = fr_rbp + 16 == next_sp;
		if (uses_rbp && !slot_checked) {
			slot_checked = 1;
			if (slot == 0) {
				key_rbp = 1;
			} else {
				if (slot + sizeof(uintptr_t) > hi ||
				    slot - cfa > UINT32_MAX || nx >= c->cap)
					return 0;
				xo[nx] = (uint32_t)(slot - cfa);
				xv[nx++] = *(const uintptr_t *)slot;
			}
		}
		if (r == 0)
			break;
		if (unw_is_signal_frame(&cur) > 0 ||
		    unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 ||
		    unw_get_save_loc(&cur, UNW_X86_64_RIP, &sl) != 0 ||
		    sl.type != UNW_SLT_MEMORY)
			return 0;
		uintptr_t a = sl.u.addr;
		if (a < cfa || a + sizeof(uintptr_t) > hi ||
		    a - cfa > UINT32_MAX || nx >= c->cap)
			return 0;
		xo[nx] = (uint32_t)(a - cfa);
		xv[nx++] = *(const uintptr_t *)a;
		frames[n++] = ip;
	}
	uint32_t id = stack_intern(t, frames, n);
	if (id == 0)
		return 0;
	uint32_t *off = (uint32_t *)(void *)(e + 1);
	uintptr_t *val = (uintptr_t *)(void *)sc_val(c, e);
	memcpy(off, xo, nx * sizeof *off);
	memcpy(val, xv, nx * sizeof *val);
	e->ra = ra;
	e->cfa = cfa;
	e->rbp = rbp;
	e->rbp_mask = key_rbp ? ~(uintptr_t)0 : 0;
	e->nx = nx;
	e->id = id;
	e->epoch = epoch;
	e->used = c->hits + ++c->learned;
	return id;
}

uint32_t stack_here_first(tls_t *t, uintptr_t ra, void *fp)
{
	if (!t->sc && !t->sc_failed)
		sc_create(t);
	return stack_here_slow(t, ra, fp);
}

uint32_t stack_here_learn(tls_t *t, uintptr_t ra, void *fp, uint64_t h)
{
	scache_t *c = t->sc;
	uintptr_t cfa = (uintptr_t)fp + 16;
	int held = tls_holds_lock(t);
	if (c->credit <= 0 || cfa - c->lo >= c->hi - c->lo ||
	    (held && c->held_learned >= SC_HELD_LEARNS + c->hits / 65536))
		return 0;
	c->seen[(unsigned)h & (SC_SETS * 2 - 1)] = 0;
	c->held_learned += (unsigned)held;
	unsigned set = (unsigned)(h >> (64 - SC_SET_BITS));
	sc_entry_t *e0 = sc_entry(c, set * 2), *e1 = sc_entry(c, set * 2 + 1);
	uint64_t t0 = prim_tsc();
	uint32_t id = sc_learn(t, c, e0->used <= e1->used ? e0 : e1, ra, cfa,
	                       *(const uintptr_t *)fp);
	c->credit -= SC_LEARN_WEIGHT * (int64_t)(prim_tsc() - t0);
	return id;
}

uint32_t stack_here_timed(tls_t *t, uintptr_t ra, void *fp)
{
	scache_t *c = t->sc;
	uint64_t t0 = prim_tsc();
	uint32_t id = stack_here_slow(t, ra, fp);
	uint64_t dt = prim_tsc() - t0;
	/* A running mean (1/8 weight), robust to a preempted walk. */
	if (c->walk_ticks == 0)
		c->walk_ticks = dt;
	else if (dt < 4 * c->walk_ticks)
		c->walk_ticks =
		    (uint64_t)((int64_t)c->walk_ticks +
		               ((int64_t)dt - (int64_t)c->walk_ticks) / 8);
	else
		c->walk_ticks += c->walk_ticks / 8;
	return id;
}
