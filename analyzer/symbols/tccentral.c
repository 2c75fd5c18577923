/*
 * tccentral.c - where tcmalloc's (gperftools) central free lists are in a
 * module (tccentral.h), read from the machine code of its
 * Static::InitStaticVars(), for sym_tc_central (symbols.c).
 *
 * Invariants:
 * - Reads only the module's own ELF data through libdw: no file is opened
 *   and nothing allocated here (libdw caches the module's symbol table).
 * - At most the function's first 4096 bytes are scanned, never past the
 *   end of the section holding it (the module may be forged).
 * - An answer only when the code shows exactly one (lea, add) pair on one
 *   register: otherwise none, never a guess.
 */
#include "tccentral.h"

#include <string.h>

/* tcmalloc's central free lists (gperftools): Static::central_cache_ is a
 * file-local array of CentralFreeListPadded, one per size class, each
 * starting with its SpinLock. Static::InitStaticVars() (exported) walks
 * it: `lea central_cache_(%rip),%R` then, in the loop that calls
 * CentralFreeList::Init, `add $sizeof(element),%R`. The array's start and
 * element size are read from that code, so a stripped libtcmalloc (no
 * central_cache_ symbol) still names them; an unstripped one names the
 * array by its symbol too (its size / element size = classes). 0 when the
 * module has no InitStaticVars or its code does not show exactly one such
 * (lea, add) pair on one register. */
#define TC_INIT_SYM "_ZN8tcmalloc6Static14InitStaticVarsEv"

int tc_central_of(Dwfl_Module *dm, uint64_t *base, uint64_t *stride)
{
	int n = dwfl_module_getsymtab(dm);
	GElf_Sym sym;
	GElf_Addr a;
	Elf *elf = NULL;
	int found = 0;
	for (int i = 0; i < n && !found; i++) {
		const char *nm =
		    dwfl_module_getsym_info(dm, i, &sym, &a, NULL, NULL, NULL);
		if (nm && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    sym.st_shndx != SHN_UNDEF && strcmp(nm, TC_INIT_SYM) == 0)
			found = 1;
	}
	GElf_Addr bias;
	if (!found || !(elf = dwfl_module_getelf(dm, &bias)))
		return 0;
	/* The function's bytes, from the section (of the main file) that
	 * holds them: st_value is the ELF file's own address. */
	uint64_t fv = sym.st_value, fsz = sym.st_size ? sym.st_size : 1024;
	if (fsz > 4096)
		fsz = 4096;
	const unsigned char *b = NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    fv < sh.sh_addr || fv - sh.sh_addr >= sh.sh_size)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || fv - sh.sh_addr >= d->d_size)
			return 0;
		if (fsz > d->d_size - (fv - sh.sh_addr))
			fsz = d->d_size - (fv - sh.sh_addr);
		b = (const unsigned char *)d->d_buf + (fv - sh.sh_addr);
		break;
	}
	if (!b || fsz < 14)
		return 0;
	uint64_t lea[16] = {0};
	int pairs = 0;
	for (uint64_t i = 0; i + 7 <= fsz; i++) {
		/* lea disp32(%rip),%R: REX.W(.R) 8d, modrm mod 00 rm 101 */
		if ((b[i] == 0x48 || b[i] == 0x4c) && b[i + 1] == 0x8d &&
		    (b[i + 2] & 0xc7) == 0x05) {
			int r = ((b[i + 2] >> 3) & 7) | (b[i] == 0x4c ? 8 : 0);
			int32_t disp;
			memcpy(&disp, b + i + 3, 4);
			lea[r] = fv + i + 7 + (uint64_t)(int64_t)disp;
			continue;
		}
		/* add $imm32,%R: REX.W(.B) 81, modrm mod 11 reg 000 */
		if ((b[i] == 0x48 || b[i] == 0x49) && b[i + 1] == 0x81 &&
		    (b[i + 2] & 0xf8) == 0xc0) {
			int r = (b[i + 2] & 7) | (b[i] == 0x49 ? 8 : 0);
			int32_t imm;
			memcpy(&imm, b + i + 3, 4);
			if (lea[r] && imm >= 64 && imm <= 65536) {
				*base = lea[r];
				*stride = (uint64_t)imm;
				pairs++;
				lea[r] = 0;
			}
		}
	}
	return pairs == 1;
}
