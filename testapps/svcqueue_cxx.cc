/*
 * svcqueue_cxx - svcqueue in C++17 with the standard containers Kudu used
 * (Apache Kudu change 24230).
 *
 * The same queue, threads, options and output as svcqueue.c (read its header
 * comment), with the container of the original and of the fix:
 *
 *   --container=tree  (the bug) std::multiset<Entry, DeadlineLess>: each
 *                     insert allocates a red-black tree node with operator new
 *                     INSIDE svcqueue.lock and each erase deletes one, as
 *                     LifoServiceQueue::Put() did before the change.
 *   --container=heap  (the fix) a std::vector reserved to --max-queue-size up
 *                     front, kept a min-heap with std::push_heap/pop_heap: no
 *                     allocator call under the lock.
 *
 * --allocs-per-put=K adds K-1 blocks of --node-size bytes (new char[]) owned
 * by each tree entry, allocated and deleted under the lock like the node.
 * The multiset node itself is 32 bytes of header plus the 24-byte Entry
 * (tcmalloc's 64-byte class, as svcqueue's default --node-size); --node-size
 * sets the size of the extra blocks and of the churn blocks.
 * Locks are plain pthread mutexes and condition variables (not std::mutex) so
 * the LD_PRELOAD hooks see the same calls as in the C apps.
 *
 * GROUND TRUTH (what `mallock report` must find; run with --producers=2 or
 * more, as for svcqueue):
 *   tree: the top finding is alloc_under_lock on "svcqueue.lock" (queue_like),
 *         the stack naming tree_insert and svcqueue_put above operator new
 *         (via std::multiset::insert); frees under the lock from
 *         tree_remove_min in svcqueue_get.
 *   heap: no alloc_under_lock on "svcqueue.lock". In both, the 512-byte
 *         request from request_new is freed on another thread (alloc_churn,
 *         cross_thread_free there), which is expected and not this app's
 *         finding.
 */
#include "common.h"
#include "mallock.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include <sched.h>

namespace
{

constexpr size_t kRequestSize = 512;
constexpr size_t kChurnRing = 1024;
constexpr size_t kChurnBatch = 32;

enum { CONTAINER_TREE, CONTAINER_HEAP };
const char *const container_names[] = {"tree", "heap", nullptr};

struct Options {
	int container = CONTAINER_TREE;
	int producers = 1;
	int consumers = 1;
	int max_queue_size = 200;
	int max_inflight = 0;
	int allocs_per_put = 1;
	int node_size = 64;
	int churn_threads = 0;
	double duration = 2;
};

struct Request {
	uint64_t deadline;
	uint64_t seq;
	unsigned char body[kRequestSize - 16];
};

/* Extra blocks (--allocs-per-put - 1), linked by their first word. */
struct Entry {
	uint64_t deadline;
	Request *req;
	void *extra;
};

struct DeadlineLess {
	bool operator()(const Entry &a, const Entry &b) const
	{
		return a.deadline < b.deadline;
	}
};

/* std::push_heap builds a max-heap on its comparator: invert it for a min-heap.
 */
struct DeadlineGreater {
	bool operator()(const Entry &a, const Entry &b) const
	{
		return a.deadline > b.deadline;
	}
};

struct SvcQueue {
	pthread_mutex_t lock; // "svcqueue.lock": guards everything below
	pthread_cond_t nonempty;
	int container = CONTAINER_TREE;
	size_t max_size = 0;
	int idle_workers = 0;
	bool shutdown = false;
	size_t node_size = 64;
	int allocs_per_put = 1;
	std::multiset<Entry, DeadlineLess> tree;
	std::vector<Entry> heap; // reserved to max_size at start-up
};

enum PutStatus { PUT_OK, PUT_REJECTED, PUT_SHUTDOWN };

SvcQueue queue;
Options opt;
std::atomic<int> inflight{0};

void extra_free(void *blk)
{
	while (blk) {
		void *next = *static_cast<void **>(blk);
		delete[] static_cast<char *>(blk);
		blk = next;
	}
}

} // namespace

/* Called with q->lock held: the multiset allocates a node (the bug). */
APP_NOINLINE void tree_insert(SvcQueue *q, Request *req)
{
	Entry e{req->deadline, req, nullptr};

	for (int k = 1; k < q->allocs_per_put; k++) {
		char *blk = new char[q->node_size];
		*reinterpret_cast<void **>(blk) = e.extra;
		e.extra = blk;
	}
	q->tree.insert(e);
}

/* Called with q->lock held, tree not empty: the multiset deletes a node. */
APP_NOINLINE Request *tree_remove_min(SvcQueue *q)
{
	auto it = q->tree.begin();
	Entry e = *it;

	q->tree.erase(it);
	extra_free(e.extra);
	return e.req;
}

APP_NOINLINE Request *tree_remove_max(SvcQueue *q)
{
	auto it = std::prev(q->tree.end());
	Entry e = *it;

	q->tree.erase(it);
	extra_free(e.extra);
	return e.req;
}

/* Called with q->lock held, heap below capacity: never reallocates. */
APP_NOINLINE void heap_insert(SvcQueue *q, Request *req)
{
	q->heap.push_back(Entry{req->deadline, req, nullptr});
	std::push_heap(q->heap.begin(), q->heap.end(), DeadlineGreater());
}

APP_NOINLINE Request *heap_remove_min(SvcQueue *q)
{
	std::pop_heap(q->heap.begin(), q->heap.end(), DeadlineGreater());
	Request *req = q->heap.back().req;
	q->heap.pop_back();
	return req;
}

namespace
{

/* The latest deadline of a min-heap is among its leaves. */
size_t heap_max_index(const SvcQueue *q)
{
	size_t n = q->heap.size(), best = n / 2;

	for (size_t i = best + 1; i < n; i++)
		if (q->heap[i].deadline > q->heap[best].deadline)
			best = i;
	return best;
}

/* Kudu's edge case: evict the latest deadline and put req in its place. */
Request *heap_replace_max(SvcQueue *q, Request *req)
{
	size_t i = heap_max_index(q);
	Request *evicted = q->heap[i].req;

	q->heap[i] = Entry{req->deadline, req, nullptr};
	std::push_heap(q->heap.begin(),
	               q->heap.begin() + static_cast<long>(i) + 1,
	               DeadlineGreater());
	return evicted;
}

size_t queue_size(const SvcQueue *q)
{
	return q->container == CONTAINER_TREE ? q->tree.size() : q->heap.size();
}

} // namespace

/*
 * Puts req. Returns PUT_OK, PUT_REJECTED with *rejected the request to free
 * (req or an evicted one), or PUT_SHUTDOWN. Takes q->lock.
 */
APP_NOINLINE PutStatus svcqueue_put(SvcQueue *q, Request *req,
                                    Request **rejected)
{
	PutStatus st = PUT_OK;

	*rejected = nullptr;
	pthread_mutex_lock(&q->lock);
	if (q->shutdown) {
		pthread_mutex_unlock(&q->lock);
		return PUT_SHUTDOWN;
	}
	if (queue_size(q) >= q->max_size) {
		uint64_t worst = q->container == CONTAINER_TREE
		                     ? std::prev(q->tree.end())->deadline
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
	} else if (q->container == CONTAINER_TREE) {
		tree_insert(q, req);
	} else {
		heap_insert(q, req);
	}
	bool wake = q->idle_workers > 0;
	pthread_mutex_unlock(&q->lock);
	if (wake)
		pthread_cond_signal(&q->nonempty);
	return st;
}

/* Takes the earliest deadline, waiting while empty; nullptr once shut down and
 * drained. */
APP_NOINLINE Request *svcqueue_get(SvcQueue *q)
{
	Request *req = nullptr;

	pthread_mutex_lock(&q->lock);
	while (queue_size(q) == 0 && !q->shutdown) {
		q->idle_workers++;
		pthread_cond_wait(&q->nonempty, &q->lock);
		q->idle_workers--;
	}
	if (queue_size(q) > 0)
		req = q->container == CONTAINER_TREE ? tree_remove_min(q)
		                                     : heap_remove_min(q);
	pthread_mutex_unlock(&q->lock);
	return req;
}

APP_NOINLINE Request *request_new(uint64_t *rng, uint64_t seq)
{
	Request *req = new Request;

	req->deadline = app_now_ns() + 100000000u + app_rand(rng) % 100000000u;
	req->seq = seq;
	std::memset(req->body, static_cast<int>(seq & 0xff), 64);
	return req;
}

namespace
{

struct Worker {
	std::atomic<uint64_t> done{0};
	uint64_t rejected = 0;
	uint64_t rng = 0;
	char pad[64];
};

void *producer_main(void *arg)
{
	Worker *w = static_cast<Worker *>(arg);
	uint64_t seq = 0;

	while (!app_stopping()) {
		unsigned spins = 0;

		while (inflight.load(std::memory_order_relaxed) >=
		       opt.max_inflight) {
			if (app_stopping())
				return nullptr;
			if (++spins < 1000)
				app_cpu_relax();
			else
				sched_yield();
		}
		inflight.fetch_add(1, std::memory_order_relaxed);
		Request *req = request_new(&w->rng, seq++);
		Request *rejected;
		PutStatus st = svcqueue_put(&queue, req, &rejected);
		if (st == PUT_SHUTDOWN) {
			delete req;
			inflight.fetch_sub(1, std::memory_order_relaxed);
			break;
		}
		if (rejected) {
			w->rejected++;
			delete rejected;
			inflight.fetch_sub(1, std::memory_order_relaxed);
		}
	}
	return nullptr;
}

void *consumer_main(void *arg)
{
	Worker *w = static_cast<Worker *>(arg);
	unsigned sink = 0;

	while (Request *req = svcqueue_get(&queue)) {
		sink += req->body[0];
		delete req;
		inflight.fetch_sub(1, std::memory_order_relaxed);
		w->done.store(w->done.load(std::memory_order_relaxed) + 1,
		              std::memory_order_relaxed);
	}
	return reinterpret_cast<void *>(static_cast<uintptr_t>(sink & 1));
}

struct Churn {
	pthread_mutex_t lock; // "svcqueue.churn": never shared with the queue
	pthread_cond_t nonempty, nonfull;
	void *slots[kChurnRing];
	size_t head = 0, tail = 0;
	bool stop = false;
	size_t block_size = 64;
};

void *churn_alloc_main(void *arg)
{
	Churn *c = static_cast<Churn *>(arg);
	void *batch[kChurnBatch];

	for (;;) {
		for (size_t i = 0; i < kChurnBatch; i++) {
			batch[i] = std::malloc(c->block_size);
			if (!batch[i])
				app_die("out of memory");
			*static_cast<volatile char *>(batch[i]) =
			    static_cast<char>(i);
		}
		pthread_mutex_lock(&c->lock);
		while (!c->stop &&
		       kChurnRing - (c->head - c->tail) < kChurnBatch)
			pthread_cond_wait(&c->nonfull, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			for (size_t i = 0; i < kChurnBatch; i++)
				std::free(batch[i]);
			return nullptr;
		}
		for (size_t i = 0; i < kChurnBatch; i++)
			c->slots[c->head++ % kChurnRing] = batch[i];
		pthread_mutex_unlock(&c->lock);
		pthread_cond_signal(&c->nonempty);
	}
}

void *churn_free_main(void *arg)
{
	Churn *c = static_cast<Churn *>(arg);
	void *batch[kChurnBatch];

	for (;;) {
		size_t n = 0;

		pthread_mutex_lock(&c->lock);
		while (!c->stop && c->head == c->tail)
			pthread_cond_wait(&c->nonempty, &c->lock);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			return nullptr;
		}
		for (; n < kChurnBatch && c->tail != c->head; n++)
			batch[n] = c->slots[c->tail++ % kChurnRing];
		pthread_mutex_unlock(&c->lock);
		pthread_cond_signal(&c->nonfull);
		for (size_t i = 0; i < n; i++)
			std::free(batch[i]);
	}
}

} // namespace

int main(int argc, char **argv)
{
	app_opt opts[] = {
	    app_opt_choice(
	        "container", &opt.container, container_names,
	        "tree: std::multiset, a node per put under the lock (bug); "
	        "heap: a reserved std::vector min-heap (fix)"),
	    app_opt_int("producers", &opt.producers, 1, 256,
	                "producer threads"),
	    app_opt_int("consumers", &opt.consumers, 1, 256,
	                "consumer threads"),
	    app_opt_int("max-queue-size", &opt.max_queue_size, 1, 1 << 20,
	                "queue capacity (the seed used 200)"),
	    app_opt_int("max-inflight", &opt.max_inflight, 0, 1 << 24,
	                "requests in flight before producers spin; 0 means "
	                "max-queue-size - producers (Kudu's test)"),
	    app_opt_int(
	        "allocs-per-put", &opt.allocs_per_put, 1, 64,
	        "allocations per put in tree mode (the node plus K-1 blocks)"),
	    app_opt_int("node-size", &opt.node_size, 8, 1 << 20,
	                "bytes per extra block and per churn block"),
	    app_opt_int("churn-threads", &opt.churn_threads, 0, 64,
	                "pairs of threads that malloc node-size blocks on one "
	                "thread and free them on the other"),
	    app_opt_double("duration", &opt.duration, 0.01, 86400,
	                   "seconds to run"),
	};
	app_info info = {
	    "svcqueue_cxx",
	    "svcqueue with std::multiset (--container=tree, the bug: a node "
	    "per put\n"
	    "allocated under the queue lock) or a reserved std::vector heap "
	    "(heap).",
	    opts,
	    sizeof(opts) / sizeof(opts[0]),
	};
	app_parse_args(&info, argc, argv);
	if (opt.max_inflight == 0)
		opt.max_inflight = opt.max_queue_size > opt.producers
		                       ? opt.max_queue_size - opt.producers
		                       : 1;

	pthread_mutex_init(&queue.lock, nullptr);
	pthread_cond_init(&queue.nonempty, nullptr);
	mallock_lock_name(&queue.lock, "svcqueue.lock");
	queue.container = opt.container;
	queue.max_size = static_cast<size_t>(opt.max_queue_size);
	queue.node_size = static_cast<size_t>(opt.node_size);
	queue.allocs_per_put = opt.allocs_per_put;
	if (opt.container == CONTAINER_HEAP)
		queue.heap.reserve(queue.max_size);

	std::vector<Worker> prod(static_cast<size_t>(opt.producers));
	std::vector<Worker> cons(static_cast<size_t>(opt.consumers));
	std::vector<pthread_t> prod_t, cons_t, churn_t;
	std::vector<Churn> churn(static_cast<size_t>(opt.churn_threads));

	for (int i = 0; i < opt.consumers; i++)
		cons_t.push_back(
		    app_thread_start(consumer_main, &cons[i], "svcq-cons", i));
	for (int i = 0; i < opt.producers; i++) {
		prod[i].rng = app_rand_seed(static_cast<uint64_t>(i));
		prod_t.push_back(
		    app_thread_start(producer_main, &prod[i], "svcq-prod", i));
	}
	for (int i = 0; i < opt.churn_threads; i++) {
		Churn *c = &churn[i];

		pthread_mutex_init(&c->lock, nullptr);
		pthread_cond_init(&c->nonempty, nullptr);
		pthread_cond_init(&c->nonfull, nullptr);
		mallock_lock_label(&c->lock, "svcqueue.churn");
		c->block_size = static_cast<size_t>(opt.node_size);
		churn_t.push_back(
		    app_thread_start(churn_alloc_main, c, "churn-alloc", i));
		churn_t.push_back(
		    app_thread_start(churn_free_main, c, "churn-free", i));
	}

	app_cpu cpu0 = app_cpu_now();
	uint64_t t0 = app_now_ns(), before = 0, after = 0, samples = 0;
	double qlen_sum = 0, idle_sum = 0;
	for (auto &w : cons)
		before += w.done.load();
	uint64_t end = t0 + static_cast<uint64_t>(opt.duration * 1e9);
	for (;;) {
		uint64_t now = app_now_ns(), next = now + 20000000u;

		if (now >= end)
			break;
		app_sleep_until_ns(std::min(next, end));
		pthread_mutex_lock(&queue.lock);
		qlen_sum += static_cast<double>(queue_size(&queue));
		idle_sum += queue.idle_workers;
		pthread_mutex_unlock(&queue.lock);
		samples++;
	}
	for (auto &w : cons)
		after += w.done.load();
	uint64_t t1 = app_now_ns();
	app_cpu cpu = app_cpu_diff(app_cpu_now(), cpu0);

	app_request_stop();
	for (pthread_t t : prod_t)
		app_thread_join(t);
	pthread_mutex_lock(&queue.lock);
	queue.shutdown = true;
	pthread_mutex_unlock(&queue.lock);
	pthread_cond_broadcast(&queue.nonempty);
	for (pthread_t t : cons_t)
		app_thread_join(t);
	for (size_t i = 0; i < churn.size(); i++) {
		Churn *c = &churn[i];

		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_mutex_unlock(&c->lock);
		pthread_cond_broadcast(&c->nonempty);
		pthread_cond_broadcast(&c->nonfull);
		app_thread_join(churn_t[2 * i]);
		app_thread_join(churn_t[2 * i + 1]);
		while (c->tail != c->head)
			std::free(c->slots[c->tail++ % kChurnRing]);
	}
	while (Request *req = svcqueue_get(&queue))
		delete req;

	double secs = static_cast<double>(t1 - t0) / 1e9;
	double reqs = std::max(1.0, static_cast<double>(after - before));
	std::printf("Reqs/sec: %.0f\n", reqs / secs);
	std::printf("User CPU per req: %.6gus\n", cpu.user_us / reqs);
	std::printf("Sys CPU per req: %.6gus\n", cpu.sys_us / reqs);
	std::printf("Avg rpc queue length: %.6g\n",
	            samples ? qlen_sum / static_cast<double>(samples) : 0.0);
	std::printf("Avg idle workers: %.6g\n",
	            samples ? idle_sum / static_cast<double>(samples) : 0.0);
	return 0;
}
