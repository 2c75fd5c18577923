/*
 * mktrace.c - writes synthetic mallock traces with format/'s encoders, for
 * the analyzer's golden, malformed-input and benchmark tests.
 *
 *   mktrace SCENARIO OUT [options]
 *
 * Scenarios (all times exact: 1 tick = 1 ns, clock pairs agree):
 *   cascade   3 producers put into a queue (lock "queue", queue-like) and
 *             allocate under it; a consumer takes with a cond wait and
 *             frees the blocks (cross-thread); a "stats" lock is contended
 *             but never allocates while held.
 *   precise   contended locks that never allocate while held; allocations
 *             only outside locks.
 *   mixed     cascade plus a nested lock pair, a starved lock and churn.
 *   starve    five "client-N" threads of one role (client_main) on a
 *             queue-like lock "jobs": wakes per round 1, 1, 1/2, 0, 0
 *             (starvation); a "server-0" thread takes it once per round.
 *   roles     a lock "ring" used by two roles with different but even
 *             shares: three producers (10 acquisitions and 1/10 wake per
 *             round each) and three consumers (1 wake per round each):
 *             no starvation.
 *   pool      pools uneven by design, no starvation: four "bg-N" threads
 *             (thread_native_entry -> pool_worker) each woken on "tasks"
 *             1, 1/4, 1/16, 1/64 times per round, one acquisition per wake
 *             (waiting for work); three "gc-N" (-> gc_worker) taking
 *             "heap" 10, 3 and 1 times per round, waiting 50 ns once; and
 *             "VM Thread", "C2 CompilerThread0", "Sweeper thread" (one
 *             entry, thread_native_entry -> thread_main_inner: a runtime's
 *             threads, not peers) taking "codecache" 1, 10 and 3 times per
 *             round, waiting 3000, 200 and 200 ns.
 *   tpool     an idle thread pool after an attach (MariaDB's tpool, issue
 *             13 item 1): five "tp-N" workers (thread_native_entry ->
 *             pool_worker) each asleep on "tpool" most of the time, woken
 *             1, 1/2, 1/4, 1/8, 1/16 times per round and awake 15 % of
 *             the time, taking the lock once more per wake without
 *             waiting (a task found queued); the
 *             recording is paused after the rounds and the workers exit
 *             three times as late (a window closed long before the end):
 *             no starvation above info on "tpool"; on "pstats", taken
 *             after a wait at each wake, longer for the workers woken
 *             less, starvation within the window; on "pcount", the same
 *             wait for every worker, none.
 *   locks     --locks N mutexes (default 100000) initialised at one line
 *             (queue_init: one class), each taken once by four "conn-N"
 *             threads, the last of which waits 100 ns: the report's size
 *             must follow classes, not instances. Chunks are streamed.
 *   futex     futex words only (format 1.3), no pthread lock: per round
 *             r (t0 = T0 + 100000 + r * 10000), "fx-i" (i = 0..2) waits
 *             200 ns (--fx-wait) on the lock word fx_word (global
 *             mktrace_fx_word) at t0 + 1000 i + 500 in fx_lock <
 *             fx_worker, woken by fx-(i+1)%3 at t0 + 1000 i + 490 in
 *             fx_unlock < fx_worker (a
 *             lock word: its waiters wake it); then each fx-i waits 1000 ns
 *             on the event word (0x7040) at t0 + 5000 + 100 i in
 *             fx_event_wait < fx_worker, which only "fx-post" wakes (3
 *             waiters) at t0 + 5290 in fx_event_post < fx_poster (a
 *             signal word: waiting for work).
 *   factory   locks in heap blocks made by one constructor
 *             (scenario_factory): 1000 in one loop, three defined one by
 *             one, four through a make function from two callers; two
 *             threads nest two of the defined ones and two buckets.
 *   lifo      a most-recently-idle pool, one condition per worker, its
 *             acceptor on a worker thread (scenario_lifo): uneven wakes
 *             by design, no starvation.
 *   striped   a lock hierarchy of stripes: 64 item locks of one class
 *             over 8 static LRU locks, each its own class by its
 *             acquisition site (scenario_striped); --in-array: the item locks
 *             in one 8 KiB calloc'd block; --ring-full (with --in-array):
 *             32 more 8 KiB blocks allocated after it
 *   window    one lock initialised before the window, taken first at
 *             --window-first N's site (0: stats_update, 1: outer_op),
 *             then mostly at queue_put (scenario_window)
 *   contention  plain lock contention (scenario_contention): four "ct-N"
 *             threads; "plain" taken with no allocation, a few long holds
 *             in ct_long_update and short ones in ct_short_update; "abig"
 *             whose holders spend half their hold in the allocator, at
 *             two allocation sites;
 *             "atiny" whose holders spend 0.5% there.
 *   big       a steady-state program for the benchmark: --events N
 *   empty     the process's records (and --attached's NOTE) and an END,
 *             no event
 *             (default 50M) over --threads T, chunks streamed to the file.
 *
 * Options:
 *   --rounds N        rounds of the scenario (default 1000)
 *   --fx-wait TICKS   futex: each wait on the lock word (default 200)
 *   --fx-uneven       futex: fx-2 waits 600 ns on the lock word in fx_lock
 *                     < fx_flush, and fx-post, not fx-2 and fx-0, wakes
 *                     fx-1 and fx-2 in fx_unlock < fx_poster: two waiter
 *                     stacks (the heavier by wait the fewer waits), two
 *                     waker stacks, three waiting and two waking threads
 *   --fx-heap         futex: three more words, each at +8 in a 64-byte
 *                     block fx-post allocates in fx_table_new < fx_poster
 *                     at T0 + 400 + j (0x31000000 + 0x100 j, j = 0..2):
 *                     one class. Per round, on the first (a lock word)
 *                     fx-0 and fx-1 each wait 100 ns (at t0 + 7000 and
 *                     7100) woken by the other 10 ns before, as in the
 *                     lock word's stacks, and on the third (a lock word)
 *                     the same at t0 + 7200 and 7300 but 50 ns; on the
 *                     second (a signal word) fx-2 waits 500 ns at
 *                     t0 + 7500 in fx_event_wait, woken by fx-post 10 ns
 *                     before in fx_event_post
 *   --fx-twins        futex: two more lock words at 0x7080 and 0x70c0 (no
 *                     symbol: both named "first waited on in fx_lock"),
 *                     per round waited on 1000 ns by fx-0/fx-1 in fx_lock <
 *                     fx_worker (woken by the other in fx_unlock) and by
 *                     fx-1/fx-2 in fx_lock < fx_flush (woken by the other
 *                     in fx_event_post): two families; and words at 0x7100
 *                     and 0x7140 (no symbol) waited on 500 and 400 ns per
 *                     round as the first is: in the first family, one
 *                     label for both
 *   --no-module       no MODULE record (frames stay addresses: golden
 *                     files that do not depend on this binary)
 *   --chunk BYTES     payload size at which a thread's chunk is flushed
 *   --corrupt-crc K   flip a payload byte of chunk K (1-based) afterwards
 *   --cut K           cut the file in the middle of chunk K
 *   --bad-record K    end chunk K with a malformed record (CRC still valid)
 *   --version MAJOR   write this major version in the file header
 *   --bad-magic       write a wrong file magic
 *   --alloc-lock-addr A  address of the allocator-internal lock (0x9000)
 *   --inner-alone     mixed: worker w2 also takes "inner" without "outer"
 *   --churn-container vector|tree  mixed: the churn blocks are allocated
 *                     in a std::vector's or a std::_Rb_tree's code
 *   --two-callers     cascade: the third producer reaches the allocating
 *                     line (queue_put) from another caller (producer_alt):
 *                     two stacks, one allocation site
 *   --unknown-free    cascade: after the last round the consumer also frees
 *                     a pointer no thread allocated (one unknown free,
 *                     which is not a cross-thread free)
 *   --attached        a NOTE as `mallock attach` writes ("attached: ...")
 *   --static-tcmalloc the shim's NOTE for a program with tcmalloc linked
 *                     in ("... through its MallocHook API"), no module;
 *                     worker_main's allocations (the 32-byte blocks)
 *                     reached through MallocHook::InvokeNewHookSlow
 *   --window-closed   a MARK pause (a window closed by ctl) 1 us after the
 *                     last event, and no END (the process still runs)
 *   --no-end          no END record
 *   --module PATH     one more MODULE record, for PATH (an allocator's
 *                     library: libtcmalloc.so.4...), mapped nowhere used
 *   --slow-outside    cascade: every 10th allocation outside the locks
 *                     (the 32-byte blocks) takes 5000 ns, not 150
 *   --slow-size N     cascade: those blocks are N bytes (default 32)
 *   --slow-call-size N  cascade: the slow ones of them are N bytes
 *   --slow-realloc    cascade: the slow ones are fast allocations grown by
 *                     a 5000 ns realloc to twice their size
 *   --slow-one-thread cascade: only the first producer makes them
 *   --churn-size N    mixed: the churn blocks are N bytes (default 16)
 *   --two-lines       cascade: the producers allocate under "queue" from
 *                     tree_insert, at one line in even rounds and at
 *                     another in odd ones: one finding listing both lines
 *   --wrapped         locks: every lock is made by apr_thread_mutex_create
 *                     (an init wrapper), for conn_setup (even locks) or
 *                     cache_setup (odd ones): two classes
 *   --idle-waiters    cascade: two "idle-N" threads per round wait 3000 ns
 *                     for "queue" at t0 + 8000 + 100 i, find no work and
 *                     wait on its condition (+10), woken at t0 + 9000,
 *                     released +10: waiting for work, not lost time
 *   --unnamed         cascade, mixed: no LOCK_NAME records
 *   --refs N          starve: after its visit each client takes "jobs" N
 *                     times more for 10 ns (a reference count), without
 *                     waiting
 *   --init-via-runtime  the queue's init stack is queue_init < (the
 *                     --module's code: libc's pthread_once, say) <
 *                     worker_main
 *   --global-stats    the "stats" lock lives in this binary's global
 *                     mktrace_stats_lock (+8): a data symbol
 *   --global-past     the "stats" lock lies 24 bytes past the end of the
 *                     data symbol mktrace_small_obj: no symbol holds it
 *   --client-root start|trampoline  starve: client-1's whole stack
 *                     (client_wait < client_main) rooted at this binary's
 *                     _start (a program entry, no libc start code between)
 *                     or passing, before mallock_test_thread_start, through
 *                     thread_start::run() (a namespaced trampoline):
 *                     either way its role is client_main
 *   --heap-queue      main allocates 128 bytes at 0x30000000 from
 *                     registry_create (not freed) before the "queue" lock
 *                     is first seen, at 0x30000028: a lock in a heap block
 *
 * Small scenarios keep every chunk in memory and write the threads'
 * chunks in reverse thread order (the consumer's before the producers'),
 * so a block's free precedes its allocation in the file: the reader must
 * merge by time. Expected numbers are in tests/analyzer/test_report.py.
 */
#define _GNU_SOURCE
#include "trace_format.h"
#include "unit_trace.h"

#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- functions whose addresses serve as frames (symbolized by name) ---- */

static volatile int sink;
#define FRAME_FN(name)                                                         \
	__attribute__((noinline, used)) void name(void);                       \
	__attribute__((noinline, used)) void name(void)                        \
	{                                                                      \
		sink += __LINE__;                                              \
		sink ^= sink >> 3;                                             \
		sink += 7;                                                     \
	}
FRAME_FN(queue_init)
FRAME_FN(queue_put)
FRAME_FN(queue_take)
FRAME_FN(producer_main)
FRAME_FN(consumer_main)
FRAME_FN(stats_update)
FRAME_FN(outer_op)
FRAME_FN(inner_op)
FRAME_FN(starved_op)
FRAME_FN(churn_op)
/* Two C++ standard library frames by their mangled names (asm labels), as
 * out-of-line template instances appear in a C++ program's symbol table:
 * std::vector<int>::_M_realloc_insert<int>(...) and
 * std::_Rb_tree<int, ...>::_M_get_node() (--churn-container). */
#define FRAME_ASM(name, sym)                                                   \
	__attribute__((noinline, used)) void name(void) __asm__(sym);          \
	__attribute__((noinline, used)) void name(void)                        \
	{                                                                      \
		sink += __LINE__;                                              \
		sink ^= sink >> 5;                                             \
	}
FRAME_ASM(cxx_vector_grow, "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJiEEEvN9_"
                           "_gnu_cxx17__normal_iteratorIPiS1_EEDpOT_")
FRAME_ASM(cxx_tree_node, "_ZNSt8_Rb_treeIiiSt9_IdentityIiESt4lessIiESaIiEE11_"
                         "M_get_nodeEv")
FRAME_FN(worker_main)
FRAME_FN(producer_alt)
FRAME_FN(client_main)
FRAME_FN(client_wait)
FRAME_FN(server_main)
FRAME_FN(thread_native_entry)
FRAME_FN(pool_worker)
FRAME_FN(gc_worker)
FRAME_FN(thread_main_inner)
FRAME_FN(pool_take)
FRAME_FN(gc_mark)
FRAME_FN(code_install)
FRAME_FN(registry_create)
FRAME_FN(apr_thread_mutex_create)
FRAME_FN(conn_setup)
FRAME_FN(ct_long_update)
FRAME_FN(ct_short_update)
FRAME_FN(ct_alloc_put)
FRAME_FN(ct_alloc_other)
FRAME_FN(ct_tiny_put)
FRAME_FN(ct_worker)
FRAME_FN(cache_setup)
FRAME_FN(fx_lock)
FRAME_FN(fx_unlock)
FRAME_FN(fx_worker)
FRAME_FN(fx_event_wait)
FRAME_FN(fx_event_post)
FRAME_FN(fx_poster)
FRAME_FN(fx_flush)
FRAME_FN(fx_table_new)
FRAME_FN(os_malloc)
FRAME_FN(mon_ctor)
FRAME_FN(table_new)
FRAME_FN(vm_init)
FRAME_FN(make_lock)
FRAME_FN(site_a)
FRAME_FN(site_b)
FRAME_FN(vm_use)
FRAME_FN(bucket_op)

/* factory: one function defining three locks (HotSpot's mutex_init): each
 * `new Lock` is an allocation, then a constructor call, at return
 * addresses of their own; dm_ret[2 j] and dm_ret[2 j + 1] for lock j. */
static uint64_t dm_ret[6];
__attribute__((noinline)) static void dm_mark(int i)
{
	dm_ret[i] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}
__attribute__((noinline, used)) void vm_mutex_init(void);
__attribute__((noinline, used)) void vm_mutex_init(void)
{
	dm_mark(0); /* Heap_lock: its allocation, its constructor */
	sink += 1;
	dm_mark(1);
	sink += 2;
	dm_mark(2); /* Threads_lock */
	sink += 3;
	dm_mark(3);
	sink += 4;
	dm_mark(4); /* Compile_lock */
	sink += 5;
	dm_mark(5);
	sink += 6;
}

/* --static-tcmalloc: gperftools' hook caller, the leaf of the stacks of
 * allocations recorded through MallocHook (a C++ name: its mangled label
 * is MallocHook::InvokeNewHookSlow(void const*, unsigned long)). */
__attribute__((noinline, used)) void
mh_invoke(void) __asm__("_ZN10MallocHook17InvokeNewHookSlowEPKvm");
__attribute__((noinline, used)) void mh_invoke(void)
{
	sink += __LINE__;
	sink ^= sink >> 3;
	sink += 7;
}

/* --two-lines: one function (tree_insert) allocating at two lines; its
 * two calls' return addresses, taken by calling it once. */
static uint64_t tree_pc[2];
__attribute__((noinline)) static void tree_mark(int i)
{
	tree_pc[i] = (uint64_t)(uintptr_t)__builtin_return_address(0);
}
__attribute__((noinline, used)) void tree_insert(void);
__attribute__((noinline, used)) void tree_insert(void)
{
	tree_mark(0);
	sink += 1;
	tree_mark(1);
	sink += 2;
}

/* A global lock word for --global-stats (a data symbol of this binary). */
uint64_t mktrace_stats_lock[8];
/* The futex scenario's lock word (a data symbol). */
uint32_t mktrace_fx_word;
/* --global-past: an object whose symbol covers 8 of the 64 bytes it owns
 * (.size 8), so +32 lies past the end of every symbol. */
__asm__(".pushsection .data\n"
        ".balign 64\n"
        ".globl mktrace_small_obj\n"
        ".type mktrace_small_obj, @object\n"
        ".size mktrace_small_obj, 8\n"
        "mktrace_small_obj:\n"
        ".zero 64\n"
        ".popsection\n");
extern char mktrace_small_obj[];
/* Stands for libc's start_thread: "mallock_" frames fold as runtime, so a
 * stack rooted here reaches the thread's start (its entry function is the
 * next frame). */
FRAME_FN(mallock_test_thread_start)

/* A thread trampoline in a namespace (--client-root trampoline): named
 * thread_start::run() once demangled. */
__attribute__((noinline, used)) void
ns_thread_start(void) __asm__("_ZN12thread_start3runEv");
__attribute__((noinline, used)) void ns_thread_start(void)
{
	sink += 3;
	sink ^= sink >> 3;
}
/* The program's entry point (crt1's), --client-root start. */
extern const char _start[];

static uint64_t fa(void (*fn)(void))
{
	return (uint64_t)(uintptr_t)fn + 4; /* a "return address" inside fn */
}

/* ---- the writer ---- */

#define MAX_THREADS 64

typedef struct chunk {
	uint8_t *bytes; /* header + payload */
	size_t len;
	struct chunk *next;
} chunk_t;

typedef struct tw {
	uint32_t tid;
	uint8_t *buf;
	size_t len;
	bool open;
	uint64_t base, last;
	uint32_t seq;
	fmt_enc_t enc;
	chunk_t *head, *tail;
} tw_t;

static tw_t thr[MAX_THREADS];
static int nthr;
static FILE *out;
static size_t chunk_cap = 512;
static bool streaming;
static int bad_record_chunk, chunks_written, chunks_sealed;

static tw_t *tw_new(uint32_t tid)
{
	tw_t *t = &thr[nthr++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->buf = malloc(FMT_CHUNK_MAX_PAYLOAD);
	return t;
}

static void write_chunk(const uint8_t *b, size_t n)
{
	fwrite(b, 1, n, out);
	chunks_written++;
}

static void tw_flush(tw_t *t)
{
	if (!t->open)
		return;
	chunks_sealed++;
	if (bad_record_chunk && chunks_sealed == bad_record_chunk) {
		/* ALLOC whose last field's varint never ends. */
		t->buf[t->len++] = FMT_ALLOC;
		t->buf[t->len++] = 0x05;
		t->buf[t->len++] = 0x02;
		t->buf[t->len++] = 0xff;
		t->buf[t->len++] = 0xff;
	}
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)t->len;
	h.tid = t->tid;
	h.seq = t->seq++;
	h.tsc_base = t->base;
	h.tsc_flush = t->last;
	h.mono_flush_ns = t->last; /* 1 tick = 1 ns */
	chunk_t *c = malloc(sizeof *c);
	c->len = FMT_CHUNK_HEADER_SIZE + t->len;
	c->bytes = malloc(c->len);
	memcpy(c->bytes + FMT_CHUNK_HEADER_SIZE, t->buf, t->len);
	fmt_chunk_seal(c->bytes, &h, c->bytes + FMT_CHUNK_HEADER_SIZE);
	c->next = NULL;
	t->open = false;
	t->len = 0;
	if (streaming) {
		write_chunk(c->bytes, c->len);
		free(c->bytes);
		free(c);
		return;
	}
	if (t->tail)
		t->tail->next = c;
	else
		t->head = c;
	t->tail = c;
}

static void tw_begin(tw_t *t, uint64_t tsc)
{
	if (t->open)
		return;
	t->open = true;
	t->base = tsc;
	t->last = tsc;
	t->enc.last_tsc = tsc;
	t->enc.last_ptr = 0;
	t->len = 0;
}

/* One core event: fields in wire order. */
static void ev(tw_t *t, unsigned type, uint64_t tsc, uint64_t f0, uint64_t f1,
               uint64_t f2, uint64_t f3, uint64_t f4)
{
	uint64_t f[5] = {f0, f1, f2, f3, f4};
	tw_begin(t, tsc);
	uint8_t *p = t->buf + t->len;
	p = fmt_put_head(p, &t->enc, type, tsc);
	p = ut_put_fields(p, &t->enc, type, f);
	t->len = (size_t)(p - t->buf);
	if (tsc > t->last)
		t->last = tsc;
	if (t->len >= chunk_cap)
		tw_flush(t);
}

/* One metadata record with a prepared body. */
static void meta(tw_t *t, unsigned type, const uint8_t *body, size_t n)
{
	tw_begin(t, t->open ? t->last : (t->last ? t->last : 1000000000));
	uint8_t *p = t->buf + t->len;
	*p++ = (uint8_t)type;
	p = fmt_put_u(p, n);
	memcpy(p, body, n);
	t->len = (size_t)(p + n - t->buf);
	if (t->len >= chunk_cap)
		tw_flush(t);
}

static uint8_t mb[FMT_CHUNK_MAX_PAYLOAD / 64];

static void m_stack(tw_t *t, uint64_t id, int n, const uint64_t *fr)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, (uint64_t)n);
	for (int i = 0; i < n; i++)
		p = i == 0 ? fmt_put_u(p, fr[0])
		           : fmt_put_s(p, (int64_t)(fr[i] - fr[i - 1]));
	meta(t, FMT_STACK, mb, (size_t)(p - mb));
}

static void m_lock_new(tw_t *t, uint64_t id, uint64_t addr, uint64_t kind,
                       uint64_t flags)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, addr);
	p = fmt_put_u(p, kind);
	p = fmt_put_u(p, flags);
	meta(t, FMT_LOCK_NEW, mb, (size_t)(p - mb));
}

static void m_lock_name(tw_t *t, uint64_t id, uint64_t flags, const char *name)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, id);
	p = fmt_put_u(p, flags);
	p = fmt_put_str(p, name, strlen(name));
	meta(t, FMT_LOCK_NAME, mb, (size_t)(p - mb));
}

static void m_thread_name(tw_t *t, uint64_t tid, const char *name)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, tid);
	p = fmt_put_str(p, name, strlen(name));
	meta(t, FMT_THREAD_NAME, mb, (size_t)(p - mb));
}

static void m_note(tw_t *t, uint64_t level, const char *text)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, level);
	p = fmt_put_str(p, text, strlen(text));
	meta(t, FMT_NOTE, mb, (size_t)(p - mb));
}

static void m_end(tw_t *t, uint64_t events)
{
	uint8_t *p = mb;
	p = fmt_put_u(p, events);
	p = fmt_put_u(p, 0);
	p = fmt_put_u(p, FMT_ENDF_CLEAN);
	meta(t, FMT_END, mb, (size_t)(p - mb));
}

#define T0 1000000000ull /* the process starts at tsc 1e9 */
#define PID 100

static void m_process(tw_t *t, const char *cmd)
{
	char exe[4096] = "";
	uint8_t *p = mb;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0)
		exe[n] = 0;
	p = fmt_put_u(p, PID);
	p = fmt_put_u(p, 1);
	p = fmt_put_u(p, 1700000000000000000ull);
	p = fmt_put_u(p, T0);
	p = fmt_put_u(p, T0);
	p = fmt_put_u(p, 1000000000); /* tsc_hz */
	p = fmt_put_u(p, 32);
	p = fmt_put_u(p, FMT_UNWIND_FP);
	p = fmt_put_u(p, 0);
	p = fmt_put_str(p, exe, strlen(exe));
	p = fmt_put_str(p, cmd, strlen(cmd));
	p = fmt_put_str(p, "mktrace-host", 12);
	p = fmt_put_str(p, "mktrace", 7);
	meta(t, FMT_PROCESS, mb, (size_t)(p - mb));
}

/* MODULE for this executable, found with dl_iterate_phdr. */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	tw_t *t = ctx;
	uint64_t lo = UINT64_MAX, hi = 0;
	const uint8_t *bid = NULL;
	size_t bidn = 0;
	char exe[4096];
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (info->dlpi_addr + ph->p_vaddr < lo)
				lo = info->dlpi_addr + ph->p_vaddr;
			if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
				hi =
				    info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE) {
			const uint8_t *n =
			    (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
			const uint8_t *e = n + ph->p_memsz;
			while (n + 12 <= e) {
				const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
				size_t nsz = (nh->n_namesz + 3) & ~3u;
				size_t dsz = (nh->n_descsz + 3) & ~3u;
				if (nh->n_type == NT_GNU_BUILD_ID &&
				    nh->n_namesz == 4 &&
				    memcmp(n + 12, "GNU", 4) == 0) {
					bid = n + 12 + nsz;
					bidn = nh->n_descsz;
				}
				n += 12 + nsz + dsz;
			}
		}
	}
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	uint8_t *p = mb;
	p = fmt_put_u(p, info->dlpi_addr);
	p = fmt_put_u(p, lo);
	p = fmt_put_u(p, hi);
	p = fmt_put_str(p, exe, strlen(exe));
	p = fmt_put_u(p, bidn);
	memcpy(p, bid, bidn);
	p += bidn;
	meta(t, FMT_MODULE, mb, (size_t)(p - mb));
	return 1; /* the first object is the executable */
}

static void finish_file(void)
{
	/* End of run: flush every open chunk, then (small scenarios) write
	 * the kept chunks in reverse thread order. */
	for (int i = nthr; i-- > 0;)
		tw_flush(&thr[i]);
	if (streaming)
		return;
	bool any = true;
	while (any) {
		any = false;
		for (int i = nthr; i-- > 0;) {
			chunk_t *c = thr[i].head;
			if (!c)
				continue;
			thr[i].head = c->next;
			write_chunk(c->bytes, c->len);
			free(c->bytes);
			free(c);
			any = true;
		}
	}
}

/* ---- scenarios ---- */

enum {
	S_INIT = 10,
	S_PUT_SITE,
	S_PUT_ALLOC,
	S_PUT_REL,
	S_TAKE,
	S_STATS_SITE,
	S_STATS_WAIT,
	S_OUTER,
	S_INNER,
	S_STARVE,
	S_CHURN,
	S_WORK_ALLOC,
	S_WORK_SITE,
	S_PUT_ALLOC2,
	S_CLIENT_SITE,
	S_CLIENT_WAIT,
	S_SERVER,
	S_PROD_FULL,
	S_CONS_FULL,
	S_POOL,
	S_GC,
	S_JVM,
	S_REG,
	S_TREE1,
	S_TREE2,
	S_WRAP1,
	S_WRAP2,
	S_FX_WAIT,
	S_FX_WAKE,
	S_FX_EVWAIT,
	S_FX_POST,
	S_FX_WAIT2,
	S_FX_WAKE2,
	S_FX_BLOCK,
	S_ARRAY_ALLOC
};
enum {
	L_QUEUE = 1,
	L_STATS = 2,
	C_QUEUE = 3,
	L_OUTER = 4,
	L_INNER = 5,
	L_STARVE = 6,
	L_JOBS = 7,
	C_JOBS = 8,
	C_JOBS2 = 9,
	L_HEAP = 10,
	L_CODE = 11,
	L_FX_WORD = 12,
	L_FX_EVENT = 13,
	L_FX_H1 = 14,
	L_FX_H2 = 15,
	L_FX_H3 = 16,
	L_FX_T1 = 17,
	L_FX_T2 = 18,
	L_FX_T3 = 19,
	L_FX_T4 = 20,
	L_MALLOC = 50
};

static bool with_module = true;
static bool inner_alone;                  /* --inner-alone */
static const char *churn_container;       /* --churn-container vector|tree */
static bool two_callers;                  /* --two-callers */
static bool unknown_free;                 /* --unknown-free */
static uint64_t alloc_lock_addr = 0x9000; /* --alloc-lock-addr */
static uint64_t nevents;
static bool slow_outside;        /* --slow-outside */
static uint64_t slow_size = 32;  /* --slow-size */
static uint64_t slow_call_size;  /* --slow-call-size (0: slow_size) */
static bool slow_realloc;        /* --slow-realloc */
static bool slow_one_thread;     /* --slow-one-thread */
static bool static_tcmalloc;     /* --static-tcmalloc */
static uint64_t churn_size = 16; /* --churn-size */
static const char *client_root;  /* --client-root */
static bool unnamed, global_stats, global_past, heap_queue, two_lines, wrapped;
static bool init_via_runtime; /* --init-via-runtime */
static int starve_refs;       /* --refs */

static tw_t *idle[2];    /* --idle-waiters */
static bool fx_uneven;   /* --fx-uneven */
static bool fx_heap;     /* --fx-heap */
static bool fx_twins;    /* --fx-twins */
static bool in_array;    /* --in-array */
static bool ring_full;   /* --ring-full */
static int window_first; /* --window-first */

static void define_stacks(tw_t *t)
{
	uint64_t f[4];
	f[0] = fa(queue_init), f[1] = fa(worker_main);
	if (init_via_runtime) /* the --module's code between */
		f[1] = 0x7e0000000100ull, f[2] = fa(worker_main);
	m_stack(t, S_INIT, init_via_runtime ? 3 : 2, f);
	f[0] = fa(queue_put);
	m_stack(t, S_PUT_SITE, 1, f);
	f[0] = fa(queue_put), f[1] = fa(producer_main);
	m_stack(t, S_PUT_ALLOC, 2, f);
	m_stack(t, S_PUT_REL, 2, f);
	f[0] = fa(queue_take), f[1] = fa(consumer_main);
	m_stack(t, S_TAKE, 2, f);
	f[0] = fa(stats_update);
	m_stack(t, S_STATS_SITE, 1, f);
	f[0] = fa(stats_update), f[1] = fa(producer_main);
	m_stack(t, S_STATS_WAIT, 2, f);
	f[0] = fa(outer_op), f[1] = fa(worker_main);
	m_stack(t, S_OUTER, 2, f);
	f[0] = fa(inner_op), f[1] = fa(outer_op), f[2] = fa(worker_main);
	m_stack(t, S_INNER, 3, f);
	f[0] = fa(starved_op), f[1] = fa(worker_main);
	m_stack(t, S_STARVE, 2, f);
	f[0] = fa(churn_op), f[1] = fa(worker_main);
	if (churn_container) {
		f[2] = f[1], f[1] = f[0];
		f[0] = churn_container[0] == 'v' ? fa(cxx_vector_grow)
		                                 : fa(cxx_tree_node);
	}
	m_stack(t, S_CHURN, churn_container ? 3 : 2, f);
	f[0] = fa(queue_put), f[1] = fa(producer_alt);
	m_stack(t, S_PUT_ALLOC2, 2, f);
	f[0] = fa(worker_main);
	m_stack(t, S_WORK_SITE, 1, f);
	if (static_tcmalloc) {
		f[0] = fa(mh_invoke), f[1] = fa(worker_main);
		m_stack(t, S_WORK_ALLOC, 2, f);
	} else {
		m_stack(t, S_WORK_ALLOC, 1, f);
	}
	/* An uncontended acquisition's site (one frame), and whole stacks
	 * rooted at the thread's start. */
	f[0] = fa(client_wait);
	m_stack(t, S_CLIENT_SITE, 1, f);
	f[1] = fa(client_main), f[2] = fa(mallock_test_thread_start);
	if (client_root && !strcmp(client_root, "start")) {
		f[2] = (uint64_t)(uintptr_t)_start + 4;
		m_stack(t, S_CLIENT_WAIT, 3, f);
	} else if (client_root) {
		f[2] = fa(ns_thread_start);
		f[3] = fa(mallock_test_thread_start);
		m_stack(t, S_CLIENT_WAIT, 4, f);
	} else {
		m_stack(t, S_CLIENT_WAIT, 3, f);
	}
	f[0] = fa(server_main), f[1] = fa(mallock_test_thread_start);
	m_stack(t, S_SERVER, 2, f);
	f[0] = fa(queue_put), f[1] = fa(producer_main);
	f[2] = fa(mallock_test_thread_start);
	m_stack(t, S_PROD_FULL, 3, f);
	f[0] = fa(queue_take), f[1] = fa(consumer_main);
	m_stack(t, S_CONS_FULL, 3, f);
	f[2] = fa(thread_native_entry), f[3] = fa(mallock_test_thread_start);
	f[0] = fa(pool_take), f[1] = fa(pool_worker);
	m_stack(t, S_POOL, 4, f);
	f[0] = fa(gc_mark), f[1] = fa(gc_worker);
	m_stack(t, S_GC, 4, f);
	f[0] = fa(code_install), f[1] = fa(thread_main_inner);
	m_stack(t, S_JVM, 4, f);
	f[0] = fa(registry_create), f[1] = fa(worker_main);
	m_stack(t, S_REG, 2, f);
	f[0] = fa(apr_thread_mutex_create), f[1] = fa(conn_setup);
	f[2] = fa(worker_main);
	m_stack(t, S_WRAP1, 3, f);
	f[1] = fa(cache_setup);
	m_stack(t, S_WRAP2, 3, f);
	f[1] = fa(fx_worker), f[2] = fa(mallock_test_thread_start);
	f[0] = fa(fx_lock);
	m_stack(t, S_FX_WAIT, 3, f);
	f[0] = fa(fx_unlock);
	m_stack(t, S_FX_WAKE, 3, f);
	f[0] = fa(fx_event_wait);
	m_stack(t, S_FX_EVWAIT, 3, f);
	f[0] = fa(fx_event_post), f[1] = fa(fx_poster);
	m_stack(t, S_FX_POST, 3, f);
	f[0] = fa(fx_unlock);
	m_stack(t, S_FX_WAKE2, 3, f);
	f[0] = fa(fx_table_new), f[1] = fa(fx_poster);
	m_stack(t, S_FX_BLOCK, 3, f);
	f[0] = fa(fx_lock), f[1] = fa(fx_flush);
	m_stack(t, S_FX_WAIT2, 3, f);
	f[0] = fa(queue_init) + 4, f[1] = fa(worker_main);
	m_stack(t, S_ARRAY_ALLOC, 2, f);
	tree_insert();
	f[0] = tree_pc[0], f[1] = fa(producer_main);
	m_stack(t, S_TREE1, 2, f);
	f[0] = tree_pc[1];
	m_stack(t, S_TREE2, 2, f);
}

#define E(t, type, tsc, ...) (nevents++, ev(t, type, tsc, __VA_ARGS__))

/*
 * cascade: per round r (10 us apart), producers p = 0..2:
 *   acquire queue at t0 + 1500p (p > 0: ACQ_WAIT, 2000 ns wait, p + 1 waiters),
 *   ALLOC 48 bytes 100 ns later (200 ns; every 10th round 5000 ns after an
 *   ALLOC_LOCK_WAIT of 3000 ns), release 1000 ns after acquiring
 *   (REL_CONTENDED for p < 2); then stats: ACQ_WAIT 300 ns at +1100,
 *   REL at +1300, never allocating. Consumer at t0 + 5000: COND_WAKE,
 *   frees the round's 3 blocks (100 ns each), COND_WAIT at +600.
 *   Outside every lock each producer allocates and frees a 32-byte block
 *   at +1400/+1450 (150 ns each).
 */
static void scenario_cascade(tw_t *m, tw_t **p, tw_t *c, int rounds,
                             bool precise)
{
	uint64_t ptr_base = 0x10000000;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 3; i++) {
			tw_t *t = p[i];
			uint64_t a = t0 + 1500u * (unsigned)i;
			uint64_t ptr =
			    ptr_base + ((uint64_t)r * 3 + (unsigned)i) * 64;
			if (i == 0)
				E(t, FMT_ACQ, a, L_QUEUE, S_PUT_SITE, 0, 0, 0);
			else
				E(t, FMT_ACQ_WAIT, a, L_QUEUE, S_PUT_ALLOC,
				  2000, (uint64_t)i + 1, 0);
			if (!precise) {
				bool slow = r % 10 == 0;
				if (slow)
					E(t, FMT_ALLOC_LOCK_WAIT, a + 90,
					  L_MALLOC, 3000, 0, 0, 0);
				E(t, FMT_ALLOC, a + 100, ptr, 48,
				  two_lines ? (r % 2 ? S_TREE2 : S_TREE1)
				  : two_callers && i == 2 ? S_PUT_ALLOC2
				                          : S_PUT_ALLOC,
				  slow ? 5000 : 200, FMT_FN_NEW);
			}
			if (i < 2)
				E(t, FMT_REL_CONTENDED, a + 1000, L_QUEUE,
				  S_PUT_REL, 0, 0, 0);
			else
				E(t, FMT_REL, a + 1000, L_QUEUE, 0, 0, 0, 0);
			if (i < 2)
				E(t, FMT_COND_SIGNAL, a + 1010, C_QUEUE, 0, 0,
				  0, 0);
			E(t, FMT_ACQ_WAIT, a + 1100, L_STATS, S_STATS_WAIT, 300,
			  2, 0);
			E(t, FMT_REL, a + 1300, L_STATS, 0, 0, 0, 0);
			if (precise)
				E(t, FMT_ALLOC, a + 1350, ptr, 48, S_PUT_ALLOC,
				  200, FMT_FN_NEW);
			if (slow_one_thread && i > 0)
				continue;
			bool slow = slow_outside && r % 10 == 0;
			if (slow && slow_realloc) {
				/* grown in place by a slow realloc */
				E(t, FMT_ALLOC, a + 1400, ptr + 0x1000000,
				  slow_size, S_WORK_ALLOC, 150, FMT_FN_MALLOC);
				E(t, FMT_REALLOC, a + 1420, ptr + 0x1000000,
				  ptr + 0x1000000, 2 * slow_size, S_WORK_ALLOC,
				  5000);
			} else {
				E(t, FMT_ALLOC, a + 1400, ptr + 0x1000000,
				  slow && slow_call_size ? slow_call_size
				                         : slow_size,
				  S_WORK_ALLOC, slow ? 5000 : 150,
				  FMT_FN_MALLOC);
			}
			E(t, FMT_FREE, a + 1450, ptr + 0x1000000, 150, 0, 0, 0);
		}
		uint64_t w = t0 + 5000;
		E(c, FMT_COND_WAKE, w, C_QUEUE, L_QUEUE, 0, 0, 0);
		for (int i = 0; i < 3; i++) {
			uint64_t ptr =
			    ptr_base + ((uint64_t)r * 3 + (unsigned)i) * 64;
			if (precise) /* free outside the lock instead */
				continue;
			E(c, FMT_FREE, w + 100 + 100u * (unsigned)i, ptr, 100,
			  0, 0, 0);
		}
		E(c, FMT_COND_WAIT, w + 600, C_QUEUE, L_QUEUE, 0, 0, 0);
		if (unknown_free && r == rounds - 1)
			E(c, FMT_FREE, w + 650, 0x7f0000000040ull, 100, 0, 0,
			  0);
		for (int i = 0; i < 2 && idle[i]; i++) {
			uint64_t a = t0 + 8000 + 100u * (unsigned)i;
			E(idle[i], FMT_ACQ_WAIT, a, L_QUEUE, S_TAKE, 3000, 2,
			  0);
			E(idle[i], FMT_COND_WAIT, a + 10, C_QUEUE, L_QUEUE, 0,
			  0, 0);
			E(idle[i], FMT_COND_WAKE, t0 + 9000 + 20u * (unsigned)i,
			  C_QUEUE, L_QUEUE, 0, 0, 0);
			E(idle[i], FMT_REL, t0 + 9010 + 20u * (unsigned)i,
			  L_QUEUE, 0, 0, 0, 0);
		}
		if (precise)
			for (int i = 0; i < 3; i++) {
				uint64_t ptr =
				    ptr_base +
				    ((uint64_t)r * 3 + (unsigned)i) * 64;
				E(c, FMT_FREE, w + 700 + 10u * (unsigned)i, ptr,
				  100, 0, 0, 0);
			}
	}
	(void)m;
}

/*
 * mixed extras, per round r from t0 = T0 + 100000 + r * 10000 + 7000:
 *   worker w1: outer lock ACQ_WAIT (400 ns) at t0, inner ACQ_WAIT (200 ns)
 *   at +50, REL inner +250, REL outer +300; w2 takes outer at +320 and,
 *   with --inner-alone, inner alone at +340.
 *   starve lock: w1 acquires 9 times per round, w2 once per 10 rounds,
 *   with 9 TRY_FAILs per round; ACQ_WAIT 100 ns each.
 *   churn: w2 allocates and frees a 16-byte block 5 times per round, each
 *   living 100 ns (call 80 ns).
 */
static void scenario_mixed(tw_t *w1, tw_t *w2, int rounds)
{
	uint64_t ptr = 0x40000000;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000 + 7000;
		E(w1, FMT_ACQ_WAIT, t0, L_OUTER, S_OUTER, 400, 2, 0);
		E(w1, FMT_ACQ_WAIT, t0 + 50, L_INNER, S_INNER, 200, 2, 0);
		E(w1, FMT_REL, t0 + 250, L_INNER, 0, 0, 0, 0);
		E(w1, FMT_REL, t0 + 300, L_OUTER, 0, 0, 0, 0);
		/* the other user of outer and inner, so both are shared */
		E(w2, FMT_ACQ, t0 + 320, L_OUTER, S_OUTER, 0, 0, 0);
		E(w2, FMT_REL, t0 + 330, L_OUTER, 0, 0, 0, 0);
		if (inner_alone) {
			E(w2, FMT_ACQ, t0 + 340, L_INNER, S_INNER, 0, 0, 0);
			E(w2, FMT_REL, t0 + 350, L_INNER, 0, 0, 0, 0);
		}
		for (int k = 0; k < 9; k++) {
			uint64_t a = t0 + 400 + 200u * (unsigned)k;
			E(w1, FMT_ACQ_WAIT, a, L_STARVE, S_STARVE, 100, 2, 0);
			E(w1, FMT_REL, a + 50, L_STARVE, 0, 0, 0, 0);
			E(w2, FMT_TRY_FAIL, a + 10, L_STARVE, S_STARVE, 0, 0,
			  0);
		}
		if (r % 10 == 0) {
			E(w2, FMT_ACQ_WAIT, t0 + 2300, L_STARVE, S_STARVE, 100,
			  2, 0);
			E(w2, FMT_REL, t0 + 2350, L_STARVE, 0, 0, 0, 0);
		}
		for (int k = 0; k < 5; k++) {
			uint64_t a = t0 + 2400 + 200u * (unsigned)k;
			E(w2, FMT_ALLOC, a, ptr, churn_size, S_CHURN, 80,
			  FMT_FN_NEW);
			E(w2, FMT_FREE, a + 100, ptr, 80, 0, 0, 0);
		}
	}
}

/*
 * starve: per round r from t0 = T0 + 100000 + r * 10000, client i at
 * a = t0 + 1000 i: ACQ of "jobs" (client 0 in round 0: ACQ_WAIT 100 ns with
 * its whole stack; every other acquisition records only its site); served
 * (clients 0 and 1 always, client 2 in even rounds): COND_WAIT at +100,
 * COND_WAKE at +600, REL at +700; not served: REL at +50. The server takes
 * the lock at t0 + 9000 for 50 ns and signals.
 */
static void scenario_futex(tw_t **fx, tw_t *post_t, int rounds,
                           uint64_t fx_wait)
{
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 3; i++) {
			uint64_t a = t0 + 1000u * (unsigned)i;
			bool post = fx_uneven && i > 0,
			     flush = fx_uneven && i == 2;
			E(post ? post_t : fx[(i + 1) % 3], FMT_FUTEX_WAKE,
			  a + 490, L_FX_WORD, post ? S_FX_WAKE2 : S_FX_WAKE, 1,
			  0, 0);
			E(fx[i], FMT_FUTEX_WAIT, a + 500, L_FX_WORD,
			  flush ? S_FX_WAIT2 : S_FX_WAIT, flush ? 600 : fx_wait,
			  0, 0);
		}
		for (int i = 0; i < 3; i++)
			E(fx[i], FMT_FUTEX_WAIT, t0 + 5000 + 100u * (unsigned)i,
			  L_FX_EVENT, S_FX_EVWAIT, 1000, 0, 0);
		E(post_t, FMT_FUTEX_WAKE, t0 + 5290, L_FX_EVENT, S_FX_POST, 3,
		  0, 0);
		if (!fx_heap)
			continue;
		for (int j = 0; j < 4; j++) {
			int i = j % 2;
			uint64_t a = t0 + 7000 + 100u * (unsigned)j;
			uint64_t l = j < 2 ? L_FX_H1 : L_FX_H3;
			E(fx[1 - i], FMT_FUTEX_WAKE, a - 10, l, S_FX_WAKE, 1, 0,
			  0);
			E(fx[i], FMT_FUTEX_WAIT, a, l, S_FX_WAIT,
			  j < 2 ? 100 : 50, 0, 0);
		}
		E(post_t, FMT_FUTEX_WAKE, t0 + 7490, L_FX_H2, S_FX_POST, 1, 0,
		  0);
		E(fx[2], FMT_FUTEX_WAIT, t0 + 7500, L_FX_H2, S_FX_EVWAIT, 500,
		  0, 0);
	}
	for (int r = 0; fx_twins && r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		int i = r % 2;
		E(fx[1 - i], FMT_FUTEX_WAKE, t0 + 7790, L_FX_T1, S_FX_WAKE, 1,
		  0, 0);
		E(fx[i], FMT_FUTEX_WAIT, t0 + 7800, L_FX_T1, S_FX_WAIT, 1000, 0,
		  0);
		E(fx[2 - i], FMT_FUTEX_WAKE, t0 + 8790, L_FX_T2, S_FX_POST, 1,
		  0, 0);
		E(fx[1 + i], FMT_FUTEX_WAIT, t0 + 8800, L_FX_T2, S_FX_WAIT2,
		  1000, 0, 0);
		E(fx[1 - i], FMT_FUTEX_WAKE, t0 + 9290, L_FX_T3, S_FX_WAKE, 1,
		  0, 0);
		E(fx[i], FMT_FUTEX_WAIT, t0 + 9300, L_FX_T3, S_FX_WAIT, 500, 0,
		  0);
		E(fx[1 - i], FMT_FUTEX_WAKE, t0 + 9790, L_FX_T4, S_FX_WAKE, 1,
		  0, 0);
		E(fx[i], FMT_FUTEX_WAIT, t0 + 9800, L_FX_T4, S_FX_WAIT, 400, 0,
		  0);
	}
}

static void scenario_starve(tw_t *server, tw_t **cl, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 5; i++) {
			tw_t *t = cl[i];
			uint64_t a = t0 + 1000u * (unsigned)i;
			bool served = i < 2 || (i == 2 && r % 2 == 0);
			if (i == 0 && r == 0)
				E(t, FMT_ACQ_WAIT, a, L_JOBS, S_CLIENT_WAIT,
				  100, 1, 0);
			else
				E(t, FMT_ACQ, a, L_JOBS, S_CLIENT_SITE, 0, 0,
				  0);
			if (served) {
				E(t, FMT_COND_WAIT, a + 100, C_JOBS, L_JOBS, 0,
				  0, 0);
				E(t, FMT_COND_WAKE, a + 600, C_JOBS, L_JOBS, 0,
				  0, 0);
				E(t, FMT_REL, a + 700, L_JOBS, 0, 0, 0, 0);
			} else {
				E(t, FMT_REL, a + 50, L_JOBS, 0, 0, 0, 0);
			}
			for (int k = 0; k < starve_refs; k++) {
				uint64_t b = a + 710 + 20u * (unsigned)k;
				E(t, FMT_ACQ, b, L_JOBS, S_CLIENT_SITE, 0, 0,
				  0);
				E(t, FMT_REL, b + 10, L_JOBS, 0, 0, 0, 0);
			}
		}
		E(server, FMT_ACQ, t0 + 9000, L_JOBS, S_SERVER, 0, 0, 0);
		E(server, FMT_REL, t0 + 9050, L_JOBS, 0, 0, 0, 0);
		E(server, FMT_COND_SIGNAL, t0 + 9060, C_JOBS, 0, 0, 0, 0);
	}
}

/*
 * roles: per round r from t0 = T0 + 100000 + r * 10000: producer i takes
 * "ring" 10 times at t0 + 300 k + 100 i (ACQ_WAIT 20 ns, whole stack), in
 * rounds r % 10 == 0 the first time waits on "not full" (COND_WAIT +10,
 * COND_WAKE +20), REL at +30; consumer i at b = t0 + 5000 + 100 i:
 * ACQ_WAIT 20 ns, COND_WAIT on "not empty" at +10, COND_WAKE at +50, REL
 * at +60.
 */
static void scenario_roles(tw_t **pr, tw_t **co, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < 10; k++) {
				uint64_t a = t0 + 300u * (unsigned)k +
				             100u * (unsigned)i;
				E(pr[i], FMT_ACQ_WAIT, a, L_JOBS, S_PROD_FULL,
				  20, 1, 0);
				if (k == 0 && r % 10 == 0) {
					E(pr[i], FMT_COND_WAIT, a + 10, C_JOBS2,
					  L_JOBS, 0, 0, 0);
					E(pr[i], FMT_COND_WAKE, a + 20, C_JOBS2,
					  L_JOBS, 0, 0, 0);
				}
				E(pr[i], FMT_REL, a + 30, L_JOBS, 0, 0, 0, 0);
			}
		for (int i = 0; i < 3; i++) {
			uint64_t b = t0 + 5000 + 100u * (unsigned)i;
			E(co[i], FMT_ACQ_WAIT, b, L_JOBS, S_CONS_FULL, 20, 1,
			  0);
			E(co[i], FMT_COND_WAIT, b + 10, C_JOBS, L_JOBS, 0, 0,
			  0);
			E(co[i], FMT_COND_WAKE, b + 50, C_JOBS, L_JOBS, 0, 0,
			  0);
			E(co[i], FMT_REL, b + 60, L_JOBS, 0, 0, 0, 0);
		}
	}
}

/*
 * pool: per round r from t0 = T0 + 100000 + r * 10000:
 *   bg-i (i = 0..3), woken when r % 4^i == 0, at a = t0 + 100 i: ACQ_WAIT
 *   "tasks" 10 ns, COND_WAIT +10, COND_WAKE +500, REL +600;
 *   gc-i (i = 0..2) takes "heap" n = 10, 3, 1 times at t0 + 3000 + 200 k
 *   + 50 i for 20 ns: ACQ_WAIT 50 ns in round 0's first time, else ACQ;
 *   jvm-i (i = 0..2) takes "codecache" n = 1, 10, 3 times at t0 + 6000 +
 *   200 k + 50 i for 20 ns, every time ACQ_WAIT 200 ns (3000 ns for jvm-0:
 *   30 % of its life, more than jvm-1's 20 %, so that were the three
 *   peers, jvm-0 would be starved).
 */
static void scenario_pool(tw_t **bg, tw_t **gc, tw_t **jvm, int rounds)
{
	static const int gcn[3] = {10, 3, 1}, jvmn[3] = {1, 10, 3};
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 4; i++) {
			if (r % (1 << (2 * i)))
				continue;
			uint64_t a = t0 + 100u * (unsigned)i;
			E(bg[i], FMT_ACQ_WAIT, a, L_JOBS, S_POOL, 10, 1, 0);
			E(bg[i], FMT_COND_WAIT, a + 10, C_JOBS, L_JOBS, 0, 0,
			  0);
			E(bg[i], FMT_COND_WAKE, a + 500, C_JOBS, L_JOBS, 0, 0,
			  0);
			E(bg[i], FMT_REL, a + 600, L_JOBS, 0, 0, 0, 0);
		}
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < gcn[i]; k++) {
				uint64_t a = t0 + 3000 + 200u * (unsigned)k +
				             50u * (unsigned)i;
				if (r == 0 && k == 0)
					E(gc[i], FMT_ACQ_WAIT, a, L_HEAP, S_GC,
					  50, 1, 0);
				else
					E(gc[i], FMT_ACQ, a, L_HEAP, S_GC, 0, 0,
					  0);
				E(gc[i], FMT_REL, a + 20, L_HEAP, 0, 0, 0, 0);
			}
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < jvmn[i]; k++) {
				uint64_t a = t0 + 6000 + 200u * (unsigned)k +
				             50u * (unsigned)i;
				E(jvm[i], FMT_ACQ_WAIT, a, L_CODE, S_JVM,
				  i == 0 ? 3000 : 200, 1, 0);
				E(jvm[i], FMT_REL, a + 20, L_CODE, 0, 0, 0, 0);
			}
	}
}

/*
 * tpool: worker i (i = 0..4) starts waiting at T0 + 1000 + 100 i (ACQ,
 * COND_WAIT +10); in each round r (t0 = T0 + 100000 + r * 10000) with
 * r % 2^i == 0, at a = t0 + 100 i: COND_WAKE, REL +10, ACQ +100 (a task
 * found queued), REL +120, ACQ_WAIT "pstats" at +120 + w after w = 200 x
 * 3^i ns, REL 20 later (a real starvation, by acquisitions with waits: the
 * workers served less also wait a larger share of their life, from 2 % for
 * worker 0 to 10 % for worker 4), ACQ_WAIT "pcount" at +260 + w after
 * 100 ns, REL 20 later (no starvation: each worker waits as long each time,
 * the ones served less a smaller share of their life; what holds them back
 * is the pool's wakes, not this lock), and after its work
 * (15 % of its time awake, as MariaDB's workers) at b = a + 1500 x 2^i:
 * ACQ "tpool", COND_WAIT +10. Then a PAUSE mark on
 * main 1000 after the last round, and each worker's THREAD_EXIT at three
 * times the recorded span from T0.
 */
static void scenario_tpool(tw_t *mainth, tw_t **w, int rounds)
{
	for (int i = 0; i < 5; i++) {
		uint64_t a = T0 + 1000 + 100u * (unsigned)i;
		E(w[i], FMT_ACQ, a, L_JOBS, S_POOL, 0, 0, 0);
		E(w[i], FMT_COND_WAIT, a + 10, C_JOBS, L_JOBS, 0, 0, 0);
	}
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int i = 0; i < 5; i++) {
			if (r % (1 << i))
				continue;
			uint64_t a = t0 + 100u * (unsigned)i;
			E(w[i], FMT_COND_WAKE, a, C_JOBS, L_JOBS, 0, 0, 0);
			E(w[i], FMT_REL, a + 10, L_JOBS, 0, 0, 0, 0);
			E(w[i], FMT_ACQ, a + 100, L_JOBS, S_POOL, 0, 0, 0);
			E(w[i], FMT_REL, a + 120, L_JOBS, 0, 0, 0, 0);
			uint64_t wt = 200;
			for (int k = 0; k < i; k++)
				wt *= 3;
			E(w[i], FMT_ACQ_WAIT, a + 120 + wt, L_HEAP, S_POOL, wt,
			  1, 0);
			E(w[i], FMT_REL, a + 140 + wt, L_HEAP, 0, 0, 0, 0);
			E(w[i], FMT_ACQ_WAIT, a + 260 + wt, L_CODE, S_POOL, 100,
			  1, 0);
			E(w[i], FMT_REL, a + 280 + wt, L_CODE, 0, 0, 0, 0);
			uint64_t b = a + 1500u * (1u << i);
			E(w[i], FMT_ACQ, b, L_JOBS, S_POOL, 0, 0, 0);
			E(w[i], FMT_COND_WAIT, b + 10, C_JOBS, L_JOBS, 0, 0, 0);
		}
	}
	uint64_t end = T0 + 100000 + (uint64_t)rounds * 10000;
	E(mainth, FMT_MARK, end + 1000, FMT_MARK_PAUSE, 0, 0, 0, 0);
	for (int i = 0; i < 5; i++)
		E(w[i], FMT_THREAD_EXIT, T0 + 3 * (end - T0) + (uint64_t)i, 0,
		  0, 0, 0, 0);
}

/*
 * locks: lock k (id 1000 + k, address 0x10000000 + 64 k) is initialised by
 * conn-0 at t = T0 + 1000 + 100 k, then taken by conn-i at +10 + 20 i and
 * released 5 ns later (conn-3: ACQ_WAIT 100 ns, whole stack).
 */
static void scenario_locks(tw_t **c, uint64_t nlocks)
{
	for (uint64_t k = 0; k < nlocks; k++) {
		uint64_t id = 1000 + k, t = T0 + 1000 + 100 * k;
		m_lock_new(c[0], id, 0x10000000 + 64 * k, FMT_KIND_MUTEX,
		           FMT_LOCKF_INIT);
		E(c[0], FMT_LOCK_INIT, t, id,
		  !wrapped ? S_INIT
		  : k % 2  ? S_WRAP2
		           : S_WRAP1,
		  0, 0, 0);
		for (int i = 0; i < 4; i++) {
			uint64_t a = t + 10 + 20u * (unsigned)i;
			if (i == 3)
				E(c[i], FMT_ACQ_WAIT, a, id, S_PUT_ALLOC, 100,
				  1, 0);
			else
				E(c[i], FMT_ACQ, a, id, S_PUT_SITE, 0, 0, 0);
			E(c[i], FMT_REL, a + 5, id, 0, 0, 0, 0);
		}
	}
}

/*
 * factory: locks in heap blocks, all made by one constructor (mon_ctor),
 * as HotSpot makes every Mutex with `new Mutex(...)` (os::malloc, then the
 * constructor); main (thread PID) makes, at T0 + 1000 on, 100 ns apart:
 *   - 1000 "bucket" locks in one loop of table_new < vm_init (blocks of 64
 *     bytes at 0x40000000 + 64 k, each lock at +8; ids 5000 + k): one
 *     class;
 *   - three locks defined one by one in vm_mutex_init < vm_init, each its
 *     own allocation and constructor call (0x41000000 + 0x100 j, +8; ids
 *     6000 + j): three classes;
 *   - four locks made by make_lock (it allocates and constructs), two
 *     called from site_a, two from site_b (0x42000000 + 0x100 j, +8; ids
 *     6100 + j): two classes.
 * Per round r (t0 = T0 + 200000 + r * 10000), "vm-1" takes lock 6000 at
 * t0, then lock 6001 at t0 + 100 (nested), releases it at t0 + 300 and
 * 6000 at t0 + 1000; "vm-2" takes 6000 at t0 + 1000 after a 500 ns wait
 * (released at t0 + 1100). Then vm-1 takes bucket b = r % 999 at
 * t0 + 2000 and bucket b + 1 (the next address) at t0 + 2100, releases
 * both at t0 + 2300 and 2400; vm-2 takes bucket b + 1 at t0 + 2300 after
 * a 200 ns wait, released at t0 + 2350.
 */
enum {
	S_FAC_TBL_A = 200,
	S_FAC_TBL_I,
	S_FAC_DEF_A, /* + 2 j: allocation, + 2 j + 1: init, j = 0..2 */
	S_FAC_MK_A = S_FAC_DEF_A + 6, /* site_a: alloc, init; site_b: +2 */
	S_FAC_USE = S_FAC_MK_A + 4,
	S_FAC_USE2,
	S_FAC_BUCKET
};
static void scenario_factory(tw_t *proc, tw_t *mt, tw_t *w1, tw_t *w2,
                             int rounds)
{
	uint64_t f[4];
	vm_mutex_init();
	f[0] = fa(os_malloc), f[1] = fa(table_new), f[2] = fa(vm_init);
	m_stack(proc, S_FAC_TBL_A, 3, f);
	f[0] = fa(mon_ctor), f[1] = fa(table_new) + 4;
	m_stack(proc, S_FAC_TBL_I, 3, f);
	for (int j = 0; j < 3; j++) {
		f[0] = fa(os_malloc), f[1] = dm_ret[2 * j];
		f[2] = fa(vm_init) + 4;
		m_stack(proc, S_FAC_DEF_A + 2 * (uint64_t)j, 3, f);
		f[0] = fa(mon_ctor), f[1] = dm_ret[2 * j + 1];
		m_stack(proc, S_FAC_DEF_A + 2 * (uint64_t)j + 1, 3, f);
	}
	for (int j = 0; j < 2; j++) {
		f[0] = fa(os_malloc), f[1] = fa(make_lock);
		f[2] = fa(j ? site_b : site_a);
		m_stack(proc, S_FAC_MK_A + 2 * (uint64_t)j, 3, f);
		f[0] = fa(mon_ctor), f[1] = fa(make_lock) + 4;
		m_stack(proc, S_FAC_MK_A + 2 * (uint64_t)j + 1, 3, f);
	}
	f[0] = fa(vm_use), f[1] = fa(mallock_test_thread_start);
	m_stack(proc, S_FAC_USE, 2, f);
	f[0] = fa(vm_use) + 4;
	m_stack(proc, S_FAC_USE2, 2, f);
	f[0] = fa(bucket_op);
	m_stack(proc, S_FAC_BUCKET, 2, f);
	tw_flush(proc);
	uint64_t t = T0 + 1000;
	typedef struct {
		uint64_t id, ptr, astk, istk;
	} mk_t;
	static mk_t mk[1007];
	int n = 0;
	for (uint64_t k = 0; k < 1000; k++)
		mk[n++] = (mk_t){5000 + k, 0x40000000 + 64 * k, S_FAC_TBL_A,
		                 S_FAC_TBL_I};
	for (uint64_t j = 0; j < 3; j++)
		mk[n++] = (mk_t){6000 + j, 0x41000000 + 0x100 * j,
		                 S_FAC_DEF_A + 2 * j, S_FAC_DEF_A + 2 * j + 1};
	for (uint64_t j = 0; j < 4; j++)
		mk[n++] = (mk_t){6100 + j, 0x42000000 + 0x100 * j,
		                 S_FAC_MK_A + 2 * (j / 2),
		                 S_FAC_MK_A + 2 * (j / 2) + 1};
	for (int i = 0; i < n; i++, t += 100) {
		E(mt, FMT_ALLOC, t, mk[i].ptr, 64, mk[i].astk, 100, FMT_FN_NEW);
		m_lock_new(mt, mk[i].id, mk[i].ptr + 8, FMT_KIND_MUTEX,
		           FMT_LOCKF_INIT);
		E(mt, FMT_LOCK_INIT, t + 50, mk[i].id, mk[i].istk, 0, 0, 0);
	}
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 200000 + (uint64_t)r * 10000;
		uint64_t b = 5000 + (uint64_t)(r % 999);
		E(w1, FMT_ACQ, t0, 6000, S_FAC_USE, 0, 0, 0);
		E(w1, FMT_ACQ, t0 + 100, 6001, S_FAC_USE2, 0, 0, 0);
		E(w1, FMT_REL, t0 + 300, 6001, 0, 0, 0, 0);
		E(w1, FMT_REL_CONTENDED, t0 + 1000, 6000, S_FAC_USE, 0, 0, 0);
		E(w2, FMT_ACQ_WAIT, t0 + 1000, 6000, S_FAC_USE, 500, 1, 0);
		E(w2, FMT_REL, t0 + 1100, 6000, 0, 0, 0, 0);
		E(w1, FMT_ACQ, t0 + 2000, b, S_FAC_BUCKET, 0, 0, 0);
		E(w1, FMT_ACQ, t0 + 2100, b + 1, S_FAC_BUCKET, 0, 0, 0);
		E(w1, FMT_REL_CONTENDED, t0 + 2300, b + 1, S_FAC_BUCKET, 0, 0,
		  0);
		E(w1, FMT_REL, t0 + 2400, b, 0, 0, 0, 0);
		E(w2, FMT_ACQ_WAIT, t0 + 2300, b + 1, S_FAC_BUCKET, 200, 1, 0);
		E(w2, FMT_REL, t0 + 2350, b + 1, 0, 0, 0, 0);
	}
}

/*
 * lifo: a pool that hands each task to the most recently idle worker, one
 * condition variable per worker, its acceptor a task on a worker thread
 * (varnish's): "wrk-5" (tid 506, the acceptor) and "wrk-k" (501 + k,
 * k = 0..4) all run pool_take < pool_worker. In round r (t0 = T0 + 100000
 * + r * 10000) the acceptor takes the pool lock "pool" (7000) and
 * signals worker k's own condition (7100 + k) when r % 2^k == 0 (a = t0 +
 * 100 k: ACQ a, SIGNAL a + 10, REL a + 20); wrk-k is woken at a + 30,
 * releases at a + 40, works 1000 ns, takes the lock again at a + 1040 and
 * waits on its condition (+10). The workers sleep most of their lives,
 * woken 1, 1/2, 1/4, 1/8, 1/16 times per round; the acceptor is woken
 * never (one wait at its start) and takes the lock 1 to 5 times per
 * round; no thread ever waits for the lock: no starvation.
 */
static void scenario_lifo(tw_t *acc, tw_t **w, int rounds)
{
	for (int k = 0; k < 5; k++) {
		uint64_t a = T0 + 1000 + 10 * (uint64_t)k;
		E(w[k], FMT_ACQ, a, 7000, S_POOL, 0, 0, 0);
		E(w[k], FMT_COND_WAIT, a + 5, 7100 + (uint64_t)k, 7000, 0, 0,
		  0);
	}
	E(acc, FMT_ACQ, T0 + 1100, 7000, S_POOL, 0, 0, 0);
	E(acc, FMT_COND_WAIT, T0 + 1105, 7105, 7000, 0, 0, 0);
	E(acc, FMT_COND_WAKE, T0 + 1200, 7105, 7000, 0, 0, 0);
	E(acc, FMT_REL, T0 + 1210, 7000, 0, 0, 0, 0);
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int k = 0; k < 5; k++) {
			if (r % (1 << k))
				continue;
			uint64_t a = t0 + 100 * (uint64_t)k;
			tw_t *t = w[k];
			E(acc, FMT_ACQ, a, 7000, S_POOL, 0, 0, 0);
			E(acc, FMT_COND_SIGNAL, a + 10, 7100 + (uint64_t)k, 0,
			  0, 0, 0);
			E(acc, FMT_REL, a + 20, 7000, 0, 0, 0, 0);
			E(t, FMT_COND_WAKE, a + 30, 7100 + (uint64_t)k, 7000, 0,
			  0, 0);
			E(t, FMT_REL, a + 40, 7000, 0, 0, 0, 0);
			E(t, FMT_ACQ, a + 1040, 7000, S_POOL, 0, 0, 0);
			E(t, FMT_COND_WAIT, a + 1050, 7100 + (uint64_t)k, 7000,
			  0, 0, 0);
		}
	}
	/* The acceptor's last event: its life spans the rounds. */
	uint64_t end = T0 + 100000 + (uint64_t)rounds * 10000;
	E(acc, FMT_ACQ, end, 7000, S_POOL, 0, 0, 0);
	E(acc, FMT_REL, end + 10, 7000, 0, 0, 0, 0);
}

/*
 * striped: a lock hierarchy of stripes (memcached's item locks under its
 * LRU locks): 64 "item" locks made in one loop (ids 8000 + i, at
 * 0x61000000 + 64 i, initialised at S_INIT: one class) and 8 static LRU
 * locks nobody named or initialised (ids 8100 + j, at 0x62000 + 40 j),
 * each taken at a function of its own (queue_put, queue_take, ...: 8
 * classes by acquisition site). Per round r (t0 = T0 + 100000 +
 * r * 10000), thread "mc-k" (k = 0..3, a = t0 + 2000 k) takes item
 * (r + 16 k) % 64 at a, LRU lock (r + k) % 8 at a + 100 (after a 300 ns
 * wait when k > 0), releases it at a + 600 and the item at a + 800.
 * --in-array: the item locks are 128 bytes apart (at 0x61000000 + 128 i)
 * in one 8 KiB block allocated at T0 + 500 in queue_init < worker_main
 * (S_ARRAY_ALLOC), the function that initialises them: most of them lie
 * past the look back from a lock to its block's start (LOCK_BLOCK_REACH).
 * --ring-full: BIGBLK_RING (32) more 8 KiB blocks allocated just after
 * the array, at 0x70000000 + 16 KiB j, so the array is no longer among
 * the large blocks last allocated when its locks are first taken: it must
 * come back there when its first lock is found in it.
 */
static void scenario_striped(tw_t **t, int rounds)
{
	static void (*const first[8])(void) = {
	    queue_put, queue_take, stats_update, outer_op,
	    inner_op,  starved_op, churn_op,     worker_main};
	uint64_t f[2];
	for (int j = 0; j < 8; j++) {
		f[0] = fa(first[j]), f[1] = fa(mallock_test_thread_start);
		m_stack(t[0], 300 + (uint64_t)j, 2, f);
	}
	uint64_t stride = in_array ? 128 : 64;
	if (in_array)
		E(t[0], FMT_ALLOC, T0 + 500, 0x61000000, 64 * stride,
		  S_ARRAY_ALLOC, 100, FMT_FN_CALLOC);
	for (uint64_t j = 0; in_array && ring_full && j < 32; j++)
		E(t[0], FMT_ALLOC, T0 + 510 + j, 0x70000000 + 0x4000 * j,
		  64 * stride, S_ARRAY_ALLOC, 100, FMT_FN_CALLOC);
	for (uint64_t i = 0; i < 64; i++) {
		m_lock_new(t[0], 8000 + i, 0x61000000 + stride * i,
		           FMT_KIND_MUTEX, FMT_LOCKF_INIT);
		E(t[0], FMT_LOCK_INIT, T0 + 1000 + 10 * i, 8000 + i, S_INIT, 0,
		  0, 0);
	}
	for (uint64_t j = 0; j < 8; j++)
		m_lock_new(t[0], 8100 + j, 0x62000 + 40 * j, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		for (int k = 0; k < 4; k++) {
			uint64_t a = t0 + 2000 * (uint64_t)k;
			uint64_t item = 8000 + (uint64_t)((r + 16 * k) % 64);
			int j = (r + k) % 8;
			uint64_t site = 300 + (uint64_t)j;
			E(t[k], FMT_ACQ, a, item, S_PUT_SITE, 0, 0, 0);
			if (k)
				E(t[k], FMT_ACQ_WAIT, a + 100,
				  8100 + (uint64_t)j, site, 300, 1, 0);
			else
				E(t[k], FMT_ACQ, a + 100, 8100 + (uint64_t)j,
				  site, 0, 0, 0);
			E(t[k], FMT_REL, a + 600, 8100 + (uint64_t)j, 0, 0, 0,
			  0);
			E(t[k], FMT_REL, a + 800, item, 0, 0, 0, 0);
		}
	}
}

/*
 * window: a window of a server whose lock was initialised before it: lock
 * 9000 at 0x63000, seen first at an acquisition (static), taken by
 * "srv-0" first at --window-first's site (0: stats_update, 1: outer_op),
 * then per round r (t0 = T0 + 100000 + r * 10000) by srv-0 at queue_put
 * (t0, held 500 ns), by srv-1 at queue_put after a 200 ns wait (t0 + 500,
 * held 300 ns) and by srv-2 at queue_take (t0 + 2000, held 100 ns). Two
 * windows differ only in the first site; the lock is the same.
 */
static void scenario_window(tw_t **t, int rounds)
{
	m_lock_new(t[0], 9000, 0x63000, FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
	uint64_t first = window_first ? S_OUTER : S_STATS_SITE;
	E(t[0], FMT_ACQ, T0 + 1000, 9000, first, 0, 0, 0);
	E(t[0], FMT_REL, T0 + 1100, 9000, 0, 0, 0, 0);
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 10000;
		E(t[0], FMT_ACQ, t0, 9000, S_PUT_SITE, 0, 0, 0);
		E(t[0], FMT_REL_CONTENDED, t0 + 500, 9000, S_PUT_ALLOC, 0, 0,
		  0);
		E(t[1], FMT_ACQ_WAIT, t0 + 500, 9000, S_PUT_ALLOC, 200, 1, 0);
		E(t[1], FMT_REL, t0 + 800, 9000, 0, 0, 0, 0);
		E(t[2], FMT_ACQ, t0 + 2000, 9000, S_TAKE, 0, 0, 0);
		E(t[2], FMT_REL, t0 + 2100, 9000, 0, 0, 0, 0);
	}
}

/*
 * contention: per round r (t0 = T0 + 100000 + r * 20000), four threads:
 *   "plain" (static, no allocation): ct-0 ACQ at t0 in ct_long_update,
 *   REL_CONTENDED at +8000 (hold 8000); ct-1 ACQ_WAIT at +8001 (wait
 *   7000, 2 waiters) in ct_short_update, REL_CONTENDED at +8501 (hold
 *   500); ct-2 ACQ_WAIT at +8502 (wait 1400) in ct_short_update, REL at
 *   +9002 (hold 500); ct-3 ACQ at +9500 in ct_short_update, REL at
 *   +10000 (hold 500). Per round 8400 ns lost: 7000 caused by
 *   ct_long_update's hold, 1400 by ct_short_update's.
 *   "abig": ct-0 ACQ at +11000 in ct_alloc_put, ALLOC 500 ns at +11100,
 *   REL_CONTENDED at +12000; ct-1 ACQ_WAIT at +12001 (wait 900), ALLOC
 *   500 ns in ct_alloc_other < ct_alloc_put (a second allocation site),
 *   REL at +13001: half of each hold in the allocator.
 *   "atiny": the same on ct-2 and ct-3 from +14000 in ct_tiny_put with
 *   10 ns ALLOCs: 0.5% of the holds.
 */
static void scenario_contention(tw_t **t, int rounds)
{
	enum { LONG = 900, SHORT, APUT, TPUT, AOTHER };
	uint64_t f[3];
	f[1] = fa(ct_worker), f[2] = fa(mallock_test_thread_start);
	f[0] = fa(ct_long_update);
	m_stack(t[0], LONG, 3, f);
	f[0] = fa(ct_short_update);
	m_stack(t[0], SHORT, 3, f);
	f[0] = fa(ct_alloc_put);
	m_stack(t[0], APUT, 3, f);
	f[0] = fa(ct_tiny_put);
	m_stack(t[0], TPUT, 3, f);
	f[0] = fa(ct_alloc_other), f[1] = fa(ct_alloc_put);
	f[2] = fa(ct_worker);
	m_stack(t[0], AOTHER, 3, f);
	const uint64_t plain = 9100, abig = 9101, atiny = 9102;
	m_lock_new(t[0], plain, 0x63000, FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
	m_lock_name(t[0], plain, 0, "plain");
	m_lock_new(t[0], abig, 0x63040, FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
	m_lock_name(t[0], abig, 0, "abig");
	m_lock_new(t[0], atiny, 0x63080, FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
	m_lock_name(t[0], atiny, 0, "atiny");
	uint64_t ptr = 0x50000000;
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = T0 + 100000 + (uint64_t)r * 20000;
		E(t[0], FMT_ACQ, t0, plain, LONG, 0, 0, 0);
		E(t[0], FMT_REL_CONTENDED, t0 + 8000, plain, LONG, 0, 0, 0);
		E(t[1], FMT_ACQ_WAIT, t0 + 8001, plain, SHORT, 7000, 2, 0);
		E(t[1], FMT_REL_CONTENDED, t0 + 8501, plain, SHORT, 0, 0, 0);
		E(t[2], FMT_ACQ_WAIT, t0 + 8502, plain, SHORT, 1400, 1, 0);
		E(t[2], FMT_REL, t0 + 9002, plain, 0, 0, 0, 0);
		E(t[3], FMT_ACQ, t0 + 9500, plain, SHORT, 0, 0, 0);
		E(t[3], FMT_REL, t0 + 10000, plain, 0, 0, 0, 0);
		for (int k = 0; k < 2; k++) {
			uint64_t lk = k ? atiny : abig, st = k ? TPUT : APUT;
			uint64_t a = t0 + 11000 + 3000 * (uint64_t)k;
			uint64_t ns = k ? 10 : 500;
			tw_t *x = t[2 * k], *y = t[2 * k + 1];
			E(x, FMT_ACQ, a, lk, st, 0, 0, 0);
			E(x, FMT_ALLOC, a + 100, ptr, 64, st, ns,
			  FMT_FN_MALLOC);
			E(x, FMT_REL_CONTENDED, a + 1000, lk, st, 0, 0, 0);
			E(y, FMT_ACQ_WAIT, a + 1001, lk, st, 900, 1, 0);
			E(y, FMT_ALLOC, a + 1101, ptr + 64, 64, k ? st : AOTHER,
			  ns, FMT_FN_MALLOC);
			E(y, FMT_REL, a + 2001, lk, 0, 0, 0, 0);
			ptr += 128;
		}
	}
}

/*
 * big: T threads, each looping: ACQ lock (t % 4), ALLOC (stack t % 8),
 * REL, FREE of the block allocated 64 iterations before. 4 events per
 * iteration plus a few per round; live blocks stay at 64 per thread.
 */
static void scenario_big(uint64_t events, int threads)
{
	tw_t *t[MAX_THREADS];
	tw_t *proc = &thr[0];
	for (int i = 0; i < threads; i++) {
		t[i] = tw_new(200 + (uint32_t)i);
		m_thread_name(proc, 200 + (uint64_t)i, "worker");
	}
	uint64_t iters = events / 4 / (uint64_t)threads;
	for (uint64_t k = 0; k < iters; k++)
		for (int i = 0; i < threads; i++) {
			uint64_t ts = T0 + 1000 + k * 400 + (uint64_t)i * 7;
			uint64_t base =
			    0x7f0000000000ull + (uint64_t)i * 0x100000000ull;
			uint64_t ptr = base + (k % 64) * 48;
			if (k >= 64)
				E(t[i], FMT_FREE, ts, ptr, 40, 0, 0, 0);
			if (k % 16 == 0)
				E(t[i], FMT_ACQ_WAIT, ts + 10,
				  (uint64_t)(i % 4) + 1, S_WORK_SITE, 120, 2,
				  0);
			else
				E(t[i], FMT_ACQ, ts + 10, (uint64_t)(i % 4) + 1,
				  S_WORK_SITE, 0, 0, 0);
			E(t[i], FMT_ALLOC, ts + 20, ptr, 48,
			  S_CHURN + (uint64_t)(k % 3), 60, FMT_FN_MALLOC);
			E(t[i], FMT_REL, ts + 200, (uint64_t)(i % 4) + 1, 0, 0,
			  0, 0);
		}
}

static void corrupt(const char *path, int crc_k, int cut_k)
{
	FILE *f = fopen(path, "r+b");
	if (!f) {
		perror(path);
		exit(1);
	}
	uint64_t off = FMT_FILE_HEADER_SIZE;
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	for (int k = 1;; k++) {
		fmt_chunk_header_t h;
		if (fseek(f, (long)off, SEEK_SET) ||
		    fread(hb, 1, sizeof hb, f) != sizeof hb ||
		    fmt_chunk_parse(hb, &h) < 0) {
			fprintf(stderr, "mktrace: no chunk %d\n", k);
			exit(1);
		}
		if (k == crc_k) {
			uint8_t b;
			uint64_t at =
			    off + FMT_CHUNK_HEADER_SIZE + h.payload_len / 2;
			fseek(f, (long)at, SEEK_SET);
			if (fread(&b, 1, 1, f) != 1)
				exit(1);
			b ^= 0x40;
			fseek(f, (long)at, SEEK_SET);
			fwrite(&b, 1, 1, f);
			break;
		}
		if (k == cut_k) {
			fclose(f);
			if (truncate(path, (off_t)(off + FMT_CHUNK_HEADER_SIZE +
			                           h.payload_len / 2)) != 0)
				perror("truncate");
			printf("%llu\n", (unsigned long long)off);
			return;
		}
		off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mktrace cascade|precise|mixed|starve|"
		                "roles|pool|tpool|locks|big OUT [options]\n");
		return 1;
	}
	const char *sc = argv[1], *path = argv[2];
	int rounds = 1000, crc_k = 0, cut_k = 0, version = FMT_VERSION_MAJOR,
	    threads = 4;
	bool bad_magic = false, attached = false, window_closed = false,
	     no_end = false;
	const char *module = NULL;
	uint64_t events = 50000000, nlocks = 100000, fx_wait = 200;
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
		if (!strcmp(a, "--rounds"))
			rounds = atoi(v), i++;
		else if (!strcmp(a, "--fx-wait"))
			fx_wait = strtoull(v, NULL, 0), i++;
		else if (!strcmp(a, "--fx-uneven"))
			fx_uneven = true;
		else if (!strcmp(a, "--fx-heap"))
			fx_heap = true;
		else if (!strcmp(a, "--fx-twins"))
			fx_twins = true;
		else if (!strcmp(a, "--in-array"))
			in_array = true;
		else if (!strcmp(a, "--ring-full"))
			ring_full = true;
		else if (!strcmp(a, "--window-first"))
			window_first = atoi(v), i++;
		else if (!strcmp(a, "--alloc-lock-addr"))
			alloc_lock_addr = strtoull(v, NULL, 0), i++;
		else if (!strcmp(a, "--churn-container"))
			churn_container = v, i++;
		else if (!strcmp(a, "--inner-alone"))
			inner_alone = true;
		else if (!strcmp(a, "--two-callers"))
			two_callers = true;
		else if (!strcmp(a, "--unknown-free"))
			unknown_free = true;
		else if (!strcmp(a, "--no-module"))
			with_module = false;
		else if (!strcmp(a, "--chunk"))
			chunk_cap = (size_t)atol(v), i++;
		else if (!strcmp(a, "--corrupt-crc"))
			crc_k = atoi(v), i++;
		else if (!strcmp(a, "--cut"))
			cut_k = atoi(v), i++;
		else if (!strcmp(a, "--bad-record"))
			bad_record_chunk = atoi(v), i++;
		else if (!strcmp(a, "--version"))
			version = atoi(v), i++;
		else if (!strcmp(a, "--bad-magic"))
			bad_magic = true;
		else if (!strcmp(a, "--attached"))
			attached = true;
		else if (!strcmp(a, "--static-tcmalloc"))
			static_tcmalloc = true;
		else if (!strcmp(a, "--window-closed"))
			window_closed = no_end = true;
		else if (!strcmp(a, "--no-end"))
			no_end = true;
		else if (!strcmp(a, "--module"))
			module = v, i++;
		else if (!strcmp(a, "--slow-outside"))
			slow_outside = true;
		else if (!strcmp(a, "--slow-size"))
			slow_size = strtoull(v ? v : "32", NULL, 0), i++;
		else if (!strcmp(a, "--slow-call-size"))
			slow_call_size = strtoull(v ? v : "0", NULL, 0), i++;
		else if (!strcmp(a, "--slow-realloc"))
			slow_realloc = true;
		else if (!strcmp(a, "--slow-one-thread"))
			slow_one_thread = true;
		else if (!strcmp(a, "--idle-waiters"))
			idle[0] = idle[1] = &thr[0]; /* made below */
		else if (!strcmp(a, "--wrapped"))
			wrapped = true;
		else if (!strcmp(a, "--two-lines"))
			two_lines = true;
		else if (!strcmp(a, "--unnamed"))
			unnamed = true;
		else if (!strcmp(a, "--init-via-runtime"))
			init_via_runtime = true;
		else if (!strcmp(a, "--refs"))
			starve_refs = atoi(v), i++;
		else if (!strcmp(a, "--global-stats"))
			global_stats = true;
		else if (!strcmp(a, "--global-past"))
			global_past = true;
		else if (!strcmp(a, "--heap-queue"))
			heap_queue = true;
		else if (!strcmp(a, "--client-root"))
			client_root = v, i++;
		else if (!strcmp(a, "--churn-size"))
			churn_size = strtoull(v, NULL, 0), i++;
		else if (!strcmp(a, "--events"))
			events = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--locks"))
			nlocks = strtoull(v, NULL, 10), i++;
		else if (!strcmp(a, "--threads"))
			threads = atoi(v), i++;
		else {
			fprintf(stderr, "mktrace: unknown option %s\n", a);
			return 1;
		}
	}
	if (threads < 1 || threads > MAX_THREADS - 2)
		threads = 4;
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		return 1;
	}
	uint8_t fh[FMT_FILE_HEADER_SIZE];
	fmt_file_header(fh);
	if (bad_magic)
		fh[0] = 'X';
	fh[8] = (uint8_t)version;
	fwrite(fh, 1, sizeof fh, out);

	tw_t *proc = tw_new(0);
	proc->last = T0;
	m_process(proc, sc);
	if (with_module)
		dl_iterate_phdr(phdr_cb, proc);
	if (module) {
		uint8_t *q = mb;
		q = fmt_put_u(q, 0);
		q = fmt_put_u(q, 0x7e0000000000ull);
		q = fmt_put_u(q, 0x7e0000100000ull);
		q = fmt_put_str(q, module, strlen(module));
		q = fmt_put_u(q, 0);
		meta(proc, FMT_MODULE, mb, (size_t)(q - mb));
	}
	if (static_tcmalloc)
		m_note(proc, FMT_NOTE_WARN,
		       "malloc is defined by /srv/app, ahead of the shim (a "
		       "statically linked allocator): recording allocations "
		       "through its MallocHook API");
	if (attached)
		m_note(
		    proc, FMT_NOTE_INFO,
		    "attached: 12 GOT slots in 3 modules redirected, 0 left "
		    "alone; blocks allocated and locks taken before the "
		    "attach are not known (unknown frees, unmatched releases)");
	if (!strcmp(sc, "big")) {
		streaming = true;
		if (chunk_cap == 512)
			chunk_cap = 64 * 1024;
		define_stacks(proc);
		tw_flush(proc);
		scenario_big(events, threads);
		finish_file();
		fclose(out);
		fprintf(stderr, "mktrace: %llu events, %d chunks\n",
		        (unsigned long long)nevents, chunks_written);
		return 0;
	}
	if (!strcmp(sc, "empty")) {
		/* The process's records and an END: no event. */
		tw_flush(proc);
		m_end(proc, 0);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "locks")) {
		streaming = true;
		if (chunk_cap == 512)
			chunk_cap = 64 * 1024;
		define_stacks(proc);
		tw_flush(proc);
		tw_t *c[4];
		char name[32];
		for (int i = 0; i < 4; i++) {
			c[i] = tw_new(300 + (uint32_t)i);
			snprintf(name, sizeof name, "conn-%d", i);
			m_thread_name(proc, 300 + (uint64_t)i, name);
		}
		scenario_locks(c, nlocks);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "lifo")) {
		define_stacks(proc);
		tw_t *acc = tw_new(506), *w[5];
		m_thread_name(proc, 506, "wrk-5");
		char name[32];
		for (int k = 0; k < 5; k++) {
			w[k] = tw_new(501 + (uint32_t)k);
			snprintf(name, sizeof name, "wrk-%d", k);
			m_thread_name(proc, 501 + (uint64_t)k, name);
		}
		scenario_lifo(acc, w, rounds);
		m_lock_new(acc, 7000, 0x7000, FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
		m_lock_name(acc, 7000, 0, "pool");
		for (int k = 0; k < 6; k++)
			m_lock_new(acc, 7100 + (uint64_t)k,
			           0x7100 + 0x40 * (uint64_t)k, FMT_KIND_COND,
			           0);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "contention")) {
		tw_t *t[4];
		char name[32];
		for (int k = 0; k < 4; k++) {
			t[k] = tw_new(701 + (uint32_t)k);
			snprintf(name, sizeof name, "ct-%d", k);
			m_thread_name(proc, 701 + (uint64_t)k, name);
		}
		scenario_contention(t, rounds);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "striped")) {
		define_stacks(proc);
		tw_t *t[4];
		char name[32];
		for (int k = 0; k < 4; k++) {
			t[k] = tw_new(601 + (uint32_t)k);
			snprintf(name, sizeof name, "mc-%d", k);
			m_thread_name(proc, 601 + (uint64_t)k, name);
		}
		scenario_striped(t, rounds);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "window")) {
		define_stacks(proc);
		tw_t *t[3];
		char name[32];
		for (int k = 0; k < 3; k++) {
			t[k] = tw_new(701 + (uint32_t)k);
			snprintf(name, sizeof name, "srv-%d", k);
			m_thread_name(proc, 701 + (uint64_t)k, name);
		}
		scenario_window(t, rounds);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	if (!strcmp(sc, "factory")) {
		tw_t *mt = tw_new(PID), *w1 = tw_new(401), *w2 = tw_new(402);
		m_thread_name(proc, 401, "vm-1");
		m_thread_name(proc, 402, "vm-2");
		E(mt, FMT_THREAD_START, T0 + 10, 1, 0, 0, 0, 0);
		E(w1, FMT_THREAD_START, T0 + 20, PID, 0, 0, 0, 0);
		E(w2, FMT_THREAD_START, T0 + 30, PID, 0, 0, 0, 0);
		scenario_factory(proc, mt, w1, w2, rounds);
		m_end(proc, nevents);
		finish_file();
		fclose(out);
		return 0;
	}
	tw_t *mainth = tw_new(PID);
	tw_t *p[3];
	for (int i = 0; i < 3; i++)
		p[i] = tw_new(101 + (uint32_t)i);
	tw_t *c = tw_new(104);
	/* Metadata arrives after first use, from whichever thread: stacks
	 * from the process chunk at the end, lock names from threads. */
	E(mainth, FMT_THREAD_START, T0 + 10, 1, 0, 0, 0, 0);
	if (heap_queue)
		E(mainth, FMT_ALLOC, T0 + 15, 0x30000000, 128, S_REG, 100,
		  FMT_FN_NEW);
	E(mainth, FMT_LOCK_INIT, T0 + 20, L_QUEUE, S_INIT, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		E(p[i], FMT_THREAD_START, T0 + 100 + (uint64_t)i, PID, 0, 0, 0,
		  0);
		m_thread_name(proc, 101 + (uint64_t)i, "producer");
	}
	E(c, FMT_THREAD_START, T0 + 200, PID, 0, 0, 0, 0);
	m_thread_name(proc, 104, "consumer");
	m_thread_name(proc, PID, "main");
	bool precise = !strcmp(sc, "precise");
	for (int i = 0; i < 2 && idle[0]; i++) {
		idle[i] = tw_new(107 + (uint32_t)i);
		char name[32];
		snprintf(name, sizeof name, "idle-%d", i);
		m_thread_name(proc, 107 + (uint64_t)i, name);
	}
	if (!strcmp(sc, "starve") || !strcmp(sc, "roles")) {
		/* threads of their own; the cascade's stay idle */
		char name[32];
		tw_t *a[6];
		for (int i = 0; i < 6; i++) {
			a[i] = tw_new(111 + (uint32_t)i);
			E(a[i], FMT_THREAD_START, T0 + 300 + (uint64_t)i, PID,
			  0, 0, 0, 0);
			if (sc[0] == 's')
				snprintf(name, sizeof name,
				         i < 5 ? "client-%d" : "server-0", i);
			else
				snprintf(name, sizeof name,
				         i < 3 ? "prod-%d" : "cons-%d", i % 3);
			m_thread_name(proc, 111 + (uint64_t)i, name);
		}
		if (sc[0] == 's')
			scenario_starve(a[5], a, rounds);
		else
			scenario_roles(a, a + 3, rounds);
		m_lock_new(a[0], L_JOBS, 0x6000, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(a[0], C_JOBS, 0x6040, FMT_KIND_COND, 0);
		m_lock_new(a[0], C_JOBS2, 0x6080, FMT_KIND_COND, 0);
		m_lock_name(a[0], L_JOBS, 0, sc[0] == 's' ? "jobs" : "ring");
	} else if (!strcmp(sc, "pool")) {
		static const char *const names[10] = {
		    "bg-0",          "bg-1",      "bg-2",
		    "bg-3",          "gc-0",      "gc-1",
		    "gc-2",          "VM Thread", "C2 CompilerThread0",
		    "Sweeper thread"};
		tw_t *a[10];
		for (int i = 0; i < 10; i++) {
			a[i] = tw_new(121 + (uint32_t)i);
			E(a[i], FMT_THREAD_START, T0 + 300 + (uint64_t)i, PID,
			  0, 0, 0, 0);
			m_thread_name(proc, 121 + (uint64_t)i, names[i]);
		}
		scenario_pool(a, a + 4, a + 7, rounds);
		m_lock_new(a[0], L_JOBS, 0x6000, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(a[0], C_JOBS, 0x6040, FMT_KIND_COND, 0);
		m_lock_new(a[0], L_HEAP, 0x60c0, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(a[0], L_CODE, 0x6100, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_name(a[0], L_JOBS, 0, "tasks");
		m_lock_name(a[0], L_HEAP, 0, "heap");
		m_lock_name(a[0], L_CODE, 0, "codecache");
	} else if (!strcmp(sc, "tpool")) {
		tw_t *a[5];
		char name[32];
		for (int i = 0; i < 5; i++) {
			a[i] = tw_new(131 + (uint32_t)i);
			E(a[i], FMT_THREAD_START, T0 + 300 + (uint64_t)i, PID,
			  0, 0, 0, 0);
			snprintf(name, sizeof name, "tp-%d", i);
			m_thread_name(proc, 131 + (uint64_t)i, name);
		}
		scenario_tpool(mainth, a, rounds);
		m_lock_new(a[0], L_JOBS, 0x6000, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(a[0], C_JOBS, 0x6040, FMT_KIND_COND, 0);
		m_lock_new(a[0], L_HEAP, 0x60c0, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_name(a[0], L_JOBS, 0, "tpool");
		m_lock_new(a[0], L_CODE, 0x6100, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_name(a[0], L_HEAP, 0, "pstats");
		m_lock_name(a[0], L_CODE, 0, "pcount");
	} else if (!strcmp(sc, "futex")) {
		tw_t *a[4];
		for (int i = 0; i < 4; i++) {
			char name[32];
			a[i] = tw_new(131 + (uint32_t)i);
			E(a[i], FMT_THREAD_START, T0 + 300 + (uint64_t)i, PID,
			  0, 0, 0, 0);
			snprintf(name, sizeof name, i < 3 ? "fx-%d" : "fx-post",
			         i);
			m_thread_name(proc, 131 + (uint64_t)i, name);
		}
		if (fx_heap)
			for (int i = 0; i < 3; i++)
				E(a[3], FMT_ALLOC, T0 + 400 + (uint64_t)i,
				  0x31000000 + 0x100 * (uint64_t)i, 64,
				  S_FX_BLOCK, 100, FMT_FN_MALLOC);
		scenario_futex(a, a[3], rounds, fx_wait);
		m_lock_new(a[0], L_FX_WORD,
		           (uint64_t)(uintptr_t)&mktrace_fx_word,
		           FMT_KIND_FUTEX, FMT_LOCKF_STATIC);
		m_lock_new(a[0], L_FX_EVENT, 0x7040, FMT_KIND_FUTEX,
		           FMT_LOCKF_STATIC);
		if (fx_twins) {
			m_lock_new(a[0], L_FX_T1, 0x7080, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
			m_lock_new(a[0], L_FX_T2, 0x70c0, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
			m_lock_new(a[0], L_FX_T3, 0x7100, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
			m_lock_new(a[0], L_FX_T4, 0x7140, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
		}
		if (fx_heap) {
			m_lock_new(a[0], L_FX_H1, 0x31000008, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
			m_lock_new(a[0], L_FX_H2, 0x31000108, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
			m_lock_new(a[0], L_FX_H3, 0x31000208, FMT_KIND_FUTEX,
			           FMT_LOCKF_STATIC);
		}
	} else if (!strcmp(sc, "cascade") || precise || !strcmp(sc, "mixed")) {
		scenario_cascade(mainth, p, c, rounds, precise);
	} else {
		fprintf(stderr, "mktrace: unknown scenario %s\n", sc);
		return 1;
	}
	tw_t *w1 = NULL, *w2 = NULL;
	if (!strcmp(sc, "mixed")) {
		w1 = tw_new(105);
		w2 = tw_new(106);
		m_thread_name(proc, 105, "worker-a");
		m_thread_name(proc, 106, "worker-b");
		scenario_mixed(w1, w2, rounds);
		m_lock_new(w1, L_OUTER, 0x5000, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(w1, L_INNER, 0x5040, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		m_lock_new(w1, L_STARVE, 0x5080, FMT_KIND_MUTEX,
		           FMT_LOCKF_STATIC);
		if (!unnamed) {
			m_lock_name(w1, L_OUTER, 0, "outer");
			m_lock_name(w1, L_INNER, 0, "inner");
			m_lock_name(w1, L_STARVE, 0, "starved");
		}
	}
	/* lock metadata late, from a producer's stream */
	m_lock_new(p[1], L_QUEUE, heap_queue ? 0x30000028 : 0x4000,
	           FMT_KIND_MUTEX, FMT_LOCKF_INIT);
	m_lock_new(p[1], L_STATS,
	           global_stats  ? (uint64_t)(uintptr_t)&mktrace_stats_lock[1]
	           : global_past ? (uint64_t)(uintptr_t)&mktrace_small_obj[32]
	                         : 0x4040,
	           FMT_KIND_MUTEX, FMT_LOCKF_STATIC);
	m_lock_new(p[1], C_QUEUE, 0x4080, FMT_KIND_COND, 0);
	m_lock_new(p[1], L_MALLOC, alloc_lock_addr, FMT_KIND_ALLOC_INTERNAL, 0);
	if (!unnamed) {
		m_lock_name(p[2], L_QUEUE, FMT_NAMEF_QUEUE, "queue");
		m_lock_name(p[2], L_STATS, 0, "stats");
	}
	m_note(proc, FMT_NOTE_INFO, "mktrace: synthetic trace");
	define_stacks(proc);
	if (window_closed) {
		uint64_t last = 0;
		for (int i = 0; i < nthr; i++)
			if (thr[i].last > last)
				last = thr[i].last;
		E(mainth, FMT_MARK, last + 1000, FMT_MARK_PAUSE, 0, 0, 0, 0);
	}
	if (!no_end)
		m_end(proc, nevents);
	finish_file();
	fclose(out);
	if (crc_k || cut_k)
		corrupt(path, crc_k, cut_k);
	return 0;
}
