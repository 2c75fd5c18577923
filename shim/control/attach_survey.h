/*
 * attach_survey.h - before a late shim starts (attach.c): which
 * definitions the program's allocator slots are bound to, and so what
 * the allocator hooks forward to (attach.c's top: "What the hooks forward
 * to").
 *
 * Invariants:
 * - The survey runs once, with real usable, before the shim starts and
 *   before any slot points at a hook: real.X of the malloc family and the
 *   C++ operators' next functions (cxx_next_bind) change only there,
 *   before anything was allocated through them.
 * - It calls dlopen(RTLD_NOLOAD), dlsym and dladdr: never from a hook.
 */
#ifndef MALLOCK_SHIM_ATTACH_SURVEY_H
#define MALLOCK_SHIM_ATTACH_SURVEY_H

#include "attach_elf.h"
#include "cxx_ops.h"

#include <link.h>
#include <stdint.h>

/* The modules the attach never looks at: the shim (the one holding
 * self_fn; self_base: its load address), ld.so and the vDSO (0: none). */
typedef struct attach_self {
	uintptr_t self_fn, self_base, ldso, vdso;
} attach_self_t;

/* The number of C++ operators (cxx_ops.h), the larger family. */
#define ATTACH_ONE_(...) +1
#define ATTACH_FAM_MAX (0 CXX_OPS(ATTACH_ONE_))

/* One allocator family: the malloc family (real.h's REAL_FUNCS_MALLOC) or
 * the C++ operators (cxx_ops.h's CXX_OPS). */
typedef struct family {
	const char *label;
	const char *const *names;
	unsigned n;
	uintptr_t global[ATTACH_FAM_MAX]; /* dlsym(RTLD_DEFAULT), per name */
	uintptr_t stub[ATTACH_FAM_MAX];   /* the executable's canonical PLT
	                                     stub dlsym returned instead, or 0 */
	unsigned slots;                   /* bound or lazy slots seen */
	int mixed;   /* a slot bound to another definition */
	int adopted; /* the hooks forward to global[] */
	/* The first slot bound elsewhere. */
	const char *odd_name;
	uintptr_t odd_value;
	char odd_module[256];
} family_t;

/* attach_module_parse(info, m) for a module the attach looks at; 0 (m not
 * to be used) for the modules of s, and as attach_module_parse. */
int attach_module_get(const attach_self_t *s, struct dl_phdr_info *info,
                      attach_module_t *m);

/* name's index in f->names, or -1. */
int attach_family_find(const family_t *f, const char *name);

/* Fills fam (zeroed by the caller) for the malloc family, fam[0], and the
 * C++ operators, fam[1]: their global-scope definitions, the slots seen,
 * whether they are bound to two definitions; adopts each family whose
 * slots are all bound to the global scope's definitions (or not bound
 * yet): real.X of the malloc family, cxx_next_bind() of the operators,
 * then sets adopted. Called with real usable, before the shim starts. */
void attach_family_survey(family_t fam[2], const attach_self_t *s);

#endif
