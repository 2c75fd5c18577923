/*
 * tcmalloc_hooks.c - allocators linked statically into the executable.
 *
 * When the program defines malloc itself (a statically linked tcmalloc, as
 * many servers ship), the executable's definition comes first in the symbol
 * search order and LD_PRELOAD cannot interpose it: the malloc family hooks
 * never run (lock hooks still do). Detected at init: dlsym(RTLD_DEFAULT,
 * "malloc") is not the shim's malloc. The shim then warns once, and where
 * the same object exports gperftools' MallocHook_AddNewHook and
 * MallocHook_AddDeleteHook (linked with -rdynamic), records allocations
 * through them: ALLOC with fn FMT_FN_HOOK and ticks 0 (the hooks run inside
 * the allocator: its time is unknown), FREE with ticks 0.
 */
#include "hook.h"
#include "note.h"

#include <string.h>

typedef void (*new_hook_t)(const void *ptr, size_t size);
typedef void (*delete_hook_t)(const void *ptr);
typedef int (*add_new_t)(new_hook_t);
typedef int (*add_delete_t)(delete_hook_t);

static void on_new(const void *ptr, size_t size)
{
	tls_t *t = &shim_tls;
	if (!ptr || !hook_enter(t))
		return;
	int smp = SAMPLE_DECIDE(t, size);
	uint64_t tsc = prim_tsc();
	if (smp != SAMPLE_SKIP)
		rec_alloc_s(t, smp, (void *)ptr, size, tsc, tsc, FMT_FN_HOOK,
		            HOOK_RA(), HOOK_FP());
	hook_leave(t);
}

static void on_delete(const void *ptr)
{
	tls_t *t = &shim_tls;
	if (!ptr || !hook_enter(t))
		return;
	uint64_t tsc = prim_tsc();
	if (!g_sampling || sample_free(t, ptr))
		rec_free(t, (void *)ptr, tsc, tsc);
	hook_leave(t);
}

void tcmalloc_check(void)
{
	void *m = prim_dlsym_default("malloc");
	void *mine;
	void *(*self)(size_t) = shim_own_malloc;
	memcpy(&mine, &self, sizeof mine);
	if (!m || m == mine)
		return;
	/* Debian's python3 (a non-PIE executable taking &malloc) made this
	 * warn falsely: its PLT stub is not an allocator. */
	if (!prim_defines(m, "malloc"))
		return;
	char where[512];
	const char *obj = prim_object_of(m);
	strncpy(where, *obj ? obj : "the executable", sizeof where - 1);
	where[sizeof where - 1] = 0;
	void *an = prim_dlsym_default("MallocHook_AddNewHook");
	void *ad = prim_dlsym_default("MallocHook_AddDeleteHook");
	if (an && ad && !strcmp(prim_object_of(an), prim_object_of(m))) {
		add_new_t add_new;
		add_delete_t add_delete;
		memcpy(&add_new, &an, sizeof an);
		memcpy(&add_delete, &ad, sizeof ad);
		if (add_new(on_new) && add_delete(on_delete)) {
			shim_warn("malloc is defined by %s, ahead of the shim "
			          "(a statically linked allocator): recording "
			          "allocations through its MallocHook API",
			          where);
			return;
		}
	}
	shim_warn("malloc is defined by %s, ahead of the shim (a statically "
	          "linked allocator): allocations are not recorded (export "
	          "MallocHook_AddNewHook with -rdynamic to record them)",
	          where);
}
