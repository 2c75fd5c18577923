/*
 * lockmap.c - the lock table (lockmap.h).
 */
#include "lockmap.h"

#include "note.h"
#include "prim.h"
#include "writer.h"

#define LOCKMAP_SLOTS (1u << LOCKMAP_BITS)
#define LOCKMAP_PROBES 128

lock_ent_t *lockmap_slots;
lock_cont_t *lockmap_conts;
static _Atomic uint32_t next_id = 1;
static _Atomic uint64_t lost;
static _Atomic int full_warned;

int lockmap_init(void)
{
	lockmap_conts = prim_map(LOCKMAP_SLOTS * sizeof(lock_cont_t));
	lockmap_slots = prim_map(LOCKMAP_SLOTS * sizeof(lock_ent_t));
	if (lockmap_slots && !lockmap_conts) {
		prim_unmap(lockmap_slots, LOCKMAP_SLOTS * sizeof(lock_ent_t));
		lockmap_slots = NULL;
	}
	return lockmap_slots ? 0 : -1;
}

/* In place: a new table would need 24 MiB more address space at fork,
 * which a child near RLIMIT_AS does not have, and the hot paths
 * (lockmap_get, rel_begin) do not test for a NULL table. */
void lockmap_reset(void)
{
	prim_zero(lockmap_slots, LOCKMAP_SLOTS * sizeof(lock_ent_t));
	prim_zero(lockmap_conts, LOCKMAP_SLOTS * sizeof(lock_cont_t));
	atomic_store(&next_id, 1);
	atomic_store(&lost, 0);
	atomic_store(&full_warned, 0);
}

uint64_t lockmap_lost(void)
{
	return atomic_load(&lost);
}

static void emit_new(tls_t *t, uint32_t id, uintptr_t addr, unsigned kind,
                     unsigned flags)
{
	uint8_t body[4 * FMT_VARINT_MAX], *p = body;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, addr);
	p = fmt_put_u(p, kind);
	p = fmt_put_u(p, flags);
	writer_meta(t, FMT_LOCK_NEW, body, (size_t)(p - body));
}

/* The slot of addr, claimed if needed; NULL when the table is full. */
static lock_ent_t *slot_of(uintptr_t addr)
{
	if (!lockmap_slots)
		return NULL;
	unsigned i = lockmap_hash(addr);
	for (unsigned probe = 0; probe < LOCKMAP_PROBES; probe++) {
		lock_ent_t *e = &lockmap_slots[i];
		uintptr_t a =
		    atomic_load_explicit(&e->addr, memory_order_acquire);
		if (a == addr)
			return e;
		if (a == 0) {
			if (atomic_compare_exchange_strong(&e->addr, &a,
			                                   addr) ||
			    a == addr)
				return e;
		}
		i = (i + 1) & (LOCKMAP_SLOTS - 1);
	}
	atomic_fetch_add(&lost, 1);
	int expect = 0;
	if (atomic_compare_exchange_strong(&full_warned, &expect, 1))
		shim_warn("lock table full; events of further locks are "
		          "dropped (counted)");
	return NULL;
}

/* Gives e a new id if it has none (or always, when force). Returns the
 * id when this call gave it (0: e kept its id, or another thread gave it
 * one first, and wrote its LOCK_NEW); writes its LOCK_NEW when emit. */
static uint32_t assign(tls_t *t, lock_ent_t *e, unsigned kind, unsigned flags,
                       int force, int emit)
{
	uint32_t cur = atomic_load(&e->id);
	if (cur && !force)
		return 0;
	uint32_t id = atomic_fetch_add(&next_id, 1);
	if (!atomic_compare_exchange_strong(&e->id, &cur, id))
		return 0;
	e->kind = (uint8_t)kind;
	atomic_store(&lockmap_cont(e)->waiters, 0);
	atomic_store(&lockmap_cont(e)->waited, 0);
	if (emit)
		emit_new(t, id, atomic_load(&e->addr), kind, flags);
	return id;
}

lock_ent_t *lockmap_get_slow(tls_t *t, const void *addr, unsigned kind,
                             unsigned flags)
{
	lock_ent_t *e = slot_of((uintptr_t)addr);
	if (!e)
		return NULL;
	assign(t, e, kind, flags, 0, 1);
	return e;
}

lock_ent_t *lockmap_find(const void *addr)
{
	if (!lockmap_slots)
		return NULL;
	unsigned i = lockmap_hash((uintptr_t)addr);
	for (unsigned probe = 0; probe < LOCKMAP_PROBES; probe++) {
		lock_ent_t *e = &lockmap_slots[i];
		uintptr_t a =
		    atomic_load_explicit(&e->addr, memory_order_acquire);
		if (a == (uintptr_t)addr)
			return atomic_load_explicit(&e->id,
			                            memory_order_relaxed)
			           ? e
			           : NULL;
		if (a == 0)
			return NULL;
		i = (i + 1) & (LOCKMAP_SLOTS - 1);
	}
	return NULL;
}

lock_ent_t *lockmap_fresh(tls_t *t, const void *addr, unsigned kind,
                          uint32_t *fresh)
{
	lock_ent_t *e = slot_of((uintptr_t)addr);
	*fresh = 0;
	if (!e)
		return NULL;
	*fresh = assign(t, e, kind, FMT_LOCKF_INIT, 1, 0);
	return e;
}

void lockmap_retire(lock_ent_t *e)
{
	atomic_store(&e->id, 0);
}
