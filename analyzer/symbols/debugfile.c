/*
 * debugfile.c - the separate debug file of a stripped module, for libdw's
 * offline Dwfl (symbols.c): by build-id under --debug-dir, /usr/lib/debug
 * and the debuginfod client's cache, then libdw's standard search by
 * debuglink. Every candidate is opened non-blocking and taken only when it
 * is a regular ELF file with the module's build-id and DWARF (debugfile.h).
 */
#define _GNU_SOURCE /* O_CLOEXEC */
#include "debugfile.h"

#include "util.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens path for reading only if it is a regular file: O_NONBLOCK so that
 * a FIFO without a writer does not block the open (a regular file ignores
 * the flag, which is cleared anyway), O_NOCTTY so that a tty does not
 * become ours. Returns the fd and its status in *st, or -1 with errno set
 * (EINVAL: not a regular file). The caller owns the fd. */
int sym_open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

/* 1 when path exists and is not a regular file (stat follows links). */
static int not_regular(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

/* 0 when none of the places libdw looks for the separate debug file of
 * file (an absolute path) is there as something else than a regular file:
 * DIR/LINK, DIR/.debug/LINK and /usr/lib/debug/DIR/LINK, LINK being the
 * module's .gnu_debuglink name (link) or BASE.debug. */
static int debug_paths_ok(const char *file, const char *link)
{
	const char *b = path_base(file);
	int dlen = (int)(b - file); /* with the trailing '/' */
	char name[256], cand[3][PATH_MAX + 300];
	if (link)
		snprintf(name, sizeof name, "%s", link);
	else
		snprintf(name, sizeof name, "%s.debug", b);
	snprintf(cand[0], sizeof cand[0], "%.*s%s", dlen, file, name);
	snprintf(cand[1], sizeof cand[1], "%.*s.debug/%s", dlen, file, name);
	snprintf(cand[2], sizeof cand[2], "/usr/lib/debug%.*s%s", dlen, file,
	         name);
	for (int i = 0; i < 3; i++)
		if (not_regular(cand[i]))
			return -1;
	return 0;
}

/* The directories of --debug-dir (NULL-terminated, or NULL), searched
 * before the system's; set by sym_open, read by the Dwfl callback below. */
const char *const *sym_debug_dirs;

/* Opens candidate path as a separate debug file of a module whose build-id
 * is id[0..len): a regular file (open_regular: a FIFO does not block) that
 * is an ELF file with the same build-id and DWARF (.debug_info). Returns
 * the fd (the caller owns it) or -1. */
static int open_debug_candidate(const char *path, const unsigned char *id,
                                int len)
{
	struct stat st;
	int fd = sym_open_regular(path, &st);
	if (fd < 0)
		return -1;
	int ok = 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e) {
		const void *bits;
		ssize_t n = dwelf_elf_gnu_build_id(e, &bits);
		ok = n == len && memcmp(bits, id, (size_t)len) == 0;
		size_t shstrndx;
		int dwarf = 0;
		if (ok && elf_getshdrstrndx(e, &shstrndx) == 0)
			for (Elf_Scn *sc = NULL; (sc = elf_nextscn(e, sc));) {
				GElf_Shdr sh;
				const char *nm =
				    gelf_getshdr(sc, &sh)
				        ? elf_strptr(e, shstrndx, sh.sh_name)
				        : NULL;
				if (nm && strcmp(nm, ".debug_info") == 0 &&
				    sh.sh_type != SHT_NOBITS)
					dwarf = 1;
			}
		ok = ok && dwarf;
		elf_end(e);
	}
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The separate debug files a stripped module may have,
 * by its build-id, in order: DIR/.build-id/xx/rest.debug for each
 * --debug-dir DIR and /usr/lib/debug; DIR/LINK and DIR/<module's dir>/LINK
 * for each --debug-dir (LINK: the .gnu_debuglink name, else BASE.debug);
 * the debuginfod client's cache ($DEBUGINFOD_CACHE_PATH,
 * $XDG_CACHE_HOME/debuginfod_client, ~/.cache/debuginfod_client:
 * <build-id>/debuginfo), which libdw reads only when DEBUGINFOD_URLS is
 * set. Only a file with the module's build-id is taken. Returns an fd and
 * its path in *name (malloc'd), or -1. */
static int find_by_build_id(Dwfl_Module *mod, const char *file_name,
                            const char *link, char **name)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	if (len <= 1 || len > 64)
		return -1;
	char hex[130];
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	const char *roots[34];
	size_t nr = 0;
	for (size_t i = 0; sym_debug_dirs && sym_debug_dirs[i] && nr < 32; i++)
		roots[nr++] = sym_debug_dirs[i];
	size_t nuser = nr;
	roots[nr++] = "/usr/lib/debug";
	char base[256] = "", dir[PATH_MAX] = "";
	if (file_name && file_name[0] == '/') {
		const char *b = path_base(file_name);
		snprintf(base, sizeof base, "%s", link ? link : "");
		if (!link)
			snprintf(base, sizeof base, "%s.debug", b);
		snprintf(dir, sizeof dir, "%.*s", (int)(b - file_name),
		         file_name);
	}
	const char *env[3] = {getenv("DEBUGINFOD_CACHE_PATH"),
	                      getenv("XDG_CACHE_HOME"), getenv("HOME")};
	char cand[PATH_MAX + 512];
	for (int pass = 0; pass < 3; pass++) {
		size_t ncand = pass == 0 ? nr : pass == 1 ? 2 * nuser : 3;
		for (size_t i = 0; i < ncand; i++) {
			cand[0] = 0;
			if (pass == 0)
				snprintf(cand, sizeof cand,
				         "%s/.build-id/%.2s/%s.debug", roots[i],
				         hex, hex + 2);
			else if (pass == 1 && base[0] && !strchr(base, '/'))
				snprintf(cand, sizeof cand, "%s/%s%s",
				         roots[i / 2], i % 2 ? dir : "", base);
			else if (pass == 2 && env[i] && env[i][0] == '/')
				snprintf(cand, sizeof cand,
				         i == 0 ? "%s/%s/debuginfo"
				         : i == 1
				             ? "%s/debuginfod_client/%s/"
				               "debuginfo"
				             : "%s/.cache/debuginfod_client/"
				               "%s/debuginfo",
				         env[i], hex);
			if (!cand[0])
				continue;
			int fd = open_debug_candidate(cand, id, len);
			if (fd >= 0) {
				*name = xstrdup(cand);
				return fd;
			}
		}
	}
	return -1;
}

/*
 * The separate debug file of a module: first by build-id
 * (find_by_build_id), then libdw's standard debuginfo search, after
 * checking the places of that search that depend on the module's path
 * (the trace's), for the path and,
 * when it is a link, for the file it names (libdw tries both): if one of
 * them exists and is not a regular file, the search is skipped and the
 * module keeps its own symbols, because libdw opens those candidates with
 * a blocking open(). The build-id paths (/usr/lib/debug/.build-id/) are
 * under a system directory, not the trace's. A file swapped for a FIFO
 * between this check and libdw's open is not covered: that needs a local
 * attacker racing the report.
 */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                       Dwarf_Addr base, const char *file_name,
                       const char *debuglink_file, GElf_Word debuglink_crc,
                       char **debuginfo_file_name)
{
	int fd = find_by_build_id(mod, file_name, debuglink_file,
	                          debuginfo_file_name);
	if (fd >= 0)
		return fd;
	if (file_name && file_name[0] == '/') {
		if (debug_paths_ok(file_name, debuglink_file) < 0)
			return -1;
		char *canon = realpath(file_name, NULL);
		int bad = canon && debug_paths_ok(canon, debuglink_file) < 0;
		free(canon);
		if (bad)
			return -1;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base,
	                                    file_name, debuglink_file,
	                                    debuglink_crc, debuginfo_file_name);
}
