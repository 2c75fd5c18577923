/*
 * robust - robust mutexes whose owner died, and lock arguments glibc
 * rejects before it tries the lock.
 *
 * For each mutex type (normal, errorcheck, recursive) and each way to take
 * the lock (lock, trylock, timedlock, clocklock on both clocks) a thread
 * locks a robust mutex and exits holding it; the main thread then takes it
 * and must get EOWNERDEAD, own the mutex, make it consistent and unlock it,
 * after which another thread finds it free. Then: clocklock with a clock
 * glibc does not support, timed and clock rwlocks with a bad timeout or
 * clock, on free locks (EINVAL, the lock stays free).
 *
 * The child prints every result. The driver runs it bare and under the
 * shim (each under a 10 s alarm: a hang is a failure) and requires the
 * same output, then checks in the trace that every acquisition the child
 * counted is an ACQ record of the main thread and every unlock a REL.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

static pthread_mutex_t m;
static unsigned n_acq, n_rel; /* the main thread's, as the child saw them */

static void *die_holding(void *a)
{
	(void)a;
	pthread_setname_np(pthread_self(), "other"); /* not the creator's */
	pthread_mutex_lock(&m);
	return NULL; /* exits holding m: the kernel marks it owner-died */
}

static void *try_free(void *a)
{
	pthread_setname_np(pthread_self(), "other");
	int r = pthread_mutex_trylock(&m);
	*(int *)a = r;
	if (r == 0)
		pthread_mutex_unlock(&m);
	return NULL;
}

static void in_future(struct timespec *ts, clockid_t clk)
{
	clock_gettime(clk, ts);
	ts->tv_sec += 2; /* never reached when glibc does not wait */
}

enum how { HOW_LOCK, HOW_TRY, HOW_TIMED, HOW_CLOCK_RT, HOW_CLOCK_MONO, NHOW };
static const char *const how_name[NHOW] = {"lock", "trylock", "timedlock",
                                           "clocklock(REALTIME)",
                                           "clocklock(MONOTONIC)"};

static int take(enum how how)
{
	struct timespec ts;
	switch (how) {
	case HOW_LOCK:
		return pthread_mutex_lock(&m);
	case HOW_TRY:
		return pthread_mutex_trylock(&m);
	case HOW_TIMED:
		in_future(&ts, CLOCK_REALTIME);
		return pthread_mutex_timedlock(&m, &ts);
	case HOW_CLOCK_RT:
		in_future(&ts, CLOCK_REALTIME);
		return pthread_mutex_clocklock(&m, CLOCK_REALTIME, &ts);
	default:
		in_future(&ts, CLOCK_MONOTONIC);
		return pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts);
	}
}

/* Another thread's trylock: 0 when m is free (it unlocks at once). */
static int free_elsewhere(void)
{
	pthread_t th;
	int r = -1;
	pthread_create(&th, NULL, try_free, &r);
	pthread_join(th, NULL);
	return r;
}

static void robust_case(int type, const char *type_name, enum how how)
{
	pthread_mutexattr_t at;
	pthread_mutexattr_init(&at);
	pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_settype(&at, type);
	pthread_mutex_init(&m, &at);
	pthread_mutexattr_destroy(&at);
	pthread_t th;
	pthread_create(&th, NULL, die_holding, NULL);
	pthread_join(th, NULL);
	int r = take(how), c = -1, u = -1;
	if (r == 0 || r == EOWNERDEAD)
		n_acq++;
	if (r == EOWNERDEAD)
		c = pthread_mutex_consistent(&m);
	if (r == 0 || r == EOWNERDEAD) {
		u = pthread_mutex_unlock(&m);
		if (u == 0)
			n_rel++;
	}
	printf("%s %s: %d consistent %d unlock %d then free elsewhere %d\n",
	       type_name, how_name[how], r, c, u, free_elsewhere());
	pthread_mutex_destroy(&m);
}

static void bad_args(void)
{
	struct timespec ts;
	pthread_mutex_init(&m, NULL);
	in_future(&ts, CLOCK_REALTIME);
	int r = pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts);
	if (r == 0 && pthread_mutex_unlock(&m) == 0)
		n_acq++, n_rel++;
	printf("clocklock(CPUTIME) on a free mutex: %d, then free elsewhere "
	       "%d\n",
	       r, free_elsewhere());
	pthread_mutex_destroy(&m);

	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
	struct timespec bad = {.tv_sec = 1, .tv_nsec = 1000000000};
	int res[6];
	res[0] = pthread_rwlock_timedrdlock(&rw, &bad);
	res[1] = pthread_rwlock_timedwrlock(&rw, &bad);
	res[2] = pthread_rwlock_clockrdlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &ts);
	res[3] = pthread_rwlock_clockwrlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &ts);
	res[4] = pthread_rwlock_clockrdlock(&rw, CLOCK_REALTIME, &bad);
	res[5] = pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &bad);
	for (int i = 0; i < 6; i++)
		if (res[i] == 0 && pthread_rwlock_unlock(&rw) == 0)
			n_acq++, n_rel++;
	printf("rwlock bad timeout/clock: %d %d %d %d %d %d, then wrlock %d\n",
	       res[0], res[1], res[2], res[3], res[4], res[5],
	       pthread_rwlock_trywrlock(&rw));
	if (pthread_rwlock_unlock(&rw) == 0)
		n_acq++, n_rel++;
}

static int child(void)
{
	pthread_setname_np(pthread_self(), "robust_main");
	static const int types[3] = {PTHREAD_MUTEX_NORMAL,
	                             PTHREAD_MUTEX_ERRORCHECK,
	                             PTHREAD_MUTEX_RECURSIVE};
	static const char *const names[3] = {"normal", "errorcheck",
	                                     "recursive"};
	for (int k = 0; k < 3; k++)
		for (int h = 0; h < NHOW; h++) {
			robust_case(types[k], names[k], (enum how)h);
			fflush(stdout);
		}
	bad_args();
	printf("acquired %u released %u\n", n_acq, n_rel);
	return 0;
}

/* Runs the child (under the shim when shim), its stdout into out, under a
 * 10 s alarm (inherited across exec: a hung child dies of SIGALRM). Returns
 * the exit status, or 128 + the signal that killed it. */
static int run(int shim, char *out, size_t cap)
{
	int fd[2];
	if (pipe(fd))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		char outp[600];
		snprintf(outp, sizeof outp, "%s/t.%%p.trace", st_dir);
		if (shim) {
			setenv("LD_PRELOAD", st_shim, 1);
			setenv("MALLOCK_OUTPUT", outp, 1);
		}
		alarm(10);
		execl(st_self, st_self, "--child", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t k;
	while (n + 1 < cap && (k = read(fd[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(fd[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static tr_stats_t s;
static char bare[8192], shim[8192];

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	check_eq(run(0, bare, sizeof bare), 0);
	int rc = run(1, shim, sizeof shim);
	if (rc == 128 + SIGALRM)
		fprintf(stderr, "robust: the child hung under the shim\n");
	check_eq(rc, 0);
	/* The bare run is the reference; it must show what glibc promises. */
	check(strstr(bare, "normal lock: 130 consistent 0 unlock 0 then free "
	                   "elsewhere 0") != NULL);
	if (strcmp(bare, shim)) {
		fprintf(stderr, "--- bare\n%s--- under the shim\n%s", bare,
		        shim);
		check(!"the output differs from the bare run");
	}
	unsigned acq = 0, rel = 0;
	const char *a = strstr(shim, "acquired ");
	check(a && sscanf(a, "acquired %u released %u", &acq, &rel) == 2);
	char files[4][800];
	int n = st_files(files, 4);
	check_eq(n, 1);
	if (n < 1 || rc != 0)
		return test_done();
	check(tr_stats(files[0], &s) == 0);
	if (s.error[0])
		fprintf(stderr, "%s\n", s.error);
	check(acq >= 15);
	check_eq(st_acq(&s, "robust_main", 0) +
	             st_named(&s, "robust_main", FMT_ACQ_WAIT),
	         acq);
	check_eq(st_named(&s, "robust_main", FMT_REL) +
	             st_named(&s, "robust_main", FMT_REL_CONTENDED),
	         rel);
	check_eq(s.by_type[FMT_DROP], 0);
	check_eq(s.end_events, st_core_events(&s));
	return test_done();
}
