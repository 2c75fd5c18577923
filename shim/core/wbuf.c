/*
 * wbuf.c - the per-thread chunk buffers (writer.h): the registry of
 * buffers (active and free lists), the owner's flush, the writes of other
 * threads' buffers (the idle sweep, the exit, exec and fatal passes), and
 * the writer's side of fork.
 *
 * Locks (real pthread mutexes, through the real table, never on the hot
 * path), nested only in writer_int.h's lock order: reg_lock guards the
 * registry, wbuf.flush_lock one buffer's writes. Nothing here allocates
 * through malloc: buffers are mmap'd, and never unmapped.
 *
 * Each thread remembers which of these locks it holds (w_held, w_held_wb):
 * an exit() or exec called from a signal handler that interrupted the
 * writer on the same thread must not wait for a lock that thread holds.
 * The final and exec passes skip what the caller holds, and say so in a
 * note.
 */
#include "writer.h"
#include "writer_int.h"

#include "attach.h"
#include "compress.h"
#include "config.h"
#include "prim.h"
#include "real.h"

#include <errno.h>
#include <string.h>

pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
wbuf_t active = {.next = &active, .prev = &active};
static wbuf_t *free_list;

/* What this thread holds (writer_int.h): w_held, and the stack of
 * buffers whose flush_lock it holds or waits for. */
#define W_HELD_MAX 4u
__thread unsigned w_held __attribute__((tls_model("initial-exec")));
static __thread wbuf_t *w_held_wb[W_HELD_MAX]
    __attribute__((tls_model("initial-exec")));
__thread unsigned w_nheld __attribute__((tls_model("initial-exec")));

/* Nonzero when this thread holds (or is about to take) wb's flush_lock. */
static int wb_held(const wbuf_t *wb)
{
	for (unsigned i = 0; i < w_nheld && i < W_HELD_MAX; i++)
		if (w_held_wb[i] == wb)
			return 1;
	return 0;
}

static void flock_wb(wbuf_t *wb)
{
	unsigned n = w_nheld;
	if (n < W_HELD_MAX)
		w_held_wb[n] = wb;
	atomic_signal_fence(memory_order_seq_cst);
	w_nheld = n + 1;
	atomic_signal_fence(memory_order_seq_cst);
	real.pthread_mutex_lock(&wb->flush_lock);
}

static void funlock_wb(wbuf_t *wb)
{
	real.pthread_mutex_unlock(&wb->flush_lock);
	atomic_signal_fence(memory_order_seq_cst);
	w_nheld--;
}

/* The room a chunk keeps past its soft end for filling up inside a lock
 * hold: ev_commit_slow() then puts the flush off until the hold ends,
 * so that compressing the chunk never lengthens the hold (and the wait of
 * every thread behind it). A quarter of the buffer; none uncompressed. */
static size_t hold_slack(size_t cap)
{
	return g_cfg.compress ? cap / 4 : 0;
}

uint8_t *writer_soft_end(const tls_t *t)
{
	return t->end - WRITER_RESERVE - hold_slack(t->wb->cap);
}

/* Starts a new chunk in the owner's buffer. Caller holds wb->flush_lock
 * or is the only user of wb.
 * Its tsc_base is the last record's tsc, not the clock now: a hook reads
 * its clock before it encodes, and its encoding can flush first (the
 * pending acquisition's record, a STACK); a base read after that flush
 * (a write preempted under load took 95 us) clamped the record's tsc
 * forward to it, so a free seemed to start after the next malloc of its
 * block on another thread returned. */
static void chunk_start(tls_t *t)
{
	wbuf_t *wb = t->wb;
	uint8_t *payload = wb->chunk + FMT_CHUNK_HEADER_SIZE;
	t->pos = payload;
	t->end = payload + wb->cap;
	t->soft_end = writer_soft_end(t);
	uint64_t now = prim_tsc(), last = t->enc.last_tsc;
	t->chunk_tsc0 = last && last <= now ? last : now;
	t->enc.last_tsc = t->chunk_tsc0;
	t->enc.last_ptr = 0;
	t->enc.last_lock = 0;
	t->enc.last_new = 0;
	t->chunk_events = 0;
	wb->drop_recs = wb->drop_vals = 0;
	wb->done_len = 0;
	/* Read by writer_sweep without the lock (a hint it checks again). */
	__atomic_store_n(&wb->tsc_base, t->chunk_tsc0, __ATOMIC_RELAXED);
	atomic_store_explicit(&wb->committed, 0, memory_order_release);
}

/* The wbuf_t header, rounded up to a cache line: the chunk follows it. */
#define WBUF_HEAD ((sizeof(wbuf_t) + 63) / 64 * 64)

/* Makes wb t's buffer, as new: its next chunk is number 0. The caller is
 * the only user of wb (not yet in the active list, or a fork child). */
static void wbuf_own(wbuf_t *wb, tls_t *t)
{
	memcpy(&wb->flush_lock, &mutex_init_value, sizeof mutex_init_value);
	wb->tid = t->tid;
	wb->seq = 0;
	wb->closed = 0;
	wb->done_len = 0;
	wb->exec_drops = 0;
	wb->thread = (uintptr_t)pthread_self();
	wb->owner = t;
	t->wb = wb;
}

/* Puts wb first in the active list. Caller holds reg_lock, or is alone
 * (a fork child). */
static void active_push(wbuf_t *wb)
{
	wb->next = active.next;
	wb->prev = &active;
	active.next->prev = wb;
	active.next = wb;
}

/* Takes t's buffer off the active list onto the free list, under
 * reg_lock (sweeps and the final pass take flush_lock only under it: none
 * holds it once the buffer is off the list). */
static void active_drop(tls_t *t)
{
	wbuf_t *wb = t->wb;
	wlock(&reg_lock, W_REG);
	wb->prev->next = wb->next;
	wb->next->prev = wb->prev;
	wb->next = free_list;
	wb->prev = NULL;
	free_list = wb;
	wunlock(&reg_lock, W_REG);
	t->wb = NULL;
}

int writer_attach(tls_t *t)
{
	size_t cap = (size_t)g_cfg.buffer_kb << 10;
	wbuf_t *wb = NULL;
	wlock(&reg_lock, W_REG);
	if (free_list && free_list->cap == cap) {
		wb = free_list;
		free_list = wb->next;
	}
	wunlock(&reg_lock, W_REG);
	if (!wb) {
		size_t size = WBUF_HEAD + FMT_CHUNK_HEADER_SIZE + cap;
		wb = prim_map(size);
		if (!wb)
			return ENOMEM;
		wb->map_size = size;
		wb->cap = cap;
		wb->chunk = (uint8_t *)wb + WBUF_HEAD;
	}
	wbuf_own(wb, t);
	chunk_start(t);
	wlock(&reg_lock, W_REG);
	/* Read under the lock writer_gen_next moves it under: a buffer
	 * pushed before the move is closed by it, one pushed after is of
	 * the new trace. */
	wb->gen = t->gen = atomic_load(&g_trace_gen);
	active_push(wb);
	wunlock(&reg_lock, W_REG);
	return 0;
}

int writer_regen(tls_t *t)
{
	if (t->wb)
		active_drop(t);
	memset(&t->enc, 0, sizeof t->enc);
	t->drops = 0;
	return writer_attach(t);
}

void writer_gen_next(void)
{
	wlock(&reg_lock, W_REG);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next) {
		if (wb_held(wb))
			continue; /* never: the caller is in no flush */
		flock_wb(wb);
		wb->closed = 1;
		funlock_wb(wb);
	}
	atomic_fetch_add(&g_trace_gen, 1);
	wunlock(&reg_lock, W_REG);
	atomic_thread_fence(memory_order_seq_cst);
}

uint32_t writer_wait_quiet(const tls_t *self, uint64_t timeout_ns)
{
	uint64_t until = prim_mono_ns() + timeout_ns;
	for (;;) {
		uint32_t busy = 0;
		wlock(&reg_lock, W_REG);
		for (wbuf_t *wb = active.next; wb != &active && !busy;
		     wb = wb->next) {
			const tls_t *o = wb->owner;
			if (!o || o == self)
				continue;
			/* Another thread's TLS, read racily: a byte and a
			 * word, each read whole. */
			uint8_t g = __atomic_load_n(&o->gate, __ATOMIC_RELAXED);
			uintptr_t w =
			    __atomic_load_n(&o->wait_sp, __ATOMIC_RELAXED);
			if (g == GATE_BUSY && !w)
				busy = wb->tid;
		}
		wunlock(&reg_lock, W_REG);
		if (!busy || prim_mono_ns() > until)
			return busy;
		prim_yield();
	}
}

/* Appends DROP(count of events lost since the last DROP) to the chunk
 * being filled (flushes put it last in the chunk they write). */
static void emit_drop(tls_t *t)
{
	uint64_t tsc = prim_tsc();
	uint8_t *p = fmt_put_head(t->pos, &t->enc, FMT_DROP, tsc);
	p = fmt_put_u(p, t->drops);
	t->wb->drop_recs++;
	t->wb->drop_vals += t->drops;
	t->drops = 0;
	t->pos = p;
	t->chunk_events++;
	atomic_store_explicit(&t->wb->committed,
	                      (size_t)(p - t->wb->chunk) -
	                          FMT_CHUNK_HEADER_SIZE,
	                      memory_order_release);
}

/* What a payload holds: its core events, and the program's events it
 * stands for (DROP records replaced by their counts). Decodes from the
 * start, so len must end on a record boundary (a committed length). */
typedef struct pcount {
	uint64_t events, lost;
} pcount_t;

static pcount_t count_payload(const uint8_t *payload, size_t len)
{
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	fmt_dec_t d;
	fmt_record_t r;
	size_t off;
	pcount_t n = {0, 0};
	fmt_dec_init(&d, &h, payload);
	while (fmt_decode(&d, &r, &off) > 0) {
		if (FMT_IS_META(r.type))
			continue;
		n.events++;
		n.lost += r.type == FMT_DROP ? r.f[FMT_DROP_COUNT] : 1;
	}
	return n;
}

/* Re-encodes the decoded record r at p with the encoder state e (the
 * inverse of fmt_decode: a record the hooks would write in a compact
 * form, trace_format.h, is written in it here too, against e's state).
 * Returns the end. */
static uint8_t *reencode(uint8_t *p, fmt_enc_t *e, const fmt_record_t *r)
{
	if (FMT_IS_META(r->type)) {
		*p++ = (uint8_t)r->type;
		p = fmt_put_u(p, r->body_len);
		memcpy(p, r->body, r->body_len);
		return p + r->body_len;
	}
	const uint64_t *f = r->f;
	switch (r->type) {
	case FMT_ALLOC:
		return fmt_put_alloc(p, e, r->tsc, f[FMT_ALLOC_PTR],
		                     f[FMT_ALLOC_SIZE], f[FMT_ALLOC_STACK],
		                     f[FMT_ALLOC_TICKS], f[FMT_ALLOC_FN]);
	case FMT_FREE:
		return fmt_put_free(p, e, r->tsc, f[FMT_FREE_PTR],
		                    f[FMT_FREE_TICKS]);
	case FMT_COND_SIGNAL:
		return fmt_put_signal(p, e, r->tsc, f[FMT_COND_SIGNAL_COND],
		                      f[FMT_COND_SIGNAL_FLAGS]);
	default:
		if (FMT_LOCK_RECORD(r->type) && r->nf <= 2)
			return fmt_put_lockrec(p, e, r->type, r->tsc, f[0],
			                       r->nf == 2, f[1]);
	}
	if (FMT_LOCK_RECORD(r->type))
		e->last_lock = f[0];
	p = fmt_put_head(p, e, r->type, r->tsc);
	const char *l = fmt_core_layout(r->type);
	for (unsigned i = 0; l && l[i] && i < r->nf; i++) {
		if (l[i] == 'p') {
			p = fmt_put_ptr(p, e, r->f[i]);
		} else if (l[i] == 'r' && i) {
			p = fmt_put_s(p, (int64_t)(r->f[i] - r->f[i - 1]));
			e->last_ptr = r->f[i];
		} else {
			p = fmt_put_u(p, r->f[i]);
		}
	}
	return p;
}

/* Re-encodes a LOCK_INIT_NEW (1.9) that decoded as new (its LOCK_NEW)
 * and init (its LOCK_INIT) at p. Returns the end. */
static uint8_t *reencode_init_new(uint8_t *p, fmt_enc_t *e,
                                  const fmt_record_t *new,
                                  const fmt_record_t *init)
{
	const uint8_t *q = new->body, *end = q + new->body_len;
	uint64_t id = 0, addr = 0, kind = 0;
	fmt_get_u(&q, end, &id);
	fmt_get_u(&q, end, &addr);
	fmt_get_u(&q, end, &kind);
	return fmt_put_init_new(p, e, init->tsc, id, addr, kind,
	                        init->f[FMT_LOCK_INIT_STACK]);
}

/* Static buffers in which the tail of a buffer that another thread wrote
 * the start of is encoded again as chunks of its own (the encoding is
 * relative to the chunk's start: the tail cannot be written as it is).
 * Never from the hooked heap; claimed with an atomic flag. */
#define BOUNCE_SLOTS 4
#define BOUNCE_CAP (8u << 10)
static struct bounce {
	_Atomic int busy;
	uint8_t chunk[FMT_CHUNK_HEADER_SIZE + BOUNCE_CAP];
} bounces[BOUNCE_SLOTS];
static __thread int in_bounce __attribute__((tls_model("initial-exec")));

/* A free slot, waiting a little for one (its holder is writing a chunk),
 * except in a signal handler that interrupted this thread's own use of
 * one: then NULL. */
static struct bounce *bounce_get(void)
{
	if (in_bounce)
		return NULL;
	for (int tries = 0; tries < 10000; tries++) {
		for (int i = 0; i < BOUNCE_SLOTS; i++) {
			int expect = 0;
			if (!atomic_load_explicit(&bounces[i].busy,
			                          memory_order_relaxed) &&
			    atomic_compare_exchange_strong(&bounces[i].busy,
			                                   &expect, 1)) {
				in_bounce = 1;
				return &bounces[i];
			}
		}
		prim_yield();
	}
	return NULL;
}

static void bounce_put(struct bounce *b)
{
	in_bounce = 0;
	atomic_store(&b->busy, 0);
}

/*
 * Writes the committed records [from, to) of wb's chunk as chunks of wb's
 * thread: as it is when from is 0; else encoded again from the decoder's
 * state at from, through a bounce buffer (a record that cannot be, or no
 * free buffer: counted as dropped). Caller holds wb->flush_lock.
 */
static void write_range(wbuf_t *wb, size_t from, size_t to, int compress)
{
	uint8_t *payload = wb->chunk + FMT_CHUNK_HEADER_SIZE;
	if (from >= to)
		return;
	if (!from) {
		pcount_t n = count_payload(payload, to);
		write_chunk(wb->chunk, wb->tid, wb->seq, wb->tsc_base, to,
		            n.events, n.lost, compress);
		wb->seq++;
		return;
	}
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)to;
	h.tsc_base = wb->tsc_base;
	fmt_dec_t d;
	fmt_record_t r;
	size_t off;
	fmt_dec_init(&d, &h, payload);
	struct bounce *b = bounce_get();
	uint8_t *out = b ? b->chunk + FMT_CHUNK_HEADER_SIZE : NULL, *q = out;
	fmt_enc_t e = {0, 0, 0, 0};
	uint64_t base = 0, events = 0, lost = 0, unwritten = 0;
	for (;;) {
		uint64_t before = d.tsc;
		size_t at = (size_t)(d.p - d.start);
		if (fmt_decode(&d, &r, &off) <= 0)
			break;
		/* A hold form (1.8) decodes as its acquisition and then its
		 * REL, a LOCK_INIT_NEW (1.9) as its LOCK_NEW and then its
		 * LOCK_INIT: both read here, it is written again as one
		 * record, one event. */
		fmt_record_t second;
		int pair = d.pair_end && fmt_decode(&d, &second, &off) > 0;
		int hold = pair && second.type == FMT_REL;
		if (at < from)
			continue;
		int meta = FMT_IS_META(r.type) && !pair;
		uint64_t stands = meta                 ? 0
		                  : r.type == FMT_DROP ? r.f[FMT_DROP_COUNT]
		                                       : 1 + (uint64_t)hold;
		size_t need =
		    meta ? 1 + FMT_VARINT_MAX + r.body_len : FMT_EVENT_MAX;
		if (!b || need > BOUNCE_CAP) {
			unwritten += stands;
			continue;
		}
		if (q + need > out + BOUNCE_CAP) {
			write_chunk(b->chunk, wb->tid, wb->seq, base,
			            (size_t)(q - out), events, lost, compress);
			wb->seq++;
			q = out;
			events = lost = 0;
		}
		if (q == out) {
			base = before;
			memset(&e, 0, sizeof e);
			e.last_tsc = base;
		}
		if (hold)
			q = fmt_put_hold(
			    q, &e, r.type == FMT_ACQ_SHARED_UNTIMED, r.tsc,
			    r.f[FMT_ACQ_LOCK], r.f[FMT_ACQ_SITE]);
		else if (pair)
			q = reencode_init_new(q, &e, &r, &second);
		else
			q = reencode(q, &e, &r);
		events += !meta + (uint64_t)hold;
		lost += stands;
	}
	if (b && q > out) {
		write_chunk(b->chunk, wb->tid, wb->seq, base, (size_t)(q - out),
		            events, lost, compress);
		wb->seq++;
	}
	if (b)
		bounce_put(b);
	if (unwritten)
		atomic_fetch_add(&g_events_dropped, unwritten);
}

/* The owner's side of an exec that failed (writer_exec): that pass wrote
 * exec_drops of the owner's pending drops. Caller: the owner, holding
 * wb->flush_lock. */
static void exec_settle(tls_t *t, wbuf_t *wb)
{
	t->drops -= wb->exec_drops < t->drops ? wb->exec_drops : t->drops;
	wb->exec_drops = 0;
}

void writer_flush(tls_t *t)
{
	int saved = errno;
	ensure_file();
	wbuf_t *wb = t->wb;
	flock_wb(wb);
	if (unlikely(wb->exec_drops))
		exec_settle(t, wb);
	/* Drops go into the chunk written now: emitted at the start of the
	 * next chunk (as they were), those of a thread's last flush (exit)
	 * were never written. WRITER_RESERVE leaves room for the record. */
	if (t->drops && !wb->closed)
		emit_drop(t);
	size_t len = (size_t)(t->pos - wb->chunk) - FMT_CHUNK_HEADER_SIZE;
	if (unlikely(wb->done_len) && !wb->closed) {
		/* Another thread wrote the start (a sweep, an exec): the
		 * rest, encoded again as chunks of their own. */
		write_range(wb, wb->done_len, len, !tls_holds_lock(t));
	} else if (len && !wb->closed) {
		/* A flush inside a lock hold writes the chunk as it is:
		 * compressing it there would lengthen the hold (and every
		 * waiter's wait) by the compression's time. */
		write_chunk(wb->chunk, wb->tid, wb->seq, wb->tsc_base, len,
		            t->chunk_events,
		            t->chunk_events - wb->drop_recs + wb->drop_vals,
		            !tls_holds_lock(t));
		wb->seq++;
	}
	chunk_start(t);
	funlock_wb(wb);
	/* No modules_check here: a flush runs inside a hook, and
	 * dl_iterate_phdr takes the loader's lock (hook.h). Objects loaded
	 * later are recorded at dlclose, thread exit and the final flush.
	 * The one exception, in an attached process only: libraries loaded
	 * since the attach are redirected (attach.c), and only by a thread
	 * that holds none of the host's locks, so that waiting for the
	 * loader's lock cannot close a cycle with a thread that holds it and
	 * waits for one of ours. */
	if (!tls_holds_lock(t)) {
		attach_after_flush();
	} else if (unlikely(attach_active())) {
		/* Later: ev_commit_slow() looks at every event until the
		 * thread holds no lock. */
		t->attach_due = 1;
		t->soft_end = t->pos;
	}
	errno = saved;
}

int writer_meta(tls_t *t, unsigned type, const uint8_t *body, size_t len)
{
	size_t need = 1 + FMT_VARINT_MAX + len;
	if (t->pos + need > t->end - WRITER_RESERVE / 2) {
		writer_flush(t);
		if (t->pos + need > t->end - WRITER_RESERVE / 2)
			return -1;
	}
	uint8_t *p = t->pos;
	*p++ = (uint8_t)type;
	p = fmt_put_u(p, len);
	memcpy(p, body, len);
	p += len;
	wbuf_publish(t, p);
	return 0;
}

void writer_detach(tls_t *t)
{
	if (!t->wb)
		return;
	writer_flush(t);
	active_drop(t);
}

/*
 * The events another thread lost since its last DROP record (it is still
 * running, so its own buffer cannot be appended to): written as a chunk of
 * that thread holding only DROP. Caller holds wb->flush_lock, and reg_lock
 * (so the owner, in the active list, is alive). Allocation-free. Returns
 * the count written (exec: the owner subtracts it later).
 */
static uint64_t write_pending_drops(wbuf_t *wb)
{
	uint64_t n = wb->owner
	                 ? __atomic_load_n(&wb->owner->drops, __ATOMIC_RELAXED)
	                 : 0;
	n -= wb->exec_drops < n ? wb->exec_drops : n;
	if (!n || wb->closed)
		return 0;
	uint8_t chunk[FMT_CHUNK_HEADER_SIZE + 2 * FMT_VARINT_MAX + 16];
	uint8_t *payload = chunk + FMT_CHUNK_HEADER_SIZE;
	uint64_t tsc = prim_tsc();
	fmt_enc_t enc;
	memset(&enc, 0, sizeof enc);
	enc.last_tsc = tsc;
	uint8_t *p = fmt_put_head(payload, &enc, FMT_DROP, tsc);
	p = fmt_put_u(p, n);
	write_chunk(chunk, wb->tid, wb->seq, tsc, (size_t)(p - payload), 1, n,
	            1);
	wb->seq++;
	return n;
}

/*
 * Writes another thread's committed records (its owner only appends past
 * `committed`, and cannot reset the buffer while its flush_lock is held
 * here) past those already written (done_len), and its pending drops.
 * Caller holds wb->flush_lock and reg_lock. close: the final flush
 * (nothing more from this buffer); else an exec (the owner goes on if the
 * exec fails and writes the rest itself).
 */
static void flush_other(wbuf_t *wb, int close)
{
	size_t len = atomic_load_explicit(&wb->committed, memory_order_acquire);
	if (len > wb->done_len && !wb->closed) {
		write_range(wb, wb->done_len, len, 1);
		if (!close)
			__atomic_store_n(&wb->done_len, len, __ATOMIC_RELAXED);
	}
	uint64_t n = write_pending_drops(wb);
	if (close)
		wb->closed = 1;
	else
		wb->exec_drops += n;
}

/* The sweep of one idle thread's buffer (writer_sweep): its committed
 * records past done_len, if its flush_lock is free. Caller holds
 * reg_lock. */
static void sweep_one(wbuf_t *wb)
{
	unsigned n = w_nheld;
	if (n < W_HELD_MAX)
		w_held_wb[n] = wb;
	atomic_signal_fence(memory_order_seq_cst);
	w_nheld = n + 1;
	atomic_signal_fence(memory_order_seq_cst);
	if (real.pthread_mutex_trylock(&wb->flush_lock) == 0) {
		size_t len =
		    atomic_load_explicit(&wb->committed, memory_order_acquire);
		if (len > wb->done_len && !wb->closed) {
			write_range(wb, wb->done_len, len, 1);
			__atomic_store_n(&wb->done_len, len, __ATOMIC_RELAXED);
		}
		real.pthread_mutex_unlock(&wb->flush_lock);
	}
	atomic_signal_fence(memory_order_seq_cst);
	w_nheld = n;
}

/* One pass over the other threads' buffers: those whose chunk is older
 * than age ticks at tsc (age 0: every one). 0, or -1 when the registry is
 * busy. */
static int sweep_pass(tls_t *t, uint64_t tsc, uint64_t age)
{
	w_held |= W_REG;
	atomic_signal_fence(memory_order_seq_cst);
	if (real.pthread_mutex_trylock(&reg_lock) != 0) {
		w_held &= ~W_REG;
		return -1;
	}
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next) {
		if (wb == t->wb)
			continue;
		size_t len =
		    atomic_load_explicit(&wb->committed, memory_order_acquire);
		uint64_t base =
		    __atomic_load_n(&wb->tsc_base, __ATOMIC_RELAXED);
		if (!len || (age && (tsc < base || tsc - base <= age)) ||
		    len <= __atomic_load_n(&wb->done_len, __ATOMIC_RELAXED))
			continue;
		sweep_one(wb);
	}
	real.pthread_mutex_unlock(&reg_lock);
	atomic_signal_fence(memory_order_seq_cst);
	w_held &= ~W_REG;
	return 0;
}

void writer_sweep(tls_t *t, uint64_t tsc)
{
	static _Atomic uint64_t next;
	uint64_t due = atomic_load_explicit(&next, memory_order_relaxed);
	uint64_t fl = flush_ticks();
	if (fl == UINT64_MAX || tsc < due || tls_holds_lock(t) || w_held ||
	    w_nheld || !writer_owner())
		return;
	if (!atomic_compare_exchange_strong(&next, &due, tsc + fl / 4))
		return; /* another thread sweeps */
	sweep_pass(t, tsc, fl);
}

void writer_sweep_stopped(tls_t *t, uint32_t gen)
{
	static _Atomic uint32_t done;
	uint32_t d = atomic_load_explicit(&done, memory_order_relaxed);
	if (d == gen || flush_ticks() == UINT64_MAX || t->gate != GATE_READY ||
	    tls_holds_lock(t) || w_held || w_nheld || !writer_owner())
		return;
	if (!atomic_compare_exchange_strong(&done, &d, gen))
		return; /* another thread sweeps */
	uint8_t gate = gate_hold(t);
	if (sweep_pass(t, 0, 0) != 0)
		atomic_store(&done, d); /* the next hook tries again */
	gate_restore(t, gate);
}

const char *wbuf_flush_all(int close)
{
	const char *skipped = "";
	if (w_held & W_REG)
		return "exit or exec from a signal handler that interrupted "
		       "the writer: no thread's buffer written";
	wlock(&reg_lock, W_REG);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next) {
		if (wb_held(wb)) {
			skipped = "exit or exec from a signal handler that "
			          "interrupted a flush: that thread's buffer "
			          "not written";
			continue;
		}
		flock_wb(wb);
		flush_other(wb, close);
		funlock_wb(wb);
	}
	wunlock(&reg_lock, W_REG);
	return skipped;
}

/* A trylock that waits a little (about 50 ms of yields) for a lock that
 * another thread holds while it writes a chunk: that thread finishes, the
 * signal's default action has not run yet. Never for a lock this thread
 * holds (the interrupted code's). 0 when taken. */
static int fatal_trylock(pthread_mutex_t *m)
{
	uint64_t until = 0;
	for (;;) {
		if (real.pthread_mutex_trylock(m) == 0)
			return 0;
		uint64_t now = prim_mono_ns();
		if (!until)
			until = now + 50000000u;
		else if (now > until)
			return -1;
		prim_yield();
	}
}

static void fatal_flush_one(wbuf_t *wb)
{
	if (wb_held(wb) || fatal_trylock(&wb->flush_lock) != 0)
		return;
	flush_other(wb, 1);
	real.pthread_mutex_unlock(&wb->flush_lock);
}

void wbuf_fatal_flush(tls_t *self)
{
	if (self->wb)
		fatal_flush_one(self->wb);
	if (!(w_held & W_REG) && fatal_trylock(&reg_lock) == 0) {
		for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
			if (wb != self->wb)
				fatal_flush_one(wb);
		real.pthread_mutex_unlock(&reg_lock);
	}
}

/* ---- fork ---- */

void writer_fork_prepare(void)
{
	wlock(&proc_lock, W_PROC);
	wlock(&reg_lock, W_REG);
}

void writer_fork_parent(void)
{
	wunlock(&reg_lock, W_REG);
	wunlock(&proc_lock, W_PROC);
}

void writer_fork_child(tls_t *t)
{
	memcpy(&reg_lock, &mutex_init_value, sizeof reg_lock);
	memcpy(&proc_lock, &mutex_init_value, sizeof proc_lock);
	w_held = 0;
	w_nheld = 0;
	compress_fork_child();
	/* Other threads do not exist here: their buffers become free ones,
	 * and their unflushed events belong to the parent's trace. */
	wbuf_t *wb = active.next;
	while (wb != &active) {
		wbuf_t *next = wb->next;
		if (wb != t->wb) {
			wb->next = free_list;
			free_list = wb;
		}
		wb = next;
	}
	active.next = active.prev = &active;
	writer_file_fork_child();
	atomic_store(&g_events_written, 0);
	atomic_store(&g_events_dropped, 0);
	writer_proc_fork_child();
	if (t->wb) {
		wbuf_own(t->wb, t);
		active_push(t->wb);
		t->drops = 0;
		chunk_start(t);
	}
}

uint32_t writer_tid_of(uintptr_t th)
{
	uint32_t tid = 0;
	wlock(&reg_lock, W_REG);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
		if (wb->thread == th) {
			tid = wb->tid;
			break;
		}
	wunlock(&reg_lock, W_REG);
	return tid;
}
