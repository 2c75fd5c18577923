/*
 * stack.c - stack capture and the lock-free stack intern table (stack.h).
 */
#include "stack.h"

#include "config.h"
#include "note.h"
#include "prim.h"
#include "real.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>

#define STACK_BITS 20
#define STACK_SLOTS (1u << STACK_BITS)
#define STACK_PROBES 64

_Atomic uint32_t g_stack_epoch = 1;

/* A slot holds a stack's tag (the hash's low 40 bits: the index is its
 * top 20) and its id: ids are dense, numbered in the order the stacks are
 * first seen, so that they take 1 or 2 bytes in the trace (slot indexes
 * took 3). */
#define SLOT_ID_BITS 24
#define SLOT_ID_MASK ((1ull << SLOT_ID_BITS) - 1)
#define SLOT_TAG_MASK ((1ull << (64 - SLOT_ID_BITS)) - 1)

static _Atomic uint64_t *slots;
static _Atomic unsigned used;
static _Atomic uint64_t next_id;
static _Atomic int full_warned;
static _Atomic uint64_t lost;

/*
 * libunwind's FDE lookup without the loader's lock. libunwind 1.6 finds
 * the unwind table of a pc with dl_iterate_phdr (dwarf_find_proc_info;
 * in its local-only build the address space's find_proc_info accessor is
 * not used), on every unwind that meets a pc its caches have not seen. That
 * takes the loader's lock inside a hook: a fork child whose parent had
 * another thread in dl_iterate_phdr waits forever, and a host thread that,
 * inside its own dl_iterate_phdr callback, waits for a lock this thread
 * holds deadlocks with it (hook.h). So dl_iterate_phdr is interposed: a
 * call from libunwind's code made inside the shim's gate is answered
 * without the lock, by the one object that contains the pc libunwind looks
 * for (_dl_find_object, lock-free); every other call goes to libc's.
 * libunwind's callback data starts with that pc (struct
 * dwarf_callback_data, libunwind 1.x): a pc in no object gets no callback
 * (libunwind: no unwind info there, as for JIT code).
 */
static uintptr_t unw_lo, unw_hi; /* libunwind's mapping; 0, 0: not known */

/* libc's dl_iterate_phdr and pipe2 for the host's own calls, which must
 * work at any time: from the real table, or (while it is being resolved,
 * or if the shim is inert) looked up here. */
enum { NEXT_DL_ITERATE_PHDR, NEXT_PIPE2 };
typedef union next {
	int (*dl)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
	int (*pipe2)(int *, int);
	void *p;
} next_t;

static next_t next_fn(int which)
{
	static void *_Atomic found[2];
	next_t n;
	n.p = NULL;
	if (atomic_load_explicit(&real_state, memory_order_acquire) >= 2) {
		if (which == NEXT_PIPE2)
			n.pipe2 = real.pipe2;
		else
			n.dl = real.dl_iterate_phdr;
		if (n.p)
			return n;
	}
	n.p = atomic_load(&found[which]);
	if (!n.p) {
		n.p = prim_dlsym_next(which == NEXT_PIPE2 ? "pipe2"
		                                          : "dl_iterate_phdr");
		atomic_store(&found[which], n.p);
	}
	return n;
}

__attribute__((visibility("default"))) int
dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	if (likely(shim_tls.gate != GATE_BUSY ||
	           ra - unw_lo >= unw_hi - unw_lo)) {
		next_t n = next_fn(NEXT_DL_ITERATE_PHDR);
		return n.dl ? n.dl(cb, data) : 0;
	}
	unw_word_t pc;
	memcpy(&pc, data, sizeof pc);
	struct dl_phdr_info info;
	if (prim_object_info((uintptr_t)pc, &info) != 0)
		return 0;
	return cb(&info, sizeof info, data);
}

int stack_init(void)
{
	/* The stack cache's learning walk steps with unw_step, whose DWARF
	 * register-state cache, under libunwind's default global policy,
	 * takes a lock and masks all signals (two sigprocmask calls) per
	 * step. Per thread it needs neither, where libunwind was built with
	 * per-thread caches; Debian's 1.6 was not, and takes the per-thread
	 * policy as the global one: its steps still lock (so a child forked
	 * while other threads ran does not use libunwind, init.c).
	 * (unw_backtrace's own fast path keeps its frame cache per thread
	 * either way.) */
	if (g_cfg.unwind == CONFIG_UNWIND_LIBUNWIND) {
		/* libunwind's one-time set-up now (the caller holds the
		 * gate), so that its validation pipe is made here, through
		 * pipe2() below, not inside some later hook. */
		struct dl_phdr_info me;
		int (*fn)(void **, int) = unw_backtrace;
		uintptr_t at;
		memcpy(&at, &fn, sizeof at);
		if (prim_object_info(at, &me) == 0) {
			uintptr_t lo = UINTPTR_MAX, hi = 0;
			for (int i = 0; i < me.dlpi_phnum; i++) {
				const ElfW(Phdr) *ph = &me.dlpi_phdr[i];
				uintptr_t v = me.dlpi_addr + ph->p_vaddr;
				if (ph->p_type != PT_LOAD)
					continue;
				lo = v < lo ? v : lo;
				hi =
				    v + ph->p_memsz > hi ? v + ph->p_memsz : hi;
			}
			if (hi > lo) {
				unw_lo = lo;
				unw_hi = hi;
			}
		}
		void *b[2];
		unw_backtrace(b, 2);
		/* After the set-up, which resets the policy to global. */
		unw_set_caching_policy(unw_local_addr_space,
		                       UNW_CACHE_PER_THREAD);
	}
	slots = prim_map(STACK_SLOTS * sizeof *slots);
	return slots ? 0 : -1;
}

void stack_reset(void)
{
	/* In place, as lockmap_reset (no new address space in the child). */
	prim_zero((void *)slots, STACK_SLOTS * sizeof *slots);
	atomic_store(&used, 0);
	atomic_store(&next_id, 0);
	atomic_store(&lost, 0);
	atomic_store(&full_warned, 0);
	atomic_fetch_add(&g_stack_epoch, 1);
}

void stack_invalidate(void)
{
	atomic_fetch_add(&g_stack_epoch, 1);
}

/*
 * libunwind 1.6 checks addresses it is unsure of by write()ing a byte of
 * them into a private pipe (mincore, then write_validate in its Ginit.c).
 * It makes the pipe at its first use, at the lowest free fds, remembers the
 * numbers, and when a read() of the remembered read end fails (EBADF, or 0
 * bytes from the host's own file that now has the number) it close()s both
 * numbers and makes a new pipe. After a daemon has closed every fd and
 * reopened its own files, libunwind would read, close and write the
 * host's files. So its pipe is moved to high
 * numbers as it is made: every pipe2(O_CLOEXEC | O_NONBLOCK) made inside
 * the shim's gate is libunwind's (the shim itself makes no pipe).
 */
__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
	int (*fn)(int *, int) = next_fn(NEXT_PIPE2).pipe2;
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	int r = fn(fds, flags);
	if (r == 0 && shim_tls.gate == GATE_BUSY &&
	    flags == (O_CLOEXEC | O_NONBLOCK)) {
		fds[0] = prim_fd_top(fds[0]);
		fds[1] = prim_fd_top(fds[1]);
	}
	return r;
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
	uint64_t tag = h & SLOT_TAG_MASK;
	for (unsigned probe = 0; probe < STACK_PROBES; probe++) {
		uint64_t v =
		    atomic_load_explicit(&slots[i], memory_order_relaxed);
		if (likely(v >> SLOT_ID_BITS == tag))
			return (uint32_t)(v & SLOT_ID_MASK);
		if (v == 0) {
			if (atomic_load_explicit(&used, memory_order_relaxed) >=
			    STACK_SLOTS / 8 * 7)
				return table_full();
			/* Drawn before the claim, so that the id is in the
			 * slot from the moment it is claimed; a lost race
			 * leaves a number unused. */
			uint64_t id = atomic_fetch_add_explicit(
			                  &next_id, 1, memory_order_relaxed) +
			              1;
			if (id > SLOT_ID_MASK)
				return table_full();
			if (atomic_compare_exchange_strong(
			        &slots[i], &v, tag << SLOT_ID_BITS | id)) {
				atomic_fetch_add_explicit(&used, 1,
				                          memory_order_relaxed);
				emit_stack(t, (uint32_t)id, frames, n);
				return (uint32_t)id;
			}
			if (v >> SLOT_ID_BITS == tag)
				return (uint32_t)(v & SLOT_ID_MASK);
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
