/*
 * dwpool.c - the files handed to libdw (dwpool.h), each alone in a Dwfl of
 * its own, shared by every model of the process.
 *
 * A report of many traces (a build's 55 processes) maps the same few
 * binaries, and each Dwfl of its own decoded their debug sections again
 * (libdw inflating libc's and libstdc++'s: 20 MB and 0.4 s per trace). A
 * file is reported once, alone in its own Dwfl at its link addresses
 * (bias 0), and looked up at address - the module's recorded bias.
 *
 * Invariants:
 * - Keyed by path and the file's identity (device, inode, size, mtime), so
 *   a file rebuilt between two recordings is a file of its own; slots of
 *   one hash are chained from pool_map.
 * - Counted by the models that use it; one no model uses is kept for the
 *   next trace (a report frees each trace's model before it reads the
 *   next), up to POOL_IDLE files, the least recently used freed first.
 * - A slot's Dwfl_Module stays valid while the slot is referenced; the
 *   pool array may move on dwpool_get, so callers keep slots, not
 *   pointers.
 * - libdw's name for an address (dwpool_addrname) is kept with the file:
 *   it searches the symbol table from end to end for each address (1.6 ms
 *   in cc1's 28898 dynamic symbols), and the traces of one build look the
 *   same addresses up again (17 cc1 processes: 2767 lookups, 726
 *   distinct). The names are libdw's strings, valid while its Dwfl is.
 * - Process-wide static state, not locked: the analyzer runs one thread.
 */
#define _GNU_SOURCE /* struct stat st_mtim */
#include "dwpool.h"

#include "debugfile.h"
#include "u64map.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const Dwfl_Callbacks offline_cb = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = sym_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

#define POOL_IDLE 64
typedef struct pooled {
	char *path;
	uint64_t dev, ino, size, mtime_ns;
	Dwfl *dwfl;
	Dwfl_Module *dm; /* NULL: libdw refused it (err says why) */
	char *err;
	uint32_t refs;
	uint64_t idle_since; /* pool_clock when refs fell to 0 */
	uint32_t next;       /* slot + 1 of the next with the same hash, or 0 */
	u64map_t names;      /* link pc -> index into name (dwpool_addrname) */
	const char **name;   /* libdw's answers: its strings, or NULL */
	size_t nname, capname;
} pooled_t;

static pooled_t *pool;
static size_t npool, cappool;
static u64map_t pool_map; /* hash -> slot + 1 of the chain's first */
static uint64_t pool_clock;
static size_t pool_idle;

static uint64_t pool_hash(const char *path, const struct stat *st)
{
	uint64_t h = 14695981039346656037ull ^ (uint64_t)st->st_ino;
	for (const char *c = path; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	h ^= (uint64_t)st->st_dev * 0x9e3779b97f4a7c15ull;
	h ^= (uint64_t)st->st_mtim.tv_nsec + (uint64_t)st->st_size;
	return h == U64MAP_EMPTY ? h - 1 : h;
}

uint32_t dwpool_get(const char *path, int fd, const struct stat *st)
{
	uint64_t h = pool_hash(path, st);
	int added;
	uint32_t *first = u64map_put(&pool_map, h, &added);
	if (added)
		*first = 0;
	uint64_t mt = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
	              (uint64_t)st->st_mtim.tv_nsec;
	for (uint32_t i = *first; i; i = pool[i - 1].next) {
		pooled_t *e = &pool[i - 1];
		if (e->ino == (uint64_t)st->st_ino &&
		    e->dev == (uint64_t)st->st_dev &&
		    e->size == (uint64_t)st->st_size && e->mtime_ns == mt &&
		    strcmp(e->path, path) == 0) {
			close(fd);
			if (!e->refs++)
				pool_idle--;
			return i - 1;
		}
	}
	size_t slot = npool;
	for (size_t i = 0; i < npool; i++)
		if (!pool[i].path) {
			slot = i;
			break;
		}
	if (slot == npool) {
		VEC_RESERVE(pool, cappool, npool);
		npool++;
	}
	pooled_t *e = &pool[slot];
	memset(e, 0, sizeof *e);
	e->path = xstrdup(path);
	e->dev = (uint64_t)st->st_dev;
	e->ino = (uint64_t)st->st_ino;
	e->size = (uint64_t)st->st_size;
	e->mtime_ns = mt;
	e->refs = 1;
	e->next = *first;
	*first = (uint32_t)slot + 1;
	e->dwfl = dwfl_begin(&offline_cb);
	if (e->dwfl) {
		dwfl_report_begin(e->dwfl);
		/* On success libdw owns fd; on failure it is ours. */
		e->dm = dwfl_report_elf(e->dwfl, path_base(path), path, fd, 0,
		                        false);
		if (!e->dm) {
			e->err = xstrdup(dwfl_errmsg(-1));
			close(fd);
		}
		dwfl_report_end(e->dwfl, NULL, NULL);
	} else {
		e->err = xstrdup(dwfl_errmsg(-1));
		close(fd);
	}
	return (uint32_t)slot;
}

static void pool_free(uint32_t slot);

void dwpool_put(uint32_t slot)
{
	pooled_t *e = &pool[slot];
	if (--e->refs)
		return;
	e->idle_since = ++pool_clock;
	if (++pool_idle <= POOL_IDLE)
		return;
	size_t old = slot;
	for (size_t i = 0; i < npool; i++)
		if (pool[i].path && !pool[i].refs &&
		    pool[i].idle_since < pool[old].idle_since)
			old = i;
	pool_idle--;
	pool_free((uint32_t)old);
}

/* Frees an idle slot: its libdw state, its place in the hash's chain. */
static void pool_free(uint32_t slot)
{
	pooled_t *e = &pool[slot];
	struct stat st = {0};
	st.st_dev = (dev_t)e->dev;
	st.st_ino = (ino_t)e->ino;
	st.st_size = (off_t)e->size;
	st.st_mtim.tv_sec = (time_t)(e->mtime_ns / 1000000000u);
	st.st_mtim.tv_nsec = (long)(e->mtime_ns % 1000000000u);
	uint64_t h = pool_hash(e->path, &st);
	uint32_t *first = u64map_put(&pool_map, h, &(int){0});
	for (uint32_t *link = first; *link; link = &pool[*link - 1].next)
		if (*link == slot + 1) {
			*link = e->next;
			break;
		}
	uint32_t gone;
	if (!*first)
		u64map_del(&pool_map, h, &gone);
	if (e->dwfl)
		dwfl_end(e->dwfl);
	u64map_free(&e->names);
	free(e->name);
	free(e->path);
	free(e->err);
	memset(e, 0, sizeof *e);
	if (slot + 1 == npool)
		npool--;
}

Dwfl_Module *dwpool_module(uint32_t slot)
{
	return pool[slot].dm;
}

const char *dwpool_error(uint32_t slot)
{
	return pool[slot].err;
}

const char *dwpool_addrname(uint32_t slot, Dwarf_Addr pc)
{
	pooled_t *e = &pool[slot];
	if (!e->dm)
		return NULL;
	if (pc == U64MAP_EMPTY)
		return dwfl_module_addrname(e->dm, pc);
	int added;
	uint32_t *v = u64map_put(&e->names, pc, &added);
	if (added) {
		VEC_RESERVE(e->name, e->capname, e->nname);
		e->name[e->nname] = dwfl_module_addrname(e->dm, pc);
		*v = (uint32_t)e->nname++;
	}
	return e->name[*v];
}
