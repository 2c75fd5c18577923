/*
 * stack.c - stack capture and the lock-free stack intern table (stack.h).
 */
#include "stack.h"

#include "config.h"
#include "note.h"
#include "prim.h"
#include "writer.h"

#include <string.h>

#define STACK_BITS 20
#define STACK_SLOTS (1u << STACK_BITS)
#define STACK_PROBES 64

static _Atomic uint64_t *slots;
static _Atomic unsigned used;
static _Atomic int full_warned;
static _Atomic uint64_t lost;

int stack_init(void)
{
	slots = prim_map(STACK_SLOTS * sizeof *slots);
	return slots ? 0 : -1;
}

void stack_reset(void)
{
	_Atomic uint64_t *old = slots;
	slots = prim_map(STACK_SLOTS * sizeof *slots);
	prim_unmap((void *)old, STACK_SLOTS * sizeof *slots);
	atomic_store(&used, 0);
	atomic_store(&lost, 0);
	atomic_store(&full_warned, 0);
}

uint64_t stack_lost(void)
{
	return atomic_load(&lost);
}

/* Two independent multiply lanes (even and odd frames), then a final mix. */
static inline uint64_t stack_hash(const uintptr_t *f, unsigned n)
{
	const uint64_t k1 = 0x9E3779B97F4A7C15ull, k2 = 0xC2B2AE3D27D4EB4Full;
	uint64_t a = (uint64_t)n * k2, b = 0x165667B19E3779F9ull;
	unsigned i = 0;
	for (; i + 1 < n; i += 2) {
		a = (a ^ f[i]) * k1;
		b = (b ^ f[i + 1]) * k2;
	}
	if (i < n)
		a = (a ^ f[i]) * k1;
	uint64_t h = a ^ ((b << 31) | (b >> 33));
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return h ? h : 1;
}

static void emit_stack(tls_t *t, uint32_t id, const uintptr_t *f, unsigned n)
{
	uint8_t body[(3 + STACK_MAX_DEPTH) * FMT_VARINT_MAX], *p = body;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, n);
	if (n) {
		p = fmt_put_u(p, f[0]);
		for (unsigned i = 1; i < n; i++)
			p = fmt_put_s(p, (int64_t)(f[i] - f[i - 1]));
	}
	writer_meta(t, FMT_STACK, body, (size_t)(p - body));
}

static uint32_t table_full(void)
{
	atomic_fetch_add(&lost, 1);
	int expect = 0;
	if (atomic_compare_exchange_strong(&full_warned, &expect, 1))
		shim_warn("stack table full (%u stacks); new stacks are "
		          "recorded as stack 0",
		          atomic_load(&used));
	return 0;
}

uint32_t stack_intern(tls_t *t, const uintptr_t *frames, unsigned n)
{
	if (unlikely(!slots))
		return 0;
	uint64_t h = stack_hash(frames, n);
	unsigned i = (unsigned)(h >> (64 - STACK_BITS));
	for (unsigned probe = 0; probe < STACK_PROBES; probe++) {
		uint64_t v = atomic_load_explicit(&slots[i], memory_order_relaxed);
		if (likely(v == h))
			return i + 1;
		if (v == 0) {
			if (atomic_load_explicit(&used, memory_order_relaxed) >=
			    STACK_SLOTS / 8 * 7)
				return table_full();
			if (atomic_compare_exchange_strong(&slots[i], &v, h)) {
				atomic_fetch_add_explicit(&used, 1,
				                          memory_order_relaxed);
				emit_stack(t, i + 1, frames, n);
				return i + 1;
			}
			if (v == h)
				return i + 1;
		}
		i = (i + 1) & (STACK_SLOTS - 1);
	}
	return table_full();
}

uint32_t stack_site_slow(tls_t *t, uintptr_t pc)
{
	unsigned i = (unsigned)(pc ^ (pc >> 6)) & (TLS_SITE_CACHE - 1);
	uint32_t id = stack_intern(t, &pc, 1);
	if (id) {
		t->site[i].pc = pc;
		t->site[i].id = id;
	}
	return id;
}

/* Frame-pointer walk, bounded by the thread's stack and checked at every
 * step (aligned, inside the stack, strictly upwards), so it never faults on
 * code built without frame pointers: it just stops early. */
static unsigned walk_fp(tls_t *t, uintptr_t *frames, unsigned depth,
                        uintptr_t ra, void *fp)
{
	unsigned n = 0;
	frames[n++] = ra;
	uintptr_t lo = t->stack_lo, hi = t->stack_hi;
	uintptr_t prev = (uintptr_t)fp;
	if (prev < lo || prev + 16 > hi || (prev & 7))
		return n;
	uintptr_t cur = ((uintptr_t *)prev)[0];
	while (n < depth) {
		if (cur <= prev || cur + 16 > hi || (cur & 7))
			break;
		uintptr_t pc = ((uintptr_t *)cur)[1];
		if (pc < 4096)
			break;
		frames[n++] = pc;
		prev = cur;
		cur = ((uintptr_t *)cur)[0];
	}
	return n;
}

#define UNW_SKIP_MAX 8

__attribute__((noinline)) static unsigned walk_unw(uintptr_t *frames,
                                                   unsigned depth, uintptr_t ra)
{
	void *buf[STACK_MAX_DEPTH + UNW_SKIP_MAX];
	int got = unw_backtrace(buf, (int)depth + UNW_SKIP_MAX);
	int start = -1;
	for (int i = 0; i < got && i < UNW_SKIP_MAX; i++)
		if ((uintptr_t)buf[i] == ra) {
			start = i;
			break;
		}
	unsigned n = 0;
	if (start < 0) {
		/* Our own frames not recognised: keep the call site only. */
		frames[n++] = ra;
		return n;
	}
	for (int i = start; i < got && n < depth; i++)
		frames[n++] = (uintptr_t)buf[i];
	return n;
}

unsigned stack_capture(tls_t *t, uintptr_t *frames, uintptr_t ra, void *fp)
{
	unsigned depth = (unsigned)g_cfg.depth;
	switch (g_cfg.unwind) {
	case CONFIG_UNWIND_FP:
		return walk_fp(t, frames, depth, ra, fp);
	case CONFIG_UNWIND_NONE:
		frames[0] = ra;
		return 1;
	default:
		return walk_unw(frames, depth, ra);
	}
}

uint32_t stack_here_slow(tls_t *t, uintptr_t ra, void *fp)
{
	uintptr_t frames[STACK_MAX_DEPTH];
	unsigned n = stack_capture(t, frames, ra, fp);
	return stack_intern(t, frames, n);
}
