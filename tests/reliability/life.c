/*
 * life - the host side of the process-life tests: one scenario per run,
 * `life SCENARIO [ARG]`. Each prints a few deterministic lines on stdout and
 * exits with a status of its own, so that life.sh can run it bare and under
 * the shim and compare (status, stdout, stderr), then read every trace with
 * `mallock report`. tests/shim/ already covers plain fork, fork+exec,
 * dlopen of an allocating library and 1,000 threads; these are the rest.
 *
 * Scenarios:
 *   vfork         vfork + exec of /bin/true, and posix_spawn of /bin/echo
 *   daemon        daemon(): the parent exits at once; the daemon works, then
 *                 writes ARG (a file name) when done
 *   dlopen_ctor   dlopen/dlclose of ARG, a library that allocates and locks
 *                 in its constructor and frees in its destructor
 *   early_ctor    a linked library (liblife_early.so) allocated and locked in
 *                 a priority-101 constructor, before the shim's
 *   atexit        allocation and locks in atexit handlers, in a
 *                 destructor of the executable, and (after the shim's final
 *                 flush) in one of liblife_early.so, which starts a thread
 *   cancel        pthread_cancel of a thread holding a lock (cleanup handler
 *                 unlocks) and of one in pthread_cond_wait
 *   sig_alloc     a timer-signal storm (async-signal-safe handler) over
 *                 threads that allocate and lock
 *   sig_lock      a handler that calls malloc/free, signals aimed at threads
 *                 that only lock (inside the lock hooks): no deadlock
 *   exit_thread   exit() called by a non-main thread while others run
 *   _exit_thread  _exit() called by a non-main thread
 *   never_exits   main returns while a thread sleeps forever in cond_wait
 *   crash SIG     a worker thread dies of SIG (segv bus abrt fpe ill) while
 *                 others allocate: must die of the same signal
 *   crash_own     the program has its own SIGSEGV handler: it runs (exit 42)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
int life_early_value(void);     /* liblife_early.so */
void life_early_arm_dtor(void); /* its destructor works after the shim's */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void *volatile sink;

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&mu);
		void *p = malloc(32 + (size_t)(i & 63));
		sink = p;
		free(p);
		pthread_mutex_unlock(&mu);
	}
}

static void *churn_thread(void *a)
{
	churn((int)(intptr_t)a);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- vfork, posix_spawn ---- */

static int sc_vfork(void)
{
	churn(100);
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("vfork child: %d\n", WEXITSTATUS(st));
	fflush(stdout);
	char *argv[] = {"echo", "spawned", NULL};
	if (posix_spawn(&pid, "/bin/echo", NULL, NULL, argv, environ) != 0)
		return 1;
	waitpid(pid, &st, 0);
	printf("spawn child: %d\n", WEXITSTATUS(st));
	churn(100);
	return 11;
}

/* ---- daemon ---- */

static int sc_daemon(const char *done)
{
	churn(100);
	printf("before daemon\n");
	fflush(stdout);
	if (daemon(1, 0) != 0)
		return 1;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn_thread,
		               (void *)(intptr_t)2000);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	FILE *f = fopen(done, "w");
	if (f) {
		fputs("done\n", f);
		fclose(f);
	}
	return 0;
}

/* ---- dlopen of a library with an allocating constructor ---- */

static int sc_dlopen_ctor(const char *lib)
{
	for (int round = 0; round < 3; round++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			printf("dlopen failed\n");
			return 1;
		}
		int (*get)(void) =
		    (int (*)(void))(uintptr_t)dlsym(h, "life_dl_value");
		printf("round %d: %d\n", round, get ? get() : -1);
		churn(50);
		if (dlclose(h) != 0)
			return 2;
	}
	return 12;
}

/* ---- constructors before the shim's ---- */

static int sc_early_ctor(void)
{
	printf("early value %d\n", life_early_value());
	churn(100);
	return 13;
}

/* ---- atexit and destructors ---- */

static void at_exit_handler(void)
{
	churn(200);
	char *p = strdup("atexit ran");
	puts(p);
	free(p);
}

static int atexit_scenario;

__attribute__((destructor)) static void late_dtor(void)
{
	if (!atexit_scenario)
		return;
	churn(200);
	void *p = malloc(1000);
	sink = p;
	/* Leaked on purpose: a block allocated after the final flush. */
	static const char msg[] = "destructor ran\n";
	ssize_t r = write(1, msg, sizeof msg - 1);
	(void)r;
}

static int sc_atexit(void)
{
	atexit_scenario = 1;
	life_early_arm_dtor();
	atexit(at_exit_handler);
	churn(100);
	printf("main done\n");
	return 14;
}

/* ---- cancel ---- */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holder_ready, waiter_ready;

static void unlock_held(void *m)
{
	pthread_mutex_unlock(m);
}

static void *holder(void *a)
{
	(void)a;
	pthread_mutex_lock(&held);
	pthread_cleanup_push(unlock_held, &held);
	void *p = malloc(100);
	sink = p;
	atomic_store(&holder_ready, 1);
	for (;;)
		sleep_ms(10); /* a cancellation point */
	pthread_cleanup_pop(1);
	return NULL;
}

static void *cond_waiter(void *a)
{
	(void)a;
	pthread_mutex_lock(&mu);
	pthread_cleanup_push(unlock_held, &mu);
	atomic_store(&waiter_ready, 1);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	pthread_cleanup_pop(1);
	return NULL;
}

static int sc_cancel(void)
{
	pthread_t h, w;
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&w, NULL, cond_waiter, NULL);
	while (!atomic_load(&holder_ready) || !atomic_load(&waiter_ready))
		sleep_ms(1);
	pthread_mutex_lock(&mu); /* the waiter is inside cond_wait now */
	pthread_mutex_unlock(&mu);
	pthread_cancel(h);
	pthread_cancel(w);
	void *r1, *r2;
	pthread_join(h, &r1);
	pthread_join(w, &r2);
	printf("holder %s, waiter %s\n",
	       r1 == PTHREAD_CANCELED ? "cancelled" : "returned",
	       r2 == PTHREAD_CANCELED ? "cancelled" : "returned");
	/* Both locks are free again. */
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	churn(100);
	printf("locks free\n");
	return 15;
}

/* ---- signals ---- */

static atomic_long sig_count;

static void safe_handler(int sig)
{
	(void)sig;
	int saved = errno;
	atomic_fetch_add(&sig_count, 1);
	errno = saved;
}

static void malloc_handler(int sig)
{
	(void)sig;
	int saved = errno;
	/* Undefined (malloc is not async-signal-safe) but common. */
	void *p = malloc(64);
	sink = p;
	free(p);
	atomic_fetch_add(&sig_count, 1);
	errno = saved;
}

static atomic_int stop_flag;

static void *locker(void *a)
{
	(void)a;
	static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
	static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	while (!atomic_load(&stop_flag)) {
		pthread_mutex_lock(&m2);
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&m2);
		pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
		pthread_rwlock_wrlock(&rw);
		pthread_rwlock_unlock(&rw);
	}
	return NULL;
}

static void *allocator_thread(void *a)
{
	(void)a;
	while (!atomic_load(&stop_flag))
		churn(100);
	return NULL;
}

static int sc_signals(int handler_mallocs)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler_mallocs ? malloc_handler : safe_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	enum { N = 3 };
	pthread_t t[N];
	for (int i = 0; i < N; i++)
		pthread_create(&t[i], NULL,
		               handler_mallocs ? locker : allocator_thread,
		               NULL);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!handler_mallocs) {
		/* Process-directed timer signals, every 100 us. */
		struct itimerval it = {{0, 100}, {0, 100}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	long sent = 0;
	do {
		for (int i = 0; i < N; i++)
			if (pthread_kill(t[i], SIGUSR1) == 0)
				sent++;
		usleep(50);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 +
	             (now.tv_nsec - t0.tv_nsec) / 1000000 <
	         1500);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	printf("signals handled: %s\n",
	       atomic_load(&sig_count) > 100 ? "many" : "few");
	return handler_mallocs ? 17 : 16;
}

/* ---- exit and _exit from a non-main thread ---- */

static int use_underscore;

static void *exiter(void *a)
{
	(void)a;
	churn(500);
	printf("exiting from a thread\n");
	fflush(stdout);
	if (use_underscore)
		_exit(19);
	exit(18);
}

static int sc_exit_thread(int underscore)
{
	use_underscore = underscore;
	pthread_t w[2], e;
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, allocator_thread, NULL);
	pthread_create(&e, NULL, exiter, NULL);
	while (!atomic_load(&stop_flag))
		churn(100); /* until the exiter ends the process */
	return 1;
}

/* ---- a thread that never exits ---- */

static void *forever(void *a)
{
	(void)a;
	churn(300);
	pthread_mutex_lock(&held);
	for (;;)
		pthread_cond_wait(&cv, &held);
	return NULL;
}

static int sc_never_exits(void)
{
	pthread_t t;
	pthread_create(&t, NULL, forever, NULL);
	churn(300);
	sleep_ms(50);
	printf("main returns\n");
	return 20;
}

/* ---- crashes ---- */

static volatile int zero, seven = 7;

static void *crasher(void *a)
{
	const char *how = a;
	churn(3000);
	if (!strcmp(how, "segv"))
		*(volatile int *)(uintptr_t)zero = 1;
	else if (!strcmp(how, "abrt"))
		abort();
	else if (!strcmp(how, "fpe"))
		zero = seven / zero; /* 1 / x compiles to compares, no idiv */
	else if (!strcmp(how, "ill"))
		__builtin_trap();
	else if (!strcmp(how, "bus"))
		raise(SIGBUS);
	return NULL;
}

static int sc_crash(const char *how)
{
	printf("about to crash (%s)\n", how);
	fflush(stdout);
	pthread_t w[2], c;
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, allocator_thread, NULL);
	pthread_create(&c, NULL, crasher, (void *)how);
	pthread_join(c, NULL);
	return 1; /* not reached */
}

static void own_segv(int sig)
{
	(void)sig;
	static const char msg[] = "own handler ran\n";
	ssize_t r = write(1, msg, sizeof msg - 1);
	(void)r;
	_exit(42);
}

static int sc_crash_own(void)
{
	signal(SIGSEGV, own_segv);
	churn(1000);
	*(volatile int *)(uintptr_t)zero = 1;
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: life SCENARIO [ARG]\n");
		return 2;
	}
	const char *s = argv[1], *arg = argc > 2 ? argv[2] : "";
	if (!strcmp(s, "vfork"))
		return sc_vfork();
	if (!strcmp(s, "daemon"))
		return sc_daemon(arg);
	if (!strcmp(s, "dlopen_ctor"))
		return sc_dlopen_ctor(arg);
	if (!strcmp(s, "early_ctor"))
		return sc_early_ctor();
	if (!strcmp(s, "atexit"))
		return sc_atexit();
	if (!strcmp(s, "cancel"))
		return sc_cancel();
	if (!strcmp(s, "sig_alloc"))
		return sc_signals(0);
	if (!strcmp(s, "sig_lock"))
		return sc_signals(1);
	if (!strcmp(s, "exit_thread"))
		return sc_exit_thread(0);
	if (!strcmp(s, "_exit_thread"))
		return sc_exit_thread(1);
	if (!strcmp(s, "never_exits"))
		return sc_never_exits();
	if (!strcmp(s, "crash"))
		return sc_crash(arg);
	if (!strcmp(s, "crash_own"))
		return sc_crash_own();
	fprintf(stderr, "life: unknown scenario %s\n", s);
	return 2;
}
