/*
 * modules.c - MODULE records from dl_iterate_phdr (modules.h).
 *
 * Lock order: the loader's lock, then the writer's proc_lock (records are
 * written from inside the dl_iterate_phdr callback). Never the reverse: a
 * thread holding proc_lock while it waits for the loader would deadlock
 * with a fork (the fork hook holds the loader's lock and fork_prepare takes
 * proc_lock), or with a host thread that allocates inside its own
 * dl_iterate_phdr callback and flushes.
 *
 * The records of the last full pass are kept (snap, in mmap'd memory) for
 * a fork child that may not call dl_iterate_phdr (modules_fork_child).
 */
#include "modules.h"

#include "prim.h"
#include "trace_format.h"
#include "writer.h"

#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

static unsigned long long last_adds = ~0ull; /* under the loader's lock */
static int loader_unsafe; /* fork child: dl_iterate_phdr may never return */
#define SNAP_CAP (1u << 20)
static uint8_t *snap;   /* MODULE bodies: u32 length, then the body */
static size_t snap_len; /* complete records (under the loader's lock) */

typedef struct pass {
	int force, first, began;
} pass_t;
static char exe_path[1024];

/* Finds the NT_GNU_BUILD_ID note of an object; returns its length. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p =
		    (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof *nh;
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
				*id = desc;
				return nh->n_descsz;
			}
			p = next;
		}
	}
	return 0;
}

static void snap_add(const uint8_t *body, size_t len)
{
	if (!snap)
		snap = prim_map(SNAP_CAP);
	if (!snap || snap_len + 4 + len > SNAP_CAP)
		return;
	uint32_t n = (uint32_t)len;
	memcpy(snap + snap_len + 4, body, len);
	memcpy(snap + snap_len, &n, 4);
	snap_len += 4 + len; /* after the bytes: a fork sees whole records */
}

/* Called by dl_iterate_phdr for each object, with the loader's lock held. */
static int emit_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	pass_t *ps = arg;
	if (ps->first) {
		ps->first = 0;
		unsigned long long adds =
		    size >= offsetof(struct dl_phdr_info, dlpi_subs)
		        ? info->dlpi_adds
		        : 0;
		if (!ps->force && adds == last_adds)
			return 1;    /* nothing loaded since the last pass */
		writer_proc_begin(); /* may open a child's file (nests) */
		ps->began = 1;
		last_adds = adds;
		snap_len = 0;
	}
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
	snap_add(body, (size_t)(p - body));
	writer_proc_meta(FMT_MODULE, body, (size_t)(p - body));
	return 0;
}

static void pass(int force)
{
	if (loader_unsafe) {
		if (!force)
			return;
		/* The parent's last list: no dl_iterate_phdr here. */
		writer_proc_begin();
		for (size_t o = 0; snap && o + 4 <= snap_len;) {
			uint32_t n;
			memcpy(&n, snap + o, 4);
			writer_proc_meta(FMT_MODULE, snap + o + 4, n);
			o += 4 + n;
		}
		writer_proc_end();
		return;
	}
	pass_t ps = {force, 1, 0};
	dl_iterate_phdr(emit_one, &ps);
	if (ps.began)
		writer_proc_end();
}

void modules_emit(void)
{
	pass(1);
}

void modules_check(void)
{
	if (writer_active())
		pass(0);
}

void modules_fork_child(int safe)
{
	loader_unsafe = !safe;
}

int modules_loader_unsafe(void)
{
	return loader_unsafe;
}
