/*
 * reportqueue - a monitor lock around an inner blocking queue that has a lock
 * of its own (Apache Ozone HDDS-13020, pull request 11937: SCM's
 * ContainerReportQueue).
 *
 * --producers threads (heartbeat handlers) offer reports from 100 distinct
 * datanodes each; one worker polls with a 1 ms timeout, as the executor's
 * worker does, and processing does nothing. The queue holds at most
 * --capacity reports (Ozone's default, 100,000); an offer to a full queue
 * fails and the producer retries at once.
 *
 *   --locking=nested  (the bug) offer takes the monitor "reportqueue.monitor"
 *                     (Java's synchronized), stores the report (the dataMap)
 *                     and, still holding the monitor, adds the datanode to the
 *                     inner blocking queue, which takes its own mutex
 *                     "reportqueue.inner" and signals its condition variable:
 *                     two locks per operation, one inside the other. poll
 *                     waits on the inner queue (pthread_cond_timedwait, 1 ms)
 *                     outside the monitor, then takes the monitor to remove
 *                     the report.
 *   --locking=single  (the fix) one mutex "reportqueue.lock" and one
 *                     condition variable guard everything.
 *
 * --inner=list (nested only) makes the inner queue a linked list, as a
 * LinkedBlockingQueue is: inner_add allocates the datanode's node while it
 * holds both locks, and inner_poll frees it after its unlock. The default,
 * --inner=ring, allocates nothing per report.
 *
 * --rate=R (reports/s in total, 0 = as fast as possible) paces the producers
 * in a burst every millisecond, as the seed's second table does.
 *
 * Output, as the seed's tables: reports/ms, p50/p99 latency from offer to poll,
 * CPU per report (process CPU over the measured window / reports polled).
 *
 * GROUND TRUTH (what `mallock report` must find):
 *   nested: nested_lock naming both "reportqueue.monitor" (held) and
 *           "reportqueue.inner" (taken inside it), from nested_offer on the
 *           "rq-prod-N" threads; the monitor is contended.
 *   single: no nested_lock (no lock is ever taken while another is held).
 *   No variant allocates per report (reports move by value through rings
 *   allocated once), unless --inner=list: then every allocation at
 *   inner_add is made under both reportqueue.monitor and reportqueue.inner.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "mallock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOCKING_NESTED, LOCKING_SINGLE };
static const char *const locking_names[] = {"nested", "single", NULL};
enum { INNER_RING, INNER_LIST };
static const char *const inner_names[] = {"ring", "list", NULL};

#define DATANODES_PER_PRODUCER 100
#define POLL_TIMEOUT_NS 1000000u

struct options {
	int locking;
	int inner;
	int producers;
	int capacity;
	double rate;
	double duration;
};

struct report {
	uint64_t offered_ns;
	uint32_t producer;
	uint32_t datanode;
};

/* A FIFO ring of fixed capacity; the caller holds the lock that guards it. */
struct ring {
	unsigned char *slots;
	size_t elem, cap;
	uint64_t head, tail;
};

static void ring_init(struct ring *r, size_t elem, size_t cap)
{
	r->slots = calloc(cap, elem);
	if (!r->slots)
		app_die("out of memory");
	r->elem = elem;
	r->cap = cap;
	r->head = r->tail = 0;
}

static size_t ring_count(const struct ring *r)
{
	return (size_t)(r->head - r->tail);
}

static void ring_push(struct ring *r, const void *v)
{
	memcpy(r->slots + (r->head++ % r->cap) * r->elem, v, r->elem);
}

static void ring_pop(struct ring *r, void *v)
{
	memcpy(v, r->slots + (r->tail++ % r->cap) * r->elem, r->elem);
}

/* ---- nested (the bug): Java's monitor plus a LinkedBlockingQueue ------- */

/* A node of the --inner=list queue. */
struct inner_node {
	struct inner_node *next;
	uint32_t datanode;
};

struct inner_queue {
	pthread_mutex_t lock; /* "reportqueue.inner" */
	pthread_cond_t nonempty;
	int waiting;
	int list;          /* --inner=list: nodes, not the ring */
	struct ring uuids; /* the ordering queue: datanode ids */
	struct inner_node *first, **last;
	size_t nodes;
};

static size_t inner_count(const struct inner_queue *q)
{
	return q->list ? q->nodes : ring_count(&q->uuids);
}

struct nested_queue {
	pthread_mutex_t monitor; /* "reportqueue.monitor": guards reports */
	struct ring reports;     /* the dataMap, and the capacity count */
	struct inner_queue inner;
};

APP_NOINLINE static void inner_add(struct inner_queue *q, uint32_t datanode)
{
	int wake;

	pthread_mutex_lock(&q->lock);
	if (q->list) {
		struct inner_node *n = malloc(sizeof(*n));

		if (!n)
			app_die("out of memory");
		n->next = NULL;
		n->datanode = datanode;
		*q->last = n;
		q->last = &n->next;
		q->nodes++;
	} else {
		ring_push(&q->uuids, &datanode);
	}
	wake = q->waiting;
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->nonempty);
}

/* Returns 1 with *datanode set, or 0 after timeout_ns without one. */
APP_NOINLINE static int inner_poll(struct inner_queue *q, uint64_t timeout_ns,
                                   uint32_t *datanode)
{
	struct timespec deadline = app_timespec_after(timeout_ns);
	struct inner_node *n = NULL;
	int got = 0;

	pthread_mutex_lock(&q->lock);
	while (inner_count(q) == 0) {
		int rc;

		q->waiting++;
		rc = pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline);
		q->waiting--;
		if (rc == ETIMEDOUT)
			break;
	}
	if (inner_count(q) > 0 && q->list) {
		n = q->first;
		q->first = n->next;
		if (!q->first)
			q->last = &q->first;
		q->nodes--;
		*datanode = n->datanode;
		got = 1;
	} else if (inner_count(q) > 0) {
		ring_pop(&q->uuids, datanode);
		got = 1;
	}
	pthread_mutex_unlock(&q->lock);
	free(n);
	return got;
}

/* Takes the monitor, then the inner queue's lock inside it. */
APP_NOINLINE static int nested_offer(struct nested_queue *q,
                                     const struct report *r)
{
	pthread_mutex_lock(&q->monitor);
	if (ring_count(&q->reports) >= q->reports.cap) {
		pthread_mutex_unlock(&q->monitor);
		return 0;
	}
	ring_push(&q->reports, r);
	inner_add(&q->inner, r->datanode);
	pthread_mutex_unlock(&q->monitor);
	return 1;
}

APP_NOINLINE static int nested_poll(struct nested_queue *q, uint64_t timeout_ns,
                                    struct report *out)
{
	uint32_t datanode;
	int got = inner_poll(&q->inner, timeout_ns, &datanode);

	/* as Ozone does, even after a timeout */
	pthread_mutex_lock(&q->monitor);
	if (got)
		ring_pop(&q->reports, out);
	pthread_mutex_unlock(&q->monitor);
	return got;
}

/* ---- single (the fix): one lock and one condition --------------------- */

struct single_queue {
	pthread_mutex_t lock; /* "reportqueue.lock" */
	pthread_cond_t nonempty;
	int waiting;
	struct ring reports;
};

APP_NOINLINE static int single_offer(struct single_queue *q,
                                     const struct report *r)
{
	int wake;

	pthread_mutex_lock(&q->lock);
	if (ring_count(&q->reports) >= q->reports.cap) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	ring_push(&q->reports, r);
	wake = q->waiting;
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->nonempty);
	return 1;
}

APP_NOINLINE static int single_poll(struct single_queue *q, uint64_t timeout_ns,
                                    struct report *out)
{
	struct timespec deadline = app_timespec_after(timeout_ns);
	int got = 0;

	pthread_mutex_lock(&q->lock);
	while (ring_count(&q->reports) == 0) {
		int rc;

		q->waiting++;
		rc = pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline);
		q->waiting--;
		if (rc == ETIMEDOUT)
			break;
	}
	if (ring_count(&q->reports) > 0) {
		ring_pop(&q->reports, out);
		got = 1;
	}
	pthread_mutex_unlock(&q->lock);
	return got;
}

/* ---- latency histogram: log-linear, 16 sub-buckets per power of two ---- */

#define HIST_BUCKETS 1024

static unsigned hist_index(uint64_t v)
{
	unsigned e;

	if (v < 16)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
	return (e - 3) * 16 + (unsigned)((v >> (e - 4)) & 15);
}

static double hist_value(unsigned idx)
{
	unsigned e, sub;

	if (idx < 16)
		return idx;
	e = idx / 16 + 3;
	sub = idx % 16;
	/* the middle of the bucket [lo, lo + 2^(e-4)) */
	return (double)((uint64_t)(16 + sub) << (e - 4)) +
	       (double)((uint64_t)1 << (e - 4)) / 2;
}

static double hist_percentile(const uint64_t *h, uint64_t n, double p)
{
	uint64_t want = (uint64_t)(p * (double)n), seen = 0;
	unsigned i;

	if (n == 0)
		return 0;
	if (want >= n)
		want = n - 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += h[i];
		if (seen > want)
			return hist_value(i);
	}
	return hist_value(HIST_BUCKETS - 1);
}

/* ---- threads --------------------------------------------------------- */

static struct options opt;
static struct nested_queue nested;
static struct single_queue single;
static int measuring; /* the worker records only inside the window */

static int queue_offer(const struct report *r)
{
	return opt.locking == LOCKING_NESTED ? nested_offer(&nested, r)
	                                     : single_offer(&single, r);
}

static int queue_poll(struct report *out)
{
	return opt.locking == LOCKING_NESTED
	           ? nested_poll(&nested, POLL_TIMEOUT_NS, out)
	           : single_poll(&single, POLL_TIMEOUT_NS, out);
}

struct producer {
	uint32_t index;
	uint64_t offered, rejected;
	char pad[64];
};

/* Offers one report, retrying while the queue is full. 0 if stopped. */
static int offer_retrying(struct producer *p, uint32_t datanode)
{
	struct report r;

	r.producer = p->index;
	r.datanode = datanode;
	r.offered_ns = app_now_ns();
	while (!queue_offer(&r)) {
		p->rejected++;
		if (app_stopping())
			return 0;
	}
	p->offered++;
	return 1;
}

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	uint32_t base = p->index * DATANODES_PER_PRODUCER, k = 0;

	if (opt.rate <= 0) {
		while (!app_stopping())
			if (!offer_retrying(
			        p, base + k++ % DATANODES_PER_PRODUCER))
				break;
		return NULL;
	}
	/* Paced: a burst every millisecond, carrying the fraction over. */
	{
		double per_ms = opt.rate / 1000.0 / opt.producers, owed = 0;
		uint64_t tick = app_now_ns();

		while (!app_stopping()) {
			owed += per_ms;
			while (owed >= 1) {
				if (!offer_retrying(
				        p, base + k++ % DATANODES_PER_PRODUCER))
					return NULL;
				owed -= 1;
			}
			tick += 1000000u;
			app_sleep_until_ns(tick);
		}
	}
	return NULL;
}

struct worker {
	uint64_t polled; /* inside the window */
	uint64_t hist[HIST_BUCKETS];
};

static struct worker worker;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct report r;

	while (!app_stopping()) {
		if (!queue_poll(&r))
			continue;
		if (__atomic_load_n(&measuring, __ATOMIC_RELAXED)) {
			w->hist[hist_index(app_now_ns() - r.offered_ns)]++;
			__atomic_store_n(&w->polled, w->polled + 1,
			                 __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct app_opt opts[] = {
	    app_opt_choice(
	        "locking", &opt.locking, locking_names,
	        "nested: a monitor around an inner queue with its own "
	        "lock (bug); single: one lock and one condition (fix)"),
	    app_opt_choice(
	        "inner", &opt.inner, inner_names,
	        "nested only: ring: the inner queue is a ring allocated "
	        "once; list: a node allocated per report under both locks"),
	    app_opt_int("producers", &opt.producers, 1, 256,
	                "threads offering reports (100 datanodes each)"),
	    app_opt_int("capacity", &opt.capacity, 1, 1 << 24,
	                "reports the queue holds (Ozone's default)"),
	    app_opt_double(
	        "rate", &opt.rate, 0, 1e9,
	        "reports/s in total, in a burst every ms; 0 = as fast "
	        "as possible, retrying when full"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	struct app_info info = {
	    "reportqueue",
	    "SCM's container report queue (Ozone HDDS-13020): producers offer "
	    "reports,\n"
	    "one worker polls with a 1 ms timeout. --locking=nested takes an "
	    "inner\n"
	    "queue's lock inside a monitor (the bug); single uses one lock "
	    "(the fix).",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	struct producer *prods;
	pthread_t *prod_t, worker_t;
	struct app_cpu cpu0, cpu;
	uint64_t t0, t1, n, offered = 0, rejected = 0, recorded = 0;
	double ms, count;
	int i;

	opt.locking = LOCKING_NESTED;
	opt.inner = INNER_RING;
	opt.producers = 4;
	opt.capacity = 100000;
	opt.rate = 0;
	opt.duration = 2;
	app_parse_args(&info, argc, argv);

	if (opt.locking == LOCKING_NESTED) {
		pthread_mutex_init(&nested.monitor, NULL);
		pthread_mutex_init(&nested.inner.lock, NULL);
		app_cond_init_monotonic(&nested.inner.nonempty);
		mallock_lock_name(&nested.monitor, "reportqueue.monitor");
		mallock_lock_name(&nested.inner.lock, "reportqueue.inner");
		ring_init(&nested.reports, sizeof(struct report),
		          (size_t)opt.capacity);
		nested.inner.list = opt.inner == INNER_LIST;
		nested.inner.last = &nested.inner.first;
		if (!nested.inner.list)
			ring_init(&nested.inner.uuids, sizeof(uint32_t),
			          (size_t)opt.capacity);
	} else {
		pthread_mutex_init(&single.lock, NULL);
		app_cond_init_monotonic(&single.nonempty);
		mallock_lock_name(&single.lock, "reportqueue.lock");
		ring_init(&single.reports, sizeof(struct report),
		          (size_t)opt.capacity);
	}
	prods = calloc((size_t)opt.producers, sizeof(*prods));
	prod_t = calloc((size_t)opt.producers, sizeof(*prod_t));
	if (!prods || !prod_t)
		app_die("out of memory");
	worker_t = app_thread_start(worker_main, &worker, "rq-worker", 0);
	for (i = 0; i < opt.producers; i++) {
		prods[i].index = (uint32_t)i;
		prod_t[i] =
		    app_thread_start(producer_main, &prods[i], "rq-prod", i);
	}

	cpu0 = app_cpu_now();
	t0 = app_now_ns();
	__atomic_store_n(&measuring, 1, __ATOMIC_RELAXED);
	app_sleep_until_ns(t0 + (uint64_t)(opt.duration * 1e9));
	__atomic_store_n(&measuring, 0, __ATOMIC_RELAXED);
	n = __atomic_load_n(&worker.polled, __ATOMIC_RELAXED);
	t1 = app_now_ns();
	cpu = app_cpu_diff(app_cpu_now(), cpu0);

	app_request_stop();
	for (i = 0; i < opt.producers; i++) {
		app_thread_join(prod_t[i]);
		offered += prods[i].offered;
		rejected += prods[i].rejected;
	}
	app_thread_join(worker_t);
	for (i = 0; i < HIST_BUCKETS; i++) /* may exceed n by a report or so */
		recorded += worker.hist[i];

	ms = (double)(t1 - t0) / 1e6;
	count = n ? (double)n : 1;
	printf("Reports: %llu\n", (unsigned long long)n);
	printf("Reports/ms: %.6g\n", (double)n / ms);
	printf("Latency p50: %.6gus\n",
	       hist_percentile(worker.hist, recorded, 0.50) / 1e3);
	printf("Latency p99: %.6gus\n",
	       hist_percentile(worker.hist, recorded, 0.99) / 1e3);
	printf("CPU per report: %.6gns\n",
	       (cpu.user_us + cpu.sys_us) * 1e3 / count);
	printf("Offers (whole run): %llu, failed on a full queue: %llu\n",
	       (unsigned long long)offered, (unsigned long long)rejected);

	if (opt.locking == LOCKING_NESTED) {
		free(nested.reports.slots);
		free(nested.inner.uuids.slots);
		while (nested.inner.first) {
			struct inner_node *n = nested.inner.first;

			nested.inner.first = n->next;
			free(n);
		}
	} else {
		free(single.reports.slots);
	}
	free(prods);
	free(prod_t);
	return 0;
}
