/*
 * pagesrv.c - the process shapes that leave control pages and traces behind
 * if the shim gets them wrong (pages_test.py).
 *
 *   pagesrv race UID N [exit|_exit]
 *       forks N workers that drop to UID (setgroups, setgid, setuid) at
 *       the same moment (released together through a pipe), as a web
 *       server's workers do; once all have dropped, prints
 *       "page PID DIR" for each (DIR: where its page is, "none" or
 *       "both"), lets them end (by exit or _exit), then prints "left PID
 *       DIR" for each page still there after their end.
 *   pagesrv exec SECONDS
 *       an exec that fails (the program goes on), then a forked child that
 *       execs `sleep SECONDS` without the shim in its environment, as a
 *       server's binary upgrade does. Prints "failed PID" after the failed
 *       exec and "child PID" before the exec, waits for the child.
 *   pagesrv forks N SECONDS
 *       a server that forks N children at once (one per connection); each
 *       runs a lock/malloc/free loop for SECONDS and returns from main.
 *       Prints "ready" and "child PID" for each, runs the loop itself,
 *       waits for them.
 *   pagesrv daemon SECONDS
 *       a launcher that forks the server (which runs the loop for SECONDS)
 *       and returns at once, as a daemonizing server does. Prints "child
 *       PID".
 *   pagesrv abort
 *       prints "pid PID" and dies of SIGABRT.
 *   pagesrv ends HOW
 *       forks a child that allocates and ends by HOW (_exit, _Exit,
 *       quick_exit or exit_group: syscall(SYS_exit_group)) with status 7;
 *       prints "child PID", waits for it, exits 0 when it ended with 7.
 *   pagesrv drop UID SECONDS [setuid|seteuid [closefrom|close_range|
 *                                                syscall|loop]]
 *       as root: opens 3 fds, becomes UID (for good, or only its euid),
 *       closes every fd from 3 up (closefrom, close_range,
 *       syscall(SYS_close_range), or close() of each up to 4095), prints
 * "dropped PID, N of its own fds still open", then runs the loop for SECONDS
 * and prints "calls N": the malloc calls it made after the close.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The lock/malloc/free loop for secs; returns the malloc calls made. */
static unsigned long loop(double secs)
{
	double stop = now() + secs;
	struct timespec nap = {0, 200 * 1000};
	unsigned long i = 0;
	while (now() < stop) {
		pthread_mutex_lock(&lock);
		void *p = malloc(64 + (i & 63));
		sink = p;
		free(p);
		pthread_mutex_unlock(&lock);
		if ((++i & 63) == 0)
			nanosleep(&nap, NULL);
	}
	return i;
}

static int exists(const char *dir, int pid)
{
	char path[128];
	struct stat st;
	snprintf(path, sizeof path, "%s/%d.page", dir, pid);
	return lstat(path, &st) == 0;
}

static const char *where(const char *udir, int pid)
{
	int u = exists(udir, pid), r = exists("/tmp/mallock-0", pid);
	return u && r ? "both" : u ? udir : r ? "/tmp/mallock-0" : "none";
}

static int race(unsigned uid, int n, int quick)
{
	int go[2], done[2], quit[2];
	pid_t kids[64];
	char udir[64];
	if (n < 1 || n > 64 || pipe(go) || pipe(done) || pipe(quit))
		return 2;
	snprintf(udir, sizeof udir, "/tmp/mallock-%u", uid);
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			return 2;
		if (kids[i] == 0) {
			char c;
			close(go[1]);
			close(quit[1]);
			(void)!read(go[0], &c, 1); /* released by the close */
			if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
				perror("pagesrv: setuid");
				_exit(1);
			}
			free(malloc(10));
			(void)!write(done[1], "d", 1);
			(void)!read(quit[0], &c, 1);
			if (quick)
				_exit(0);
			exit(0);
		}
	}
	close(go[0]);
	close(go[1]); /* every worker drops now */
	for (int i = 0; i < n; i++) {
		char c;
		if (read(done[0], &c, 1) != 1)
			return 2;
	}
	for (int i = 0; i < n; i++)
		printf("page %d %s\n", (int)kids[i], where(udir, kids[i]));
	fflush(stdout);
	close(quit[1]);
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	for (int i = 0; i < n; i++)
		if (strcmp(where(udir, kids[i]), "none"))
			printf("left %d %s\n", (int)kids[i],
			       where(udir, kids[i]));
	return bad;
}

static int exec_case(const char *secs)
{
	char *none[] = {"/nonexistent/pagesrv-none", NULL};
	execv(none[0], none);
	printf("failed %d %s\n", (int)getpid(), strerror(errno));
	fflush(stdout);
	loop(1.0); /* the test looks at the page meanwhile */
	pid_t c = fork();
	if (c == 0) {
		char *argv[] = {"sleep", (char *)secs, NULL};
		char *envp[] = {"PATH=/usr/bin:/bin", NULL};
		printf("child %d\n", (int)getpid());
		fflush(stdout);
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return !WIFEXITED(st) || WEXITSTATUS(st);
}

static int forks(int n, double secs)
{
	pid_t kids[64];
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			loop(secs);
			return 0;
		}
	}
	printf("ready\n");
	for (int i = 0; i < n; i++)
		printf("child %d\n", (int)kids[i]);
	fflush(stdout);
	loop(secs); /* the server's own work */
	int bad = 0, st;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	return bad;
}

static int drop(unsigned uid, double secs, const char *how, const char *cl)
{
	int mine[3];
	for (int i = 0; i < 3; i++)
		mine[i] = open("/dev/null", O_RDONLY);
	if (!strcmp(how, "seteuid")) {
		/* A temporary switch, as varnish's manager makes: root can come
		 * back. */
		if (setgroups(0, NULL) || setegid(uid) || seteuid(uid)) {
			perror("pagesrv: seteuid");
			return 2;
		}
	} else if (setgroups(0, NULL) || setgid(uid) || setuid(uid)) {
		perror("pagesrv: setuid");
		return 2;
	}
	if (!strcmp(cl, "close_range")) {
		if (close_range(3, ~0u, 0) != 0)
			return 3;
	} else if (!strcmp(cl, "syscall")) {
		if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
			return 3;
	} else if (!strcmp(cl, "loop")) {
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
	} else {
		closefrom(3);
	}
	int open_left = 0;
	for (int i = 0; i < 3; i++)
		open_left += fcntl(mine[i], F_GETFD) != -1;
	printf("dropped %d, %d of its own fds still open\n", (int)getpid(),
	       open_left);
	fflush(stdout);
	printf("calls %lu\n", loop(secs));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "race"))
		return race((unsigned)atoi(argv[2]), atoi(argv[3]),
		            argc > 4 && !strcmp(argv[4], "_exit"));
	if (argc == 3 && !strcmp(argv[1], "exec"))
		return exec_case(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "forks"))
		return forks(atoi(argv[2]), atof(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "daemon")) {
		pid_t c = fork();
		if (c == 0) {
			setsid();
			loop(atof(argv[2]));
			return 0;
		}
		printf("child %d\n", (int)c);
		return c < 0;
	}
	if (argc == 2 && !strcmp(argv[1], "abort")) {
		printf("pid %d\n", (int)getpid());
		fflush(stdout);
		free(malloc(10));
		abort();
	}
	if (argc == 3 && !strcmp(argv[1], "ends")) {
		const char *how = argv[2];
		pid_t c = fork();
		if (c == 0) {
			free(malloc(10));
			if (!strcmp(how, "_exit"))
				_exit(7);
			if (!strcmp(how, "_Exit"))
				_Exit(7);
			if (!strcmp(how, "quick_exit"))
				quick_exit(7);
			if (!strcmp(how, "exit_group"))
				syscall(SYS_exit_group, 7);
			_exit(2);
		}
		printf("child %d\n", (int)c);
		int st = 0;
		if (c < 0 || waitpid(c, &st, 0) != c)
			return 1;
		return !(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	}
	if (argc >= 4 && argc <= 6 && !strcmp(argv[1], "drop"))
		return drop((unsigned)atoi(argv[2]), atof(argv[3]),
		            argc > 4 ? argv[4] : "setuid",
		            argc > 5 ? argv[5] : "closefrom");
	fputs("usage: pagesrv race UID N [exit|_exit] | exec SECONDS | forks "
	      "N SECONDS | daemon SECONDS | abort | ends HOW | drop UID "
	      "SECONDS [HOW "
	      "[CLOSE]]\n",
	      stderr);
	return 2;
}
