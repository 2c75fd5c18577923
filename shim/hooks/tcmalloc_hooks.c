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
 * the allocator: its time is unknown), FREE with ticks 0. An allocator
 * preloaded ahead of the shim (LD_PRELOAD=libtcmalloc.so.4:libmallock.so)
 * is told apart from a static link by LD_PRELOAD's order, and the warning
 * says to put libmallock.so first.
 */
#include "hook.h"
#include "note.h"

#include <stdbool.h>
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
		rec_alloc_s(t, smp, (void *)ptr, size, 0, tsc, FMT_FN_HOOK,
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
		rec_free(t, (void *)ptr, 0, tsc);
	hook_leave(t);
}

/* Whether the object at path is preloaded ahead of libmallock.so: an
 * LD_PRELOAD entry naming it (its path, or its file name) comes before
 * the shim's. LD_PRELOAD=libtcmalloc.so.4:libmallock.so gives tcmalloc's
 * malloc the first place in the search order, not a static link. */
static bool preloaded_ahead(const char *path)
{
	const char *v = prim_getenv("LD_PRELOAD");
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!v || !*base)
		return false;
	while (*v) {
		size_t n = strcspn(v, ": ");
		const char *e = v, *eb = v;
		for (size_t i = 0; i < n; i++)
			if (e[i] == '/')
				eb = e + i + 1;
		size_t nb = n - (size_t)(eb - e);
		if (n && memmem(e, n, "libmallock", 10))
			return false; /* the shim came first */
		if ((n == strlen(path) && !memcmp(e, path, n)) ||
		    (nb == strlen(base) && !memcmp(eb, base, nb)))
			return true;
		v += n;
		v += strspn(v, ": ");
	}
	return false;
}

/* An allocator library (tcmalloc, jemalloc, mimalloc) named in LD_PRELOAD
 * ahead of the shim: its entry into out. */
static bool allocator_ahead(char *out, size_t len)
{
	static const char *const names[] = {"libtcmalloc", "libjemalloc",
	                                    "libmimalloc", NULL};
	const char *v = prim_getenv("LD_PRELOAD");
	while (v && *v) {
		size_t n = strcspn(v, ": ");
		if (n && memmem(v, n, "libmallock", 10))
			return false;
		for (int i = 0; names[i]; i++)
			if (n && memmem(v, n, names[i], strlen(names[i]))) {
				size_t k = n < len - 1 ? n : len - 1;
				memcpy(out, v, k);
				out[k] = 0;
				return true;
			}
		v += n;
		v += strspn(v, ": ");
	}
	return false;
}

void tcmalloc_check(void)
{
	void *m = prim_dlsym_default("malloc");
	void *mine;
	void *(*self)(size_t) = shim_own_malloc;
	memcpy(&mine, &self, sizeof mine);
	char lib[256];
	/* Debian's python3 (a non-PIE executable taking &malloc) made this
	 * warn falsely: its PLT stub is not an allocator. The preload order
	 * is still known. */
	if (!m || m == mine || !prim_defines(m, "malloc")) {
		if (m != mine && allocator_ahead(lib, sizeof lib))
			shim_warn("%s is preloaded ahead of the shim: its "
			          "allocations are not recorded; put "
			          "libmallock.so first in LD_PRELOAD",
			          lib);
		return;
	}
	char where[512];
	const char *obj = prim_object_of(m);
	strncpy(where, *obj ? obj : "the executable", sizeof where - 1);
	where[sizeof where - 1] = 0;
	bool ahead = *obj && preloaded_ahead(obj);
	void *an = prim_dlsym_default("MallocHook_AddNewHook");
	void *ad = prim_dlsym_default("MallocHook_AddDeleteHook");
	if (an && ad && !strcmp(prim_object_of(an), prim_object_of(m))) {
		add_new_t add_new;
		add_delete_t add_delete;
		memcpy(&add_new, &an, sizeof an);
		memcpy(&add_delete, &ad, sizeof ad);
		if (add_new(on_new) && add_delete(on_delete)) {
			if (ahead) {
				shim_warn("malloc is defined by %s, preloaded "
				          "ahead of the shim: recording "
				          "allocations through its MallocHook "
				          "API, without their time in the "
				          "allocator; put libmallock.so first "
				          "in LD_PRELOAD",
				          where);
				return;
			}
			shim_warn("malloc is defined by %s, ahead of the shim "
			          "(a statically linked allocator): recording "
			          "allocations through its MallocHook API",
			          where);
			return;
		}
	}
	if (ahead) {
		shim_warn("malloc is defined by %s, preloaded ahead of the "
		          "shim: allocations are not recorded; put "
		          "libmallock.so first in LD_PRELOAD",
		          where);
		return;
	}
	shim_warn("malloc is defined by %s, ahead of the shim (a statically "
	          "linked allocator): allocations are not recorded (export "
	          "MallocHook_AddNewHook with -rdynamic to record them)",
	          where);
}
