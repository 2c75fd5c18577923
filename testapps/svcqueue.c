/*
 * svcqueue - a bounded, deadline-ordered RPC service queue (Apache Kudu
 * change 24230).
 *
 * P producer threads put requests (a 512-byte block malloc'd outside the
 * lock, with a deadline) into one queue guarded by one mutex and one
 * condition variable; C consumer threads take the earliest deadline
 * (svcqueue_get, which waits in pthread_cond_wait) and free the request
 * outside the lock. When the queue is full the latest deadline, the arriving
 * request or a queued one, is rejected and freed by its producer. As in
 * Kudu's service_queue-test, producers keep at most --max-inflight requests
 * in flight (default: max-queue-size minus producers, Kudu's choice), spinning
 * while at the cap, so by default the queue never overflows.
 *
 *   --container=tree  (the bug) a binary search tree (a treap) with one node
 *                     per request: tree_insert mallocs it (plus
 *                     --allocs-per-put - 1 more blocks) and tree_remove_min /
 *                     tree_remove_max free it, all INSIDE svcqueue.lock, as
 *                     std::multiset did in Kudu's LifoServiceQueue::Put().
 *   --container=heap  (the fix) a binary min-heap in an array of
 *                     --max-queue-size slots allocated once at start-up: no
 *                     allocator call under the lock.
 *   --churn-threads=N N pairs of threads (2N threads) that malloc blocks of
 *                     --node-size on one thread and free them on the other,
 *                     through a ring guarded by its own mutex
 *                     ("svcqueue.churn"), so tcmalloc's central free list for
 *                     the node's size class is busy (the seed's cascade).
 *
 * Output: the five lines of Kudu's service_queue-test, Reqs/sec, User and Sys
 * CPU per req (getrusage of the whole process over the measured window), Avg
 * rpc queue length and Avg idle workers (sampled every 20 ms under the lock).
 *
 * GROUND TRUTH (what `mallock report` must find; run with --producers=2 or
 * more: with one producer and one consumer the lock is hardly contended on
 * 2 cores and the finding ranks low):
 *   tree: the top finding is alloc_under_lock on the lock named
 *         "svcqueue.lock" (queue_like: named with mallock_lock_name and waited
 *         on with a condition variable), the allocation stack naming
 *         tree_insert and svcqueue_put (frees under it from tree_remove_min in
 *         svcqueue_get). With --churn-threads, the churn threads' own
 *         alloc_churn / cross_thread_free at churn_alloc_main may rank above.
 *   heap: no alloc_under_lock on "svcqueue.lock" (heap_insert and
 *         heap_remove_min never call the allocator).
 *   Both variants malloc a request per put on a producer and free it on a
 *   consumer (request_new): alloc_churn / cross_thread_free there are
 *   expected and are not the finding this app is about.
 */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include "mallock.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUEST_SIZE 512
#define CHURN_RING 1024
#define CHURN_BATCH 32

enum { CONTAINER_TREE, CONTAINER_HEAP };
static const char *const container_names[] = {"tree", "heap", NULL};

struct options {
	int container;
	int producers;
	int consumers;
	int max_queue_size;
	int max_inflight; /* 0: max_queue_size - producers, as in Kudu */
	int allocs_per_put;
	int node_size;
	int churn_threads;
	double duration;
};

/* A request: one REQUEST_SIZE block, malloc'd by a producer, freed by a
 * consumer. */
struct request {
	uint64_t deadline;
	uint64_t seq;
	unsigned char body[REQUEST_SIZE - 16];
};

/* A tree node: --node-size bytes; extra blocks hang off it in a chain. */
struct tree_node {
	struct tree_node *left, *right;
	struct request *req;
	uint64_t deadline;
	uint64_t prio; /* treap priority: a max-heap on it keeps it balanced */
	/* --allocs-per-put - 1 more blocks, linked by their first word */
	void *extra;
};

struct heap_slot {
	uint64_t deadline;
	struct request *req;
};

struct svcqueue {
	pthread_mutex_t lock; /* "svcqueue.lock": guards everything below */
	pthread_cond_t nonempty;
	int container;
	size_t size, max_size;
	int idle_workers;
	int shutdown;
	struct tree_node *root;
	uint64_t prio_rng;
	size_t node_size;
	int allocs_per_put;
	struct heap_slot *heap; /* max_size slots, allocated once */
};

enum put_status { PUT_OK, PUT_REJECTED, PUT_SHUTDOWN };

/* ---- the tree (the bug): one malloc per insert, one free per removal ---- */

static struct tree_node *tree_rotate_right(struct tree_node *n)
{
	struct tree_node *l = n->left;

	n->left = l->right;
	l->right = n;
	return l;
}

static struct tree_node *tree_rotate_left(struct tree_node *n)
{
	struct tree_node *r = n->right;

	n->right = r->left;
	r->left = n;
	return r;
}

/* Links n below root (equal deadlines go right: FIFO among equals). */
static struct tree_node *tree_link(struct tree_node *root, struct tree_node *n)
{
	if (!root)
		return n;
	if (n->deadline < root->deadline) {
		root->left = tree_link(root->left, n);
		if (root->left->prio > root->prio)
			root = tree_rotate_right(root);
	} else {
		root->right = tree_link(root->right, n);
		if (root->right->prio > root->prio)
			root = tree_rotate_left(root);
	}
	return root;
}

/* Called with q->lock held. Allocates q->allocs_per_put blocks: the bug. */
APP_NOINLINE static void tree_insert(struct svcqueue *q, struct request *req)
{
	struct tree_node *n = malloc(q->node_size);
	int k;

	if (!n)
		app_die("out of memory");
	n->left = n->right = NULL;
	n->req = req;
	n->deadline = req->deadline;
	n->prio = app_rand(&q->prio_rng);
	n->extra = NULL;
	for (k = 1; k < q->allocs_per_put; k++) {
		void **blk = malloc(q->node_size);

		if (!blk)
			app_die("out of memory");
		*blk = n->extra;
		n->extra = blk;
	}
	q->root = tree_link(q->root, n);
}

/* Called with q->lock held: frees n and its extra blocks. */
static void tree_node_free(struct tree_node *n)
{
	void *blk = n->extra;

	while (blk) {
		void *next = *(void **)blk;

		free(blk);
		blk = next;
	}
	free(n);
}

/* Called with q->lock held, tree not empty. Frees the node. */
APP_NOINLINE static struct request *tree_remove_min(struct svcqueue *q)
{
	struct tree_node **pp = &q->root, *n;
	struct request *req;

	while ((*pp)->left)
		pp = &(*pp)->left;
	n = *pp;
	*pp = n->right; /* the leftmost node has no left child */
	req = n->req;
	tree_node_free(n);
	return req;
}

/* Called with q->lock held, tree not empty. Frees the node. */
APP_NOINLINE static struct request *tree_remove_max(struct svcqueue *q)
{
	struct tree_node **pp = &q->root, *n;
	struct request *req;

	while ((*pp)->right)
		pp = &(*pp)->right;
	n = *pp;
	*pp = n->left;
	req = n->req;
	tree_node_free(n);
	return req;
}

static uint64_t tree_max_deadline(const struct svcqueue *q)
{
	const struct tree_node *n = q->root;

	while (n->right)
		n = n->right;
	return n->deadline;
}

/* ---- the heap (the fix): a pre-allocated array, no allocator calls ---- */

static void heap_sift_up(struct heap_slot *h, size_t i)
{
	struct heap_slot x = h[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (h[parent].deadline <= x.deadline)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = x;
}

static void heap_sift_down(struct heap_slot *h, size_t n, size_t i)
{
	struct heap_slot x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].deadline < h[c].deadline)
			c++;
		if (x.deadline <= h[c].deadline)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Called with q->lock held, q->size < q->max_size. */
APP_NOINLINE static void heap_insert(struct svcqueue *q, struct request *req)
{
	q->heap[q->size].deadline = req->deadline;
	q->heap[q->size].req = req;
	heap_sift_up(q->heap, q->size);
}

/* Called with q->lock held, heap not empty; q->size is the count before. */
APP_NOINLINE static struct request *heap_remove_min(struct svcqueue *q)
{
	struct request *req = q->heap[0].req;
	size_t last = q->size - 1;

	q->heap[0] = q->heap[last];
	if (last > 0)
		heap_sift_down(q->heap, last, 0);
	return req;
}

/* The latest deadline is among the leaves: indices size/2 .. size-1. */
static size_t heap_max_index(const struct svcqueue *q)
{
	size_t i, best = q->size / 2;

	for (i = best + 1; i < q->size; i++)
		if (q->heap[i].deadline > q->heap[best].deadline)
			best = i;
	return best;
}

/* Replaces the latest deadline by req (Kudu's edge case: evict on a full
 * queue). */
static struct request *heap_replace_max(struct svcqueue *q, struct request *req)
{
	size_t i = heap_max_index(q);
	struct request *evicted = q->heap[i].req;

	q->heap[i].deadline = req->deadline;
	q->heap[i].req = req;
	heap_sift_up(q->heap, i);
	return evicted;
}

/* ---- the queue ---------------------------------------------------------- */

static void svcqueue_init(struct svcqueue *q, const struct options *o)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->nonempty, NULL);
	mallock_lock_name(&q->lock, "svcqueue.lock");
	q->container = o->container;
	q->max_size = (size_t)o->max_queue_size;
	q->node_size = (size_t)o->node_size;
	if (q->node_size < sizeof(struct tree_node))
		q->node_size = sizeof(struct tree_node);
	q->allocs_per_put = o->allocs_per_put;
	q->prio_rng = app_rand_seed(1000);
	if (q->container == CONTAINER_HEAP) {
		q->heap = calloc(q->max_size, sizeof(*q->heap));
		if (!q->heap)
			app_die("out of memory");
	}
}

/*
 * Puts req. Returns PUT_OK, or PUT_REJECTED with *rejected set to the request
 * the caller must free (req itself, or a queued one it evicted), or
 * PUT_SHUTDOWN. Takes q->lock; in tree mode allocates under it.
 */
APP_NOINLINE static enum put_status
svcqueue_put(struct svcqueue *q, struct request *req, struct request **rejected)
{
	enum put_status st = PUT_OK;
	int wake;

	*rejected = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->shutdown) {
		pthread_mutex_unlock(&q->lock);
		return PUT_SHUTDOWN;
	}
	if (q->size >= q->max_size) {
		uint64_t worst = q->container == CONTAINER_TREE
		                     ? tree_max_deadline(q)
		                     : q->heap[heap_max_index(q)].deadline;

		st = PUT_REJECTED;
		if (req->deadline >= worst) {
			pthread_mutex_unlock(&q->lock);
			*rejected = req;
			return st;
		}
		if (q->container == CONTAINER_TREE) {
			*rejected = tree_remove_max(q);
			tree_insert(q, req);
		} else {
			*rejected = heap_replace_max(q, req);
		}
	} else {
		if (q->container == CONTAINER_TREE)
			tree_insert(q, req);
		else
			heap_insert(q, req);
		q->size++;
	}
	wake = q->idle_workers > 0;
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->nonempty);
	return st;
}

/*
 * Takes the earliest deadline, waiting while the queue is empty. Returns NULL
 * once the queue is shut down and drained. Takes q->lock; in tree mode frees
 * under it.
 */
APP_NOINLINE static struct request *svcqueue_get(struct svcqueue *q)
{
	struct request *req = NULL;

	pthread_mutex_lock(&q->lock);
	while (q->size == 0 && !q->shutdown) {
		q->idle_workers++;
		pthread_cond_wait(&q->nonempty, &q->lock);
		q->idle_workers--;
	}
	if (q->size > 0) {
		req = q->container == CONTAINER_TREE ? tree_remove_min(q)
		                                     : heap_remove_min(q);
		q->size--;
	}
	pthread_mutex_unlock(&q->lock);
	return req;
}

static void svcqueue_shutdown(struct svcqueue *q)
{
	pthread_mutex_lock(&q->lock);
	q->shutdown = 1;
	pthread_mutex_unlock(&q->lock);
	pthread_cond_broadcast(&q->nonempty);
}

/* ---- producers and consumers ------------------------------------------ */

static struct svcqueue queue;
static struct options opt;
static atomic_int inflight;

struct worker {
	atomic_uint_fast64_t done; /* consumers: requests completed */
	uint64_t rejected;         /* producers: requests rejected */
	uint64_t rng;
	int index;
	char pad[64]; /* no false sharing between workers */
};

APP_NOINLINE static struct request *request_new(uint64_t *rng, uint64_t seq)
{
	struct request *req = malloc(sizeof(*req));

	if (!req)
		app_die("out of memory");
	/* An RPC deadline: 100 ms to 200 ms from now, so the order varies. */
	req->deadline = app_now_ns() + 100000000u + app_rand(rng) % 100000000u;
	req->seq = seq;
	memset(req->body, (int)(seq & 0xff), 64);
	return req;
}

static void *producer_main(void *arg)
{
	struct worker *w = arg;
	int cap = opt.max_inflight;
	uint64_t seq = 0;

	while (!app_stopping()) {
		struct request *req, *rejected;
		enum put_status st;
		unsigned spins = 0;

		while (atomic_load_explicit(&inflight, memory_order_relaxed) >=
		       cap) {
			if (app_stopping())
				return NULL;
			if (++spins < 1000)
				app_cpu_relax();
			else
				sched_yield();
		}
		atomic_fetch_add_explicit(&inflight, 1, memory_order_relaxed);
		req = request_new(&w->rng, seq++);
		st = svcqueue_put(&queue, req, &rejected);
		if (st == PUT_SHUTDOWN) {
			free(req);
			atomic_fetch_sub_explicit(&inflight, 1,
			                          memory_order_relaxed);
			break;
		}
		if (rejected) {
			w->rejected++;
			free(rejected);
			atomic_fetch_sub_explicit(&inflight, 1,
			                          memory_order_relaxed);
		}
	}
	return NULL;
}

static void *consumer_main(void *arg)
{
	struct worker *w = arg;
	struct request *req;
	unsigned sink = 0;

	while ((req = svcqueue_get(&queue)) != NULL) {
		sink += req->body[0]; /* "handle" the call */
		free(req);
		atomic_fetch_sub_explicit(&inflight, 1, memory_order_relaxed);
		atomic_store_explicit(
		    &w->done,
		    atomic_load_explicit(&w->done, memory_order_relaxed) + 1,
		    memory_order_relaxed);
	}
	return (void *)(uintptr_t)(sink & 1);
}

/* ---- churn: cross-thread traffic on the node's size class -------------- */

struct churn {
	pthread_mutex_t lock; /* "svcqueue.churn": not shared with the queue */
	pthread_cond_t nonempty, nonfull;
	void *slots[CHURN_RING];
	size_t head, tail; /* head - tail blocks in the ring */
	int stop;
	size_t block_size;
};

static void *churn_alloc_main(void *arg)
{
	struct churn *c = arg;
	void *batch[CHURN_BATCH];
	size_t i;

	for (;;) {
		for (i = 0; i < CHURN_BATCH; i++) {
			batch[i] = malloc(c->block_size);
			if (!batch[i])
				app_die("out of memory");
			*(volatile char *)batch[i] = (char)i;
		}
		pthread_mutex_lock(&c->lock);
		while (!c->stop &&
		       CHURN_RING - (c->head - c->tail) < CHURN_BATCH)
			pthread_cond_wait(&c->nonfull, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			for (i = 0; i < CHURN_BATCH; i++)
				free(batch[i]);
			return NULL;
		}
		for (i = 0; i < CHURN_BATCH; i++)
			c->slots[c->head++ % CHURN_RING] = batch[i];
		pthread_mutex_unlock(&c->lock);
		pthread_cond_signal(&c->nonempty);
	}
}

static void *churn_free_main(void *arg)
{
	struct churn *c = arg;
	void *batch[CHURN_BATCH];
	size_t i, n;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (!c->stop && c->head == c->tail)
			pthread_cond_wait(&c->nonempty, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			return NULL; /* main frees what is left */
		}
		for (n = 0; n < CHURN_BATCH && c->tail != c->head; n++)
			batch[n] = c->slots[c->tail++ % CHURN_RING];
		pthread_mutex_unlock(&c->lock);
		pthread_cond_signal(&c->nonfull);
		for (i = 0; i < n; i++)
			free(batch[i]);
	}
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	struct app_opt opts[] = {
	    app_opt_choice(
	        "container", &opt.container, container_names,
	        "tree: a node malloc'd per put under the lock (bug); "
	        "heap: a pre-allocated min-heap (fix)"),
	    app_opt_int("producers", &opt.producers, 1, 256,
	                "producer threads"),
	    app_opt_int("consumers", &opt.consumers, 1, 256,
	                "consumer threads"),
	    app_opt_int("max-queue-size", &opt.max_queue_size, 1, 1 << 20,
	                "queue capacity (the seed used 200)"),
	    app_opt_int(
	        "max-inflight", &opt.max_inflight, 0, 1 << 24,
	        "requests in flight before producers spin; 0 means "
	        "max-queue-size - producers (Kudu's test); larger values "
	        "make a full queue evict"),
	    app_opt_int(
	        "allocs-per-put", &opt.allocs_per_put, 1, 64,
	        "allocations per put in tree mode (the node plus K-1 blocks)"),
	    app_opt_int(
	        "node-size", &opt.node_size, 1, 1 << 20,
	        "bytes per tree allocation and per churn block (at least "
	        "the node's 48 bytes)"),
	    app_opt_int("churn-threads", &opt.churn_threads, 0, 64,
	                "pairs of threads that malloc node-size blocks on one "
	                "thread and free them on the other"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	struct app_info info = {
	    "svcqueue",
	    "A bounded deadline-ordered service queue (Kudu change 24230): "
	    "producers\n"
	    "put requests, consumers take the earliest deadline. "
	    "--container=tree\n"
	    "allocates a node under the queue lock per put (the bug), heap "
	    "does not.",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	struct worker *prod, *cons;
	pthread_t *prod_t, *cons_t, *churn_t = NULL;
	struct churn *churn = NULL;
	struct app_cpu cpu0, cpu;
	uint64_t t0, t1, end, before = 0, after = 0, samples = 0;
	double qlen_sum = 0, idle_sum = 0, secs, reqs;
	struct request *req;
	int i;

	opt.container = CONTAINER_TREE;
	opt.producers = 1;
	opt.consumers = 1;
	opt.max_queue_size = 200;
	opt.allocs_per_put = 1;
	opt.node_size = 64;
	opt.duration = 2;
	app_parse_args(&info, argc, argv);
	if (opt.max_inflight == 0)
		opt.max_inflight = opt.max_queue_size > opt.producers
		                       ? opt.max_queue_size - opt.producers
		                       : 1;

	svcqueue_init(&queue, &opt);
	prod = calloc((size_t)opt.producers, sizeof(*prod));
	cons = calloc((size_t)opt.consumers, sizeof(*cons));
	prod_t = calloc((size_t)opt.producers, sizeof(*prod_t));
	cons_t = calloc((size_t)opt.consumers, sizeof(*cons_t));
	if (!prod || !cons || !prod_t || !cons_t)
		app_die("out of memory");
	if (opt.churn_threads) {
		churn = calloc((size_t)opt.churn_threads, sizeof(*churn));
		churn_t =
		    calloc((size_t)opt.churn_threads * 2, sizeof(*churn_t));
		if (!churn || !churn_t)
			app_die("out of memory");
	}

	for (i = 0; i < opt.consumers; i++) {
		cons[i].index = i;
		cons_t[i] =
		    app_thread_start(consumer_main, &cons[i], "svcq-cons", i);
	}
	for (i = 0; i < opt.producers; i++) {
		prod[i].index = i;
		prod[i].rng = app_rand_seed((uint64_t)i);
		prod_t[i] =
		    app_thread_start(producer_main, &prod[i], "svcq-prod", i);
	}
	for (i = 0; i < opt.churn_threads; i++) {
		struct churn *c = &churn[i];

		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->nonempty, NULL);
		pthread_cond_init(&c->nonfull, NULL);
		mallock_lock_label(&c->lock, "svcqueue.churn");
		c->block_size = (size_t)opt.node_size < sizeof(struct tree_node)
		                    ? sizeof(struct tree_node)
		                    : (size_t)opt.node_size;
		churn_t[2 * i] =
		    app_thread_start(churn_alloc_main, c, "churn-alloc", i);
		churn_t[2 * i + 1] =
		    app_thread_start(churn_free_main, c, "churn-free", i);
	}

	/* The measured window, sampled every 20 ms as Kudu's test does. */
	cpu0 = app_cpu_now();
	t0 = app_now_ns();
	for (i = 0; i < opt.consumers; i++)
		before += atomic_load(&cons[i].done);
	end = t0 + (uint64_t)(opt.duration * 1e9);
	for (;;) {
		uint64_t now = app_now_ns(), next = now + 20000000u;

		if (now >= end)
			break;
		app_sleep_until_ns(next < end ? next : end);
		pthread_mutex_lock(&queue.lock);
		qlen_sum += (double)queue.size;
		idle_sum += queue.idle_workers;
		pthread_mutex_unlock(&queue.lock);
		samples++;
	}
	for (i = 0; i < opt.consumers; i++)
		after += atomic_load(&cons[i].done);
	t1 = app_now_ns();
	cpu = app_cpu_diff(app_cpu_now(), cpu0);

	/* Stop: producers first, then the queue, then the churn pairs. */
	app_request_stop();
	for (i = 0; i < opt.producers; i++)
		app_thread_join(prod_t[i]);
	svcqueue_shutdown(&queue);
	for (i = 0; i < opt.consumers; i++)
		app_thread_join(cons_t[i]);
	for (i = 0; i < opt.churn_threads; i++) {
		struct churn *c = &churn[i];

		pthread_mutex_lock(&c->lock);
		c->stop = 1;
		pthread_mutex_unlock(&c->lock);
		pthread_cond_broadcast(&c->nonempty);
		pthread_cond_broadcast(&c->nonfull);
		app_thread_join(churn_t[2 * i]);
		app_thread_join(churn_t[2 * i + 1]);
		while (c->tail != c->head)
			free(c->slots[c->tail++ % CHURN_RING]);
	}
	while ((req = svcqueue_get(&queue)) != NULL) /* drained: returns NULL */
		free(req);

	secs = (double)(t1 - t0) / 1e9;
	reqs = (double)(after - before);
	if (reqs < 1)
		reqs = 1;
	printf("Reqs/sec: %.0f\n", reqs / secs);
	printf("User CPU per req: %.6gus\n", cpu.user_us / reqs);
	printf("Sys CPU per req: %.6gus\n", cpu.sys_us / reqs);
	printf("Avg rpc queue length: %.6g\n",
	       samples ? qlen_sum / (double)samples : 0.0);
	printf("Avg idle workers: %.6g\n",
	       samples ? idle_sum / (double)samples : 0.0);

	free(queue.heap);
	free(prod);
	free(cons);
	free(prod_t);
	free(cons_t);
	free(churn);
	free(churn_t);
	return 0;
}
