/*
 * static_tcmalloc - a program with a statically linked tcmalloc: the shim
 * warns once (on stderr, and a WARN NOTE in the trace), records the
 * allocations through gperftools' MallocHook API (fn HOOK), and the lock
 * hooks keep working. Every trace holds two INFO NOTEs anyway ("tracing
 * to", the stack cache's summary): the warning is matched by its level and
 * text, not counted among NOTEs.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <fcntl.h>

#define WARNING                                                                \
	"ahead of the shim (a statically linked allocator): "                  \
	"recording allocations through its MallocHook API"

static uint64_t hooked, warn_notes, other_warns;

static int cb(const fmt_chunk_header_t *h, const fmt_record_t *r, void *arg)
{
	tr_thread_t *t = tr_thread(arg, h->tid);
	if (t && !strcmp(t->name, "worker") && r->type == FMT_ALLOC &&
	    r->f[4] == FMT_FN_HOOK)
		hooked++;
	if (r->type == FMT_NOTE) {
		const uint8_t *p = r->body, *end = r->body + r->body_len;
		uint64_t level;
		const char *text;
		size_t len;
		if (fmt_get_u(&p, end, &level) == 0 &&
		    fmt_get_str(&p, end, &text, &len) == 0 &&
		    level == FMT_NOTE_WARN) {
			if (memmem(text, len, WARNING, strlen(WARNING)))
				warn_notes++;
			else
				other_warns++;
		}
	}
	return 0;
}

/* Occurrences of needle in the file at path (-1 if unreadable). */
static int count_in_file(const char *path, const char *needle)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	int k = 0;
	for (char *p = buf; (p = strstr(p, needle)); p += strlen(needle))
		k++;
	return k;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	st_setup(argc, argv);
	if (argc < 4)
		return 2;
	/* The child's stderr, into a file beside TMPDIR (which must hold the
	 * trace alone). */
	char errpath[600];
	snprintf(errpath, sizeof errpath, "%s.stderr", st_dir);
	int saved = dup(2);
	int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	check(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	int rc = st_run_exe(argv[3], NULL, NULL);
	dup2(saved, 2);
	close(saved);
	check_eq(rc, 0);
	check_eq(count_in_file(errpath, WARNING), 1);
	check_eq(count_in_file(errpath, "mallock: "), 1);
	char files[2][800], err[256];
	check_eq(st_files(files, 2), 1);
	check(tr_stats(files[0], &s) == 0);
	check(tr_walk(files[0], cb, &s, err, sizeof err) == 0);
	check_eq(hooked, 1000);
	check(st_named(&s, "worker", FMT_FREE) >= 1000);
	check_eq(st_acq(&s, "worker", 0) + st_named(&s, "worker", FMT_ACQ_WAIT),
	         1000);
	check_eq(warn_notes, 1);
	check_eq(other_warns, 0);
	return test_done();
}
