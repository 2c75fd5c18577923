/*
 * batcher - a client batcher's set of in-flight operations (Apache Kudu
 * commit 2e50335 "client: use dense_hash_set in Batcher").
 *
 * --threads client threads share one batcher: a set of in-flight operations
 * guarded by one mutex ("batcher.lock"). Each thread keeps a window of
 * --window operations in flight: it encodes a row (--row-bytes, outside the
 * lock), sends it (batcher_add_inflight inserts it into the set) and
 * completes the one it sent --window rows earlier (batcher_remove_inflight
 * erases it). One row is one insert plus one erase.
 *
 *   --set=chained  (the bug) a chained hash set (uthash) with one malloc'd
 *                  64-byte entry per insert, freed on erase, both under the
 *                  lock: std::unordered_set's node per element.
 *   --set=open     (the fix) an open-addressing set written here (linear
 *                  probing in one array sized once at start-up to four times
 *                  the operations that can be in flight, deletion by backward
 *                  shift so no tombstones): dense_hash_set's shape, no
 *                  allocation per insert.
 *
 * Output, as the seed's loadgen: total time, rows, time per row (ms), plus
 * rows/s and CPU per row.
 *
 * GROUND TRUTH (what `mallock report` must find):
 *   chained: alloc_churn at batcher_add_inflight (64-byte blocks living for
 *            about --window rows, at the row rate, freed by
 *            batcher_remove_inflight on the same thread), and
 *            alloc_under_lock on "batcher.lock" (named with
 *            mallock_lock_label: not queue-like) at batcher_add_inflight
 *            (uthash also grows its bucket array there, rarely).
 *   open:    no allocation at batcher_add_inflight, so neither finding.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "mallock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

enum { SET_CHAINED, SET_OPEN };
static const char *const set_names[] = {"chained", "open", NULL};

struct options {
	int set;
	int threads;
	int window;
	int row_bytes;
	double duration;
};

/* An operation: one row of a write, sent and later completed. */
struct op {
	uint64_t seq;
	uint32_t owner;
	uint32_t checksum;
	unsigned char *row; /* --row-bytes, encoded before each send */
};

/* Chained mode: the per-insert node (64 bytes on x86-64). */
struct op_entry {
	struct op *op;
	UT_hash_handle hh;
};

struct batcher {
	pthread_mutex_t lock; /* "batcher.lock": guards the set */
	int set;
	struct op_entry *chained;
	struct op **slots; /* open mode: cap slots, NULL = empty */
	size_t cap, used;
	unsigned bits;
};

static struct batcher batcher;
static struct options opt;

/* ---- the open-addressing set ------------------------------------------ */

static size_t open_hash(const struct batcher *b, const struct op *op)
{
	return (
	    size_t)(((uint64_t)(uintptr_t)op * UINT64_C(0x9E3779B97F4A7C15)) >>
	            (64 - b->bits));
}

static void open_insert(struct batcher *b, struct op *op)
{
	size_t mask = b->cap - 1, i;

	for (i = open_hash(b, op); b->slots[i]; i = (i + 1) & mask)
		if (b->slots[i] == op)
			return;
	b->slots[i] = op;
	b->used++;
}

/*
 * Linear probing's deletion without tombstones (Knuth's algorithm R): moves
 * back every later entry of the cluster whose home slot the hole cuts off.
 */
static void open_erase(struct batcher *b, struct op *op)
{
	size_t mask = b->cap - 1, i, j;

	for (i = open_hash(b, op); b->slots[i] != op; i = (i + 1) & mask)
		if (!b->slots[i])
			return;
	for (j = i;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!b->slots[j])
			break;
		home = open_hash(b, b->slots[j]);
		/* slots[j] may move to i unless its home lies in (i, j]
		 * cyclically */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		b->slots[i] = b->slots[j];
		i = j;
	}
	b->slots[i] = NULL;
	b->used--;
}

/* ---- the batcher --------------------------------------------------------- */

/* Records op as in flight. Takes b->lock; in chained mode mallocs under it. */
APP_NOINLINE static void batcher_add_inflight(struct batcher *b, struct op *op)
{
	pthread_mutex_lock(&b->lock);
	if (b->set == SET_CHAINED) {
		struct op_entry *e = malloc(sizeof(*e));

		if (!e)
			app_die("out of memory");
		e->op = op;
		HASH_ADD_PTR(b->chained, op, e);
	} else {
		open_insert(b, op);
	}
	pthread_mutex_unlock(&b->lock);
}

/* Forgets op (its response arrived). Takes b->lock; chained mode frees under
 * it. */
APP_NOINLINE static void batcher_remove_inflight(struct batcher *b,
                                                 struct op *op)
{
	pthread_mutex_lock(&b->lock);
	if (b->set == SET_CHAINED) {
		struct op_entry *e;

		HASH_FIND_PTR(b->chained, &op, e);
		if (e) {
			HASH_DEL(b->chained, e);
			free(e);
		}
	} else {
		open_erase(b, op);
	}
	pthread_mutex_unlock(&b->lock);
}

static void batcher_init(struct batcher *b, int set, size_t max_inflight)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	mallock_lock_label(&b->lock, "batcher.lock");
	b->set = set;
	if (set == SET_OPEN) {
		/* At most 1/4 full: probes stay short. */
		for (b->bits = 4; ((size_t)1 << b->bits) < 4 * max_inflight;
		     b->bits++)
			;
		b->cap = (size_t)1 << b->bits;
		b->slots = calloc(b->cap, sizeof(*b->slots));
		if (!b->slots)
			app_die("out of memory");
	}
}

/* ---- client threads ------------------------------------------------------ */

struct client {
	uint32_t index;
	struct op *ops; /* window slots, allocated once in main */
	unsigned char *rows_buf;
	uint64_t rows;
	char pad[64];
};

/*
 * Encodes a row into the op, as a client does before sending it: the work
 * outside the lock, which keeps the lock from being busy all the time.
 */
static void row_encode(struct op *op, uint32_t owner, uint64_t seq)
{
	uint32_t h = 2166136261u;
	size_t i;

	op->seq = seq;
	op->owner = owner;
	for (i = 0; i < (size_t)opt.row_bytes; i++) {
		op->row[i] = (unsigned char)((seq >> (i % 8)) ^ i);
		h = (h ^ op->row[i]) * 16777619u;
	}
	op->checksum = h;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	size_t w = (size_t)opt.window;
	uint64_t i = 0, rows = 0;

	while (!app_stopping()) {
		struct op *op = &c->ops[i % w];

		if (i >= w) {
			batcher_remove_inflight(&batcher, op); /* completed */
			rows++;
			__atomic_store_n(&c->rows, rows, __ATOMIC_RELAXED);
		}
		row_encode(op, c->index, i);
		batcher_add_inflight(&batcher, op); /* sent */
		i++;
	}
	for (; rows < i; rows++) /* drain what is still in flight */
		batcher_remove_inflight(&batcher, &c->ops[rows % w]);
	return NULL;
}

static uint64_t total_rows(const struct client *clients)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < opt.threads; i++)
		s += __atomic_load_n(&clients[i].rows, __ATOMIC_RELAXED);
	return s;
}

int main(int argc, char **argv)
{
	struct app_opt opts[] = {
	    app_opt_choice(
	        "set", &opt.set, set_names,
	        "chained: uthash, a malloc'd node per insert under the "
	        "lock (bug); open: pre-allocated open addressing (fix)"),
	    app_opt_int("threads", &opt.threads, 1, 256, "client threads"),
	    app_opt_int("window", &opt.window, 1, 1 << 20,
	                "operations each thread keeps in flight"),
	    app_opt_int(
	        "row-bytes", &opt.row_bytes, 0, 1 << 20,
	        "bytes each row encodes outside the lock before it is sent"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	struct app_info info = {
	    "batcher",
	    "A batcher's set of in-flight operations under one mutex (Kudu "
	    "Batcher).\n"
	    "--set=chained allocates a node per insert (the bug, as\n"
	    "std::unordered_set); --set=open uses open addressing (the fix).",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	struct client *clients;
	pthread_t *threads;
	struct app_cpu cpu0, cpu;
	uint64_t t0, t1, before, after;
	double ms, rows;
	int i;

	opt.set = SET_CHAINED;
	opt.threads = 2;
	opt.window = 256;
	opt.row_bytes = 64;
	opt.duration = 2;
	app_parse_args(&info, argc, argv);

	batcher_init(&batcher, opt.set,
	             (size_t)opt.threads * (size_t)opt.window);
	clients = calloc((size_t)opt.threads, sizeof(*clients));
	threads = calloc((size_t)opt.threads, sizeof(*threads));
	if (!clients || !threads)
		app_die("out of memory");
	for (i = 0; i < opt.threads; i++) {
		size_t k;

		clients[i].index = (uint32_t)i;
		clients[i].ops = calloc((size_t)opt.window, sizeof(struct op));
		clients[i].rows_buf =
		    calloc((size_t)opt.window, (size_t)opt.row_bytes + 1);
		if (!clients[i].ops || !clients[i].rows_buf)
			app_die("out of memory");
		for (k = 0; k < (size_t)opt.window; k++)
			clients[i].ops[k].row = clients[i].rows_buf +
			                        k * ((size_t)opt.row_bytes + 1);
	}
	for (i = 0; i < opt.threads; i++)
		threads[i] = app_thread_start(client_main, &clients[i],
		                              "batch-client", i);

	cpu0 = app_cpu_now();
	t0 = app_now_ns();
	before = total_rows(clients);
	app_sleep_until_ns(t0 + (uint64_t)(opt.duration * 1e9));
	after = total_rows(clients);
	t1 = app_now_ns();
	cpu = app_cpu_diff(app_cpu_now(), cpu0);

	app_request_stop();
	for (i = 0; i < opt.threads; i++) {
		app_thread_join(threads[i]);
		free(clients[i].ops);
		free(clients[i].rows_buf);
	}
	/* Every thread drained its window: a set that is not empty is a bug
	 * here. */
	if (HASH_COUNT(batcher.chained) != 0 || batcher.used != 0)
		app_die("internal error: %u + %zu operations left in the set",
		        (unsigned)HASH_COUNT(batcher.chained), batcher.used);
	HASH_CLEAR(hh, batcher.chained); /* frees uthash's table */

	ms = (double)(t1 - t0) / 1e6;
	rows = (double)(after - before);
	if (rows < 1)
		rows = 1;
	printf("Generator report time total : %.6g ms\n", ms);
	printf("Rows: %.0f\n", rows);
	printf("time per row: %.6g ms\n", ms / rows);
	printf("Rows/sec: %.0f\n", rows / (ms / 1e3));
	printf("User CPU per row: %.6gus\n", cpu.user_us / rows);
	printf("Sys CPU per row: %.6gus\n", cpu.sys_us / rows);

	free(batcher.slots);
	free(clients);
	free(threads);
	return 0;
}
