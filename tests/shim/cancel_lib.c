/*
 * cancel_lib - a host library built with -fexceptions whose C frame has a
 * cleanup attribute (tests/shim/cancel.c). The test executable does not
 * link libgcc_s itself, so which _Unwind_Resume this library binds to
 * depends on the order of the libraries the shim brings along.
 */
#include <pthread.h>

int cancel_lib_cleanups; /* cleanups run by the cancellation unwind */

static void count_cleanup(int *armed)
{
	if (*armed)
		__atomic_fetch_add(&cancel_lib_cleanups, 1, __ATOMIC_SEQ_CST);
}

/* Waits on c with m held until cancelled; never returns normally. */
__attribute__((visibility("default"))) void cancel_lib_wait(pthread_cond_t *c,
                                                            pthread_mutex_t *m)
{
	__attribute__((cleanup(count_cleanup))) int armed = 1;
	for (;;)
		pthread_cond_wait(c, m);
}
