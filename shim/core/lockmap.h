/*
 * lockmap.h - lock (and condition variable, and allocator futex word)
 * address -> id and contention state, shared by all threads.
 *
 * A lock-free open-addressing table in mmap'd memory (never the hooked
 * heap). A slot is claimed for an address once, by CAS, and keeps that
 * address for the life of the process; its id is assigned by CAS from 0 to a
 * fresh number, so exactly one thread writes the LOCK_NEW record (into its
 * own buffer; at an init, as a LOCK_INIT_NEW). Destroy sets the id back to 0:
 * the next use or init of the address gets a fresh id.
 *
 * Invariants:
 * - The uncontended path only reads the table (addr, id, waited): no atomic
 *   read-modify-write, no lock. waiters is changed (fetch_add) only by a
 *   thread that is about to block.
 * - waited is set by a waiter before it blocks and cleared (plain store) by
 *   the holder that reports the hold as contended at release. For rwlocks in
 *   read mode the first releasing reader reports it (an approximation).
 * - When the table is full, new locks get no entry: their events are not
 *   recorded and are counted as drops; a warning is printed once.
 */
#ifndef MALLOCK_SHIM_LOCKMAP_H
#define MALLOCK_SHIM_LOCKMAP_H

#include "tls.h"

#include <stdatomic.h>
#include <stdint.h>

/* The read-mostly half of an entry: written when the slot is claimed and
 * when the id changes, so that holders read it from their own cache. */
typedef struct lock_ent {
	_Atomic uintptr_t addr;
	_Atomic uint32_t id;
	uint8_t kind;
} lock_ent_t;

/* The contention half, in a parallel array: written by waiters, read and
 * cleared by the holder at release. */
typedef struct lock_cont {
	_Atomic int32_t waiters;
	_Atomic uint8_t waited;
} lock_cont_t;

#define LOCKMAP_BITS 20

extern lock_ent_t *lockmap_slots;
extern lock_cont_t *lockmap_conts;

static inline lock_cont_t *lockmap_cont(const lock_ent_t *e)
{
	return &lockmap_conts[e - lockmap_slots];
}

/* Maps the tables (0, or -1: the shim stays off). */
int lockmap_init(void);
/* Empties the tables in place (fork child): they are never NULL after a
 * successful lockmap_init. */
void lockmap_reset(void);

static inline unsigned lockmap_hash(uintptr_t a)
{
	return (unsigned)(((a >> 3) * 0x9E3779B97F4A7C15ull) >>
	                  (64 - LOCKMAP_BITS));
}

/* The slow path of lockmap_get: probes, claims, assigns an id. */
lock_ent_t *lockmap_get_slow(tls_t *t, const void *addr, unsigned kind,
                             unsigned flags);

/*
 * The entry of addr with a live id, creating it (LOCK_NEW with
 * FMT_LOCKF_STATIC, written to t's buffer) when first seen. NULL when the
 * table is full. Lock-free; may flush t.
 */
static inline lock_ent_t *lockmap_get(tls_t *t, const void *addr, unsigned kind)
{
	lock_ent_t *e = &lockmap_slots[lockmap_hash((uintptr_t)addr)];
	if (likely(atomic_load_explicit(&e->addr, memory_order_relaxed) ==
	               (uintptr_t)addr &&
	           atomic_load_explicit(&e->id, memory_order_relaxed)))
		return e;
	return lockmap_get_slow(t, addr, kind, FMT_LOCKF_STATIC);
}

/* The entry of addr if it has a live id, else NULL. Never inserts. */
lock_ent_t *lockmap_find(const void *addr);

/* At pthread_*_init: gives addr a fresh id, whatever it had before, and
 * sets *fresh to it; the caller writes its definition (LOCK_INIT_NEW,
 * which stands for LOCK_NEW with FMT_LOCKF_INIT). *fresh is 0 when
 * another thread numbered the address meanwhile (that thread wrote the
 * LOCK_NEW). NULL when the table is full. */
lock_ent_t *lockmap_fresh(tls_t *t, const void *addr, unsigned kind,
                          uint32_t *fresh);

/* At destroy: the id is dead; the address's next use gets a new one. */
void lockmap_retire(lock_ent_t *e);

/* Locks that got no entry (table full). */
uint64_t lockmap_lost(void);

#endif
