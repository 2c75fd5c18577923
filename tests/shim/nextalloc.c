/*
 * nextalloc - a tiny allocator library linked into the nextalloc test
 * program: the "real" allocator as the shim sees it (dlsym RTLD_NEXT). It
 * forwards to glibc (__libc_malloc...), counts every call per thread, and
 * every NEXTALLOC_WAIT_EVERY-th malloc sleeps 100 us in a futex wait made
 * through syscall(), as tcmalloc's SpinLockDelay does.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NEXTALLOC_WAIT_EVERY 10

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static __thread unsigned long calls, mallocs;
static int futex_word;

#define API __attribute__((visibility("default")))

API unsigned long nextalloc_calls(void)
{
	return calls;
}

API void *malloc(size_t n)
{
	calls++;
	if (++mallocs % NEXTALLOC_WAIT_EVERY == 0) {
		struct timespec ts = {0, 100000};
		syscall(SYS_futex, &futex_word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG,
		        0, &ts, NULL, 0);
	}
	return __libc_malloc(n);
}

API void free(void *p)
{
	calls++;
	__libc_free(p);
}

API void *calloc(size_t n, size_t m)
{
	calls++;
	return __libc_calloc(n, m);
}

API void *realloc(void *p, size_t n)
{
	calls++;
	return __libc_realloc(p, n);
}
