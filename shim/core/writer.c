/*
 * writer.c - the trace file, per-thread chunk buffers and the process-level
 * chunk (writer.h).
 *
 * Locks (all real pthread mutexes, called through the real table, never on
 * the hot path), in the order they may nest:
 *   reg_lock (registry of buffers) -> wbuf.flush_lock
 *   proc_lock (process chunk) is taken alone.
 * Nothing here allocates through malloc: buffers are mmap'd.
 *
 * Each thread remembers which of these locks it holds (w_held): an exit()
 * or exec called from a signal handler that interrupted the writer on the
 * same thread must not wait for a lock that thread holds. The
 * final and exec flushes skip what the caller holds, and say so in a note.
 *
 * The trace fd is the host's resource too: it is kept at a high
 * number and checked by identity (st_dev, st_ino) before every write. When
 * the host closed it or put another file at its number, the file is
 * reopened by its absolute path (and checked again); when that fails,
 * recording stops with one note. An fd that failed the check is never
 * written to or closed: its number belongs to the host.
 */
#include "writer.h"

#include "compress.h"
#include "attach.h"
#include "config.h"
#include "control.h"
#include "note.h"
#include "prim.h"
#include "real.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Atomic uint64_t g_events_written, g_events_dropped;
static _Atomic uint64_t g_bytes; /* bytes of the file written or reserved */
#define CAP_TAIL (64u << 10)

uint64_t writer_bytes(void)
{
	return atomic_load(&g_bytes);
}

static _Atomic int g_fd = -1;
static prim_fid_t g_fid; /* the identity of the trace file */
static char g_reopen_path[CONFIG_PATH_MAX + 64]; /* absolute, or "" */
static _Atomic uint32_t fd_fixer; /* tid recovering the fd, or 0 */
static uint32_t g_file_pid;       /* process that owns g_fd */
/* What the END records written so far said (END counts add up: a failed
 * exec writes one, the exit a second with the rest). */
static uint64_t end_sent_written, end_sent_dropped;
static _Atomic int g_write_failed;
/* Why the writer stopped recording for good ("" while it has not), for the
 * control page (writer_stop_why). Written once, by the thread that set
 * g_write_failed, before SHIM_OFF_CTL asks the next hook to publish it. */
static char stop_why[128];

/* Recording stops for good because of the output: says why on the page. */
static void stopped_by_output(const char *fmt, const char *arg)
{
	snprintf(stop_why, sizeof stop_why, fmt, arg);
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED | SHIM_OFF_CTL);
}

const char *writer_stop_why(void)
{
	return atomic_load(&g_write_failed) && stop_why[0] ? stop_why : NULL;
}
static int g_in_fatal; /* writer_fatal runs: no warning (not signal-safe) */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static wbuf_t active = {.next = &active, .prev = &active};
static wbuf_t *free_list;

static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *proc_chunk; /* 48 header bytes + PROC_CAP payload */
static size_t proc_len;
static uint32_t proc_seq;
#define PROC_CAP (256u << 10)

static const pthread_mutex_t mutex_init_value = PTHREAD_MUTEX_INITIALIZER;

/* A forked child creates its file at its first write, not at fork: a child
 * that execs (or _exits) right away leaves no empty trace behind. */
static _Atomic int lazy_open;
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*lazy_fn)(void);
static uint32_t lazy_opener; /* tid running lazy_fn (it re-enters) */
static uint32_t lazy_pid;    /* the process whose file it is */

/* The writer's locks this thread holds or waits for (bits), and the
 * buffers whose flush_lock it holds. A bit (or an entry) is set before the
 * lock is taken and cleared after it is released: a signal handler in
 * between sees it set, and skips a lock it could have taken (safe), never
 * the reverse. The buffers are a stack, not one slot: an exit() from a
 * handler that interrupted this thread's own flush takes and releases
 * other buffers' locks, and must still know, at the last buffer of its
 * pass, that the interrupted flush holds that one. */
#define W_REG 1u
#define W_PROC 2u
#define W_HELD_MAX 4u
static __thread unsigned w_held __attribute__((tls_model("initial-exec")));
static __thread wbuf_t *w_held_wb[W_HELD_MAX]
    __attribute__((tls_model("initial-exec")));
static __thread unsigned w_nheld __attribute__((tls_model("initial-exec")));

static void wlock(pthread_mutex_t *m, unsigned bit)
{
	w_held |= bit;
	atomic_signal_fence(memory_order_seq_cst);
	real.pthread_mutex_lock(m);
}

static void wunlock(pthread_mutex_t *m, unsigned bit)
{
	real.pthread_mutex_unlock(m);
	atomic_signal_fence(memory_order_seq_cst);
	w_held &= ~bit;
}

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

/* The trace fd, checked: g_fd when it is still the trace file; else the
 * file reopened by its path (a host that closed every fd); else -1 after
 * one warning, with recording stopped. Async-signal-safe when quiet (the
 * fatal path): open, fstat, fcntl only. */
static int trace_fd(void)
{
	int fd = atomic_load(&g_fd);
	if (likely(prim_fid_same(fd, &g_fid)))
		return fd;
	uint32_t self = prim_gettid(), zero = 0;
	while (!atomic_compare_exchange_weak(&fd_fixer, &zero, self)) {
		if (zero == self)
			return -1; /* a signal handler interrupted the fix */
		zero = 0;
		prim_yield();
	}
	int bad = atomic_load(&g_fd);
	int nfd = prim_fid_same(bad, &g_fid) ? bad : -1;
	const char *err = "no absolute path to reopen it by";
	if (nfd < 0 && g_reopen_path[0] && !atomic_load(&g_write_failed)) {
		nfd = prim_reopen_append(-100 /* AT_FDCWD */, g_reopen_path);
		if (nfd < 0)
			err = prim_strerror(-nfd);
		if (nfd >= 0 && !prim_fid_same(nfd, &g_fid)) {
			prim_close(nfd); /* another file at that path now */
			nfd = -1;
			err = "another file has that name now";
		}
		if (nfd >= 0) {
			atomic_store(&g_fd, nfd);
			prim_fd_keep(PRIM_KEEP_TRACE, nfd);
			if (!g_in_fatal)
				shim_info("the program closed or replaced the "
				          "trace's fd %d; reopened %s as fd %d",
				          bad, g_reopen_path, nfd);
		}
	}
	if (nfd < 0) {
		int expect = 0;
		if (atomic_compare_exchange_strong(&g_write_failed, &expect,
		                                   1)) {
			char why[128];
			snprintf(why, sizeof why,
			         "trace lost: the program closed its fd %d, "
			         "reopening it failed: %s",
			         bad, err);
			stopped_by_output("%s", why);
			if (!g_in_fatal) {
				shim_warn("the program closed or replaced the "
				          "trace's fd %d and reopening %s "
				          "failed (%s, as uid %u); recording "
				          "stopped",
				          bad, g_reopen_path, err,
				          (unsigned)geteuid());
			}
		}
	}
	atomic_store(&fd_fixer, 0);
	return nfd;
}

int writer_open(int dirfd, const char *path, const char *abs_path)
{
	int fd = prim_create_excl(dirfd, path);
	if (fd < 0)
		return -fd;
	uint8_t hdr[FMT_FILE_HEADER_SIZE];
	fmt_file_header(hdr);
	int err = prim_write_once(fd, hdr, sizeof hdr);
	if (err) {
		prim_close(fd);
		return err;
	}
	prim_fid(fd, &g_fid);
	prim_fd_keep(PRIM_KEEP_TRACE, fd);
	snprintf(g_reopen_path, sizeof g_reopen_path, "%s",
	         abs_path && abs_path[0] == '/' ? abs_path : "");
	atomic_store(&g_fd, fd);
	g_file_pid = prim_getpid();
	atomic_store(&g_bytes, FMT_FILE_HEADER_SIZE);
	atomic_store(&g_write_failed, 0);
	return 0;
}

int writer_active(void)
{
	return (g_fd >= 0 || atomic_load(&lazy_open)) &&
	       !atomic_load(&g_write_failed);
}

void writer_open_lazily(int (*open_fn)(void))
{
	lazy_fn = open_fn;
	lazy_pid = prim_getpid();
	atomic_store(&lazy_open, 1);
}

/* Nonzero while the file is still to be created lazily and this process
 * has never recorded: what it writes until then (a paused thread's exit,
 * process records) is not an event of a window, and goes nowhere. */
static int lazy_unrecorded(void)
{
	return atomic_load(&lazy_open) == 1 && !ctl_ever_recorded();
}

/* Creates the lazily opened file (once), before any lock of the writer is
 * taken: open_fn writes the opening records through the writer itself. A
 * process that has never recorded creates none (a paused server's children
 * leave no empty trace each). */
static void ensure_file(void)
{
	int state = atomic_load_explicit(&lazy_open, memory_order_acquire);
	if (likely(state == 0) || (state == 2 && lazy_opener == prim_gettid()))
		return;
	if (!ctl_ever_recorded())
		return;
	real.pthread_mutex_lock(&lazy_lock);
	if (atomic_load(&lazy_open) == 1) {
		int (*fn)(void) = lazy_fn;
		lazy_opener = prim_gettid();
		atomic_store(&lazy_open, 2);
		if (fn() != 0) {
			const char *e = prim_strerror(errno);
			atomic_store(&g_write_failed, 1);
			stopped_by_output("the trace could not be created (%s)",
			                  e);
		}
		atomic_store(&lazy_open, 0);
	}
	real.pthread_mutex_unlock(&lazy_lock);
}

/*
 * Seals and writes one chunk (header at chunk[0..47], payload after).
 * Returns 0, or -1 when nothing was written (file closed, wrong process,
 * earlier failure, or this write failed: then warns once and stops the
 * shim). events: the chunk's core events, for the END counters; lost: the
 * program's events it stands for (events, less its DROP records, plus the
 * counts they carry), added to END's dropped when it is not written
 * (a DROP's count was lost with its chunk).
 */
static int write_sealed(uint8_t *out, uint32_t tid, uint32_t seq,
                        uint64_t tsc_base, size_t len, uint32_t flags,
                        uint64_t events, uint64_t lost);

static int write_chunk(uint8_t *chunk, uint32_t tid, uint32_t seq,
                       uint64_t tsc_base, size_t len, uint64_t events,
                       uint64_t lost, int compress)
{
	if (atomic_load(&g_fd) < 0 || atomic_load(&g_write_failed) ||
	    prim_getpid() != g_file_pid) {
		if (!lazy_unrecorded())
			atomic_fetch_add(&g_events_dropped, lost);
		return -1;
	}
	/* Compressed on this thread (compress.h; docs/performance.md says
	 * why here): out is the chunk as it will be written. */
	int zslot = -1;
	size_t stored = len;
	uint8_t *zout = compress ? compress_chunk(chunk + FMT_CHUNK_HEADER_SIZE,
	                                          len, &stored, &zslot)
	                         : NULL;
	uint8_t *out = zout ? zout : chunk;
	int rc = write_sealed(out, tid, seq, tsc_base, stored,
	                      zout ? FMT_CHUNKF_ZSTD : 0, events, lost);
	if (zout)
		compress_release(zslot);
	return rc;
}

/* write_chunk's second half: the cap, the header and the write of the
 * chunk as stored (len payload bytes after the header at out). */
static int write_sealed(uint8_t *out, uint32_t tid, uint32_t seq,
                        uint64_t tsc_base, size_t len, uint32_t flags,
                        uint64_t events, uint64_t lost)
{
	/* MALLOCK_MAX_BYTES: event chunks stop CAP_TAIL short of the cap,
	 * which keeps room for the closing process chunks (NOTE, END); no
	 * write makes the file larger than the cap. */
	uint64_t total = FMT_CHUNK_HEADER_SIZE + len;
	if (g_cfg.max_bytes) {
		uint64_t cap = (uint64_t)g_cfg.max_bytes;
		uint64_t limit = tid ? cap - CAP_TAIL : cap;
		uint64_t before = atomic_fetch_add(&g_bytes, total);
		if (before + total > limit) {
			atomic_fetch_sub(&g_bytes, total);
			atomic_fetch_add(&g_events_dropped, lost);
			if (tid && !g_in_fatal)
				ctl_capped(before);
			else if (tid)
				atomic_fetch_or(&g_off, SHIM_OFF_CAPPED);
			return -1;
		}
	} else {
		atomic_fetch_add(&g_bytes, total);
	}
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	h.flags = flags;
	h.tid = tid;
	h.seq = seq;
	h.tsc_base = tsc_base;
	prim_clock_pair(&h.tsc_flush, &h.mono_flush_ns);
	fmt_chunk_seal(out, &h, out + FMT_CHUNK_HEADER_SIZE);
	int fd = trace_fd();
	int err = fd < 0
	              ? EBADF
	              : prim_write_once(fd, out, FMT_CHUNK_HEADER_SIZE + len);
	if (err) {
		atomic_fetch_add(&g_events_dropped, lost);
		if (fd < 0)
			return -1; /* trace_fd() said why */
		int expect = 0;
		if (atomic_compare_exchange_strong(&g_write_failed, &expect,
		                                   1)) {
			/* A short write is the disk filling up (or the file
			 * size limit) in the middle of a chunk. */
			const char *what = err == EIO
			                       ? "short write (disk full "
			                         "or file size limit)"
			                       : prim_strerror(err);
			stopped_by_output("writing the trace failed: %s", what);
			if (!g_in_fatal) {
				shim_warn("writing the trace failed: %s; "
				          "recording stopped",
				          what);
			}
		}
		return -1;
	}
	atomic_fetch_add(&g_events_written, events);
	return 0;
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
	active_push(wb);
	wunlock(&reg_lock, W_REG);
	return 0;
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
 * inverse of fmt_decode). Returns the end. */
static uint8_t *reencode(uint8_t *p, fmt_enc_t *e, const fmt_record_t *r)
{
	if (FMT_IS_META(r->type)) {
		*p++ = (uint8_t)r->type;
		p = fmt_put_u(p, r->body_len);
		memcpy(p, r->body, r->body_len);
		return p + r->body_len;
	}
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
	fmt_enc_t e = {0, 0};
	uint64_t base = 0, events = 0, lost = 0, unwritten = 0;
	for (;;) {
		uint64_t before = d.tsc;
		size_t at = (size_t)(d.p - d.start);
		if (fmt_decode(&d, &r, &off) <= 0)
			break;
		if (at < from)
			continue;
		int meta = FMT_IS_META(r.type);
		uint64_t stands = meta                 ? 0
		                  : r.type == FMT_DROP ? r.f[FMT_DROP_COUNT]
		                                       : 1;
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
			e.last_tsc = base;
			e.last_ptr = 0;
		}
		q = reencode(q, &e, &r);
		events += !meta;
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
	wbuf_t *wb = t->wb;
	if (!wb)
		return;
	writer_flush(t);
	wlock(&reg_lock, W_REG);
	wb->prev->next = wb->next;
	wb->next->prev = wb->prev;
	wb->next = free_list;
	wb->prev = NULL;
	free_list = wb;
	wunlock(&reg_lock, W_REG);
	t->wb = NULL;
}

static void proc_write(void);

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
	if (g_flush_ticks == UINT64_MAX || tsc < due || tls_holds_lock(t) ||
	    w_held || w_nheld || !writer_owner())
		return;
	if (!atomic_compare_exchange_strong(&next, &due,
	                                    tsc + g_flush_ticks / 4))
		return; /* another thread sweeps */
	sweep_pass(t, tsc, g_flush_ticks);
}

void writer_sweep_stopped(tls_t *t, uint32_t gen)
{
	static _Atomic uint32_t done;
	uint32_t d = atomic_load_explicit(&done, memory_order_relaxed);
	if (d == gen || g_flush_ticks == UINT64_MAX || t->gate != GATE_READY ||
	    tls_holds_lock(t) || w_held || w_nheld || !writer_owner())
		return;
	if (!atomic_compare_exchange_strong(&done, &d, gen))
		return; /* another thread sweeps */
	uint8_t gate = gate_hold(t);
	if (sweep_pass(t, 0, 0) != 0)
		atomic_store(&done, d); /* the next hook tries again */
	gate_restore(t, gate);
}

/* A NOTE (warning) and an END with the counts not yet reported by an
 * earlier END, as one process chunk. Caller holds proc_lock, or (a nested
 * exit) cannot take it: then the chunk is built on the stack. */
static void write_note_end(const char *why, unsigned flags, int on_stack)
{
	uint8_t body[NOTE_LEN + 3 * FMT_VARINT_MAX], *p;
	uint8_t stack_chunk[FMT_CHUNK_HEADER_SIZE + NOTE_LEN + 128];
	size_t stack_len = 0;
	for (int rec = why ? 0 : 1; rec < 2; rec++) {
		p = body;
		unsigned type = rec ? FMT_END : FMT_NOTE;
		if (!rec) {
			size_t n = strlen(why);
			p = fmt_put_u(p, FMT_NOTE_WARN);
			p = fmt_put_str(p, why,
			                n < NOTE_LEN ? n : NOTE_LEN - 1);
		} else {
			uint64_t w = atomic_load(&g_events_written);
			uint64_t d = atomic_load(&g_events_dropped);
			p = fmt_put_u(p, w - end_sent_written);
			p = fmt_put_u(p, d - end_sent_dropped);
			p = fmt_put_u(p, flags);
			end_sent_written = w;
			end_sent_dropped = d;
		}
		size_t len = (size_t)(p - body);
		if (!on_stack) {
			writer_proc_meta(type, body, len);
			continue;
		}
		uint8_t *q = stack_chunk + FMT_CHUNK_HEADER_SIZE + stack_len;
		uint8_t *start = q;
		*q++ = (uint8_t)type;
		q = fmt_put_u(q, len);
		memcpy(q, body, len);
		q += len;
		stack_len += (size_t)(q - start);
	}
	if (on_stack)
		write_chunk(stack_chunk, 0, proc_seq++, prim_tsc(), stack_len,
		            0, 0, 1);
}

/*
 * The passes over every thread's buffer at exit and at exec. Locks the
 * caller already holds (a signal handler that interrupted the writer on
 * this thread called exit or exec) are not waited for: what they guard is
 * skipped and named in the returned note text (empty: nothing skipped).
 */
static const char *flush_all(int close)
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

/* The final and the exec flush: every buffer (flush_all), then thread
 * names, pending notes, a NOTE (why, if any) and END (flags) as one process
 * chunk. When the caller interrupted the writer (an exit or exec from a
 * signal handler), only a NOTE and END, built on the stack: the process
 * chunk may be half built by the interrupted code, and thread names need
 * the registry. */
static void flush_all_end(int close, const char *why, unsigned flags)
{
	const char *skipped = flush_all(close);
	if (skipped[0])
		shim_info("%s", skipped);
	if (w_held & (W_PROC | W_REG)) {
		write_note_end(why          ? why
		               : skipped[0] ? skipped
		                            : "exit from a signal handler that "
		                              "interrupted the writer",
		               flags, 1);
		return;
	}
	writer_thread_names();
	writer_notes();
	writer_proc_begin();
	write_note_end(why, flags, 0);
	writer_proc_end();
}

void writer_final(void)
{
	ensure_file();
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
	if (lazy_unrecorded())
		return; /* never recorded: no file, nothing to end */
	flush_all_end(1, NULL, FMT_ENDF_CLEAN);
}

int writer_unrecorded(void)
{
	/* Without a window, the only events are paused threads' exits. */
	return writer_owner() && !ctl_ever_recorded();
}

int writer_is_file(int dirfd, const char *path)
{
	struct stat st;
	return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && st.st_dev == g_fid.dev &&
	       st.st_ino == g_fid.ino;
}

void writer_cred_drop(uint32_t uid)
{
	int fd = atomic_load(&g_fd);
	if (writer_owner() && prim_fid_same(fd, &g_fid))
		fchown(fd, uid, (gid_t)-1);
}

int writer_owner(void)
{
	return atomic_load(&g_fd) >= 0 && !atomic_load(&g_write_failed) &&
	       prim_getpid() == g_file_pid;
}

int writer_ends_here(const tls_t *t)
{
	if (writer_owner())
		return 1;
	/* A forked child whose file is not created yet: only when it has
	 * recorded something (a child that _exits at once leaves no file),
	 * and not in a vfork child of it (another pid, the same memory). */
	return atomic_load(&lazy_open) == 1 && lazy_pid == prim_getpid() &&
	       t->wb &&
	       (atomic_load_explicit(&t->wb->committed, memory_order_acquire) ||
	        t->drops);
}

int writer_exec(tls_t *self, const char *why)
{
	if (!writer_owner())
		return -1;
	if (self && self->wb && !w_nheld)
		writer_flush(self);
	flush_all_end(0, why, 0);
	return 0;
}

/*
 * The fatal-signal flush (fatal.c). Async-signal-safe: only trylocks (a lock
 * held by the interrupted code is skipped; one held by a thread that is
 * mid-flush is tried again for about 50 ms, then skipped), no allocation,
 * no stdio; write(), sched_yield and clock reads only. Writes
 * self's committed records first, then every other buffer's committed
 * records, closes them, and ends with a NOTE (why) and an END without
 * FMT_ENDF_CLEAN.
 */
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

void writer_fatal(tls_t *self, const char *why)
{
	if (atomic_load(&g_fd) < 0 || atomic_load(&g_write_failed) ||
	    prim_getpid() != g_file_pid)
		return;
	g_in_fatal = 1;
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
	if (self->wb)
		fatal_flush_one(self->wb);
	if (!(w_held & W_REG) && fatal_trylock(&reg_lock) == 0) {
		for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
			if (wb != self->wb)
				fatal_flush_one(wb);
		real.pthread_mutex_unlock(&reg_lock);
	}
	if (!proc_chunk || real.pthread_mutex_trylock(&proc_lock) != 0) {
		/* The process chunk is busy: NOTE and END from the stack. */
		write_note_end(why, 0, 1);
		return;
	}
	proc_len = 0; /* a half-built process chunk is dropped */
	write_note_end(why, 0, 0);
	proc_write();
	real.pthread_mutex_unlock(&proc_lock);
}

/* ---- process chunk ---- */

static void proc_write(void)
{
	if (proc_len) {
		write_chunk(proc_chunk, 0, proc_seq++, prim_tsc(), proc_len, 0,
		            0, 1);
		proc_len = 0;
	}
}

void writer_proc_begin(void)
{
	ensure_file();
	wlock(&proc_lock, W_PROC);
	if (!proc_chunk)
		proc_chunk = prim_map(FMT_CHUNK_HEADER_SIZE + PROC_CAP);
}

void writer_proc_meta(unsigned type, const uint8_t *body, size_t len)
{
	size_t need = 1 + FMT_VARINT_MAX + len;
	if (!proc_chunk || need > PROC_CAP)
		return;
	if (proc_len + need > PROC_CAP)
		proc_write();
	uint8_t *p = proc_chunk + FMT_CHUNK_HEADER_SIZE + proc_len;
	uint8_t *start = p;
	*p++ = (uint8_t)type;
	p = fmt_put_u(p, len);
	memcpy(p, body, len);
	p += len;
	proc_len += (size_t)(p - start);
}

void writer_proc_end(void)
{
	if (proc_chunk)
		proc_write();
	wunlock(&proc_lock, W_PROC);
}

/* A THREAD_NAME record of thread tid's current name into the process chunk.
 * Caller holds proc_lock (writer_proc_begin). */
static void proc_thread_name(uint32_t tid)
{
	char name[32];
	ssize_t n = prim_thread_name(tid, name, sizeof name);
	if (n <= 0)
		return;
	uint8_t body[2 * FMT_VARINT_MAX + sizeof name], *p = body;
	p = fmt_put_u(p, tid);
	p = fmt_put_str(p, name, (size_t)n);
	writer_proc_meta(FMT_THREAD_NAME, body, (size_t)(p - body));
}

/*
 * Names every thread that still has a buffer. Threads are usually named by
 * their creator right after pthread_create, before the new thread has a tid
 * the hook could look up; the name the kernel holds at the end is the one the
 * report needs. Lock order: proc_lock, then reg_lock (as at fork).
 */
void writer_thread_names(void)
{
	writer_proc_begin();
	wlock(&reg_lock, W_REG);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
		if (wb->tid)
			proc_thread_name(wb->tid);
	wunlock(&reg_lock, W_REG);
	writer_proc_end();
}

/* Names the calling thread (at its exit), into the process chunk. */
void writer_thread_name_self(uint32_t tid)
{
	writer_proc_begin();
	proc_thread_name(tid);
	writer_proc_end();
}

static void note_record(unsigned level, const char *text, size_t len, void *arg)
{
	(void)arg;
	uint8_t body[NOTE_LEN + 2 * FMT_VARINT_MAX], *p = body;
	p = fmt_put_u(p, level);
	p = fmt_put_str(p, text, len);
	writer_proc_meta(FMT_NOTE, body, (size_t)(p - body));
}

void writer_notes(void)
{
	ensure_file();
	if (atomic_load(&g_fd) < 0)
		return;
	writer_proc_begin();
	note_take(note_record, NULL);
	writer_proc_end();
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
	memcpy(&lazy_lock, &mutex_init_value, sizeof lazy_lock);
	memcpy(&proc_lock, &mutex_init_value, sizeof proc_lock);
	w_held = 0;
	w_nheld = 0;
	atomic_store(&fd_fixer, 0);
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
	/* The parent's trace fd: closed only while it is still that file
	 * (the host may have reused the number). */
	int fd = atomic_load(&g_fd);
	if (fd >= 0 && prim_fid_same(fd, &g_fid))
		prim_close(fd);
	atomic_store(&g_fd, -1);
	prim_fd_keep(PRIM_KEEP_TRACE, -1);
	atomic_store(&g_write_failed, 0);
	atomic_store(&g_events_written, 0);
	atomic_store(&g_events_dropped, 0);
	end_sent_written = end_sent_dropped = 0;
	proc_len = 0;
	proc_seq = 0;
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
