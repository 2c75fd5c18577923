/*
 * hostile - a host that does what servers do to their own process and that
 * used to make the shim harm it. `hostile SCENARIO [ARG]`; run bare and under
 * the shim by hostile.py, which compares exit status, stdout, stderr and the
 * files the program wrote, and checks the trace's totals.
 *
 * Every counted allocation is malloc(HOSTILE_SIZE) then free, so the test
 * can find exactly the program's own events in the trace; stdout is written
 * with write(2) (stdio would allocate).
 *
 * Scenarios:
 *   closeall loop|range|from   N rounds, close every fd >= 3 (a loop to
 *                              1024, close_range, closefrom; range
 *                              first puts an fd above the shim's and
 *                              checks it closed: exit 92, and closes
 *                              a range that ends at the trace's fd
 *                              first; a range of one fd must leave the
 *                              next one open: exit 94), open a.db
 *                              b.db c.db (they get the freed low numbers),
 *                              then N more rounds with a record written to
 *                              each file every N/4
 *   dup2err                    dup2 a file of its own (err.log) over fd 2,
 *                              then allocate past MALLOCK_MAX_BYTES (the
 *                              shim warns): err.log must hold only its own
 *                              line
 *   quiet                      allocate, never write to stderr (run with
 *                              stderr a closed pipe)
 *   sigexit                    SIGTERM handler that calls exit(0); prints
 *                              "ready", then allocates forever
 *   signal SIG                 N rounds, "ready", then pause(): killed by SIG
 *   sigign                     SIG_IGN for SIGTERM and SIGPIPE after start,
 *                              raise both, N rounds, exit 3
 *   sigdfl                     reports what signal() returns for SIGTERM
 *                              (SIG_DFL), sets a handler, restores SIG_DFL,
 *                              N rounds, "ready", pause(): killed by SIGTERM
 *   sigwait                    blocks SIGTERM, N rounds, "ready", sigwait,
 *                              exit 4
 *   exec VARIANT               N rounds then exec /bin/true with VARIANT
 *                              (execl execle execlp execv execve execvp
 *                              execvpe fexecve execveat)
 *   execfail                   N rounds, execv of a missing file (fails),
 *                              N rounds, exit 5
 *   execfail_mt                2 threads allocate while main fails 200
 *                              execs (500 rounds after each); prints the
 *                              number of rounds of all three threads
 *   daemon DONE                daemon(0, 0), closefrom(3), N rounds, writes
 *                              DONE
 *   relcount                   locks a mutex while recording is paused
 *                              (mallock_recording), then more distinct
 *                              mutexes than the lock table holds, then
 *                              unlocks the first: its release lost nothing
 */
#define _GNU_SOURCE
#include "mallock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HOSTILE_SIZE 4242
#define N 5000

extern char **environ;
static void *volatile sink;

static void rounds(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(HOSTILE_SIZE);
		sink = p;
		free(p);
	}
}

static void say(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(1, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The fd of a file named *.trace (the shim's trace), or -1. */
static int trace_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;
	while (d && (e = readdir(d))) {
		char p[300], l[512];
		snprintf(p, sizeof p, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(p, l, sizeof l - 1);
		if (n > 6 && !memcmp(l + n - 6, ".trace", 6))
			fd = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return fd;
}

static int sc_closeall(const char *mode)
{
	rounds(N);
	if (!strcmp(mode, "loop")) {
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	} else if (!strcmp(mode, "range")) {
		/* An fd above the shim's (which sits near the top of
		 * RLIMIT_NOFILE, below 65536): the range closes it too. */
		struct rlimit rl;
		int hi = -1;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64)
			hi = dup2(0, rl.rlim_cur < 65600 ? (int)rl.rlim_cur - 1
			                                 : 65599);
		/* First a range that ends at the trace's fd, when traced: the
		 * range's last fd is one the shim keeps. */
		int top = trace_fd();
		if (top > 2 && syscall(SYS_close_range, 3u, (unsigned)top, 0u))
			return 90;
		/* A range below the shim's fds closes only itself. */
		int a = open("/dev/null", O_RDONLY), b = dup(a);
		if (a < 0 || b < 0 ||
		    syscall(SYS_close_range, (unsigned)a, (unsigned)a, 0u) ||
		    fcntl(a, F_GETFD) != -1 || fcntl(b, F_GETFD) == -1)
			return 94;
		close(b);
		if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
			return 90;
		if (hi >= 0 && fcntl(hi, F_GETFD) != -1)
			return 92;
	} else {
		closefrom(3);
	}
	int fd[3];
	const char *name[3] = {"a.db", "b.db", "c.db"};
	for (int i = 0; i < 3; i++)
		fd[i] = open(name[i], O_RDWR | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < N; i++) {
		rounds(1);
		if (i % (N / 4) == 0)
			for (int k = 0; k < 3; k++)
				if (write(fd[k], "RECORD\n", 7) != 7)
					return 91;
	}
	char line[64];
	snprintf(line, sizeof line, "own fds %d %d %d\n", fd[0], fd[1], fd[2]);
	say(line);
	return 0;
}

static int sc_dup2err(void)
{
	rounds(100);
	int fd = open("err.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, 2) != 2)
		return 90;
	close(fd);
	rounds(40 * N);
	static const char own[] = "the program's own line\n";
	if (write(2, own, sizeof own - 1) < 0)
		return 91;
	say("done\n");
	return 0;
}

static void on_term_exit(int s)
{
	(void)s;
	exit(0);
}

static int sc_sigexit(void)
{
	signal(SIGTERM, on_term_exit);
	say("ready\n");
	for (;;)
		rounds(1);
	return 0;
}

static int signum(const char *name)
{
	static const struct {
		const char *n;
		int s;
	} tab[] = {{"TERM", SIGTERM}, {"INT", SIGINT},       {"HUP", SIGHUP},
	           {"QUIT", SIGQUIT}, {"PIPE", SIGPIPE},     {"XCPU", SIGXCPU},
	           {"XFSZ", SIGXFSZ}, {"USR1", SIGUSR1},     {"USR2", SIGUSR2},
	           {"ALRM", SIGALRM}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}};
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (!strcmp(tab[i].n, name))
			return tab[i].s;
	return 0;
}

static int sc_signal(void)
{
	rounds(N);
	say("ready\n");
	for (;;)
		pause();
	return 0;
}

static int sc_sigign(void)
{
	signal(SIGTERM, SIG_IGN);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	raise(SIGTERM);
	raise(SIGPIPE);
	rounds(N);
	say("survived\n");
	return 3;
}

static void on_term_nothing(int s)
{
	(void)s;
}

static int sc_sigdfl(void)
{
	void (*old)(int) = signal(SIGTERM, on_term_nothing);
	struct sigaction cur;
	sigaction(SIGPIPE, NULL, &cur);
	char line[96];
	snprintf(line, sizeof line, "SIGTERM was %s, SIGPIPE is %s\n",
	         old == SIG_DFL ? "SIG_DFL" : "not SIG_DFL",
	         !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL
	             ? "SIG_DFL"
	             : "not SIG_DFL");
	say(line);
	signal(SIGTERM, SIG_DFL);
	rounds(N);
	say("ready\n");
	for (;;)
		pause();
	return 0;
}

static int sc_sigwait(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	rounds(N);
	say("ready\n");
	int sig = 0;
	sigwait(&set, &sig);
	say(sig == SIGTERM ? "got SIGTERM\n" : "other\n");
	return 4;
}

static int sc_exec(const char *how)
{
	rounds(N);
	char *argv[] = {"true", NULL};
	say("exec\n");
	if (!strcmp(how, "execl"))
		execl("/bin/true", "true", (char *)NULL);
	else if (!strcmp(how, "execle"))
		execle("/bin/true", "true", (char *)NULL, environ);
	else if (!strcmp(how, "execlp"))
		execlp("true", "true", (char *)NULL);
	else if (!strcmp(how, "execv"))
		execv("/bin/true", argv);
	else if (!strcmp(how, "execve"))
		execve("/bin/true", argv, environ);
	else if (!strcmp(how, "execvp"))
		execvp("true", argv);
	else if (!strcmp(how, "execvpe"))
		execvpe("true", argv, environ);
	else if (!strcmp(how, "fexecve")) {
		int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
		fexecve(fd, argv, environ);
	} else if (!strcmp(how, "execveat"))
		execveat(AT_FDCWD, "/bin/true", argv, environ, 0);
	return 99;
}

static int sc_execfail(void)
{
	rounds(N);
	char *argv[] = {"nothing", NULL};
	int r = execv("/nonexistent/nothing", argv);
	char line[64];
	snprintf(line, sizeof line, "execv: %d %s\n", r,
	         errno == ENOENT ? "ENOENT" : "other");
	say(line);
	rounds(N);
	return 5;
}

static _Atomic int mt_stop;
static long mt_done[2];

static void *mt_worker(void *a)
{
	long n = 0;
	while (!atomic_load(&mt_stop)) {
		rounds(1);
		n++;
	}
	mt_done[(intptr_t)a] = n;
	return NULL;
}

static int sc_execfail_mt(void)
{
	pthread_t t[2];
	for (intptr_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, mt_worker, (void *)i);
	for (int k = 0; k < 200; k++) {
		char *argv[] = {"nothing", NULL};
		execv("/nonexistent/nothing", argv);
		rounds(500);
	}
	atomic_store(&mt_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	char line[64];
	snprintf(line, sizeof line, "rounds %ld\n",
	         200 * 500 + mt_done[0] + mt_done[1]);
	say(line);
	return 0;
}

static int sc_daemon(const char *done)
{
	rounds(100);
	say("before daemon\n");
	if (daemon(0, 0) != 0)
		return 1;
	closefrom(3);
	rounds(N);
	int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, "done\n", 5) != 5)
			return 2;
		close(fd);
	}
	return 0;
}

static int sc_relcount(void)
{
	static pthread_mutex_t early = PTHREAD_MUTEX_INITIALIZER;
	long n = 1100000; /* more than the 2^20 entries of the lock table */
	pthread_mutex_t *m =
	    mmap(NULL, (size_t)n * sizeof *m, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 90;
	mallock_recording(0);
	pthread_mutex_lock(&early);
	mallock_recording(1);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m[i]);
		pthread_mutex_unlock(&m[i]);
	}
	pthread_mutex_unlock(&early);
	say("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "";
	if (!strcmp(s, "closeall"))
		return sc_closeall(a);
	if (!strcmp(s, "dup2err"))
		return sc_dup2err();
	if (!strcmp(s, "quiet")) {
		rounds(40 * N);
		say("done\n");
		return 0;
	}
	if (!strcmp(s, "sigexit"))
		return sc_sigexit();
	if (!strcmp(s, "signal") && signum(a))
		return sc_signal();
	if (!strcmp(s, "sigign"))
		return sc_sigign();
	if (!strcmp(s, "sigdfl"))
		return sc_sigdfl();
	if (!strcmp(s, "sigwait"))
		return sc_sigwait();
	if (!strcmp(s, "exec"))
		return sc_exec(a);
	if (!strcmp(s, "execfail"))
		return sc_execfail();
	if (!strcmp(s, "execfail_mt"))
		return sc_execfail_mt();
	if (!strcmp(s, "daemon"))
		return sc_daemon(a);
	if (!strcmp(s, "relcount"))
		return sc_relcount();
	fprintf(stderr, "hostile: unknown scenario %s %s\n", s, a);
	return 2;
}
