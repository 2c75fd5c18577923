/*
 * symbols.c - symbolization with elfutils' Dwfl in offline mode: each
 * recorded module is reported at its recorded load bias, so the analyzer
 * needs the binaries (or their separate debug info) but not the process.
 *
 * Invariants:
 * - Frames are return addresses: lookups use address - 1, so a call that
 *   ends a function still names the caller's line.
 * - One Dwfl per file, shared by the models of the process (dwpool.c);
 *   results are cached by address, strings live in the symtab's arena.
 * - A module is used only when its build-id matches the recorded one (or
 *   none was recorded).
 * - Paths come from the trace, which may be forged: a module file is opened
 *   here (non-blocking, no controlling tty) and handed to libdw only when
 *   it is a regular file, and the separate debug files libdw would look
 *   for next to it are checked the same way first: a FIFO named by a MODULE
 *   record, or where its debug file would be, hung the report in open().
 * - At most SYM_MODULES_MAX modules, and SYM_FILE_BIASES of one file,
 *   reach libdw.
 * - A separate debug file found by build-id (--debug-dir, /usr/lib/debug,
 *   the debuginfod client's cache) is opened the same way and taken only
 *   when it carries the module's build-id and DWARF: never wrong names
 *   (debugfile.c).
 * - Frames that stay unnamed are counted by module and named in a note
 *   with how to get their symbols (sym_missing_notes).
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "symbols.h"

#include "cxxname.h"
#include "debugfile.h"
#include "dwpool.h"
#include "pkgowner.h"
#include "tccentral.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* From libstdc++ (C++ ABI); declared here so this file stays C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
                            int *status);

/* Module basenames whose frames are folded. X(prefix, fold) */
/* clang-format off */
#define FOLD_MODULES(X)                                                        \
	X("libmallock", SYM_SHIM)                                              \
	X("libunwind", SYM_SHIM)                                               \
	X("libc.so", SYM_RUNTIME)                                              \
	X("libc-", SYM_RUNTIME)                                                \
	X("libpthread", SYM_RUNTIME)                                           \
	X("libstdc++", SYM_RUNTIME)                                            \
	X("libtcmalloc", SYM_RUNTIME)                                          \
	X("libjemalloc", SYM_RUNTIME)                                          \
	X("libgcc_s", SYM_RUNTIME)                                             \
	X("ld-linux", SYM_RUNTIME)

/* Function names folded at the leaf end wherever they live (a statically
 * linked allocator, the program's own operator new). X(prefix) */
#define FOLD_FUNCTIONS(X)                                                      \
	X("malloc") X("calloc") X("realloc") X("free") X("cfree")              \
	X("posix_memalign") X("aligned_alloc") X("memalign") X("valloc")       \
	X("pvalloc") X("reallocarray") X("operator new") X("operator delete")  \
	X("pthread_mutex_") X("pthread_rwlock_") X("pthread_spin_")            \
	X("pthread_cond_") X("__GI_") X("__libc_") X("_int_") X("tc_")         \
	X("tcmalloc::") X("mallock_") X("__gnu_cxx::new_allocator")            \
	X("std::__new_allocator") X("__gthread_")                              \
	X("MallocHook::") X("MallocHook_")
/* clang-format on */

typedef struct cache_ent {
	uint32_t off, n;
} cache_ent_t;

struct symtab {
	bool on;             /* symbolization enabled and a module reported */
	uint32_t *pooled;    /* per module of m: its pool slot + 1, or 0 */
	sym_missing_t *miss; /* sym_missing_notes() */
	size_t nmiss, cap_miss;
	arena_t arena;
	u64map_t cache;
	cache_ent_t *ent;
	size_t nent, capent;
	frame_t *fr;
	size_t nfr, capfr;
	module_t **sorted; /* modules by lo */
	size_t nsorted;
	u64map_t shorts; /* hash of a short name -> index into grp */
	u64map_t fulls;  /* hash of a full name -> index into sn */
	shortgroup_t **grp;
	size_t ngrp, capgrp;
	shortname_t **sn;
	size_t nsn, capsn;
	/* per module of m: tcmalloc's central_cache_ (sym_tc_central),
	 * state 0 not looked for, 1 found, -1 none */
	int8_t *tc_state;
	uint64_t *tc_base, *tc_stride;
};

/* Modules handed to libdw at most, and load addresses of one file (one
 * inode) at most. A process maps each file once (a few times when it is
 * dlclosed and opened again) and rarely more than a few hundred files; a
 * forged trace of a million MODULE records naming one ELF file at distinct
 * addresses took 40 s and 600 MB per MB of trace (libdw maps the file for
 * each module and its report is quadratic in the modules). Counting by
 * inode, not by path, also covers other spellings of the path and links.
 * Beyond these, frames stay addresses and a note says so. */
#define SYM_MODULES_MAX 4096
#define SYM_FILE_BIASES 8

static int by_lo(const void *a, const void *b)
{
	const module_t *x = *(module_t *const *)a, *y = *(module_t *const *)b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void note(model_t *m, const char *fmt, const char *a, const char *b)
{
	char buf[600];
	snprintf(buf, sizeof buf, fmt, a, b);
	model_note(m, FMT_NOTE_WARN, buf, strlen(buf));
}

void sym_open(model_t *m, bool enable, const char *const *dirs)
{
	symtab_t *s = xcalloc(1, sizeof *s);
	sym_debug_dirs = dirs;
	m->sym = s;
	s->sorted = xcalloc(m->nmod + 1, sizeof *s->sorted);
	for (size_t i = 0; i < m->nmod; i++)
		s->sorted[s->nsorted++] = &m->mod[i];
	qsort(s->sorted, s->nsorted, sizeof *s->sorted, by_lo);
	if (!enable || !m->nmod)
		return;
	s->pooled = xcalloc(m->nmod, sizeof *s->pooled);
	s->on = true;
	u64map_t per_file = {0}; /* inode -> modules reported */
	size_t reported = 0, capped = 0;
	for (size_t i = 0; i < m->nmod; i++) {
		module_t *md = &m->mod[i];
		if (md->path[0] != '/')
			continue; /* [vdso] and the like */
		if (reported >= SYM_MODULES_MAX) {
			md->status = -1;
			capped++;
			continue;
		}
		struct stat st;
		int fd = sym_open_regular(md->path, &st);
		if (fd < 0) {
			md->status = -1;
			note(m,
			     "analyzer: module %s: %s; its frames are left as "
			     "addresses",
			     md->path,
			     errno == EINVAL ? "not a regular file"
			                     : strerror(errno));
			continue;
		}
		int added;
		uint64_t key = (uint64_t)st.st_ino * 0x9e3779b97f4a7c15ull ^
		               (uint64_t)st.st_dev;
		uint32_t *n = u64map_put(
		    &per_file, key == U64MAP_EMPTY ? key - 1 : key, &added);
		if (++*n > SYM_FILE_BIASES) {
			close(fd);
			md->status = -1;
			capped++;
			continue;
		}
		reported++;
		uint32_t slot = dwpool_get(md->path, fd, &st);
		s->pooled[i] = slot + 1;
		Dwfl_Module *dm = dwpool_module(slot);
		if (!dm) {
			md->status = -1;
			note(m,
			     "analyzer: module %s: %s; its frames are left as "
			     "addresses",
			     md->path,
			     dwpool_error(slot) ? dwpool_error(slot)
			                        : "no libdw");
			continue;
		}
		const unsigned char *bits;
		GElf_Addr vaddr;
		int len = dwfl_module_build_id(dm, &bits, &vaddr);
		if (md->build_id_len && len > 0 &&
		    ((uint32_t)len != md->build_id_len ||
		     memcmp(bits, md->build_id, (size_t)len) != 0)) {
			md->status = -2;
			note(m,
			     "analyzer: module %s: build-id differs from the "
			     "recorded one (%s): rebuilt since the recording? "
			     "its frames are left as addresses",
			     md->path, md->build_id_hex);
			continue;
		}
		md->status = 1;
	}
	u64map_free(&per_file);
	if (capped) {
		static const char msg[] =
		    "analyzer: more than 4096 modules, or more than 8 load "
		    "addresses of one file: the frames of the rest are left as "
		    "addresses";
		model_note(m, FMT_NOTE_WARN, msg, sizeof msg - 1);
	}
}

/* The libdw module of md, or NULL. */
static Dwfl_Module *dwfl_of(const model_t *m, const module_t *md)
{
	const symtab_t *s = m->sym;
	if (!s->pooled || md->status != 1)
		return NULL;
	uint32_t slot = s->pooled[md - m->mod];
	return slot ? dwpool_module(slot - 1) : NULL;
}

void sym_close(model_t *m)
{
	symtab_t *s = m->sym;
	if (!s)
		return;
	for (size_t i = 0; s->pooled && i < m->nmod; i++)
		if (s->pooled[i])
			dwpool_put(s->pooled[i] - 1);
	free(s->pooled);
	arena_free(&s->arena);
	u64map_free(&s->cache);
	free(s->ent);
	free(s->fr);
	free(s->sorted);
	u64map_free(&s->shorts);
	u64map_free(&s->fulls);
	for (size_t i = 0; i < s->nsn; i++)
		free(s->sn[i]);
	for (size_t i = 0; i < s->ngrp; i++)
		free(s->grp[i]);
	free(s->sn);
	free(s->grp);
	for (size_t i = 0; i < s->nmiss; i++)
		free(s->miss[i].package), free(s->miss[i].hint);
	free(s->miss);
	free(s->tc_state);
	free(s->tc_base);
	free(s->tc_stride);
	free(s);
	m->sym = NULL;
}

static module_t *module_of(const symtab_t *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nsorted;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->sorted[mid]->lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first module starting above addr; modules may overlap in
	 * synthetic traces, so look back a little. */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;)
		if (addr >= s->sorted[i]->lo && addr < s->sorted[i]->hi)
			return s->sorted[i];
	return NULL;
}

const char *sym_module_path(model_t *m, uint64_t addr)
{
	const module_t *md = m->sym ? module_of(m->sym, addr) : NULL;
	return md ? md->path : NULL;
}

static uint8_t fold_module(const char *path)
{
	if (!path)
		return SYM_USER;
	const char *b = path_base(path);
#define FOLD_MOD_(prefix, fold)                                                \
	if (strncmp(b, prefix, sizeof prefix - 1) == 0)                        \
		return fold;
	FOLD_MODULES(FOLD_MOD_)
#undef FOLD_MOD_
	return SYM_USER;
}

static uint8_t fold_function(const char *fn)
{
	if (!fn)
		return SYM_USER;
#define FOLD_FN_(prefix)                                                       \
	if (strncmp(fn, prefix, sizeof prefix - 1) == 0 &&                     \
	    (fn[sizeof prefix - 1] == 0 || fn[sizeof prefix - 1] == '(' ||     \
	     fn[sizeof prefix - 2] == '_' || fn[sizeof prefix - 2] == ':' ||   \
	     fn[sizeof prefix - 1] == '['))                                    \
		return SYM_RUNTIME;
	FOLD_FUNCTIONS(FOLD_FN_)
#undef FOLD_FN_
	return SYM_USER;
}

static const char *intern_name(symtab_t *s, const char *name)
{
	if (!name)
		return NULL;
	/* An ELF symbol version (__libc_start_main@@GLIBC_2.34) is not part
	 * of the function's name; it also keeps a C++ name from demangling. */
	char plain[1024];
	const char *at = strchr(name, '@');
	if (at && at > name && (size_t)(at - name) < sizeof plain) {
		memcpy(plain, name, (size_t)(at - name));
		plain[at - name] = 0;
		name = plain;
	}
	if (name[0] == '_' && name[1] == 'Z') {
		int st = 0;
		char *d = __cxa_demangle(name, NULL, NULL, &st);
		if (d && st == 0) {
			const char *r = arena_strdup(&s->arena, d);
			free(d);
			return r;
		}
		free(d);
	}
	return arena_strdup(&s->arena, name);
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &a))
		n = dwarf_formstring(&a);
	return n;
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h == U64MAP_EMPTY ? h - 1 : h;
}

/* The short name entry of full (NULL when it is its own short form). */
static const shortname_t *short_of(symtab_t *s, const char *full)
{
	char b[1024];
	if (!full || strcmp(cxx_short(full, b, sizeof b, false), full) == 0)
		return NULL;
	int added;
	uint32_t *v = u64map_put(&s->fulls, name_hash(full), &added);
	if (!added)
		return strcmp(s->sn[*v]->full, full) == 0 ? s->sn[*v] : NULL;
	uint32_t *g = u64map_put(&s->shorts, name_hash(b), &added);
	shortgroup_t *grp;
	if (added) {
		VEC_RESERVE(s->grp, s->capgrp, s->ngrp);
		grp = xcalloc(1, sizeof *grp); /* shortnames point to it */
		grp->text = arena_strdup(&s->arena, b);
		grp->full = full;
		s->grp[s->ngrp] = grp;
		*g = (uint32_t)s->ngrp++;
	} else {
		grp = s->grp[*g];
		if (strcmp(grp->text, b) != 0)
			return NULL; /* a hash collision: keep the full name */
		if (strcmp(grp->full, full) != 0)
			grp->ambiguous = true;
	}
	VEC_RESERVE(s->sn, s->capsn, s->nsn);
	shortname_t *e = xmalloc(sizeof *e); /* frames point to it */
	e->text = grp->text;
	e->full = full;
	e->params = arena_strdup(&s->arena, cxx_short(full, b, sizeof b, true));
	e->grp = grp;
	s->sn[s->nsn] = e;
	*v = (uint32_t)s->nsn++;
	return e;
}

const char *frame_name(const frame_t *f)
{
	if (!f->sn)
		return f->function;
	return f->sn->grp->ambiguous ? f->sn->params : f->sn->text;
}

/* Resolves addr into up to max frames at fr. */
static int resolve(model_t *m, uint64_t addr, frame_t *fr, int max)
{
	symtab_t *s = m->sym;
	module_t *md = module_of(s, addr);
	memset(fr, 0, sizeof *fr);
	fr->address = addr;
	fr->module = md ? md->path : NULL;
	fr->offset = md ? addr - md->bias : addr;
	fr->fold = fold_module(fr->module);
	if (!md || md->status != 1 || addr == 0)
		return 1;
	/* The file is reported at its link addresses (the pool). */
	Dwarf_Addr pc = addr - 1 - md->bias, bias = 0;
	Dwfl_Module *dm = dwfl_of(m, md);
	if (!dm)
		return 1;
	const char *sym = dwpool_addrname(s->pooled[md - m->mod] - 1, pc);
	Dwfl_Line *ln = dwfl_module_getsrc(dm, pc);
	int lineno = 0;
	const char *file =
	    ln ? dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL) : NULL;
	Dwarf_Die *cu = dwfl_module_addrdie(dm, pc, &bias);
	Dwarf_Die *scopes = NULL;
	int nsc = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
	if (nsc > 0) {
		/* dwarf_getscopes continues an inlined instance's chain from
		 * its abstract definition, which loses the functions it was
		 * inlined into; dwarf_getscopes_die on the innermost scope
		 * follows the concrete nesting (inlined_subroutine ...
		 * subprogram ... CU), as eu-addr2line -i does. */
		Dwarf_Die inner = scopes[0];
		Dwarf_Die *chain = NULL;
		int nch = dwarf_getscopes_die(&inner, &chain);
		if (nch > 0) {
			free(scopes);
			scopes = chain;
			nsc = nch;
		} else {
			free(chain);
		}
	}
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	int n = 0;
	const char *cur_file = file;
	int cur_line = lineno;
	for (int i = 0; i < nsc && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_subprogram &&
		    tag != DW_TAG_inlined_subroutine &&
		    tag != DW_TAG_entry_point)
			continue;
		frame_t *f = &fr[n++];
		*f = fr[0];
		f->address = addr;
		f->offset = addr - md->bias;
		f->module = md->path;
		f->fold = fold_module(md->path);
		f->inlined = tag == DW_TAG_inlined_subroutine;
		const char *name = die_name(&scopes[i]);
		if (!f->inlined && sym)
			name = sym;
		f->function = intern_name(s, name);
		f->file = cur_file ? arena_strdup(&s->arena, cur_file) : NULL;
		f->line = (uint32_t)(cur_line > 0 ? cur_line : 0);
		int decl = 0;
		f->start_line =
		    dwarf_decl_line(&scopes[i], &decl) == 0 && decl > 0
		        ? (uint32_t)decl
		        : 0;
		if (!f->inlined)
			break;
		Dwarf_Attribute a;
		Dwarf_Word v;
		cur_file = NULL;
		cur_line = 0;
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a),
		                    &v) == 0 &&
		    files)
			cur_file = dwarf_filesrc(files, v, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a),
		                    &v) == 0)
			cur_line = (int)v;
	}
	free(scopes);
	if (n == 0) {
		fr->function = intern_name(s, sym);
		fr->file = file ? arena_strdup(&s->arena, file) : NULL;
		fr->line = (uint32_t)(lineno > 0 ? lineno : 0);
		n = 1;
	}
	for (int i = 0; i < n; i++) {
		fr[i].sn = short_of(s, fr[i].function);
		if (fr[i].fold != SYM_USER)
			continue;
		fr[i].fold = fold_function(fr[i].function);
		/* Code inlined from the C++ standard library's headers (a
		 * container's node allocation) is folded at the leaf end like
		 * the allocator itself, so the site is the user's call of the
		 * container: tree_insert, not std::__new_allocator's allocate.
		 */
		if (fr[i].file && strstr(fr[i].file, "/include/c++/"))
			fr[i].fold = SYM_RUNTIME;
	}
	return n;
}

#define MAX_INLINE 16

bool sym_module_load(model_t *m, const module_t *md, uint64_t *start,
                     uint64_t *file_offset)
{
	symtab_t *s = m->sym;
	if (!s || md->status != 1)
		return false;
	Dwfl_Module *dm = dwfl_of(m, md);
	GElf_Addr bias = 0;
	Elf *elf = dm ? dwfl_module_getelf(dm, &bias) : NULL;
	size_t n = 0;
	if (!elf || elf_getphdrnum(elf, &n) != 0)
		return false;
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!found || ph.p_vaddr < *start - md->bias) {
			*start = md->bias + ph.p_vaddr;
			*file_offset = ph.p_offset;
			found = true;
		}
	}
	return found;
}

int sym_addr(model_t *m, uint64_t addr, const frame_t **out)
{
	symtab_t *s = m->sym;
	int added;
	uint64_t key = addr == U64MAP_EMPTY ? U64MAP_EMPTY - 1 : addr;
	uint32_t *v = u64map_put(&s->cache, key, &added);
	if (added) {
		frame_t tmp[MAX_INLINE];
		int n = resolve(m, addr, tmp, MAX_INLINE);
		VEC_RESERVE(s->fr, s->capfr, s->nfr + (size_t)n);
		memcpy(s->fr + s->nfr, tmp, (size_t)n * sizeof *tmp);
		VEC_RESERVE(s->ent, s->capent, s->nent);
		s->ent[s->nent].off = (uint32_t)s->nfr;
		s->ent[s->nent].n = (uint32_t)n;
		s->nfr += (size_t)n;
		*v = (uint32_t)s->nent++;
	}
	cache_ent_t *e = &s->ent[*v];
	*out = s->fr + e->off;
	return (int)e->n;
}

int stack_view(model_t *m, uint32_t si, frame_t *out, int max)
{
	if (si == NONE32 || max <= 0)
		return 0;
	const stk_t *st = &m->stk[si];
	if (!st->defined) {
		memset(out, 0, sizeof *out);
		out->function = "[unknown]";
		return 1;
	}
	int n = 0, leaf = 1, nall = 0;
	for (uint32_t i = 0; i < st->n && n < max; i++) {
		const frame_t *fr;
		int k = sym_addr(m, m->frames[st->off + i], &fr);
		for (int j = 0; j < k && n < max; j++) {
			nall++;
			if (fr[j].fold == SYM_SHIM)
				continue;
			if (leaf && fr[j].fold == SYM_RUNTIME)
				continue;
			leaf = 0;
			out[n++] = fr[j];
		}
	}
	/* Runtime frames at the root end (start_thread, clone, libc start)
	 * are folded too. */
	while (n > 1 && out[n - 1].fold == SYM_RUNTIME)
		n--;
	if (n == 0 && nall > 0) {
		/* Everything was internal: show it rather than nothing. */
		for (uint32_t i = 0; i < st->n && n < max; i++) {
			const frame_t *fr;
			int k = sym_addr(m, m->frames[st->off + i], &fr);
			for (int j = 0; j < k && n < max; j++)
				out[n++] = fr[j];
		}
	}
	return n;
}

bool sym_stack_site(model_t *m, uint32_t si, frame_t *out)
{
	memset(out, 0, sizeof *out);
	return stack_view(m, si, out, 1) == 1;
}

uint64_t stack_site_pc(model_t *m, uint32_t si)
{
	if (si == NONE32 || !m->stk[si].defined)
		return 0;
	const stk_t *st = &m->stk[si];
	for (uint32_t i = 0; i < st->n; i++) {
		const frame_t *fr;
		uint64_t a = m->frames[st->off + i];
		int k = sym_addr(m, a, &fr);
		if (fr[k - 1].fold == SYM_USER)
			return a;
	}
	return st->n ? m->frames[st->off] : 0;
}

const char *frame_label(const frame_t *f, char *buf, size_t len)
{
	const char *fn = frame_name(f);
	if (fn && f->file)
		snprintf(buf, len, "%s (%s:%u)", fn, path_base(f->file),
		         f->line);
	else if (fn && f->module)
		snprintf(buf, len, "%s (%s)", fn, path_base(f->module));
	else if (fn)
		snprintf(buf, len, "%s", fn);
	else if (f->module)
		snprintf(buf, len, "%s+0x%" PRIx64, path_base(f->module),
		         f->offset);
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
	return buf;
}

const char *sym_data(model_t *m, uint64_t addr, uint64_t *off)
{
	symtab_t *s = m->sym;
	const module_t *md = s ? module_of(s, addr) : NULL;
	Dwfl_Module *dm = md ? dwfl_of(m, md) : NULL;
	if (!dm)
		return NULL;
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(dm, addr - md->bias, &o, &sym,
	                                        NULL, NULL, NULL);
	if (!name || (GELF_ST_TYPE(sym.st_info) != STT_OBJECT &&
	              GELF_ST_TYPE(sym.st_info) != STT_TLS))
		return NULL;
	if (sym.st_size && o >= sym.st_size)
		return NULL;
	*off = o;
	return intern_name(s, name);
}

#define TC_CENTRAL_MAX 256 /* kClassSizesMax is 128 in gperftools 2.x */

int sym_tc_central(model_t *m, uint64_t addr, uint64_t *index)
{
	symtab_t *s = m->sym;
	const module_t *md = s ? module_of(s, addr) : NULL;
	Dwfl_Module *dm = md ? dwfl_of(m, md) : NULL;
	if (!dm)
		return 0;
	if (!s->tc_state) {
		s->tc_state = xcalloc(m->nmod, sizeof *s->tc_state);
		s->tc_base = xcalloc(m->nmod, sizeof *s->tc_base);
		s->tc_stride = xcalloc(m->nmod, sizeof *s->tc_stride);
	}
	size_t mi = (size_t)(md - m->mod);
	if (!s->tc_state[mi])
		s->tc_state[mi] =
		    tc_central_of(dm, &s->tc_base[mi], &s->tc_stride[mi]) ? 1
		                                                          : -1;
	if (s->tc_state[mi] != 1)
		return 0;
	uint64_t base = s->tc_base[mi], stride = s->tc_stride[mi];
	uint64_t v = addr - md->bias;
	if (v < base || (v - base) % stride ||
	    (v - base) / stride >= TC_CENTRAL_MAX)
		return 0;
	*index = (v - base) / stride;
	return 1;
}

#define SYM_MISSING_MAX 8 /* modules named in notes, and asked of dpkg */

size_t sym_missing(const model_t *m, const sym_missing_t **out)
{
	*out = m->sym ? m->sym->miss : NULL;
	return m->sym ? m->sym->nmiss : 0;
}

size_t sym_missing_notes(model_t *m)
{
	symtab_t *s = m->sym;
	if (!s || !s->on || !m->nmod)
		return 0;
	uint64_t *cnt = xcalloc(m->nmod, sizeof *cnt);
	for (size_t i = 0; i < s->nent; i++) {
		const frame_t *f = &s->fr[s->ent[i].off];
		if (f->function || f->fold != SYM_USER || !f->module)
			continue;
		module_t *md = module_of(s, f->address);
		if (md && md->status == 1)
			cnt[md - m->mod]++;
	}
	uint64_t total = 0;
	size_t nmods = 0;
	for (size_t i = 0; i < m->nmod; i++)
		if (cnt[i]) {
			total += cnt[i];
			nmods++;
		}
	if (!total) {
		free(cnt);
		return 0;
	}
	char buf[1200];
	snprintf(buf, sizeof buf,
	         "symbols: %" PRIu64 " return address%s in %zu module%s "
	         "stayed unnamed (no symbols, no debug file found)",
	         total, total == 1 ? "" : "es", nmods, nmods == 1 ? "" : "s");
	model_note(m, FMT_NOTE_WARN, buf, strlen(buf));
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t deadline = (uint64_t)ts.tv_sec * 1000000000u +
	                    (uint64_t)ts.tv_nsec + 3000000000u;
	bool dpkg = true;
	for (size_t k = 0; k < SYM_MISSING_MAX && k < nmods; k++) {
		size_t best = 0; /* the module with the most, in turn */
		for (size_t i = 1; i < m->nmod; i++)
			if (cnt[i] > cnt[best])
				best = i;
		module_t *md = &m->mod[best];
		VEC_RESERVE(s->miss, s->cap_miss, s->nmiss);
		sym_missing_t *e = &s->miss[s->nmiss++];
		memset(e, 0, sizeof *e);
		e->module = md->path;
		e->build_id = md->build_id_hex;
		e->frames = cnt[best];
		cnt[best] = 0;
		/* dpkg knows a path as installed: with merged /usr,
		 * /lib/x86_64-linux-gnu/libfoo.so.1 rather than /usr/lib/... */
		char pkg[200], *canon = realpath(md->path, NULL);
		errno = 0;
		if (dpkg &&
		    (dpkg_owner(md->path, pkg, sizeof pkg, deadline) == 0 ||
		     (errno != ENOENT && canon &&
		      strcmp(canon, md->path) != 0 &&
		      dpkg_owner(canon, pkg, sizeof pkg, deadline) == 0)))
			e->package = xstrdup(pkg);
		else if (errno == ENOENT)
			dpkg = false;
		bool slow = !e->package && errno == ETIMEDOUT;
		free(canon);
		char hint[900];
		if (slow) /* a package may own it: do not say "build it" */
			snprintf(
			    hint, sizeof hint,
			    "`dpkg -S` did not answer in time: if a package "
			    "owns it, install its -dbgsym package; or pass "
			    "--debug-dir DIR holding its debug file");
		else if (e->package)
			snprintf(
			    hint, sizeof hint,
			    "install %s-dbgsym (`dpkg -S` says %s owns it; "
			    "from Debian's debug archive), or pass "
			    "--debug-dir DIR holding its debug file",
			    e->package, e->package);
		else if (md->build_id_hex && md->build_id_hex[0])
			snprintf(hint, sizeof hint,
			         "build it with -g, or pass --debug-dir DIR "
			         "holding its debug file "
			         "(DIR/.build-id/%.2s/%s.debug, "
			         "or its .gnu_debuglink name)",
			         md->build_id_hex, md->build_id_hex + 2);
		else
			snprintf(
			    hint, sizeof hint,
			    "build it with -g, or pass --debug-dir DIR "
			    "holding its debug file (its .gnu_debuglink name)");
		snprintf(buf, sizeof buf, "symbols: %" PRIu64 " in %s: %s",
		         e->frames, md->path, hint);
		model_note(m, FMT_NOTE_WARN, buf, strlen(buf));
		e->hint = xstrdup(hint);
	}
	free(cnt);
	return s->nmiss;
}
