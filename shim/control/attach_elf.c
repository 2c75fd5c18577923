/*
 * attach_elf.c - a loaded module's ELF structures read from memory
 * (attach_elf.h): the program headers dl_iterate_phdr gives, the dynamic
 * section ld.so relocated in place, the symbol and relocation tables it
 * points to, and the GOT slots those relocations name.
 *
 * Invariants: reads only, and only inside the module (the dynamic section
 * is walked no further than its PT_DYNAMIC segment, every table it names
 * must lie inside the module's PT_LOAD extent, a relocation's symbol and
 * slot too); calls nothing but string functions and sysconf(_SC_PAGESIZE),
 * which take no lock (THE RULE, hook.h).
 */
#include "attach_elf.h"

#include <elf.h>
#include <string.h>
#include <unistd.h>

int attach_segment_has(const struct dl_phdr_info *info, uintptr_t a)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

uintptr_t attach_dyn_ptr(uintptr_t v, uintptr_t base)
{
	return v < base ? v + base : v;
}

/* Nonzero when [p, p + len) lies inside the module's extent. */
static int inside(const attach_module_t *m, uintptr_t a, size_t len)
{
	return a >= m->lo && a <= m->hi && len <= m->hi - a;
}

int attach_module_parse(const struct dl_phdr_info *info, attach_module_t *m)
{
	memset(m, 0, sizeof *m);
	uintptr_t base = info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	size_t ndyn = 0;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	m->base = base;
	m->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = base + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			if (a < m->lo)
				m->lo = a;
			if (a + ph->p_memsz > m->hi)
				m->hi = a + ph->p_memsz;
		} else if (ph->p_type == PT_DYNAMIC) {
			dyn = (const ElfW(Dyn) *)a;
			ndyn = ph->p_memsz / sizeof *dyn;
		} else if (ph->p_type == PT_GNU_RELRO) {
			/* As ld.so's _dl_protect_relro: both ends rounded
			 * down (the last partial page stays writable). */
			m->relro_lo = a & ~(page - 1);
			m->relro_hi = (a + ph->p_memsz) & ~(page - 1);
		}
	}
	if (!dyn || m->lo >= m->hi ||
	    !inside(m, (uintptr_t)dyn, ndyn * sizeof *dyn))
		return 0;
	size_t jmpsz = 0, relasz = 0, i;
	long pltrel = DT_RELA;
	for (i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		const ElfW(Dyn) *d = &dyn[i];
		switch (d->d_tag) {
		case DT_SYMTAB:
			m->symtab = (const ElfW(Sym) *)attach_dyn_ptr(
			    d->d_un.d_ptr, base);
			break;
		case DT_STRTAB:
			m->strtab =
			    (const char *)attach_dyn_ptr(d->d_un.d_ptr, base);
			break;
		case DT_JMPREL:
			m->jmprel = (const ElfW(Rela) *)attach_dyn_ptr(
			    d->d_un.d_ptr, base);
			break;
		case DT_PLTRELSZ:
			jmpsz = d->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrel = (long)d->d_un.d_val;
			break;
		case DT_RELA:
			m->rela = (const ElfW(Rela) *)attach_dyn_ptr(
			    d->d_un.d_ptr, base);
			break;
		case DT_RELASZ:
			relasz = d->d_un.d_val;
			break;
		default:
			break;
		}
	}
	if (i == ndyn) /* no DT_NULL inside the segment */
		return 0;
	if (!m->symtab || !m->strtab ||
	    !inside(m, (uintptr_t)m->symtab, sizeof *m->symtab) ||
	    !inside(m, (uintptr_t)m->strtab, 1))
		return 0;
	if (pltrel != DT_RELA)
		m->jmprel = NULL;
	m->njmp = m->jmprel ? jmpsz / sizeof *m->jmprel : 0;
	m->nrela = m->rela ? relasz / sizeof *m->rela : 0;
	if ((m->jmprel &&
	     !inside(m, (uintptr_t)m->jmprel, m->njmp * sizeof *m->jmprel)) ||
	    (m->rela &&
	     !inside(m, (uintptr_t)m->rela, m->nrela * sizeof *m->rela)))
		return 0;
	m->name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name
	                                                : "the executable";
	return 1;
}

int attach_reloc_get(const attach_module_t *m, const ElfW(Rela) * rel,
                     attach_reloc_t *out)
{
#ifdef ATTACH_R_JUMP_SLOT
	unsigned type = (unsigned)ELF64_R_TYPE(rel->r_info);
	size_t si = ELF64_R_SYM(rel->r_info);
	if ((type != ATTACH_R_JUMP_SLOT && type != ATTACH_R_GLOB_DAT) ||
	    si == 0)
		return 0;
	uintptr_t sa = (uintptr_t)m->symtab + si * sizeof *m->symtab;
	uintptr_t at = m->base + rel->r_offset;
	if (si > (m->hi - (uintptr_t)m->symtab) / sizeof *m->symtab ||
	    !inside(m, sa, sizeof *m->symtab) || !inside(m, at, sizeof at))
		return 0;
	const ElfW(Sym) *sym = (const ElfW(Sym) *)sa;
	if (!inside(m, (uintptr_t)m->strtab + sym->st_name, 1))
		return 0;
	out->sym = sym;
	out->name = m->strtab + sym->st_name;
	out->at = (uintptr_t *)at;
	out->jump_slot = type == ATTACH_R_JUMP_SLOT;
	return 1;
#else
	(void)m, (void)rel, (void)out;
	return 0;
#endif
}

int attach_slot_lazy(const attach_module_t *m, const attach_reloc_t *rc,
                     uintptr_t v)
{
	return rc->jump_slot && v >= m->lo && v < m->hi &&
	       !(rc->sym->st_shndx != SHN_UNDEF &&
	         v == m->base + rc->sym->st_value);
}
