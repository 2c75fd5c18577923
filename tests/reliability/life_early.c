/*
 * life_early - linked into life (DT_NEEDED): its priority-101 constructor
 * allocates, locks and starts a thread before the preloaded shim's own
 * constructor has run (a preloaded library is initialised after the
 * program's other libraries). The blocks are freed later, when the shim
 * records: frees of blocks it never saw. Its destructor (when armed by
 * life_early_arm_dtor) allocates and locks after the shim's final flush:
 * libraries initialised before the shim are finalised after it.
 */
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t early_mu = PTHREAD_MUTEX_INITIALIZER;
static void *early_blocks[32];

static void *early_thread(void *a)
{
	pthread_mutex_lock(&early_mu);
	void *p = malloc(24);
	free(p);
	pthread_mutex_unlock(&early_mu);
	return a;
}

__attribute__((constructor(101))) static void early_ctor(void)
{
	for (int i = 0; i < 32; i++) {
		pthread_mutex_lock(&early_mu);
		early_blocks[i] = calloc(1, 16 + (size_t)i);
		pthread_mutex_unlock(&early_mu);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, early_thread, NULL) == 0)
		pthread_join(t, NULL);
}

static int dtor_armed;

__attribute__((visibility("default"))) void life_early_arm_dtor(void);
void life_early_arm_dtor(void)
{
	dtor_armed = 1;
}

__attribute__((destructor)) static void early_dtor(void)
{
	if (!dtor_armed)
		return;
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&early_mu);
		void *p = malloc(48);
		free(p);
		pthread_mutex_unlock(&early_mu);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, early_thread, NULL) == 0)
		pthread_join(t, NULL);
}

__attribute__((visibility("default"))) int life_early_value(void);
int life_early_value(void)
{
	int n = 0;
	for (int i = 0; i < 32; i++) {
		n += early_blocks[i] != NULL;
		free(early_blocks[i]);
		early_blocks[i] = NULL;
	}
	return n;
}
