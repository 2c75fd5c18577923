/*
 * xthread - reactor tasks created on one thread and run and destroyed on
 * another (Apache Kudu KUDU-1865 part 1).
 *
 * P producer threads (think: RPC client threads) hand tasks to R reactor
 * threads (producer i feeds reactor i % R). Each reactor has one pending-task
 * queue, guarded by one mutex ("xthread.reactor.N") with condition variables
 * for "not empty" and "not full"; a queue holds at most --queue-depth tasks.
 * A reactor takes every pending task at once, runs them outside the lock and
 * then returns their slots. A request is one task run.
 *
 *   --tasks=heap    (the bug) task_create mallocs each task (--task-size
 *                   bytes) on the producer; the reactor runs it and
 *                   task_destroy frees it: every task is allocated on one
 *                   thread and freed on another, which defeats tcmalloc's
 *                   per-thread caches (blocks migrate through the central
 *                   free list). The queue links tasks intrusively, so no
 *                   allocation happens under the lock.
 *   --tasks=inline  (the fix) tasks move by value through a ring of
 *                   --queue-depth slots allocated once per reactor: the
 *                   producer copies the task into a slot under the lock, the
 *                   reactor runs it in place. No allocation per task.
 *
 * Output, as Kudu's rpc-bench: Reqs/sec, User and Sys CPU per req, Ctx Sw.
 * per req (getrusage of the whole process over the measured window).
 *
 * GROUND TRUTH (what `mallock report` must find):
 *   heap:   cross_thread_free at task_create (allocated on the "xthr-prod-N"
 *           threads, freed by task_destroy on the "xthr-reactor-N" threads),
 *           about one block per request (alloc_churn at the same site may
 *           rank above it).
 *   inline: no cross_thread_free at any site with a per-request rate (the
 *           rings are allocated once in main).
 *   Neither variant allocates under "xthread.reactor.N".
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "mallock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TASKS_HEAP, TASKS_INLINE };
static const char *const tasks_names[] = {"heap", "inline", NULL};

struct options {
	int tasks;
	int producers;
	int reactors;
	int queue_depth;
	int task_size;
	double duration;
};

/* A task: a header and an argument the reactor reads. */
struct task {
	struct task *next; /* heap mode: the pending list */
	uint64_t seq;
	uint32_t producer;
	uint32_t arg_len;
	unsigned char arg[]; /* task_size - header */
};

struct reactor {
	pthread_mutex_t lock; /* "xthread.reactor.N" */
	pthread_cond_t nonempty, nonfull;
	int idle;              /* reactor waiting on nonempty */
	int waiting_producers; /* producers waiting on nonfull */
	int stop;
	size_t depth; /* at most depth tasks queued or running */
	/* heap mode: an intrusive list; `count` tasks not yet finished. */
	struct task *head, *tail;
	size_t count;
	/* inline mode: slots [tail, reserved) run, [reserved, head) pending. */
	unsigned char *ring;
	size_t slot_size;
	uint64_t r_head, r_reserved, r_tail;
	/* results */
	uint64_t done;
	uint64_t checksum;
	char pad[64];
};

static struct options opt;
static struct reactor *reactors;

/* ---- the task -------------------------------------------------------- */

static void task_fill(struct task *t, uint32_t producer, uint64_t seq,
                      size_t size)
{
	t->next = NULL;
	t->seq = seq;
	t->producer = producer;
	t->arg_len = (uint32_t)(size - sizeof(struct task));
	memset(t->arg, (int)(seq & 0xff), t->arg_len);
}

/* Heap mode: the allocation this app is about, made on a producer thread. */
APP_NOINLINE static struct task *task_create(uint32_t producer, uint64_t seq)
{
	struct task *t = malloc((size_t)opt.task_size);

	if (!t)
		app_die("out of memory");
	task_fill(t, producer, seq, (size_t)opt.task_size);
	return t;
}

/* Heap mode: freed on the reactor thread. */
APP_NOINLINE static void task_destroy(struct task *t)
{
	free(t);
}

/* The work of a task: an FNV-1a hash of its argument. */
APP_NOINLINE static uint64_t task_run(const struct task *t)
{
	uint64_t h = UINT64_C(1469598103934665603) ^ t->seq;
	uint32_t i;

	for (i = 0; i < t->arg_len; i++)
		h = (h ^ t->arg[i]) * UINT64_C(1099511628211);
	return h;
}

/* ---- producers: schedule a task on a reactor --------------------------- */

/* Heap mode: links a task made outside the lock. Never allocates. */
APP_NOINLINE static void reactor_schedule_task(struct reactor *r,
                                               struct task *t)
{
	int wake;

	pthread_mutex_lock(&r->lock);
	while (r->count >= r->depth && !r->stop) {
		r->waiting_producers++;
		pthread_cond_wait(&r->nonfull, &r->lock);
		r->waiting_producers--;
	}
	if (r->stop) {
		pthread_mutex_unlock(&r->lock);
		task_destroy(t);
		return;
	}
	if (r->tail)
		r->tail->next = t;
	else
		r->head = t;
	r->tail = t;
	r->count++;
	wake = r->idle;
	pthread_mutex_unlock(&r->lock);
	if (wake)
		pthread_cond_signal(&r->nonempty);
}

/* Inline mode: copies the task by value into a ring slot under the lock. */
APP_NOINLINE static void
reactor_schedule_inline(struct reactor *r, uint32_t producer, uint64_t seq)
{
	int wake;

	pthread_mutex_lock(&r->lock);
	while (r->r_head - r->r_tail >= r->depth && !r->stop) {
		r->waiting_producers++;
		pthread_cond_wait(&r->nonfull, &r->lock);
		r->waiting_producers--;
	}
	if (r->stop) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	task_fill(
	    (struct task *)(r->ring + (r->r_head % r->depth) * r->slot_size),
	    producer, seq, r->slot_size);
	r->r_head++;
	wake = r->idle;
	pthread_mutex_unlock(&r->lock);
	if (wake)
		pthread_cond_signal(&r->nonempty);
}

struct producer {
	uint32_t index;
	char pad[64];
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct reactor *r = &reactors[p->index % (uint32_t)opt.reactors];
	uint64_t seq = 0;

	while (!app_stopping()) {
		if (opt.tasks == TASKS_HEAP)
			reactor_schedule_task(r, task_create(p->index, seq));
		else
			reactor_schedule_inline(r, p->index, seq);
		seq++;
	}
	return NULL;
}

/* ---- reactors: drain, run, destroy ------------------------------------- */

static void reactor_finish(struct reactor *r, size_t n)
{
	int wake;

	pthread_mutex_lock(&r->lock);
	if (opt.tasks == TASKS_HEAP)
		r->count -= n;
	else
		r->r_tail += n;
	wake = r->waiting_producers;
	pthread_mutex_unlock(&r->lock);
	if (wake)
		pthread_cond_broadcast(&r->nonfull);
}

/* Waits for work; returns 0 once stopped. */
static int reactor_wait(struct reactor *r)
{
	while (!r->stop &&
	       (opt.tasks == TASKS_HEAP ? r->head == NULL
	                                : r->r_reserved == r->r_head)) {
		r->idle = 1;
		pthread_cond_wait(&r->nonempty, &r->lock);
		r->idle = 0;
	}
	return !r->stop;
}

static void *reactor_main(void *arg)
{
	struct reactor *r = arg;
	uint64_t sum = 0, done = 0;

	for (;;) {
		size_t n = 0;

		pthread_mutex_lock(&r->lock);
		if (!reactor_wait(r)) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		if (opt.tasks == TASKS_HEAP) {
			struct task *t = r->head;

			r->head = r->tail = NULL;
			pthread_mutex_unlock(&r->lock);
			while (t) {
				struct task *next = t->next;

				sum += task_run(t);
				task_destroy(t);
				t = next;
				n++;
			}
		} else {
			uint64_t first = r->r_reserved, i;

			r->r_reserved = r->r_head;
			n = (size_t)(r->r_reserved - first);
			pthread_mutex_unlock(&r->lock);
			for (i = first; i < first + n; i++)
				sum += task_run(
				    (const struct task *)(r->ring +
				                          (i % r->depth) *
				                              r->slot_size));
		}
		done += n;
		__atomic_store_n(&r->done, done, __ATOMIC_RELAXED);
		reactor_finish(r, n);
	}
	r->checksum = sum;
	return NULL;
}

static uint64_t total_done(void)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < opt.reactors; i++)
		s += __atomic_load_n(&reactors[i].done, __ATOMIC_RELAXED);
	return s;
}

int main(int argc, char **argv)
{
	struct app_opt opts[] = {
	    app_opt_choice(
	        "tasks", &opt.tasks, tasks_names,
	        "heap: a task malloc'd per request on the producer and "
	        "freed on the reactor (bug); inline: moved by value "
	        "through a ring (fix)"),
	    app_opt_int("producers", &opt.producers, 1, 256,
	                "threads that create tasks"),
	    app_opt_int("reactors", &opt.reactors, 1, 64,
	                "threads that run and destroy tasks"),
	    app_opt_int("queue-depth", &opt.queue_depth, 1, 1 << 20,
	                "tasks a reactor holds before producers wait"),
	    app_opt_int(
	        "task-size", &opt.task_size, 32, 1 << 16,
	        "bytes per task (Kudu's ReactorTask with its closure is "
	        "about 64)"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	struct app_info info = {
	    "xthread",
	    "Reactor tasks made on producer threads and run on reactor "
	    "threads\n"
	    "(KUDU-1865). --tasks=heap mallocs each task on one thread and "
	    "frees it\n"
	    "on another (the bug); --tasks=inline moves them by value (the "
	    "fix).",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	struct producer *prods;
	pthread_t *prod_t, *reac_t;
	struct app_cpu cpu0, cpu;
	uint64_t t0, t1, before, after;
	double secs, reqs;
	uint64_t checksum = 0;
	int i;

	opt.tasks = TASKS_HEAP;
	opt.producers = 1;
	opt.reactors = 1;
	opt.queue_depth = 256;
	opt.task_size = 64;
	opt.duration = 2;
	app_parse_args(&info, argc, argv);

	reactors = calloc((size_t)opt.reactors, sizeof(*reactors));
	prods = calloc((size_t)opt.producers, sizeof(*prods));
	prod_t = calloc((size_t)opt.producers, sizeof(*prod_t));
	reac_t = calloc((size_t)opt.reactors, sizeof(*reac_t));
	if (!reactors || !prods || !prod_t || !reac_t)
		app_die("out of memory");
	for (i = 0; i < opt.reactors; i++) {
		struct reactor *r = &reactors[i];
		char name[32];

		pthread_mutex_init(&r->lock, NULL);
		pthread_cond_init(&r->nonempty, NULL);
		pthread_cond_init(&r->nonfull, NULL);
		snprintf(name, sizeof(name), "xthread.reactor.%d", i);
		mallock_lock_name(&r->lock, name);
		r->depth = (size_t)opt.queue_depth;
		r->slot_size = ((size_t)opt.task_size + 15) & ~(size_t)15;
		if (opt.tasks == TASKS_INLINE) {
			r->ring = calloc(r->depth, r->slot_size);
			if (!r->ring)
				app_die("out of memory");
		}
		reac_t[i] =
		    app_thread_start(reactor_main, r, "xthr-reactor", i);
	}
	for (i = 0; i < opt.producers; i++) {
		prods[i].index = (uint32_t)i;
		prod_t[i] =
		    app_thread_start(producer_main, &prods[i], "xthr-prod", i);
	}

	cpu0 = app_cpu_now();
	t0 = app_now_ns();
	before = total_done();
	app_sleep_until_ns(t0 + (uint64_t)(opt.duration * 1e9));
	after = total_done();
	t1 = app_now_ns();
	cpu = app_cpu_diff(app_cpu_now(), cpu0);

	/* Stop the producers (wake those waiting for room), then the reactors.
	 */
	app_request_stop();
	for (i = 0; i < opt.reactors; i++) {
		struct reactor *r = &reactors[i];

		pthread_mutex_lock(&r->lock);
		r->stop = 1;
		pthread_mutex_unlock(&r->lock);
		pthread_cond_broadcast(&r->nonfull);
		pthread_cond_broadcast(&r->nonempty);
	}
	for (i = 0; i < opt.producers; i++)
		app_thread_join(prod_t[i]);
	for (i = 0; i < opt.reactors; i++) {
		struct reactor *r = &reactors[i];
		struct task *t = r->head;

		app_thread_join(reac_t[i]);
		while (t) {
			struct task *next = t->next;

			task_destroy(t);
			t = next;
		}
		checksum ^= r->checksum; /* keeps the tasks' work observable */
		free(r->ring);
	}

	secs = (double)(t1 - t0) / 1e9;
	reqs = (double)(after - before);
	if (reqs < 1)
		reqs = 1;
	printf("Reqs/sec: %.0f\n", reqs / secs);
	printf("User CPU per req: %.6gus\n", cpu.user_us / reqs);
	printf("Sys CPU per req: %.6gus\n", cpu.sys_us / reqs);
	printf("Ctx Sw. per req: %.6g\n", cpu.ctx_switches / reqs);
	if (checksum == 1)
		printf("\n");

	free(reactors);
	free(prods);
	free(prod_t);
	free(reac_t);
	return 0;
}
