/*
 * sample.c - the sampling countdown and the set of tracked blocks
 * (sample.h).
 *
 * Invariants: the set is static memory (.bss, never the hooked heap);
 * insert and remove are lock-free (CAS on one pointer); the bitmap bit of a
 * bucket is set after a pointer is stored and cleared only when the bucket
 * is seen empty, then re-checked, so a tracked block's bit is never left
 * clear.
 */
#include "sample.h"

#include "config.h"
#include "cost.h"
#include "prim.h"

#include <math.h>

int g_sampling;
_Atomic uint64_t sset_nonempty[(1u << SSET_BITS) / 64];
static _Atomic uintptr_t sset[(1u << SSET_BITS) * SSET_WAYS];
static _Atomic uint64_t sset_evictions;

void sample_init(void)
{
	g_sampling = g_cfg.sample_bytes != 0;
}

void sample_forget_all(void)
{
	prim_zero((void *)sset, sizeof sset);
	prim_zero((void *)sset_nonempty, sizeof sset_nonempty);
	atomic_store(&sset_evictions, 0);
}

/* xorshift64*: the thread's generator (never 0 once seeded). */
static uint64_t rng_next(tls_t *t)
{
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Seeds the thread's generator on its first use. */
static void rng_seed(tls_t *t)
{
	if (!t->rng)
		t->rng = (prim_tsc() ^ ((uint64_t)t->tid << 32) ^
		          0x9E3779B97F4A7C15ull) |
		         1;
}

uint64_t sample_rng(tls_t *t)
{
	rng_seed(t);
	return rng_next(t);
}

void sample_reset(tls_t *t)
{
	rng_seed(t);
	/* u uniform in (0, 1]: -ln(u) is exponential of mean 1. */
	double u =
	    (double)((rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double next = -log(u) * (double)g_cfg.sample_bytes;
	if (next > 4e18)
		next = 4e18;
	t->sample_left = (int64_t)next;
}

uint32_t sample_time_interval(tls_t *t)
{
	rng_seed(t);
	uint64_t n = (uint64_t)g_cfg.time_every;
	return (uint32_t)(1 + (n > 1 ? rng_next(t) % (2 * n - 1) : 0));
}

uint32_t sample_hold_interval(tls_t *t)
{
	rng_seed(t);
	uint64_t n = (uint64_t)g_cfg.hold_every;
	return (uint32_t)(1 + (n > 1 ? rng_next(t) % (2 * n - 1) : 0));
}

void sample_thread_init(tls_t *t)
{
	t->rng = 0;
	if (g_sampling)
		sample_reset(t);
	/* A thread's first nest is not timed by the countdown: its holds
	 * carry the shim's first unwind and table entries (about 1 ms with
	 * libunwind), which a sampled weight would multiply by
	 * MALLOCK_HOLD_EVERY into the host's hold time. */
	if (g_cfg.hold_every > 1)
		t->hold_left = sample_hold_interval(t) + 1;
	cost_thread_init(t);
}

void sample_track(const void *ptr)
{
	uintptr_t p = (uintptr_t)ptr;
	unsigned b = sset_hash(p);
	_Atomic uintptr_t *w = &sset[(size_t)b * SSET_WAYS];
	int stored = 0;
	for (int i = 0; i < SSET_WAYS && !stored; i++) {
		uintptr_t expect = 0;
		stored = atomic_compare_exchange_strong(&w[i], &expect, p);
	}
	if (!stored) {
		/* Full bucket: the block in way (p's low bits) is forgotten. */
		atomic_store(&w[(p >> 4) & (SSET_WAYS - 1)], p);
		atomic_fetch_add(&sset_evictions, 1);
	}
	atomic_fetch_or(&sset_nonempty[b >> 6], 1ull << (b & 63));
}

int sample_untrack_slow(unsigned b, uintptr_t p)
{
	_Atomic uintptr_t *w = &sset[(size_t)b * SSET_WAYS];
	int found = 0, any = 0;
	for (int i = 0; i < SSET_WAYS; i++) {
		uintptr_t v = atomic_load(&w[i]);
		if (v == p && !found) {
			uintptr_t expect = p;
			if (atomic_compare_exchange_strong(&w[i], &expect, 0)) {
				found = 1;
				continue;
			}
			v = expect;
		}
		any |= v != 0;
	}
	if (!any) {
		atomic_fetch_and(&sset_nonempty[b >> 6], ~(1ull << (b & 63)));
		for (int i = 0; i < SSET_WAYS; i++)
			if (atomic_load(&w[i])) {
				atomic_fetch_or(&sset_nonempty[b >> 6],
				                1ull << (b & 63));
				break;
			}
	}
	return found;
}

uint64_t sample_evicted(void)
{
	return atomic_load(&sset_evictions);
}

int sample_realloc(tls_t *t, const void *old, size_t n, int *was_tracked)
{
	*was_tracked = old && sample_untrack(old);
	if (old && n == 0)
		return *was_tracked || tls_holds_lock(t) ? SAMPLE_TRACK
		                                         : SAMPLE_SKIP;
	int d = sample_alloc(t, n);
	return *was_tracked ? SAMPLE_TRACK : d;
}
