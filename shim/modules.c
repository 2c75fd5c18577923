/*
 * modules.c - MODULE records from dl_iterate_phdr (modules.h).
 */
#include "modules.h"

#include "prim.h"
#include "trace_format.h"
#include "writer.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic unsigned long long last_adds = ~0ull;
static char exe_path[1024];

/* Finds the NT_GNU_BUILD_ID note of an object; returns its length. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4)) {
				*id = desc;
				return nh->n_descsz;
			}
			p = next;
		}
	}
	return 0;
}

static int emit_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)arg;
	(void)size;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	if (!*path) {
		/* The main executable (dl_iterate_phdr names it ""). */
		if (!exe_path[0])
			prim_exe_path(exe_path, sizeof exe_path);
		path = exe_path;
	}
	const uint8_t *id = NULL;
	size_t idlen = build_id(info, &id);
	uint8_t body[5 * FMT_VARINT_MAX + 1024 + 64], *p = body;
	size_t plen = strlen(path);
	if (plen > 1024)
		plen = 1024;
	if (idlen > 64)
		idlen = 64;
	p = fmt_put_u(p, info->dlpi_addr);
	p = fmt_put_u(p, lo);
	p = fmt_put_u(p, hi);
	p = fmt_put_str(p, path, plen);
	p = fmt_put_u(p, idlen);
	if (idlen) {
		memcpy(p, id, idlen);
		p += idlen;
	}
	writer_proc_meta(FMT_MODULE, body, (size_t)(p - body));
	return 0;
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1; /* one callback is enough */
}

void modules_emit(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(read_adds, &adds);
	atomic_store(&last_adds, adds);
	dl_iterate_phdr(emit_one, NULL);
}

void modules_check(void)
{
	unsigned long long adds = 0;
	dl_iterate_phdr(read_adds, &adds);
	if (adds == atomic_load(&last_adds) || !writer_active())
		return;
	writer_proc_begin();
	modules_emit();
	writer_proc_end();
}
