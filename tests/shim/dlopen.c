/*
 * dlopen - a library loaded with dlopen, which allocates, then dlclose'd:
 * its allocations are recorded with stacks, and a MODULE record for it is in
 * the trace (written before dlclose unmaps it).
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <dlfcn.h>

#define RUNS 123
#define MARK_SIZE 12345

static int child(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 3;
	int (*run)(int) = (int (*)(int))(uintptr_t)dlsym(h, "dlalloc_run");
	if (!run || run(RUNS) != RUNS)
		return 4;
	return dlclose(h) == 0 ? 0 : 5;
}

static struct {
	uint64_t marked, stacked, module;
} seen;

static int cb(const fmt_chunk_header_t *h, const fmt_record_t *r, void *arg)
{
	(void)h;
	(void)arg;
	if (r->type == FMT_ALLOC && r->f[1] == MARK_SIZE) {
		seen.marked++;
		seen.stacked += r->f[2] != 0;
	}
	if (r->type == FMT_MODULE) {
		const uint8_t *p = r->body, *end = r->body + r->body_len;
		uint64_t v;
		const char *s;
		size_t n;
		for (int i = 0; i < 3; i++)
			fmt_get_u(&p, end, &v);
		if (fmt_get_str(&p, end, &s, &n) == 0 &&
		    memmem(s, n, "libshim_dlalloc", 15))
			seen.module++;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child(argc, argv);
	st_setup(argc, argv);
	if (argc < 4)
		return 2;
	const char *args[] = {argv[3], NULL};
	check_eq(st_run(args, NULL), 0);
	char files[2][800], err[256];
	check_eq(st_files(files, 2), 1);
	check(tr_walk(files[0], cb, NULL, err, sizeof err) == 0);
	check_eq(seen.marked, RUNS);
	check_eq(seen.stacked, RUNS);
	check(seen.module >= 1);
	return test_done();
}
