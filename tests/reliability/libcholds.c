/*
 * libcholds - the guard for "a hook calls a locking libc function" (shim/
 * hook.h): every kind of hook (malloc, calloc, realloc, free, operator
 * new/delete, mutex, condition variable, rwlock) runs from inside libc
 * functions that hold an internal lock while they call back into the
 * program or the allocator. Under the shim, each hook must neither take
 * that lock again nor wait for it.
 *
 *   libcholds SCENARIO     prints "SCENARIO ok" (after at least one round)
 *
 * Scenarios:
 *   getattr_thread  threads whose first act is pthread_getattr_np(self)
 *                   (it holds the thread's own lock around a realloc)
 *   getattr_main    the main thread's pthread_getattr_np (fopen of
 *                   /proc/self/maps, getline's malloc, under the lock)
 *   getattr_early   the same in a thread started before the shim's
 *                   constructor ran (libcholds_early.c), then every hook
 *   dl_iterate      every hook inside a dl_iterate_phdr callback (the
 *                   loader's lock), on the main thread and on threads
 *   stdio           every hook inside a fopencookie write callback (the
 *                   stream's lock), open_memstream, fprintf/fclose
 *   qsort           every hook inside qsort's comparator (qsort's own
 *                   buffer is malloc'ed)
 *   once            every hook inside a pthread_once initializer
 *   dl_cross        a thread waits, inside its dl_iterate_phdr callback
 *                   (the loader's lock held), for a mutex main holds while
 *                   main runs every hook at new call sites (new pcs for
 *                   the unwinder), then unlocks
 *   all             all of the above, in one process
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int libcholds_early_run(void (*fn)(void));
void *_Znwm(unsigned long n);
void _ZdlPv(void *p);

static long rounds;

/* One round of every kind of hook. noinline with distinct callers, so the
 * stack cache and libunwind see new frames (misses, learning walks). */
__attribute__((noinline)) static void every_hook(int salt)
{
	void *volatile a = malloc(16 + (size_t)salt);
	void *volatile b = calloc(3, 8);
	void *volatile c = realloc(NULL, 40);
	c = realloc(c, 4000);
	void *volatile d = _Znwm(24);
	_ZdlPv(d);
	free(c);
	free(b);
	free(a);
	pthread_mutex_t m;
	pthread_mutex_init(&m, NULL);
	pthread_mutex_lock(&m);
	pthread_cond_t cv;
	pthread_cond_init(&cv, NULL);
	pthread_cond_signal(&cv);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); /* already past: returns at once */
	pthread_cond_timedwait(&cv, &m, &ts);
	pthread_cond_destroy(&cv);
	pthread_mutex_unlock(&m);
	pthread_mutex_destroy(&m);
	pthread_rwlock_t rw;
	pthread_rwlock_init(&rw, NULL);
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_wrlock(&rw);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_destroy(&rw);
	__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void getattr_self(void)
{
	pthread_attr_t at;
	if (pthread_getattr_np(pthread_self(), &at) == 0)
		pthread_attr_destroy(&at);
}

static void *getattr_thread(void *arg)
{
	getattr_self(); /* the thread's first act */
	every_hook(1);
	getattr_self();
	return arg;
}

static int in_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	every_hook(*(int *)arg);
	return 0;
}

static void *dl_thread(void *arg)
{
	int salt = 3;
	dl_iterate_phdr(in_phdr, &salt);
	return arg;
}

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	(void)c;
	(void)buf;
	every_hook(4);
	return (ssize_t)n;
}

static int cmp(const void *a, const void *b)
{
	static int n;
	if (n++ < 64)
		every_hook(5);
	return *(const int *)a - *(const int *)b;
}

static void once_init(void)
{
	every_hook(6);
}

static pthread_mutex_t cross = PTHREAD_MUTEX_INITIALIZER;
static int cross_in;

static int cross_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	__atomic_store_n(&cross_in, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&cross);
	pthread_mutex_unlock(&cross);
	return 1;
}

static void *cross_thread(void *arg)
{
	dl_iterate_phdr(cross_cb, NULL);
	return arg;
}

__attribute__((noinline)) static void cross_hooks(void)
{
	every_hook(7);
}

static void early_hooks(void)
{
	every_hook(8);
}

static void threads(void *(*fn)(void *), int n)
{
	pthread_t th[8];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

static int run(const char *s)
{
	int all = !strcmp(s, "all");
	if (all || !strcmp(s, "getattr_main")) {
		getattr_self();
		every_hook(0);
		getattr_self();
	}
	if ((all || !strcmp(s, "getattr_early")) &&
	    libcholds_early_run(early_hooks) != 0)
		return 3;
	if (all || !strcmp(s, "getattr_thread"))
		threads(getattr_thread, 8);
	if (all || !strcmp(s, "dl_iterate")) {
		int salt = 2;
		dl_iterate_phdr(in_phdr, &salt);
		threads(dl_thread, 4);
	}
	if (all || !strcmp(s, "stdio")) {
		cookie_io_functions_t io = {NULL, cookie_write, NULL, NULL};
		FILE *f = fopencookie(NULL, "w", io);
		if (!f)
			return 2;
		for (int i = 0; i < 100; i++)
			fprintf(f, "line %d %s\n", i,
			        "padding to fill the buffer");
		fclose(f);
		char *mem = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&mem, &len);
		for (int i = 0; i < 2000; i++)
			fprintf(m, "%d ", i);
		fclose(m);
		free(mem);
	}
	if (all || !strcmp(s, "qsort")) {
		int v[4096];
		for (int i = 0; i < 4096; i++)
			v[i] = (i * 7919) % 4096;
		qsort(v, 4096, sizeof v[0], cmp);
	}
	if (all || !strcmp(s, "dl_cross")) {
		pthread_t th;
		pthread_mutex_lock(&cross);
		pthread_create(&th, NULL, cross_thread, NULL);
		while (!__atomic_load_n(&cross_in, __ATOMIC_ACQUIRE))
			sched_yield();
		usleep(20000); /* it now waits for cross, in the callback */
		cross_hooks();
		pthread_mutex_unlock(&cross);
		pthread_join(th, NULL);
	}
	if (all || !strcmp(s, "once")) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		pthread_once(&once, once_init);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: libcholds SCENARIO\n");
		return 2;
	}
	int r = run(argv[1]);
	if (r)
		return r;
	if (rounds == 0) {
		fprintf(stderr, "libcholds: unknown scenario %s\n", argv[1]);
		return 2;
	}
	printf("%s ok\n", argv[1]);
	return 0;
}
