/*
 * real.c - resolution of the real-function table (real.h) and the bootstrap
 * pool that serves dlsym's own allocations before the real malloc is known.
 *
 * Invariant: resolution never recurses into itself: a calloc made by dlsym
 * lands in a hook, which sees real_state == 1 and takes a pool block.
 */
#include "real.h"

#include "prim.h"

#include <stdint.h>
#include <string.h>

real_table_t real;
_Atomic int real_state;
static char missing_names[256];

static void add_missing(const char *name)
{
	size_t n = strlen(missing_names);
	if (n + strlen(name) + 2 < sizeof missing_names) {
		if (n)
			missing_names[n++] = ' ';
		strcpy(missing_names + n, name);
	}
}

int real_ensure(void)
{
	int s = atomic_load_explicit(&real_state, memory_order_acquire);
	if (s >= 2)
		return 1;
	int expect = 0;
	if (s == 1 || !atomic_compare_exchange_strong(&real_state, &expect, 1))
		return 0;
	int ok = 1;
	real_table_t t;
	memset(&t, 0, sizeof t);
#define REAL_RESOLVE_(name, req, ver, ret, params)                             \
	{                                                                      \
		void *p_ = ver ? prim_dlvsym_next(#name, ver ? ver : "")       \
		               : prim_dlsym_next(#name);                       \
		if (!p_ && ver)                                                \
			p_ = prim_dlsym_next(#name);                           \
		memcpy(&t.name, &p_, sizeof p_);                               \
		if (!p_ && req) {                                              \
			ok = 0;                                                \
			add_missing(#name);                                    \
		}                                                              \
	}
	REAL_FUNCS(REAL_RESOLVE_)
	REAL_FUNCS_PROC(REAL_RESOLVE_)
#undef REAL_RESOLVE_
	real = t;
	/* Without the allocator itself nothing can work; without a lock
	 * function the shim stays inert (state 3) but still forwards what
	 * it has. */
	if (!real.malloc || !real.free || !real.calloc || !real.realloc)
		ok = 0;
	atomic_store_explicit(&real_state, ok ? 2 : 3, memory_order_release);
	return real.malloc && real.free && real.calloc && real.realloc;
}

const char *real_missing(void)
{
	return missing_names;
}

/* ---- bootstrap pool ---- */

#define BOOT_POOL_SIZE (256u << 10)
#define BOOT_HDR 16u
static _Alignas(4096) unsigned char boot_pool[BOOT_POOL_SIZE];
static _Atomic size_t boot_used;

void *boot_alloc(size_t n, size_t align)
{
	if (align < BOOT_HDR)
		align = BOOT_HDR;
	if (n > BOOT_POOL_SIZE || align > 4096)
		return NULL;
	size_t need = n + align + BOOT_HDR;
	size_t off = atomic_fetch_add(&boot_used, need);
	if (off + need > BOOT_POOL_SIZE)
		return NULL;
	uintptr_t p = (uintptr_t)boot_pool + off + BOOT_HDR;
	p = (p + align - 1) & ~(uintptr_t)(align - 1);
	memcpy((void *)(p - sizeof(size_t)), &n, sizeof n);
	return (void *)p; /* the pool is static: already zero */
}

int boot_owns(const void *p)
{
	return (const unsigned char *)p >= boot_pool &&
	       (const unsigned char *)p < boot_pool + BOOT_POOL_SIZE;
}

size_t boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const char *)p - sizeof(size_t), sizeof n);
	return n;
}
