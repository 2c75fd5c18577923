/*
 * exec - fork+exec: the exec'd program traces itself to its own file
 * (MALLOCK_FOLLOW_EXEC=1, the default), or runs untraced with
 * MALLOCK_FOLLOW_EXEC=0. The exec'd program's exit status passes through.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define TARGET_ALLOCS 77
static void *volatile sink;

static int child(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "target")) {
		pthread_setname_np(pthread_self(), "target");
		for (int i = 0; i < TARGET_ALLOCS; i++) {
			sink = malloc(48);
			free(sink);
		}
		return 5;
	}
	pid_t pid = fork();
	if (pid == 0) {
		execl(st_self, st_self, "--child", "target", (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

static tr_stats_t s;

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child")) {
		ssize_t n =
		    readlink("/proc/self/exe", st_self, sizeof st_self - 1);
		st_self[n > 0 ? n : 0] = 0;
		return child(argc, argv);
	}
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 5);
	char files[4][800];
	int n = st_files(files, 4), targets = 0;
	check_eq(n, 2);
	for (int i = 0; i < n; i++) {
		check(tr_stats(files[i], &s) == 0);
		check_eq(s.have_end, 1);
		if (st_named_threads(&s, "target")) {
			targets++;
			check_eq(st_named(&s, "target", FMT_ALLOC),
			         TARGET_ALLOCS);
		}
	}
	check_eq(targets, 1);

	st_setup(argc, argv);
	const char *e[] = {"MALLOCK_FOLLOW_EXEC=0", NULL};
	check_eq(st_run(NULL, e), 5);
	n = st_files(files, 4);
	check_eq(n, 1);
	if (n == 1) {
		check(tr_stats(files[0], &s) == 0);
		check_eq(st_named_threads(&s, "target"), 0);
	}
	return test_done();
}
