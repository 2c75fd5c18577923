/*
 * exec - fork+exec: the exec'd program traces itself to its own file
 * (MALLOCK_FOLLOW_EXEC=1, the default), or runs untraced with
 * MALLOCK_FOLLOW_EXEC=0. The exec'd program's exit status passes through.
 * Each trace's command line is its argv joined by NUL bytes, with no
 * trailing NUL: an argv of one empty string (/proc/self/cmdline is a
 * single NUL) is recorded empty.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>
#include <stdbool.h>

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
	bool blank = argc > 2 && !strcmp(argv[2], "blank");
	pid_t pid = fork();
	if (pid == 0) {
		if (blank) {
			char *const av[] = {(char *)"", NULL};
			execv("/bin/true", av);
		} else {
			execl(st_self, st_self, "--child", "target",
			      (char *)NULL);
		}
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

static tr_stats_t s;

/* Whether s's command line is st_self, "--child" and arg (NULL: none),
 * joined by NUL bytes. */
static bool cmdline_is(const tr_stats_t *t, const char *arg)
{
	const char *part[] = {st_self, "--child", arg};
	char want[sizeof st_self + 64];
	size_t len = 0;
	for (int i = 0; i < 3 && part[i]; i++) {
		size_t k = strlen(part[i]);
		if (i)
			want[len++] = 0;
		memcpy(want + len, part[i], k);
		len += k;
	}
	if (t->cmdline_len != len || memcmp(t->cmdline, want, len) != 0) {
		fprintf(stderr, "exec: command line of %zu bytes, not %zu\n",
		        t->cmdline_len, len);
		return false;
	}
	return true;
}

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
		bool target = st_named_threads(&s, "target") > 0;
		check(cmdline_is(&s, target ? "target" : NULL));
		if (target) {
			targets++;
			check_eq(st_named(&s, "target", FMT_ALLOC),
			         TARGET_ALLOCS);
		}
	}
	check_eq(targets, 1);

	/* /bin/true with argv {""}: its trace's command line is empty. */
	st_setup(argc, argv);
	const char *blank[] = {"blank", NULL};
	check_eq(st_run(blank, NULL), 0);
	n = st_files(files, 4);
	check_eq(n, 2);
	int trues = 0;
	for (int i = 0; i < n; i++) {
		check(tr_stats(files[i], &s) == 0);
		check_eq(s.have_end, 1);
		if (strcmp(s.exe, st_self) != 0) {
			trues++;
			check_eq(s.cmdline_len, 0);
		}
	}
	check_eq(trues, 1);

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
