/*
 * cost.c - the shim's own cost, sampled (cost.h): the calibration, the
 * countdown's gaps and the sums on the control page.
 */
#include "cost.h"

#include "process.h"
#include "sample.h"

static ctl_page_t cost_none;
ctl_page_t *g_cost_page = &cost_none;

/* ns per tick of prim_tsc. */
static double cost_ns_per_tick = 1;

void cost_init(void)
{
	if (PRIM_HAVE_TSC && g_tsc_hz)
		cost_ns_per_tick = 1e9 / (double)g_tsc_hz;
}

/* Uniform in 1 .. 2 COST_EVERY - 1 (sample.c's generator). */
static uint32_t cost_gap(tls_t *t)
{
	return 1 + (uint32_t)(sample_rng(t) % (2 * COST_EVERY - 1));
}

void cost_thread_init(tls_t *t)
{
	t->cost_gap = cost_gap(t) + 1;
	t->cost_left = t->cost_gap;
}

void cost_end(tls_t *t, const cost_t *c, uint64_t x1)
{
	/* What one read adds, measured now: a read right after the exit's
	 * (a read's cost varies with the machine's load, and in a virtual
	 * machine may be a trap to the hypervisor). */
	uint64_t x2 = prim_tsc();
	uint64_t read = x2 > x1 ? x2 - x1 : 0;
	uint64_t span = x1 > c->e0 ? x1 - c->e0 : 0;
	uint64_t less = c->real + c->extra * read;
	uint64_t ticks = span > less ? span - less : 0;
	double f = (double)ticks * cost_ns_per_tick;
	uint64_t ns = f < 1e18 ? (uint64_t)f : (uint64_t)1e18;
	ctl_page_t *pg = g_cost_page;
	__atomic_fetch_add(&pg->cost_calls, t->cost_gap, __ATOMIC_RELAXED);
	if (ns <= COST_MAX_NS) {
		__atomic_fetch_add(&pg->cost_sampled, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&pg->cost_ns, ns, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&pg->cost_over, 1, __ATOMIC_RELAXED);
	}
	t->cost_gap = cost_gap(t);
	t->cost_left = t->cost_gap;
}
