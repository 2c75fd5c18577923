/*
 * static_tcmalloc - a program with a statically linked tcmalloc: the shim
 * warns once (a NOTE too), records the allocations through gperftools'
 * MallocHook API (fn HOOK), and the lock hooks keep working.
 */
#define _GNU_SOURCE
#include "shim_test.h"

static uint64_t hooked;

static int cb(const fmt_chunk_header_t *h, const fmt_record_t *r, void *arg)
{
	tr_thread_t *t = tr_thread(arg, h->tid);
	if (t && !strcmp(t->name, "worker") && r->type == FMT_ALLOC &&
	    r->f[4] == FMT_FN_HOOK)
		hooked++;
	return 0;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	st_setup(argc, argv);
	if (argc < 4)
		return 2;
	CHECK_EQ_U(st_run_exe(argv[3], NULL, NULL), 0);
	char files[2][800], err[256];
	CHECK_EQ_U(st_files(files, 2), 1);
	CHECK(tr_stats(files[0], &s) == 0);
	CHECK(tr_walk(files[0], cb, &s, err, sizeof err) == 0);
	CHECK_EQ_U(hooked, 1000);
	CHECK(st_named(&s, "worker", FMT_FREE) >= 1000);
	CHECK_EQ_U(st_named(&s, "worker", FMT_ACQ) +
	               st_named(&s, "worker", FMT_ACQ_WAIT),
	           1000);
	CHECK(s.by_type[FMT_NOTE] >= 1);
	return check_done("static_tcmalloc");
}
