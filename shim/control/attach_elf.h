/*
 * attach_elf.h - reading a loaded module's ELF structures from memory for
 * the attach (attach.c): its extent, its RELRO range, its dynamic section's
 * symbol and relocation tables, the GOT slots its relocations name, and
 * whether a slot is still unbound (it points into the module's own PLT).
 *
 * Invariants:
 * - Reads only: no function here writes memory other than its out
 *   argument, allocates, or calls anything but string functions and
 *   sysconf(_SC_PAGESIZE) (THE RULE, hook.h: a flush inside a hook may
 *   run this).
 * - A dynamic section that is not terminated within its PT_DYNAMIC
 *   segment, or whose tables do not lie inside the module's PT_LOAD
 *   extent, is refused: nothing outside the module is read.
 */
#ifndef MALLOCK_SHIM_ATTACH_ELF_H
#define MALLOCK_SHIM_ATTACH_ELF_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#define ATTACH_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define ATTACH_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define ATTACH_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define ATTACH_R_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* A module's dynamic section, as ld.so relocated it. lo, hi: the extent
 * of its PT_LOAD segments; relro_lo, relro_hi: its PT_GNU_RELRO range as
 * ld.so protects it (both ends rounded down to pages; 0, 0: none). */
typedef struct attach_module {
	uintptr_t base, lo, hi, relro_lo, relro_hi;
	const ElfW(Sym) * symtab;
	const char *strtab;
	const ElfW(Rela) * jmprel, *rela;
	size_t njmp, nrela;
	const char *name; /* dlpi_name, or "the executable" */
} attach_module_t;

/* One relocation that binds a GOT slot to a named symbol (a JUMP_SLOT or
 * GLOB_DAT relocation with a symbol). */
typedef struct attach_reloc {
	const ElfW(Sym) * sym;
	const char *name;
	uintptr_t *at; /* the slot */
	int jump_slot; /* JUMP_SLOT (DT_JMPREL), else GLOB_DAT */
} attach_reloc_t;

/* Nonzero when address a lies in one of info's PT_LOAD segments. */
int attach_segment_has(const struct dl_phdr_info *info, uintptr_t a);

/* A d_ptr value as an address: relocated in place by ld.so, except in a
 * read-only dynamic section (the vDSO's), which keeps link-time values. */
uintptr_t attach_dyn_ptr(uintptr_t v, uintptr_t base);

/* Fills m from info's program headers and dynamic section. Returns 1, or
 * 0 (m zeroed or partly filled, not to be used) when the module has no
 * dynamic section, no symbol or string table, or a corrupt dynamic
 * section (see the top). DT_JMPREL is used only with DT_PLTREL DT_RELA. */
int attach_module_parse(const struct dl_phdr_info *info, attach_module_t *m);

/* Decodes rel, one entry of m's jmprel or rela table: 1 and out filled
 * when it binds a slot to a named symbol, 0 for any other relocation (and
 * on an architecture attach does not support). */
int attach_reloc_get(const attach_module_t *m, const ElfW(Rela) * rel,
                     attach_reloc_t *out);

/* Nonzero when a slot of rc holding v is not bound yet: a JUMP_SLOT that
 * points into its own module (its PLT) other than at the module's own
 * definition of the symbol (libc.so.6 has such slots for realloc and
 * calloc until first used). */
int attach_slot_lazy(const attach_module_t *m, const attach_reloc_t *rc,
                     uintptr_t v);

#endif
