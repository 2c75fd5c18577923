/*
 * forkfd - hosts that fork while other threads run, fork near their
 * address-space limit, and close every fd and reopen their own files.
 *
 *   forkfd forkmt N   two threads run: one allocates in a loop, one calls
 *                     dl_iterate_phdr in a loop (holding the loader's lock
 *                     most of the time); main forks N workers, each
 *                     allocates and exits. A worker still alive after 2 s
 *                     is SIGKILLed and counted as hung (its signals may be
 *                     masked). Prints "forks N hung H" (stops after 3).
 *   forkfd forkas     RLIMIT_AS = VmSize + 20 MiB, then a forked worker
 *                     locks and unlocks a mutex. Prints how it ended.
 *   forkfd fdreuse    closes fds 3..1023 except the trace file(s) (the
 *                     trace fd is another test's concern), opens a.db,
 *                     b.db and c.db, allocates through new call paths
 *                     (stdio, qsort, a helper), and writes 4 records to
 *                     each file. Prints each file's size and whether every
 *                     write succeeded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void *alloc_loop(void *a)
{
	(void)a;
	for (;;) {
		void *volatile p = malloc(64);
		free(p);
	}
	return NULL;
}

static int slow_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	for (volatile int i = 0; i < 20000; i++)
		;
	return 0;
}

static void *phdr_loop(void *a)
{
	(void)a;
	for (;;)
		dl_iterate_phdr(slow_cb, NULL);
	return NULL;
}

static int forkmt(int n)
{
	pthread_t th;
	pthread_create(&th, NULL, alloc_loop, NULL);
	pthread_create(&th, NULL, phdr_loop, NULL);
	int hung = 0, i;
	for (i = 0; i < n && hung < 3; i++) {
		pid_t c = fork();
		if (c == 0) {
			void *volatile p = malloc(100);
			free(p);
			exit(0); /* the final flush: the worker's trace */
		}
		int st, k;
		for (k = 0; k < 400 && waitpid(c, &st, WNOHANG) == 0; k++)
			usleep(5000);
		if (k == 400) {
			hung++;
			kill(c, SIGKILL);
			waitpid(c, &st, 0);
		}
	}
	printf("forks %d hung %d\n", i, hung);
	fflush(stdout);
	_exit(0);
}

static long vm_kb(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "VmSize:");
	return p ? atol(p + 7) : 0;
}

static int forkas(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	struct rlimit rl;
	rl.rlim_cur = rl.rlim_max = (rlim_t)(vm_kb() + 20 * 1024) * 1024;
	setrlimit(RLIMIT_AS, &rl);
	pid_t c = fork();
	if (c == 0) {
		pthread_mutex_lock(&m);
		void *volatile p = malloc(100);
		free(p);
		pthread_mutex_unlock(&m);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	if (WIFSIGNALED(st))
		printf("worker died of signal %d\n", WTERMSIG(st));
	else
		printf("worker exited %d\n", WEXITSTATUS(st));
	return 0;
}

static int is_trace(int fd)
{
	char path[64], target[4096];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, target, sizeof target - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	return strstr(target, ".trace") != NULL;
}

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void helper(int depth)
{
	if (depth > 0) {
		helper(depth - 1);
		return;
	}
	void *volatile p = calloc(10, 10);
	free(p);
}

static int fdreuse(void)
{
	void *volatile q = malloc(32);
	free(q);
	for (int fd = 3; fd < 1024; fd++)
		if (!is_trace(fd))
			close(fd);
	int fds[3];
	const char *names[3] = {"a.db", "b.db", "c.db"};
	for (int i = 0; i < 3; i++)
		fds[i] = open(names[i], O_RDWR | O_CREAT | O_TRUNC, 0644);
	int ok = 1;
	for (int r = 0; r < 4; r++) {
		char *s = NULL;
		if (asprintf(&s, "round %d %s\n", r, "text") > 0)
			free(s);
		int v[64];
		for (int i = 0; i < 64; i++)
			v[i] = (i * 37) % 64;
		qsort(v, 64, sizeof v[0], cmp);
		helper(r + 1);
		for (int i = 0; i < 3; i++)
			ok &= write(fds[i], "RECORD\n", 7) == 7;
	}
	for (int i = 0; i < 3; i++) {
		struct stat sb;
		if (fstat(fds[i], &sb) != 0)
			sb.st_size = -1;
		printf("%s %ld\n", names[i], (long)sb.st_size);
	}
	printf("writes %s\n", ok ? "ok" : "failed");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "forkmt"))
		return forkmt(argc > 2 ? atoi(argv[2]) : 50);
	if (argc >= 2 && !strcmp(argv[1], "forkas"))
		return forkas();
	if (argc >= 2 && !strcmp(argv[1], "fdreuse"))
		return fdreuse();
	fprintf(stderr, "usage: forkfd forkmt N | forkas | fdreuse\n");
	return 2;
}
