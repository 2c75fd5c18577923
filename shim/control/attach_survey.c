/*
 * attach_survey.c - the survey of the allocator families a late shim
 * makes before it starts (attach_survey.h): each family's global-scope
 * definitions (through a canonical PLT stub of a non-PIE executable to
 * the definition behind it), every module's slots for its functions, and
 * the decision to adopt the family (the hooks forward to the definitions
 * the slots are bound to) or not (two allocators: slots bound to two
 * definitions of one function).
 *
 * Invariants: runs once, before the shim starts and before any slot is
 * redirected (no hook has run: the real table is not in use yet); reads
 * the slots, writes none.
 */
#include "attach_survey.h"

#include "cxx_hooks.h"
#include "prim.h"
#include "real.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The malloc family is real.h's REAL_FUNCS_MALLOC; the C++ operators are
 * cxx_ops.h's CXX_OPS. */
#define ATTACH_NAME_(sym, ...) #sym,
static const char *const fam_malloc_names[] = {REAL_FUNCS_MALLOC(ATTACH_NAME_)};
static const char *const fam_cxx_names[] = {CXX_OPS(ATTACH_NAME_)};
#undef ATTACH_NAME_

#define FAM_MALLOC_N (sizeof fam_malloc_names / sizeof *fam_malloc_names)
#define FAM_CXX_N (sizeof fam_cxx_names / sizeof *fam_cxx_names)

_Static_assert(FAM_CXX_N == ATTACH_FAM_MAX && FAM_MALLOC_N <= ATTACH_FAM_MAX,
               "family_t holds every name of either family");

/* The survey's state: the families filled, the modules not looked at. */
typedef struct survey {
	family_t *fam;
	const attach_self_t *self;
} survey_t;

static uintptr_t fn_addr(void *p)
{
	return (uintptr_t)p;
}

int attach_module_get(const attach_self_t *s, struct dl_phdr_info *info,
                      attach_module_t *m)
{
	uintptr_t base = info->dlpi_addr;
	if (attach_segment_has(info, s->self_fn) ||
	    (s->ldso && base == s->ldso) || (s->vdso && base == s->vdso))
		return 0;
	return attach_module_parse(info, m);
}

int attach_family_find(const family_t *f, const char *name)
{
	for (unsigned i = 0; i < f->n; i++)
		if (name[0] == f->names[i][0] && !strcmp(name, f->names[i]))
			return (int)i;
	return -1;
}

static void survey_relocs(survey_t *r, const attach_module_t *m,
                          const ElfW(Rela) * rel, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		attach_reloc_t rc;
		if (!attach_reloc_get(m, &rel[i], &rc))
			continue;
		for (int k = 0; k < 2; k++) {
			family_t *f = &r->fam[k];
			int j = attach_family_find(f, rc.name);
			if (j < 0)
				continue;
			uintptr_t v = __atomic_load_n(rc.at, __ATOMIC_RELAXED);
			int lazy = attach_slot_lazy(m, &rc, v);
			f->slots++;
			if (lazy || v == 0 || v == f->global[j] ||
			    (f->stub[j] && v == f->stub[j]))
				continue;
			if (!f->mixed) {
				f->odd_name = f->names[j];
				f->odd_value = v;
				snprintf(f->odd_module, sizeof f->odd_module,
				         "%s", m->name);
			}
			f->mixed = 1;
		}
	}
}

static int survey_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	survey_t *r = arg;
	attach_module_t m;
	(void)size;
	if (!attach_module_get(r->self, info, &m))
		return 0;
	if (m.jmprel)
		survey_relocs(r, &m, m.jmprel, m.njmp);
	if (m.rela)
		survey_relocs(r, &m, m.rela, m.nrela);
	return 0;
}

/* Looks for a module (not the shim, not skip's) that defines name itself,
 * in load order (the global scope's order for the modules loaded at
 * start). */
typedef struct def_find {
	const char *name;
	uintptr_t skip_base, self_base, found;
} def_find_t;

static int def_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	def_find_t *d = arg;
	(void)size;
	if (d->found || !info->dlpi_name || !info->dlpi_name[0] ||
	    (uintptr_t)info->dlpi_addr == d->skip_base ||
	    (uintptr_t)info->dlpi_addr == d->self_base)
		return 0;
	void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *p = dlsym(h, d->name);
	Dl_info pi;
	const ElfW(Sym) *ps = NULL;
	/* dlsym searches the module's dependencies too: only its own. */
	if (p && dladdr1(p, &pi, (void **)&ps, RTLD_DL_SYMENT) &&
	    pi.dli_saddr == p && ps && ps->st_shndx != SHN_UNDEF &&
	    (uintptr_t)pi.dli_fbase == (uintptr_t)info->dlpi_addr)
		d->found = fn_addr(p);
	real.dlclose(h);
	return d->found != 0;
}

/*
 * The global scope's definition of name as an address, g, or the real
 * one when g is a canonical PLT entry: a non-PIE executable that takes a
 * function's address (Debian's node: `U realloc` and an R_X86_64_64 to
 * it) has the loader bind every other module's references to a stub in
 * its own PLT, which jumps to libc's function. No symbol starts at such a
 * stub (dladdr); the definition is then the first module, in load order,
 * that defines name itself.
 */
static uintptr_t global_def(const survey_t *r, const char *name, void *g,
                            uintptr_t *stub)
{
	Dl_info gi;
	const ElfW(Sym) *gs = NULL;
	*stub = 0;
	/* A definition: a symbol starts at g and is defined there (the
	 * stub's symbol is undefined, with the stub's address as value). */
	if (!g || (dladdr1(g, &gi, (void **)&gs, RTLD_DL_SYMENT) &&
	           gi.dli_saddr == g && gs && gs->st_shndx != SHN_UNDEF))
		return fn_addr(g);
	def_find_t d = {.name = name,
	                .skip_base =
	                    dladdr(g, &gi) ? (uintptr_t)gi.dli_fbase : 0,
	                .self_base = r->self->self_base};
	/* The executable's base is 0 for a non-PIE one: the stub's module
	 * is skipped by its name ("") in def_cb. */
	dl_iterate_phdr(def_cb, &d);
	if (d.found)
		*stub = fn_addr(g);
	return d.found ? d.found : fn_addr(g);
}

/*
 * Decides what the allocator hooks forward to (attach.c, at its top).
 * Called with real usable, before the shim starts and before any slot is
 * redirected (no hook has run: the table is not in use yet).
 */
void attach_family_survey(family_t fam[2], const attach_self_t *s)
{
	survey_t sv = {.fam = fam, .self = s}, *r = &sv;
	static const char *const labels[2] = {"malloc family",
	                                      "C++ operators new/delete"};
	r->fam[0].names = fam_malloc_names;
	r->fam[0].n = FAM_MALLOC_N;
	r->fam[1].names = fam_cxx_names;
	r->fam[1].n = FAM_CXX_N;
	for (int k = 0; k < 2; k++) {
		family_t *f = &r->fam[k];
		f->label = labels[k];
		for (unsigned i = 0; i < f->n; i++) {
			void *g = prim_dlsym_default(f->names[i]);
			Dl_info gi;
			f->global[i] =
			    global_def(r, f->names[i], g, &f->stub[i]);
			/* The shim in the global scope (dlopen'ed
			 * RTLD_GLOBAL by someone): its hooks would forward
			 * to themselves. Not adopted. */
			if (g && dladdr(g, &gi) &&
			    gi.dli_fbase == (void *)r->self->self_base)
				f->mixed = 1;
		}
	}
	dl_iterate_phdr(survey_module, r);
	family_t *mf = &r->fam[0];
	if (!mf->mixed && mf->global[0] && mf->global[1] && mf->global[2] &&
	    mf->global[3]) {
#define ATTACH_ADOPT_(sym, ...)                                                \
	{                                                                      \
		int j_ = attach_family_find(mf, #sym);                         \
		void *g_ = (void *)mf->global[j_];                             \
		if (g_)                                                        \
			memcpy(&real.sym, &g_, sizeof g_);                     \
	}
		REAL_FUNCS_MALLOC(ATTACH_ADOPT_)
#undef ATTACH_ADOPT_
		atomic_thread_fence(memory_order_release);
		mf->adopted = 1;
	}
	family_t *cf = &r->fam[1];
	if (!cf->mixed && cf->slots) {
		for (unsigned i = 0; i < cf->n; i++)
			if (cf->global[i])
				cxx_next_bind(cf->names[i],
				              (void *)cf->global[i]);
		cf->adopted = 1;
	}
}
