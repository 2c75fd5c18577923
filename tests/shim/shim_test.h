/*
 * shim_test.h - helpers for the shim's C tests: each test binary is both the
 * driver and the traced program.
 *
 *   test SHIM TMPDIR        driver: runs itself with "--child" under
 *                           LD_PRELOAD=SHIM, MALLOCK_OUTPUT=TMPDIR/..., then
 *                           checks the trace(s) with trace_read.c
 *   test --child [ARGS]     the workload
 */
#ifndef MALLOCK_TESTS_SHIM_TEST_H
#define MALLOCK_TESTS_SHIM_TEST_H

#include "test.h"
#include "trace_read.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *st_shim;
static char st_dir[512];
static char st_self[512];

/* Empties TMPDIR (creating it). */
static inline void st_clean(void)
{
	mkdir(st_dir, 0700);
	DIR *d = opendir(st_dir);
	struct dirent *e;
	char p[1024];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(p, sizeof p, "%s/%s", st_dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
}

/* Parses "SHIM TMPDIR", empties TMPDIR (creating it). */
static inline void st_setup(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SHIM TMPDIR\n", argv[0]);
		exit(2);
	}
	st_shim = argv[1];
	snprintf(st_dir, sizeof st_dir, "%s", argv[2]);
	ssize_t n = readlink("/proc/self/exe", st_self, sizeof st_self - 1);
	st_self[n > 0 ? n : 0] = 0;
	st_clean();
}

/*
 * Runs this test binary with --child and args under the shim,
 * with MALLOCK_OUTPUT=TMPDIR/t.%p.trace unless env sets it, plus env
 * ("NAME=value" strings, NULL-terminated, may be NULL). Returns the exit
 * status, or -1 if it did not exit normally.
 */
static inline int st_run_exe(const char *exe, const char *const *args,
                             const char *const *env);

static inline int st_run(const char *const *args, const char *const *env)
{
	return st_run_exe(NULL, args, env);
}

/* As st_run, for another program exe (args after argv[0], no --child). */
static inline int st_run_exe(const char *exe, const char *const *args,
                             const char *const *env)
{
	pid_t pid = fork();
	if (pid == 0) {
		char out[600];
		snprintf(out, sizeof out, "%s/t.%%p.trace", st_dir);
		setenv("LD_PRELOAD", st_shim, 1);
		setenv("MALLOCK_OUTPUT", out, 1);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		char *av[32];
		int n = 0;
		av[n++] = (char *)(exe ? exe : st_self);
		if (!exe)
			av[n++] = (char *)"--child";
		for (int i = 0; args && args[i] && n < 31; i++)
			av[n++] = (char *)args[i];
		av[n] = NULL;
		execv(av[0], av);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* Lists the files in TMPDIR (sorted by name) into paths; returns the count. */
static inline int st_files(char paths[][800], int max)
{
	struct dirent **list;
	int n = scandir(st_dir, &list, NULL, alphasort), k = 0;
	for (int i = 0; i < n; i++) {
		if (list[i]->d_name[0] != '.' && k < max)
			snprintf(paths[k++], 800, "%s/%s", st_dir,
			         list[i]->d_name);
		free(list[i]);
	}
	if (n >= 0)
		free(list);
	return k;
}

/*
 * The driver of a test whose child leaves one trace: with "--child" runs
 * child() and exits with its status; else parses "SHIM TMPDIR" (st_setup),
 * runs the child under the shim, checks that it exited 0 and left exactly
 * one trace, and reads that trace into *s (its path into path). Returns 0
 * when *s holds the trace, -1 when there is none (a check has failed; end
 * with test_done).
 */
static inline int st_run_one(int argc, char **argv, int (*child)(void),
                             tr_stats_t *s, char path[800])
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		exit(child());
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 0);
	char files[2][800];
	int n = st_files(files, 2);
	check_eq(n, 1);
	if (n < 1)
		return -1;
	snprintf(path, 800, "%s", files[0]);
	check(tr_stats(path, s) == 0);
	if (s->error[0])
		fprintf(stderr, "%s\n", s->error);
	return 0;
}

/* Sums the core event records of a trace (for END's events field). */
static inline uint64_t st_core_events(const tr_stats_t *s)
{
	uint64_t n = 0;
	for (int i = 0; i < 0x80; i++)
		n += s->by_type[i];
	return n;
}

/* Sums type over the threads named name. */
static inline uint64_t st_named(tr_stats_t *s, const char *name, unsigned type)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < s->nthreads; i++)
		if (!strcmp(s->threads[i].name, name))
			n += s->threads[i].by_type[type];
	return n;
}

/* The uncontended acquisitions (exclusive, or shared) of the threads
 * named name, however their holds were timed: ACQ, ACQ_SAMPLED and
 * ACQ_UNTIMED (trace format 1.6, MALLOCK_HOLD_EVERY), or their shared
 * forms. */
static inline uint64_t st_acq(tr_stats_t *s, const char *name, int shared)
{
	if (shared)
		return st_named(s, name, FMT_ACQ_SHARED) +
		       st_named(s, name, FMT_ACQ_SHARED_SAMPLED) +
		       st_named(s, name, FMT_ACQ_SHARED_UNTIMED);
	return st_named(s, name, FMT_ACQ) + st_named(s, name, FMT_ACQ_SAMPLED) +
	       st_named(s, name, FMT_ACQ_UNTIMED);
}

static inline unsigned st_named_threads(tr_stats_t *s, const char *name)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->nthreads; i++)
		n += !strcmp(s->threads[i].name, name);
	return n;
}

#endif
