/*
 * unit_attach_elf.c - unit test of the attach's ELF reading
 * (shim/control/attach_elf.h): this executable's own image, as
 * dl_iterate_phdr gives it, yields the GOT slots of the allocator
 * functions it imports, bound to the global scope's definitions (or not
 * bound yet); a module built in a buffer is parsed, and each way of
 * corrupting its dynamic section (no DT_NULL inside PT_DYNAMIC, a table
 * outside the module, a table size past its end, PT_DYNAMIC outside the
 * loaded extent, a relocation naming a symbol or slot outside it) is
 * refused without reading outside the buffer.
 *
 * Built from shim/control/attach_elf.c alone: no preload, no process.
 */
#include "test.h"
#include "attach_elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#ifndef ATTACH_R_JUMP_SLOT
int main(void)
{
	printf("unit_attach_elf: attach supports x86-64 and aarch64 only\n");
	return 77;
}
#else

/* ---- this executable's own image ---- */

static int first_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(struct dl_phdr_info *)arg = *info;
	return 1; /* the executable comes first */
}

/* The slots of m naming name: how many, and how many hold want or are
 * unbound. */
static void slots_of(const attach_module_t *m, const char *name, uintptr_t want,
                     unsigned *n, unsigned *good)
{
	const ElfW(Rela) * tab[2] = {m->jmprel, m->rela};
	size_t cnt[2] = {m->njmp, m->nrela};
	*n = *good = 0;
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; tab[t] && i < cnt[t]; i++) {
			attach_reloc_t rc;
			if (!attach_reloc_get(m, &tab[t][i], &rc) ||
			    strcmp(rc.name, name))
				continue;
			(*n)++;
			uintptr_t v = *rc.at;
			if (v == want || attach_slot_lazy(m, &rc, v))
				(*good)++;
		}
}

static void test_self(void)
{
	/* Uses of the imported functions, kept by the volatile sink. */
	void *volatile p = malloc(16);
	p = realloc(p, 64);
	free(p);

	struct dl_phdr_info info;
	memset(&info, 0, sizeof info);
	dl_iterate_phdr(first_cb, &info);
	attach_module_t m;
	check(attach_module_parse(&info, &m) == 1);
	check_eq(m.name, "the executable");
	check(m.lo < m.hi);
	check(m.symtab && m.strtab);
	check(m.njmp + m.nrela > 0);
	check(attach_segment_has(&info, (uintptr_t)test_self));
	if (m.relro_hi)
		check(m.relro_lo <= m.relro_hi && m.relro_hi <= m.hi);
	static const char *const names[] = {"malloc", "realloc", "free"};
	for (int k = 0; k < 3; k++) {
		unsigned n, good;
		uintptr_t want = (uintptr_t)dlsym(RTLD_DEFAULT, names[k]);
		slots_of(&m, names[k], want, &n, &good);
		check(n >= 1);
		check_eq(good, n);
	}
	unsigned n, good;
	slots_of(&m, "mallock_not_imported", 0, &n, &good);
	check_eq(n, 0);
}

/* ---- a module in a buffer ---- */

static struct fake {
	ElfW(Dyn) dyn[8];
	ElfW(Sym) sym[2];
	char str[16];
	ElfW(Rela) rela[2];
	uintptr_t got[2];
	uintptr_t plt; /* an address inside the module */
} f;
static ElfW(Phdr) ph[2];
static struct dl_phdr_info fi;

/* A well-formed module: malloc imported through a GLOB_DAT slot, got[0],
 * and a JUMP_SLOT, got[1]. Base 0: the addresses are absolute. */
static void fake_build(void)
{
	memset(&f, 0, sizeof f);
	memcpy(f.str, "\0malloc", 8);
	f.sym[1].st_name = 1;
	f.sym[1].st_shndx = SHN_UNDEF;
	f.rela[0].r_offset = (uintptr_t)&f.got[0];
	f.rela[0].r_info = ELF64_R_INFO(1, ATTACH_R_GLOB_DAT);
	f.rela[1].r_offset = (uintptr_t)&f.got[1];
	f.rela[1].r_info = ELF64_R_INFO(1, ATTACH_R_JUMP_SLOT);
	ElfW(Dyn) d[] = {{DT_SYMTAB, {(uintptr_t)f.sym}},
	                 {DT_STRTAB, {(uintptr_t)f.str}},
	                 {DT_RELA, {(uintptr_t)f.rela}},
	                 {DT_RELASZ, {sizeof f.rela}},
	                 {DT_NULL, {0}}};
	memcpy(f.dyn, d, sizeof d);
	ph[0].p_type = PT_LOAD;
	ph[0].p_vaddr = (uintptr_t)&f;
	ph[0].p_memsz = sizeof f;
	ph[1].p_type = PT_DYNAMIC;
	ph[1].p_vaddr = (uintptr_t)f.dyn;
	ph[1].p_memsz = sizeof f.dyn;
	memset(&fi, 0, sizeof fi);
	fi.dlpi_addr = 0;
	fi.dlpi_name = "fake.so";
	fi.dlpi_phdr = ph;
	fi.dlpi_phnum = 2;
}

static void test_fake(void)
{
	attach_module_t m;
	attach_reloc_t rc;
	fake_build();
	check(attach_module_parse(&fi, &m) == 1);
	check_eq(m.name, "fake.so");
	check_eq(m.nrela, 2);
	check(m.jmprel == NULL);
	check(attach_reloc_get(&m, &m.rela[0], &rc) == 1);
	check_eq(rc.name, "malloc");
	check(rc.at == &f.got[0] && !rc.jump_slot);
	check(!attach_slot_lazy(&m, &rc, (uintptr_t)&f.plt));
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 1);
	check(rc.at == &f.got[1] && rc.jump_slot);
	check(attach_slot_lazy(&m, &rc, (uintptr_t)&f.plt));
	check(!attach_slot_lazy(&m, &rc, (uintptr_t)malloc));

	/* No DT_NULL inside the PT_DYNAMIC segment. */
	fake_build();
	for (int i = 4; i < 8; i++)
		f.dyn[i].d_tag = DT_DEBUG;
	check(attach_module_parse(&fi, &m) == 0);
	/* A string table outside the module. */
	fake_build();
	f.dyn[1].d_un.d_ptr = (uintptr_t)&f + sizeof f + 4096;
	check(attach_module_parse(&fi, &m) == 0);
	/* A relocation table running past the module's end. */
	fake_build();
	f.dyn[3].d_un.d_val = (size_t)1 << 40;
	check(attach_module_parse(&fi, &m) == 0);
	/* The dynamic section itself outside the loaded extent. */
	fake_build();
	ph[1].p_vaddr = (uintptr_t)&f + sizeof f;
	check(attach_module_parse(&fi, &m) == 0);
	/* No symbol table: not looked at. */
	fake_build();
	f.dyn[0].d_tag = DT_DEBUG;
	check(attach_module_parse(&fi, &m) == 0);

	/* Relocations naming a symbol, a name or a slot outside it. */
	fake_build();
	f.rela[0].r_info = ELF64_R_INFO((size_t)1 << 30, ATTACH_R_GLOB_DAT);
	f.rela[1].r_offset = (uintptr_t)&f + (sizeof f) * 4096;
	f.sym[1].st_name = 1u << 30;
	check(attach_module_parse(&fi, &m) == 1);
	check(attach_reloc_get(&m, &m.rela[0], &rc) == 0);
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 0);
	f.rela[1].r_offset = (uintptr_t)&f.got[1];
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 0); /* the name */
	f.sym[1].st_name = 1;
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 1);
	/* Another relocation type, or no symbol: not a slot. */
	f.rela[1].r_info = ELF64_R_INFO(1, 0);
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 0);
	f.rela[1].r_info = ELF64_R_INFO(0, ATTACH_R_JUMP_SLOT);
	check(attach_reloc_get(&m, &m.rela[1], &rc) == 0);
}

int main(void)
{
	test_run(test_self);
	test_run(test_fake);
	return test_done();
}
#endif
