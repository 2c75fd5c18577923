/*
 * attach.c - the shim's side of `mallock attach PID` (attach.h): start a
 * shim that was dlopen'ed into a running process, and redirect the loaded
 * modules' GOT slots of the hooked functions to the shim's hooks.
 *
 * Which slots are rewritten. For every module but the shim itself, ld.so
 * and the vDSO (dl_iterate_phdr), the JUMP_SLOT (DT_JMPREL) and GLOB_DAT
 * (DT_RELA) relocations naming a hooked function are looked at. A slot is
 * redirected when
 * - it holds the function the hook forwards to, or
 * - it is not bound yet (lazy binding: it still points into its own
 *   module's PLT) and the module imports the symbol and the global scope
 *   would bind it to that same function.
 * Any other slot is left alone and counted as skipped: redirecting it would
 * hand blocks of one allocator to another.
 *
 * What the hooks forward to. A shim dlopen'ed after libc resolves real.X to
 * libc's (dlsym(RTLD_NEXT) searches the shim's own dependencies) and finds
 * no C++ operator. The allocator families (the malloc family; operator
 * new/delete in all forms) are therefore first surveyed (attach_survey.c):
 * when every slot of every module for each function of the family is bound
 * to that function's definition in the global scope (dlsym(RTLD_DEFAULT):
 * the late shim is RTLD_LOCAL, not in it), or not bound yet, the hooks of
 * the family forward to those definitions: real.X for the malloc family,
 * cxx_next_bind() for the operators. A program linked with tcmalloc is
 * then recorded as it runs, each block still allocated and freed by
 * tcmalloc. A family with slots bound to two definitions of one function
 * (two allocators) is not adopted: the malloc family keeps libc's functions
 * (only slots bound to them are redirected, the others are left alone and
 * counted), the C++ operators are all left alone. The survey runs before
 * the shim starts and before any slot points at a hook: nothing was
 * allocated through the table before it is final. A preloaded shim never
 * runs it.
 *
 * Slots in a PT_GNU_RELRO range (read-only after relocation: the whole GOT
 * with -z now) are written after mprotect(PROT_READ|PROT_WRITE) of the
 * range as ld.so protected it (start and end rounded down to pages), and
 * the range is made read-only again. Each slot is one aligned 8-byte store:
 * threads calling through it at that moment see the old or the new target.
 *
 * What the hooks then see: blocks allocated before attach are freed through
 * the free hook (real free; the analyzer counts them as unknown frees, never
 * cross-thread); locks taken before attach are released through the hooks
 * (unmatched releases); threads that existed before attach are set up by
 * the slow path of their first hook call (their TLS block was initialised
 * by dlopen to the static-empty state, gate UNINIT).
 *
 * Modules dlopen'ed after the attach bind to libc, not to the shim. The
 * first flush that sees the loader's count of loaded objects grow
 * (attach_after_flush) walks the modules again as the attach did, skipping
 * the slots already redirected. A module that is new since the previous
 * walk is touched only once ld.so has relocated it (no slot still holds a
 * link-time value) and made its RELRO range read-only (/proc/self/maps):
 * before that ld.so still writes there. Until then it is looked at again
 * by later flushes (up to ATTACH_MAX_RETRIES). Another dlopen, no hook of
 * dlopen: a dlopen hook in the shim would make the shim, not the caller,
 * the object whose RUNPATH ld.so searches. NOTEs name the new modules and
 * the modules not covered fully.
 *
 * Detach (mallock_detach_impl) gives every redirected slot, remembered in
 * `saved` (mapped once, ATTACH_MAX_SAVED entries; a slot with no room left
 * is not redirected), its old value back, newest first, then ends the
 * trace. patch_busy keeps a flush's walk and the detach apart.
 *
 * dlopen/dlsym on the shim itself are called here rather than in prim.c:
 * only this file needs them, and only once.
 */
#include "attach.h"
#include "attach_elf.h"
#include "attach_survey.h"

#include "config.h"
#include "control.h"
#include "cxx_hooks.h"
#include "cxx_ops.h"
#include "fatal.h"
#include "hook.h"
#include "init.h"
#include "note.h"
#include "prim.h"
#include "process.h"
#include "writer.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

int g_attached;

static char attach_output[CONFIG_PATH_MAX];
static int attach_duration;
static _Atomic int attach_started;
static char attach_msg[CONFIG_PATH_MAX + 3000];

/* ---- is the shim preloaded or loaded late? ---- */

struct order {
	uintptr_t self, libc;
	int idx, self_idx, libc_idx;
};

static int order_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct order *o = arg;
	(void)size;
	if (o->self_idx < 0 && attach_segment_has(info, o->self))
		o->self_idx = o->idx;
	if (o->libc_idx < 0 && attach_segment_has(info, o->libc))
		o->libc_idx = o->idx;
	o->idx++;
	return 0;
}

/* The link map lists the objects loaded at start (executable, preloads,
 * their dependencies, libc) before any dlopen'ed one: a preloaded shim
 * comes before libc, a dlopen'ed one after it. */
int attach_loaded_late(void)
{
	pid_t (*libc_fn)(void) = getpid; /* bound to libc's: not ours */
	struct order o = {.self_idx = -1, .libc_idx = -1};
	memcpy(&o.libc, &libc_fn, sizeof o.libc);
	int (*self_fn)(void) = attach_loaded_late;
	memcpy(&o.self, &self_fn, sizeof o.self);
	dl_iterate_phdr(order_cb, &o);
	return o.self_idx >= 0 && o.libc_idx >= 0 && o.self_idx > o.libc_idx;
}

void attach_config(void)
{
	if (!g_attached)
		return;
	if (attach_output[0])
		snprintf(g_cfg.output, sizeof g_cfg.output, "%s",
		         attach_output);
	if (attach_duration > 0)
		g_cfg.duration = attach_duration;
}

/* ---- the functions to redirect ---- */

#define ATTACH_MAX_TARGETS 96
#define ATTACH_MAX_SLOTS 512 /* per module: 2 per target at most */

typedef struct target {
	const char *name;
	uintptr_t hook;   /* the shim's definition */
	uintptr_t expect; /* a slot bound to the forwarded-to function holds */
	uintptr_t alias;  /* or this canonical PLT stub, which jumps there */
	int lazy_ok;      /* an unbound slot would bind to expect */
	int phase;        /* 0: releasing functions, 1: the others */
} target_t;

typedef struct run {
	target_t tg[ATTACH_MAX_TARGETS];
	family_t fam[2]; /* 0: the malloc family, 1: the C++ operators */
	int ntg;
	attach_self_t self;
	int phase;
	unsigned idx;            /* the module's place in the walk */
	unsigned char hit[1024]; /* modules with a slot redirected */
	unsigned patched, modules, skipped, failed;
	unsigned mod_skipped; /* skipped in the module being walked */
	uint16_t mod_patched[1024], mod_skips[1024]; /* per module, a pass */
	unsigned known;      /* modules walked by the previous pass */
	int late;            /* a pass after the attach (flush) */
	int not_ready;       /* a module still being loaded: retry */
	int mod_not_ready;   /* the module walked is one */
	const char *unready; /* the last one's name */
	int fresh;           /* the module walked is new since the
	                        previous pass */
	unsigned retries;    /* passes that found one not ready */
	unsigned noted;      /* modules named in NOTEs */
	/* The first skipped slot, described after the walk. */
	const char *skip_name;
	uintptr_t skip_value;
	char skip_module[256];
	int mprotect_err;
} run_t;

static uintptr_t fn_addr(void *p)
{
	return (uintptr_t)p;
}

/*
 * The functions that end something (free, delete, realloc's old block,
 * unlock, a condition wait's release, destroy) are redirected in a first
 * pass over all modules, the others in a second: a call pair that straddles
 * the switch then has only its end recorded (an unknown free, an unmatched
 * release, both counted apart by the analyzer), never only its beginning
 * (a block that never dies, a lock held forever).
 */
static int releases(const char *name)
{
	return !strcmp(name, "free") || !strcmp(name, "realloc") ||
	       !strcmp(name, "reallocarray") || !strncmp(name, "_Zd", 3) ||
	       strstr(name, "unlock") || strstr(name, "destroy") ||
	       strstr(name, "wait");
}

/* The canonical PLT stub the survey found for a malloc-family name, or 0. */
static uintptr_t stub_of(const run_t *r, const char *name)
{
	const family_t *f = &r->fam[0];
	for (unsigned i = 0; f->names && i < f->n; i++)
		if (!strcmp(f->names[i], name))
			return f->stub[i];
	return 0;
}

/* The shim's own definitions: dlsym on the shim's handle searches the shim
 * first. Only addresses inside the shim count (pthread_exit is in the real
 * table but not hooked: dlsym would return libc's). */
static void targets_build(run_t *r)
{
	Dl_info self;
	void *h = NULL;
	if (dladdr((void *)(uintptr_t)mallock_attach_impl, &self) &&
	    self.dli_fname)
		h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return;
#define ATTACH_ADD_(nm, expect_, lazy_)                                        \
	do {                                                                   \
		void *hk = dlsym(h, nm);                                       \
		Dl_info hi;                                                    \
		if (hk && r->ntg < ATTACH_MAX_TARGETS && dladdr(hk, &hi) &&    \
		    hi.dli_fbase == self.dli_fbase && (expect_)) {             \
			r->tg[r->ntg].name = nm;                               \
			r->tg[r->ntg].hook = fn_addr(hk);                      \
			r->tg[r->ntg].expect = (expect_);                      \
			r->tg[r->ntg].alias = stub_of(r, nm);                  \
			r->tg[r->ntg].lazy_ok = (lazy_);                       \
			r->tg[r->ntg].phase = !releases(nm);                   \
			r->ntg++;                                              \
		}                                                              \
	} while (0)
#define ATTACH_REAL_(name, req, ver, ret, params)                              \
	{                                                                      \
		uintptr_t e_;                                                  \
		memcpy(&e_, &real.name, sizeof e_);                            \
		uintptr_t d_ = fn_addr(prim_dlsym_default(#name));             \
		ATTACH_ADD_(#name, e_,                                         \
		            d_ == e_ || (d_ && d_ == stub_of(r, #name)));      \
	}
	REAL_FUNCS(ATTACH_REAL_)
	/* The operators only where the family was adopted (the hooks then
	 * forward to the operators the slots are bound to). */
	for (unsigned i = 0; r->fam[1].adopted && i < r->fam[1].n; i++)
		ATTACH_ADD_(r->fam[1].names[i], r->fam[1].global[i], 1);
#undef ATTACH_REAL_
#undef ATTACH_ADD_
	dlclose(h); /* the NOLOAD reference only; the shim stays */
}

static const target_t *target_find(const run_t *r, const char *name)
{
	for (int i = 0; i < r->ntg; i++)
		if (name[0] == r->tg[i].name[0] && !strcmp(name, r->tg[i].name))
			return &r->tg[i];
	return NULL;
}

/* ---- one module ---- */

typedef struct slot {
	uintptr_t *at;
	uintptr_t to, from;
} slot_t;

typedef attach_module_t module_t;

static void scan_relocs(run_t *r, const module_t *m, const ElfW(Rela) * rel,
                        size_t n, slot_t *out, size_t *nout)
{
	uintptr_t base = m->base, lo = m->lo, hi = m->hi;
	for (size_t i = 0; i < n; i++) {
		attach_reloc_t rc;
		if (!attach_reloc_get(m, &rel[i], &rc))
			continue;
		const target_t *tg = target_find(r, rc.name);
		if (!tg || tg->phase != r->phase)
			continue;
		uintptr_t v = __atomic_load_n(rc.at, __ATOMIC_RELAXED);
		/* After the attach, a module dlopen'ed meanwhile may not be
		 * relocated yet: its slots still hold link-time values (an
		 * offset inside the module, or 0). Leave it for a later
		 * pass. */
		if ((r->fresh || !r->late) && base &&
		    ((rc.jump_slot && v < hi - lo) ||
		     (!rc.jump_slot && v == 0))) {
			r->mod_not_ready = 1;
			*nout = 0;
			return;
		}
		/* Not bound yet: the slot points into the module's own PLT,
		 * not at its own definition. */
		int lazy = attach_slot_lazy(m, &rc, v);
		int ok = v == tg->expect || (tg->alias && v == tg->alias) ||
		         (tg->lazy_ok && lazy);
		if (v == tg->hook)
			continue;
		if (!ok) {
			if (!r->skip_name) {
				r->skip_name = tg->name;
				r->skip_value = v;
				snprintf(r->skip_module, sizeof r->skip_module,
				         "%s", m->name);
			}
			r->skipped++;
			r->mod_skipped++;
			continue;
		}
		if (*nout < ATTACH_MAX_SLOTS) {
			out[*nout].at = rc.at;
			out[*nout].to = tg->hook;
			out[*nout].from = v;
			(*nout)++;
		}
	}
}

/* ---- the slots as they were, for detach ---- */

/* One redirected slot: where, what it held, what it was given, and the
 * read-only range it lies in (0, 0: none). */
typedef struct saved_slot {
	uintptr_t *at;
	uintptr_t from, to;
	uintptr_t relro_lo, relro_hi;
} saved_slot_t;

#define ATTACH_MAX_SAVED 16384 /* 640 KiB, mapped at the first attach */
static saved_slot_t *saved;
static size_t nsaved;

/* Room left in the table (mapped on first use; 0 if it cannot be). */
static size_t saved_room(void)
{
	if (!saved)
		saved = prim_map(ATTACH_MAX_SAVED * sizeof *saved);
	return saved ? ATTACH_MAX_SAVED - nsaved : 0;
}

static void saved_add(const slot_t *sl, uintptr_t relro_lo, uintptr_t relro_hi)
{
	saved_slot_t *e = &saved[nsaved++];
	e->at = sl->at;
	e->from = sl->from;
	e->to = sl->to;
	int ro = (uintptr_t)sl->at >= relro_lo && (uintptr_t)sl->at < relro_hi;
	e->relro_lo = ro ? relro_lo : 0;
	e->relro_hi = ro ? relro_hi : 0;
}

/* Nonzero when the mapping at addr is read-only (/proc/self/maps: a
 * module's RELRO range once ld.so has relocated it). Reads the maps into a
 * buffer mapped once (2 MiB; a longer file: not found, 0). */
static int relro_sealed(uintptr_t addr)
{
	static char *buf;
	const size_t cap = 2u << 20;
	if (!buf && !(buf = prim_map(cap)))
		return 0;
	ssize_t n = prim_read_file("/proc/self/maps", buf, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1)
		return 0;
	buf[n] = 0;
	for (char *p = buf; p && *p;) {
		char *e;
		uintptr_t lo = (uintptr_t)strtoull(p, &e, 16);
		uintptr_t hi =
		    *e == '-' ? (uintptr_t)strtoull(e + 1, &e, 16) : 0;
		if (addr >= lo && addr < hi && *e == ' ')
			return e[1] == 'r' && e[2] == '-';
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

/* NOTEs naming the modules not covered fully (slots bound elsewhere, left
 * alone), and, in a pass after the attach, the modules loaded since the
 * previous pass. Counts are kept per module over a pass's two phases. */
#define ATTACH_MAX_NOTED 12

static void module_note(run_t *r, unsigned idx, const char *modname,
                        unsigned patched)
{
	if (idx >= 1024)
		return;
	r->mod_patched[idx] = (uint16_t)(r->mod_patched[idx] + patched);
	r->mod_skips[idx] = (uint16_t)(r->mod_skips[idx] + r->mod_skipped);
	patched = r->mod_patched[idx];
	unsigned skipped = r->mod_skips[idx];
	int fresh = r->late && idx >= r->known;
	if (r->phase != 1 || (r->late && !fresh) || (!fresh && !skipped) ||
	    (!patched && !skipped))
		return;
	if (r->noted++ >= ATTACH_MAX_NOTED)
		return;
	const char *when = fresh ? ", loaded after the attach," : "";
	if (skipped)
		shim_info("attach: %s%s is not covered fully: %u call slots "
		          "bound elsewhere left alone, %u redirected",
		          modname, when, skipped, patched);
	else
		shim_info("attach: %s%s: %u call slots redirected (its calls "
		          "before the shim's next flush were not recorded)",
		          modname, when, patched);
}

static int patch_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	run_t *r = arg;
	(void)size;
	unsigned idx = r->idx++;
	module_t m;
	if (!attach_module_get(&r->self, info, &m))
		return 0;
	uintptr_t relro_lo = m.relro_lo, relro_hi = m.relro_hi;
	const char *modname = m.name;
	slot_t slots[ATTACH_MAX_SLOTS];
	size_t n = 0;
	r->mod_skipped = 0;
	r->fresh = r->late && idx >= r->known;
	r->mod_not_ready = 0;
	if (m.jmprel)
		scan_relocs(r, &m, m.jmprel, m.njmp, slots, &n);
	if (m.rela && !r->mod_not_ready)
		scan_relocs(r, &m, m.rela, m.nrela, slots, &n);
	if (r->mod_not_ready) {
		r->not_ready = 1; /* this one at the next flush; others now */
		r->unready = modname;
		return 0;
	}
	/* Only slots that can be given back at detach. */
	size_t room = saved_room();
	if (n > room) {
		r->failed += (unsigned)(n - room);
		n = room;
	}
	if (!n) {
		module_note(r, idx, modname, 0);
		return 0;
	}
	int in_relro = 0;
	for (size_t i = 0; i < n; i++)
		if ((uintptr_t)slots[i].at >= relro_lo &&
		    (uintptr_t)slots[i].at < relro_hi)
			in_relro = 1;
	/* After the attach: ld.so makes the range read-only once it has
	 * relocated the module; before that it still writes there, and a
	 * read-only range would crash it. */
	if (in_relro && (r->fresh || !r->late) && !relro_sealed(relro_lo)) {
		r->not_ready = 1;
		r->unready = modname;
		return 0;
	}
	if (in_relro && mprotect((void *)relro_lo, relro_hi - relro_lo,
	                         PROT_READ | PROT_WRITE) != 0) {
		r->mprotect_err = errno;
		/* Only the slots outside the read-only range. */
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if ((uintptr_t)slots[i].at < relro_lo ||
			    (uintptr_t)slots[i].at >= relro_hi)
				slots[k++] = slots[i];
		r->failed += (unsigned)(n - k);
		n = k;
		in_relro = 0;
	}
	for (size_t i = 0; i < n; i++) {
		saved_add(&slots[i], relro_lo, relro_hi);
		__atomic_store_n(slots[i].at, slots[i].to, __ATOMIC_RELEASE);
	}
	if (in_relro)
		mprotect((void *)relro_lo, relro_hi - relro_lo, PROT_READ);
	r->patched += (unsigned)n;
	module_note(r, idx, modname, (unsigned)n);
	if (n && idx < sizeof r->hit && !r->hit[idx]) {
		r->hit[idx] = 1;
		r->modules++;
	}
	return 0;
}

/* ---- entry point ---- */

/* Appends the warnings the shim made so far, one "\nwarning TEXT" line
 * each: `mallock attach` prints them (an attached shim writes nothing to
 * the host's stderr). */
static void add_warnings(void)
{
	size_t n = strlen(attach_msg);
	note_warnings(attach_msg + n, sizeof attach_msg - n, "\nwarning ");
}

static const char *fail(const char *why)
{
	snprintf(attach_msg, sizeof attach_msg, "error %s", why);
	add_warnings();
	return attach_msg;
}

static char last_note[NOTE_LEN];

static void keep_note(unsigned level, const char *text, size_t len, void *arg)
{
	(void)level;
	(void)arg;
	if (len >= sizeof last_note)
		len = sizeof last_note - 1;
	memcpy(last_note, text, len);
	last_note[len] = 0;
}

/* The attach's state, kept for the passes after it (new modules, at a
 * flush) and for detach; guarded by patch_busy once the attach is done.
 * Large: static, not on the caller's (gdb-borrowed) stack. */
static run_t g_run;
static atomic_flag patch_busy = ATOMIC_FLAG_INIT;
static _Atomic int detached;
static _Atomic unsigned long long patched_adds; /* dlpi_adds at the last pass */
static _Atomic int attach_done; /* the attach's own passes are done */

static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1; /* the counter is the same in every entry: one is enough */
}

/* The loader's count of objects ever loaded (dl_iterate_phdr). */
static unsigned long long loader_adds(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(adds_cb, &adds);
	return adds;
}

#ifdef ATTACH_R_JUMP_SLOT
static const char *attach_finish(run_t *r, tls_t *t, uint8_t gate);
static const char *attach_again(const char *output, int duration_s);
static const char *not_started(void);
#endif

HOOK_EXPORT const char *mallock_attach_impl(const char *output, int duration_s)
{
#ifndef ATTACH_R_JUMP_SLOT
	(void)output;
	(void)duration_s;
	return fail("attach is implemented for x86-64 and aarch64 only");
#else
	if (!attach_loaded_late())
		return fail("the shim is already preloaded in this process "
		            "(LD_PRELOAD): use `mallock ctl start|stop PID`");
	if (atomic_exchange(&attach_started, 1))
		return attach_again(output, duration_s);
	if (output && strlen(output) >= sizeof attach_output)
		return fail("the output path is too long");
	snprintf(attach_output, sizeof attach_output, "%s",
	         output ? output : "");
	attach_duration = duration_s > 0 ? duration_s : 0;
	g_attached = 1;

	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	run_t *r = &g_run;
	memset(r, 0, sizeof *r);
	int (*self_fn)(void) = attach_loaded_late;
	memcpy(&r->self.self_fn, &self_fn, sizeof r->self.self_fn);
	Dl_info self_info;
	if (dladdr((void *)(uintptr_t)mallock_attach_impl, &self_info))
		r->self.self_base = (uintptr_t)self_info.dli_fbase;
	r->self.ldso = (uintptr_t)getauxval(AT_BASE);
	r->self.vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	/* Before the shim starts: what the allocator hooks forward to. */
	if (real_usable())
		attach_family_survey(r->fam, &r->self);
	if (shim_boot() != 0) {
		not_started();
		/* As it found it: not started, so a later attach (with an
		 * output it can create) starts it. */
		note_reset();
		atomic_store(&g_off, SHIM_OFF_INIT);
		atomic_store(&attach_started, 0);
		gate_restore(t, gate);
		return attach_msg;
	}
	return attach_finish(r, t, gate);
#endif
}

#ifdef ATTACH_R_JUMP_SLOT
/* A shim that did not start (shim_boot, shim_rearm): the answer names the
 * last note's reason. */
static const char *not_started(void)
{
	last_note[0] = 0;
	note_take(keep_note, NULL);
	snprintf(attach_msg, sizeof attach_msg,
	         "error the shim did not start: %s",
	         last_note[0] ? last_note : "no reason given");
	return attach_msg;
}

/* How long an attach after a detach waits for the threads still inside a
 * hook of the ended trace (outside a blocking wait) to leave it. */
#define ATTACH_QUIET_NS 2000000000ull

/*
 * An attach after a detach: the same copy of the shim, started again on a
 * new trace (the library stays mapped: RTLD_NODELETE; a second copy would
 * not fit in glibc's static TLS). Under patch_busy, which the detach holds
 * too: the trace ended there (detached) or the attach is refused. Every
 * buffer of the ended trace is closed and the generation moved on
 * (writer_gen_next); once no thread is inside a hook outside a blocking
 * wait, no hook of the ended trace can touch the shared tables any more,
 * and shim_rearm resets them and opens the new file. The allocator family
 * survey of the first attach stands (its functions are the hooks' real
 * table, which calls of the ended trace may still be using); the slots
 * are walked and redirected as the first time.
 */
static const char *attach_again(const char *output, int duration_s)
{
	while (atomic_flag_test_and_set(&patch_busy))
		prim_yield(); /* a detach, or a flush's walk */
	if (!atomic_load(&detached) || !atomic_load(&attach_done)) {
		atomic_flag_clear(&patch_busy);
		return fail("mallock is already attached to this process: use "
		            "`mallock ctl start|stop PID`");
	}
	if (output && strlen(output) >= sizeof attach_output) {
		atomic_flag_clear(&patch_busy);
		return fail("the output path is too long");
	}
	snprintf(attach_output, sizeof attach_output, "%s",
	         output ? output : "");
	attach_duration = duration_s > 0 ? duration_s : 0;
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	writer_gen_next();
	uint32_t busy = writer_wait_quiet(t, ATTACH_QUIET_NS);
	if (busy) {
		gate_restore(t, gate);
		atomic_flag_clear(&patch_busy);
		snprintf(attach_msg, sizeof attach_msg,
		         "error thread %u stayed inside a call the shim "
		         "recorded before the detach for %llu s: not "
		         "attached (still detached); try again",
		         busy, ATTACH_QUIET_NS / 1000000000ull);
		return attach_msg;
	}
	if (shim_rearm() != 0) {
		const char *msg = not_started();
		note_reset();
		gate_restore(t, gate);
		atomic_flag_clear(&patch_busy);
		return msg;
	}
	run_t *r = &g_run;
	family_t fam[2];
	attach_self_t self = r->self;
	memcpy(fam, r->fam, sizeof fam);
	memset(r, 0, sizeof *r);
	memcpy(r->fam, fam, sizeof fam);
	r->self = self;
	nsaved = 0; /* all given back at the detach */
	atomic_store(&detached, 0);
	const char *msg = attach_finish(r, t, gate);
	atomic_flag_clear(&patch_busy);
	return msg;
}

/* The attach's second half, the shim started: the slots redirected, the
 * answer. Gives the gate back. */
static const char *attach_finish(run_t *r, tls_t *t, uint8_t gate)
{
	targets_build(r);
	if (r->ntg == 0) {
		gate_restore(t, gate);
		return fail("the shim cannot find its own hooks (dlsym); "
		            "recording, but no call is redirected");
	}
	patched_adds = loader_adds();
	for (r->phase = 0; r->phase < 2; r->phase++) {
		r->idx = 0;
		dl_iterate_phdr(patch_module, r);
	}
	r->known = r->idx;
	/* A module another thread was loading at that moment: not touched
	 * (its slots were not relocated yet, or ld.so had still to make them
	 * read-only); not looked at again either. */
	if (r->not_ready)
		shim_info("attach: %s was being loaded during the attach: not "
		          "covered",
		          r->unready);
	atomic_store(&attach_done, 1);
	/* The C++ operators of a family not adopted: all left alone. */
	if (!r->fam[1].adopted)
		r->skipped += r->fam[1].slots;
	int n = snprintf(attach_msg, sizeof attach_msg, "ok %u %u %u %s",
	                 r->patched, r->modules, r->skipped, g_trace_path);
	char sep = '\t';
	for (int k = 0; k < 2; k++) {
		const family_t *f = &r->fam[k];
		if (!f->mixed || !f->odd_name || n <= 0 ||
		    (size_t)n >= sizeof attach_msg)
			continue;
		const char *where = prim_object_of((void *)f->odd_value);
		const char *glob = prim_object_of(
		    (void *)f->global[attach_family_find(f, f->odd_name)]);
		n += snprintf(attach_msg + n, sizeof attach_msg - (size_t)n,
		              "%cthe program's %s is bound to two allocators "
		              "(%s in %s is bound to %s, the global scope's to "
		              "%s): %s",
		              sep, f->label, f->odd_name, f->odd_module,
		              *where ? where : "another definition",
		              *glob ? glob : "none",
		              k ? "the operators are left alone"
		                : "only slots bound to libc's are redirected");
		sep = ';';
	}
	if (r->skip_name && n > 0 && (size_t)n < sizeof attach_msg) {
		const char *where = prim_object_of((void *)r->skip_value);
		n += snprintf(
		    attach_msg + n, sizeof attach_msg - (size_t)n,
		    "%c%s%s in %s is bound to %s, not to the function "
		    "the shim forwards to: left alone",
		    sep, sep == ';' ? " " : "", r->skip_name, r->skip_module,
		    *where ? where : "another definition");
	}
	if (r->failed && n > 0 && (size_t)n < sizeof attach_msg)
		snprintf(attach_msg + n, sizeof attach_msg - (size_t)n,
		         "\t%u slots in read-only memory not redirected "
		         "(mprotect: %s)",
		         r->failed, prim_strerror(r->mprotect_err));
	shim_info("attached: %u GOT slots in %u modules redirected, %u left "
	          "alone; blocks allocated and locks taken before the attach "
	          "are not known (unknown frees, unmatched releases)",
	          r->patched, r->modules, r->skipped);
	for (int k = 0; k < 2; k++)
		if (r->fam[k].adopted)
			shim_info(
			    "attached: the %s hooks forward to %s, as the "
			    "program's calls were bound",
			    r->fam[k].label,
			    prim_object_of((void *)r->fam[k].global[0]));
	add_warnings();
	/* Into the trace at once: a report read while the process runs
	 * says "attached at" (the analyzer knows the attach by these). */
	writer_notes();
	gate_restore(t, gate);
	return attach_msg;
}
#endif

/* ---- modules loaded after the attach ---- */

#define ATTACH_MAX_RETRIES 1000

int attach_active(void)
{
	return atomic_load_explicit(&attach_done, memory_order_acquire) &&
	       !atomic_load(&detached);
}

void attach_after_flush(void)
{
	if (!atomic_load_explicit(&attach_done, memory_order_acquire) ||
	    atomic_load(&detached))
		return;
	unsigned long long adds = loader_adds();
	if (adds == atomic_load(&patched_adds) ||
	    atomic_flag_test_and_set(&patch_busy))
		return; /* nothing new, or another thread patches right now */
	run_t *r = &g_run;
	if (!atomic_load(&detached) && adds != atomic_load(&patched_adds)) {
		r->late = 1;
		r->not_ready = 0;
		memset(r->mod_patched, 0, sizeof r->mod_patched);
		memset(r->mod_skips, 0, sizeof r->mod_skips);
		for (r->phase = 0; r->phase < 2; r->phase++) {
			r->idx = 0;
			dl_iterate_phdr(patch_module, r);
		}
		/* A module still being loaded is looked at again by the next
		 * flushes, for a while; then it is given up (named in a NOTE
		 * as not covered). */
		if (!r->not_ready || ++r->retries > ATTACH_MAX_RETRIES) {
			if (r->not_ready)
				shim_info(
				    "attach: a module loaded after the attach "
				    "never looked relocated: not covered");
			r->known = r->idx;
			r->retries = 0;
			atomic_store(&patched_adds, adds);
		}
	}
	atomic_flag_clear(&patch_busy);
}

/* ---- detach ---- */

/* Gives one slot back: 1 when restored, 0 when it no longer held the hook
 * (something else rewrote it: left alone). */
static int slot_restore(const saved_slot_t *e)
{
	if (__atomic_load_n(e->at, __ATOMIC_RELAXED) != e->to)
		return 0;
	if (e->relro_hi &&
	    mprotect((void *)e->relro_lo, e->relro_hi - e->relro_lo,
	             PROT_READ | PROT_WRITE) != 0)
		return 0;
	__atomic_store_n(e->at, e->from, __ATOMIC_RELEASE);
	if (e->relro_hi)
		mprotect((void *)e->relro_lo, e->relro_hi - e->relro_lo,
		         PROT_READ);
	return 1;
}

HOOK_EXPORT const char *mallock_detach_impl(void)
{
	if (!atomic_load(&attach_done))
		return fail("mallock is not attached to this process (a "
		            "preloaded shim cannot be detached: use `mallock "
		            "ctl stop PID`)");
	while (atomic_flag_test_and_set(&patch_busy))
		prim_yield(); /* a flush is patching a new module */
	if (atomic_exchange(&detached, 1)) {
		atomic_flag_clear(&patch_busy);
		return fail("mallock was already detached from this process");
	}
	tls_t *t = &shim_tls;
	uint8_t gate = gate_hold(t);
	/* Newest first: the functions that begin something (malloc, lock)
	 * are given back before those that end it (free, unlock), the
	 * mirror of the attach's order. */
	unsigned restored = 0, changed = 0;
	for (size_t i = nsaved; i-- > 0;) {
		if (slot_restore(&saved[i]))
			restored++;
		else
			changed++;
	}
	shim_info("detached: %u GOT slots restored, %u left (rewritten by "
	          "someone else since); nothing is recorded after this point",
	          restored, changed);
	if (!(atomic_load(&g_off) & SHIM_OFF_STOPPED)) {
		if (t->wb)
			acq_pend_flush(t);
		writer_final();
	}
	fatal_uninstall();
	ctl_detach();
	snprintf(attach_msg, sizeof attach_msg, "ok %u %u %s", restored,
	         changed, g_trace_path);
	gate_restore(t, gate);
	atomic_flag_clear(&patch_busy);
	return attach_msg;
}
