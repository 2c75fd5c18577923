/*
 * admission - a full service queue that rejects the same unlucky clients
 * again and again (Apache Kudu review 2696, "rpc: use earliest-deadline-first
 * RPC scheduling and rejection").
 *
 * --clients threads each send one request at a time, with no think time, to
 * a service with --queue-size queue slots and --workers worker threads (more
 * clients than slots plus workers, as the seed's 96 Impala scanners against
 * 20 handlers and 50 slots). A worker takes a request, handles it for
 * --service-us (sleeping) and answers. A rejected client backs off for about
 * --backoff-us and retries the same request, which keeps its deadline (first
 * attempt + --timeout-ms); a request still unanswered at its deadline is
 * given up (a timeout) and the client starts a new one. The queue is one
 * mutex ("admission.queue"), one condition variable for the workers, and one
 * per client for its answer.
 *
 *   --policy=lifo  (the bug) a full queue rejects the arriving request and
 *                  workers take the newest queued request: whoever got in
 *                  first refills the slot its own answer freed, the clients
 *                  that backed off find the queue full again and again.
 *   --policy=edf   (the fix) earliest deadline first: workers take the
 *                  earliest deadline, and a full queue evicts (rejects) the
 *                  latest deadline when the arriving one is earlier, so a
 *                  retry, which keeps its old deadline, wins over a fresh
 *                  request.
 *
 * --warmup=1 has the clients make their first request alone, in index order,
 * each answered before the next client starts (a mutex "admission.turn" and
 * its condition variable), and none competes before the last is answered:
 * every client is served at least once, and then they compete as without
 * it. The default, 0, starts them all at once.
 *
 * Output: one line per client (successes, rejections, timeouts), the seed's
 * one-line list of successes per client, and min/max/mean/stddev of it.
 *
 * GROUND TRUTH (what `mallock report` must find):
 *   lifo: starvation on "admission.queue": the "adm-client-N" threads get
 *         very unequal shares of successful requests (some near 0), and
 *         take the lock very unequally (a lucky client about three times per
 *         success, an unlucky one once per retry). The run is dominated by
 *         sleeps, so the lock is seldom contended: with the defaults an
 *         analyzer that needs lock wait time may see nothing; more traffic
 *         (--service-us=2000 --backoff-us=20) gives it some.
 *   edf:  no starvation finding: per-client successes within a few percent.
 *   lifo --warmup=1: starvation as above with every client answered at
 *         least once (no peer without service): found on the spread of the
 *         clients' rates alone.
 *   Neither variant allocates per request.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "mallock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POLICY_LIFO, POLICY_EDF };
static const char *const policy_names[] = {"lifo", "edf", NULL};

struct options {
	int policy;
	int clients;
	int queue_size;
	int workers;
	int service_us;
	int backoff_us;
	int timeout_ms;
	int warmup;
	double duration;
};

enum req_state {
	REQ_NONE, /* no request outstanding */
	REQ_QUEUED,
	REQ_RUNNING,
	REQ_DONE,     /* answered */
	REQ_REJECTED, /* refused on arrival or evicted later */
};

struct client {
	pthread_cond_t answered; /* waits on admission.queue */
	int index;
	enum req_state state; /* guarded by the queue lock */
	uint64_t deadline;    /* of the outstanding request */
	/* written by the client, read atomically */
	uint64_t ok, rejected, timeouts;
	uint64_t rng;
	char pad[64];
};

struct admission_queue {
	pthread_mutex_t lock; /* "admission.queue": guards all client states */
	pthread_cond_t work;
	int *pending; /* client indices, in arrival order */
	int n, cap;
	int waiting_workers;
	int stop;
};

static struct options opt;
static struct admission_queue queue;
static struct client *clients;

/* Index in pending of the request a worker takes next. */
static int pick_next(const struct admission_queue *q)
{
	int i, best = q->n - 1; /* lifo: the newest */

	if (opt.policy == POLICY_EDF)
		for (i = q->n - 1; i >= 0; i--)
			if (clients[q->pending[i]].deadline <=
			    clients[q->pending[best]].deadline)
				best = i;
	return best;
}

static void pending_remove(struct admission_queue *q, int i)
{
	memmove(&q->pending[i], &q->pending[i + 1],
	        (size_t)(q->n - i - 1) * sizeof(*q->pending));
	q->n--;
}

/*
 * Offers c's request. Returns 1 if it is queued, 0 if it was rejected. Under
 * edf a full queue may evict the latest deadline instead (its client is
 * told). Takes q->lock.
 */
APP_NOINLINE static int admission_submit(struct admission_queue *q,
                                         struct client *c)
{
	int wake, i, worst;

	pthread_mutex_lock(&q->lock);
	if (q->stop) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	if (q->n >= q->cap) {
		if (opt.policy == POLICY_LIFO) {
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		worst = 0;
		for (i = 1; i < q->n; i++)
			if (clients[q->pending[i]].deadline >
			    clients[q->pending[worst]].deadline)
				worst = i;
		if (c->deadline >= clients[q->pending[worst]].deadline) {
			pthread_mutex_unlock(&q->lock);
			return 0;
		}
		clients[q->pending[worst]].state = REQ_REJECTED;
		pthread_cond_signal(&clients[q->pending[worst]].answered);
		pending_remove(q, worst);
	}
	q->pending[q->n++] = c->index;
	c->state = REQ_QUEUED;
	wake = q->waiting_workers > 0;
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->work);
	return 1;
}

/*
 * Waits for the answer to c's queued request until its deadline. Returns the
 * final state: REQ_DONE, REQ_REJECTED (evicted), or REQ_NONE (timed out in
 * the queue, withdrawn; or the run stopped).
 */
static enum req_state await_answer(struct admission_queue *q, struct client *c)
{
	struct timespec ts;
	enum req_state st;
	uint64_t now = app_now_ns();

	ts = app_timespec_after(c->deadline > now ? c->deadline - now : 0);
	pthread_mutex_lock(&q->lock);
	while ((c->state == REQ_QUEUED || c->state == REQ_RUNNING) &&
	       !q->stop) {
		int rc = pthread_cond_timedwait(&c->answered, &q->lock, &ts);

		if (rc == ETIMEDOUT && c->state == REQ_QUEUED) {
			int i;

			for (i = 0; i < q->n; i++)
				if (q->pending[i] == c->index)
					break;
			pending_remove(q, i);
			c->state = REQ_NONE;
		}
		/* a running request is waited for past its deadline */
		if (rc == ETIMEDOUT)
			ts = app_timespec_after(1000000000u);
	}
	st = c->state;
	if (st == REQ_QUEUED || st == REQ_RUNNING)
		st = REQ_NONE; /* stopped */
	c->state = REQ_NONE;
	pthread_mutex_unlock(&q->lock);
	return st;
}

static void bump(uint64_t *counter)
{
	__atomic_store_n(counter, *counter + 1, __ATOMIC_RELAXED);
}

/* --warmup: the client whose turn it is (turn_lock) is the only one. */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_next = PTHREAD_COND_INITIALIZER;
static int turn;

/* --warmup: c's first request, made alone in index order and retried (a
 * new request) until it is answered. */
APP_NOINLINE static void warmup(struct client *c)
{
	uint64_t timeout_ns = (uint64_t)opt.timeout_ms * 1000000u;

	pthread_mutex_lock(&turn_lock);
	while (turn != c->index && !app_stopping()) {
		struct timespec ts = app_timespec_after(10000000u);

		pthread_cond_timedwait(&turn_next, &turn_lock, &ts);
	}
	pthread_mutex_unlock(&turn_lock);
	while (!app_stopping()) {
		c->deadline = app_now_ns() + timeout_ns;
		if (admission_submit(&queue, c) &&
		    await_answer(&queue, c) == REQ_DONE) {
			bump(&c->ok);
			break;
		}
		app_sleep_ns((uint64_t)opt.backoff_us * 1000u);
	}
	/* Nobody competes before every client has been answered once: a
	 * client done with its turn that competed at once filled the queue
	 * while the next one was alone in name only (under load clients 2 to
	 * 7 were never answered: 65, 65, 0, 0, 0, 0, 0, 0). */
	pthread_mutex_lock(&turn_lock);
	turn++;
	pthread_cond_broadcast(&turn_next);
	while (turn < opt.clients && !app_stopping()) {
		struct timespec ts = app_timespec_after(10000000u);

		pthread_cond_timedwait(&turn_next, &turn_lock, &ts);
	}
	pthread_mutex_unlock(&turn_lock);
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	uint64_t timeout_ns = (uint64_t)opt.timeout_ms * 1000000u;
	int fresh = 1, attempt = 0;

	if (opt.warmup)
		warmup(c);
	while (!app_stopping()) {
		enum req_state st;

		if (fresh) {
			c->deadline = app_now_ns() + timeout_ns;
			fresh = 0;
			attempt = 0;
		}
		attempt++;
		if (admission_submit(&queue, c))
			st = await_answer(&queue, c);
		else
			st = REQ_REJECTED;
		if (app_stopping())
			break;
		if (st == REQ_DONE) {
			bump(&c->ok);
			fresh = 1;
			continue;
		}
		if (st == REQ_REJECTED) {
			/* Kudu's test: (0.5 + 0.5 * rand) * min(2^attempt,
			 * 1000) units */
			uint64_t units =
			    attempt < 10 ? (uint64_t)1 << attempt : 1000;
			uint64_t ns = units * (uint64_t)opt.backoff_us * 1000u;

			bump(&c->rejected);
			app_sleep_ns(ns / 2 + app_rand(&c->rng) % (ns / 2 + 1));
		}
		if (st == REQ_NONE || app_now_ns() >= c->deadline) {
			bump(&c->timeouts);
			fresh = 1;
		}
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct admission_queue *q = arg;

	for (;;) {
		struct client *c;

		pthread_mutex_lock(&q->lock);
		while (q->n == 0 && !q->stop) {
			q->waiting_workers++;
			pthread_cond_wait(&q->work, &q->lock);
			q->waiting_workers--;
		}
		if (q->stop) {
			pthread_mutex_unlock(&q->lock);
			break;
		}
		{
			int i = pick_next(q);

			c = &clients[q->pending[i]];
			pending_remove(q, i);
		}
		c->state = REQ_RUNNING;
		pthread_mutex_unlock(&q->lock);

		/* the handler */
		app_sleep_ns((uint64_t)opt.service_us * 1000u);

		pthread_mutex_lock(&q->lock);
		c->state = REQ_DONE;
		pthread_mutex_unlock(&q->lock);
		pthread_cond_signal(&c->answered);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct app_opt opts[] = {
	    app_opt_choice(
	        "policy", &opt.policy, policy_names,
	        "lifo: reject arrivals on a full queue, serve the newest "
	        "(bug); edf: earliest deadline first admission (fix)"),
	    app_opt_int("clients", &opt.clients, 1, 1024, "client threads"),
	    app_opt_int("queue-size", &opt.queue_size, 1, 1 << 16,
	                "queue slots"),
	    app_opt_int("workers", &opt.workers, 1, 256, "worker threads"),
	    app_opt_int("service-us", &opt.service_us, 0, 10000000,
	                "microseconds a worker spends per request (sleeping)"),
	    app_opt_int(
	        "backoff-us", &opt.backoff_us, 0, 10000000,
	        "back-off unit: after the k-th rejection a client sleeps "
	        "0.5x to 1x of min(2^k, 1000) units"),
	    app_opt_int("timeout-ms", &opt.timeout_ms, 1, 3600000,
	                "a request's deadline after its first attempt"),
	    app_opt_int("warmup", &opt.warmup, 0, 1,
	                "1: each client's first request is made alone, in "
	                "turn, so every client is answered once"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	struct app_info info = {
	    "admission",
	    "More clients than queue slots and workers (Kudu review 2696). "
	    "--policy=lifo\n"
	    "rejects the same unlucky clients again and again (the bug); "
	    "--policy=edf\n"
	    "admits by earliest deadline, so retries win and shares even out "
	    "(the fix).",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	pthread_t *client_t, *worker_t;
	uint64_t t0, min = UINT64_MAX, max = 0;
	double sum = 0, sumsq = 0, mean, sd;
	int i;

	opt.policy = POLICY_LIFO;
	opt.clients = 8;
	opt.queue_size = 2;
	opt.workers = 1;
	opt.service_us = 10000;
	opt.backoff_us = 100;
	opt.timeout_ms = 1000;
	opt.warmup = 0;
	opt.duration = 2;
	app_parse_args(&info, argc, argv);

	pthread_mutex_init(&queue.lock, NULL);
	pthread_cond_init(&queue.work, NULL);
	mallock_lock_name(&queue.lock, "admission.queue");
	if (opt.warmup)
		mallock_lock_name(&turn_lock, "admission.turn");
	queue.cap = opt.queue_size;
	queue.pending = calloc((size_t)opt.queue_size, sizeof(*queue.pending));
	clients = calloc((size_t)opt.clients, sizeof(*clients));
	client_t = calloc((size_t)opt.clients, sizeof(*client_t));
	worker_t = calloc((size_t)opt.workers, sizeof(*worker_t));
	if (!queue.pending || !clients || !client_t || !worker_t)
		app_die("out of memory");

	for (i = 0; i < opt.workers; i++)
		worker_t[i] =
		    app_thread_start(worker_main, &queue, "adm-worker", i);
	for (i = 0; i < opt.clients; i++) {
		clients[i].index = i;
		clients[i].rng = app_rand_seed((uint64_t)i);
		app_cond_init_monotonic(&clients[i].answered);
	}
	for (i = 0; i < opt.clients; i++)
		client_t[i] =
		    app_thread_start(client_main, &clients[i], "adm-client", i);

	t0 = app_now_ns();
	app_sleep_until_ns(t0 + (uint64_t)(opt.duration * 1e9));

	app_request_stop();
	pthread_mutex_lock(&queue.lock);
	queue.stop = 1;
	for (i = 0; i < opt.clients; i++)
		pthread_cond_broadcast(&clients[i].answered);
	pthread_mutex_unlock(&queue.lock);
	pthread_cond_broadcast(&queue.work);
	for (i = 0; i < opt.clients; i++)
		app_thread_join(client_t[i]);
	for (i = 0; i < opt.workers; i++)
		app_thread_join(worker_t[i]);

	for (i = 0; i < opt.clients; i++) {
		struct client *c = &clients[i];

		printf("Client %d: %llu ok, %llu rejected, %llu timed out\n", i,
		       (unsigned long long)c->ok,
		       (unsigned long long)c->rejected,
		       (unsigned long long)c->timeouts);
		if (c->ok < min)
			min = c->ok;
		if (c->ok > max)
			max = c->ok;
		sum += (double)c->ok;
		sumsq += (double)c->ok * (double)c->ok;
	}
	printf("Successes per client:");
	for (i = 0; i < opt.clients; i++)
		printf(" %llu", (unsigned long long)clients[i].ok);
	printf("\n");
	mean = sum / opt.clients;
	sd = sqrt(fmax(0, sumsq / opt.clients - mean * mean));
	printf("Total: %.0f\n", sum);
	printf("Min: %llu\n", (unsigned long long)min);
	printf("Max: %llu\n", (unsigned long long)max);
	printf("Mean: %.6g\n", mean);
	printf("Stddev: %.6g\n", sd);
	printf("Stddev/mean: %.6g\n", mean > 0 ? sd / mean : 0.0);

	free(queue.pending);
	free(clients);
	free(client_t);
	free(worker_t);
	return 0;
}
