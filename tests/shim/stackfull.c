/*
 * stackfull - a full stack table: new stacks are recorded as stack 0.
 *
 * A thread allocates from 4^10 different call paths (a recursion ten
 * levels deep, each level calling the next from one of four call sites),
 * more than the shim's stack table takes (7/8 of 2^20 slots); it exits.
 * Then the main thread, whose stack cache is fresh, allocates twice in a
 * row from a new call site (the second miss in a row is a learning walk).
 * Both allocations must carry stack 0, after the warning that the table
 * is full: no other stack's id.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <pthread.h>

#define LEVELS 10
#define PATHS (1u << (2 * LEVELS))
#define FILL_SIZE 40
#define TAG 7919 /* the main thread's two allocations */

static void *volatile sink;
static volatile int mark;

#define NOINLINE __attribute__((noinline, noclone))

NOINLINE static void leaf(void)
{
	void *p = malloc(FILL_SIZE);
	sink = p;
	free(p);
	mark = 0;
}

/* Four call sites, each followed by its own store: not merged. */
NOINLINE static void path(int level, unsigned code)
{
	if (level == 0) {
		leaf();
	} else {
		switch (code & 3) {
		case 0:
			path(level - 1, code >> 2);
			mark = 1;
			break;
		case 1:
			path(level - 1, code >> 2);
			mark = 2;
			break;
		case 2:
			path(level - 1, code >> 2);
			mark = 3;
			break;
		default:
			path(level - 1, code >> 2);
			mark = 4;
			break;
		}
	}
	mark = level;
}

static void *fill(void *arg)
{
	(void)arg;
	for (unsigned c = 0; c < PATHS; c++)
		path(LEVELS, c);
	return NULL;
}

NOINLINE static void tagged(void)
{
	void *p = malloc(TAG);
	sink = p;
	free(p);
	mark = 5;
}

static int child(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, fill, NULL) || pthread_join(th, NULL))
		return 1;
	for (int i = 0; i < 2; i++)
		tagged();
	return 0;
}

typedef struct seen {
	unsigned tagged;
	uint64_t stack[2];
	int full; /* the warning NOTE */
} seen_t;

static int collect(const fmt_chunk_header_t *h, const fmt_record_t *r,
                   void *arg)
{
	(void)h;
	seen_t *x = arg;
	if (r->type == FMT_ALLOC && r->f[1] == TAG && x->tagged < 2) {
		x->stack[x->tagged++] = r->f[2];
	} else if (r->type == FMT_NOTE) {
		const uint8_t *p = r->body, *end = r->body + r->body_len;
		uint64_t level;
		const char *text;
		size_t len;
		if (fmt_get_u(&p, end, &level) == 0 &&
		    fmt_get_str(&p, end, &text, &len) == 0 && len >= 16 &&
		    !memcmp(text, "stack table full", 16))
			x->full = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	const char *env[] = {"MALLOCK_UNWIND=libunwind",
	                     "MALLOCK_STACK_CACHE=1", "MALLOCK_STACK_DEPTH=16",
	                     NULL};
	check_eq(st_run(NULL, env), 0);
	char files[2][800];
	check_eq(st_files(files, 2), 1);
	seen_t x = {0};
	char err[256];
	check(tr_walk(files[0], collect, &x, err, sizeof err) == 0);
	check(x.full);
	check_eq(x.tagged, 2);
	check_eq(x.stack[0], 0);
	check_eq(x.stack[1], 0);
	printf("stackfull: the table full, stacks %lu and %lu\n",
	       (unsigned long)x.stack[0], (unsigned long)x.stack[1]);
	st_clean();
	return test_done();
}
