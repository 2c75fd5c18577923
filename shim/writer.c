/*
 * writer.c - the trace file, per-thread chunk buffers and the process-level
 * chunk (writer.h).
 *
 * Locks (all real pthread mutexes, called through the real table, never on
 * the hot path), in the order they may nest:
 *   reg_lock (registry of buffers) -> wbuf.flush_lock
 *   proc_lock (process chunk) is taken alone.
 * Nothing here allocates through malloc: buffers are mmap'd.
 */
#include "writer.h"

#include "config.h"
#include "control.h"
#include "event.h"
#include "modules.h"
#include "note.h"
#include "prim.h"
#include "real.h"

#include <errno.h>
#include <string.h>

_Atomic uint64_t g_events_written, g_events_dropped;
static _Atomic uint64_t g_bytes; /* bytes of the file written or reserved */
#define CAP_TAIL (64u << 10)

uint64_t writer_bytes(void)
{
	return atomic_load(&g_bytes);
}

static int g_fd = -1;
static uint32_t g_file_pid;      /* process that owns g_fd */
static _Atomic int g_write_failed;
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

static void lock(pthread_mutex_t *m)
{
	real.pthread_mutex_lock(m);
}

static void unlock(pthread_mutex_t *m)
{
	real.pthread_mutex_unlock(m);
}

int writer_open(const char *path)
{
	int fd = prim_create_excl(path);
	if (fd < 0)
		return -fd;
	uint8_t hdr[FMT_FILE_HEADER_SIZE];
	fmt_file_header(hdr);
	int err = prim_write_once(fd, hdr, sizeof hdr);
	if (err) {
		prim_close(fd);
		return err;
	}
	g_fd = fd;
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
	atomic_store(&lazy_open, 1);
}

/* Creates the lazily opened file (once), before any lock of the writer is
 * taken: open_fn writes the opening records through the writer itself. */
static void ensure_file(void)
{
	int state = atomic_load_explicit(&lazy_open, memory_order_acquire);
	if (likely(state == 0) || (state == 2 && lazy_opener == prim_gettid()))
		return;
	real.pthread_mutex_lock(&lazy_lock);
	if (atomic_load(&lazy_open) == 1) {
		int (*fn)(void) = lazy_fn;
		lazy_opener = prim_gettid();
		atomic_store(&lazy_open, 2);
		if (fn() != 0) {
			atomic_store(&g_write_failed, 1);
			atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
		}
		atomic_store(&lazy_open, 0);
	}
	real.pthread_mutex_unlock(&lazy_lock);
}

/*
 * Seals and writes one chunk (header at chunk[0..47], payload after).
 * Returns 0, or -1 when nothing was written (file closed, wrong process,
 * earlier failure, or this write failed: then warns once and stops the
 * shim). events: the chunk's core events, for the END counters.
 */
static int write_chunk(uint8_t *chunk, uint32_t tid, uint32_t seq,
                       uint64_t tsc_base, size_t len, uint64_t events)
{
	if (g_fd < 0 || atomic_load(&g_write_failed) ||
	    prim_getpid() != g_file_pid) {
		atomic_fetch_add(&g_events_dropped, events);
		return -1;
	}
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
			atomic_fetch_add(&g_events_dropped, events);
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
	h.tid = tid;
	h.seq = seq;
	h.tsc_base = tsc_base;
	prim_clock_pair(&h.tsc_flush, &h.mono_flush_ns);
	fmt_chunk_seal(chunk, &h, chunk + FMT_CHUNK_HEADER_SIZE);
	int err = prim_write_once(g_fd, chunk, FMT_CHUNK_HEADER_SIZE + len);
	if (err) {
		atomic_fetch_add(&g_events_dropped, events);
		int expect = 0;
		if (atomic_compare_exchange_strong(&g_write_failed, &expect, 1)) {
			atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
			/* A short write is the disk filling up (or the file
			 * size limit) in the middle of a chunk. */
			if (!g_in_fatal)
				shim_warn("writing the trace failed: %s; "
				          "recording stopped",
				          err == EIO ? "short write (disk full "
				                       "or file size limit)"
				                     : strerror(err));
		}
		return -1;
	}
	atomic_fetch_add(&g_events_written, events);
	return 0;
}

/* Starts a new chunk in the owner's buffer. Caller holds wb->flush_lock
 * or is the only user of wb. */
static void chunk_start(tls_t *t)
{
	wbuf_t *wb = t->wb;
	uint8_t *payload = wb->chunk + FMT_CHUNK_HEADER_SIZE;
	t->pos = payload;
	t->end = payload + wb->cap;
	t->soft_end = t->end - WRITER_RESERVE;
	t->chunk_tsc0 = prim_tsc();
	t->enc.last_tsc = t->chunk_tsc0;
	t->enc.last_ptr = 0;
	t->chunk_events = 0;
	wb->tsc_base = t->chunk_tsc0;
	atomic_store_explicit(&wb->committed, 0, memory_order_release);
}

int writer_attach(tls_t *t)
{
	size_t cap = (size_t)g_cfg.buffer_kb << 10;
	wbuf_t *wb = NULL;
	lock(&reg_lock);
	if (free_list && free_list->cap == cap) {
		wb = free_list;
		free_list = wb->next;
	}
	unlock(&reg_lock);
	if (!wb) {
		size_t size = (sizeof(wbuf_t) + 63) / 64 * 64 +
		              FMT_CHUNK_HEADER_SIZE + cap;
		wb = prim_map(size);
		if (!wb)
			return ENOMEM;
		wb->map_size = size;
		wb->cap = cap;
		wb->chunk = (uint8_t *)wb + (sizeof(wbuf_t) + 63) / 64 * 64;
	}
	memcpy(&wb->flush_lock, &mutex_init_value, sizeof mutex_init_value);
	wb->tid = t->tid;
	wb->seq = 0;
	wb->closed = 0;
	wb->thread = (uintptr_t)pthread_self();
	wb->owner = t;
	t->wb = wb;
	chunk_start(t);
	lock(&reg_lock);
	wb->next = active.next;
	wb->prev = &active;
	active.next->prev = wb;
	active.next = wb;
	unlock(&reg_lock);
	return 0;
}

/* Appends DROP(count of events lost since the last DROP) to the chunk
 * being filled (flushes put it last in the chunk they write). */
static void emit_drop(tls_t *t)
{
	uint64_t tsc = prim_tsc();
	uint8_t *p = fmt_put_head(t->pos, &t->enc, FMT_DROP, tsc);
	p = fmt_put_u(p, t->drops);
	t->drops = 0;
	t->pos = p;
	t->chunk_events++;
	atomic_store_explicit(&t->wb->committed,
	                      (size_t)(p - t->wb->chunk) - FMT_CHUNK_HEADER_SIZE,
	                      memory_order_release);
}

void writer_flush(tls_t *t)
{
	int saved = errno;
	ensure_file();
	wbuf_t *wb = t->wb;
	/* Drops go into the chunk written now: emitted at the start of the
	 * next chunk (as they were), those of a thread's last flush (exit)
	 * were never written. WRITER_RESERVE leaves room for the record. */
	if (t->drops && !wb->closed)
		emit_drop(t);
	size_t len = (size_t)(t->pos - wb->chunk) - FMT_CHUNK_HEADER_SIZE;
	lock(&wb->flush_lock);
	if (len && !wb->closed) {
		write_chunk(wb->chunk, wb->tid, wb->seq, wb->tsc_base, len,
		            t->chunk_events);
		wb->seq++;
	}
	chunk_start(t);
	unlock(&wb->flush_lock);
	modules_check();
	errno = saved;
}

void writer_commit_slow(tls_t *t, uint64_t tsc)
{
	if (tsc > g_stop_tsc)
		ctl_tick(tsc);
	if (t->pos > t->soft_end || tsc - t->chunk_tsc0 > g_flush_ticks)
		writer_flush(t);
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
	t->pos = p;
	atomic_store_explicit(&t->wb->committed,
	                      (size_t)(p - t->wb->chunk) - FMT_CHUNK_HEADER_SIZE,
	                      memory_order_release);
	return 0;
}

void writer_detach(tls_t *t)
{
	wbuf_t *wb = t->wb;
	if (!wb)
		return;
	writer_flush(t);
	lock(&reg_lock);
	wb->prev->next = wb->next;
	wb->next->prev = wb->prev;
	wb->next = free_list;
	wb->prev = NULL;
	free_list = wb;
	unlock(&reg_lock);
	t->wb = NULL;
}

static void proc_write(void);

/* Counts the core events of a payload (the final flush of another thread's
 * buffer, whose owner's counter it cannot read). */
static uint64_t count_events(const uint8_t *payload, size_t len)
{
	fmt_chunk_header_t h = {0};
	h.payload_len = (uint32_t)len;
	fmt_dec_t d;
	fmt_record_t r;
	size_t off;
	uint64_t n = 0;
	fmt_dec_init(&d, &h, payload);
	while (fmt_decode(&d, &r, &off) > 0)
		if (!FMT_IS_META(r.type))
			n++;
	return n;
}

/*
 * The events another thread lost since its last DROP record (it is still
 * running, so its own buffer cannot be appended to): written as a chunk of
 * that thread holding only DROP. Caller holds wb->flush_lock, and reg_lock
 * (so the owner, in the active list, is alive). Allocation-free.
 */
static void write_pending_drops(wbuf_t *wb)
{
	uint64_t n = wb->owner ? __atomic_load_n(&wb->owner->drops,
	                                         __ATOMIC_RELAXED)
	                       : 0;
	if (!n || wb->closed)
		return;
	uint8_t chunk[FMT_CHUNK_HEADER_SIZE + 2 * FMT_VARINT_MAX + 16];
	uint8_t *payload = chunk + FMT_CHUNK_HEADER_SIZE;
	uint64_t tsc = prim_tsc();
	fmt_enc_t enc;
	memset(&enc, 0, sizeof enc);
	enc.last_tsc = tsc;
	uint8_t *p = fmt_put_head(payload, &enc, FMT_DROP, tsc);
	p = fmt_put_u(p, n);
	write_chunk(chunk, wb->tid, wb->seq, tsc, (size_t)(p - payload), 1);
	wb->seq++;
}

void writer_final(void)
{
	ensure_file();
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
	lock(&reg_lock);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next) {
		lock(&wb->flush_lock);
		size_t len = atomic_load_explicit(&wb->committed,
		                                  memory_order_acquire);
		if (len && !wb->closed) {
			uint8_t *payload = wb->chunk + FMT_CHUNK_HEADER_SIZE;
			write_chunk(wb->chunk, wb->tid, wb->seq, wb->tsc_base,
			            len, count_events(payload, len));
			wb->seq++;
		}
		write_pending_drops(wb);
		wb->closed = 1;
		unlock(&wb->flush_lock);
	}
	unlock(&reg_lock);
	writer_thread_names();
	writer_notes();
	uint8_t body[3 * FMT_VARINT_MAX], *p = body;
	p = fmt_put_u(p, atomic_load(&g_events_written));
	p = fmt_put_u(p, atomic_load(&g_events_dropped));
	p = fmt_put_u(p, FMT_ENDF_CLEAN);
	writer_proc_begin();
	writer_proc_meta(FMT_END, body, (size_t)(p - body));
	writer_proc_end();
}

/*
 * The fatal-signal flush (fatal.c). Async-signal-safe: only trylocks (a lock
 * held by the interrupted code, or by a thread that is mid-flush, is
 * skipped), no allocation, no stdio; write() and clock reads only. Writes
 * self's committed records first, then every other buffer's committed
 * records (their owners only append past `committed`, and cannot reset the
 * buffer while its flush_lock is held here), closes them, and ends with a
 * NOTE (why) and an END record without FMT_ENDF_CLEAN.
 */
static void fatal_flush_one(wbuf_t *wb)
{
	if (real.pthread_mutex_trylock(&wb->flush_lock) != 0)
		return;
	size_t len = atomic_load_explicit(&wb->committed, memory_order_acquire);
	if (len && !wb->closed) {
		uint8_t *payload = wb->chunk + FMT_CHUNK_HEADER_SIZE;
		write_chunk(wb->chunk, wb->tid, wb->seq, wb->tsc_base, len,
		            count_events(payload, len));
		wb->seq++;
	}
	write_pending_drops(wb);
	wb->closed = 1;
	real.pthread_mutex_unlock(&wb->flush_lock);
}

void writer_fatal(tls_t *self, const char *why)
{
	if (g_fd < 0 || atomic_load(&g_write_failed) ||
	    prim_getpid() != g_file_pid)
		return;
	g_in_fatal = 1;
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
	if (self->wb)
		fatal_flush_one(self->wb);
	if (real.pthread_mutex_trylock(&reg_lock) == 0) {
		for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
			if (wb != self->wb)
				fatal_flush_one(wb);
		real.pthread_mutex_unlock(&reg_lock);
	}
	if (!proc_chunk || real.pthread_mutex_trylock(&proc_lock) != 0)
		return;
	uint8_t body[NOTE_LEN + 3 * FMT_VARINT_MAX], *p = body;
	size_t n = strlen(why);
	p = fmt_put_u(p, FMT_NOTE_WARN);
	p = fmt_put_str(p, why, n < NOTE_LEN ? n : NOTE_LEN - 1);
	proc_len = 0; /* a half-built process chunk is dropped */
	writer_proc_meta(FMT_NOTE, body, (size_t)(p - body));
	p = body;
	p = fmt_put_u(p, atomic_load(&g_events_written));
	p = fmt_put_u(p, atomic_load(&g_events_dropped));
	p = fmt_put_u(p, 0); /* not FMT_ENDF_CLEAN */
	writer_proc_meta(FMT_END, body, (size_t)(p - body));
	proc_write();
	real.pthread_mutex_unlock(&proc_lock);
}

/* ---- process chunk ---- */

static void proc_write(void)
{
	if (proc_len) {
		write_chunk(proc_chunk, 0, proc_seq++, prim_tsc(), proc_len, 0);
		proc_len = 0;
	}
}

void writer_proc_begin(void)
{
	ensure_file();
	lock(&proc_lock);
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
	unlock(&proc_lock);
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
	lock(&reg_lock);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
		if (wb->tid)
			proc_thread_name(wb->tid);
	unlock(&reg_lock);
	writer_proc_end();
}

/* Names the calling thread (at its exit), into the process chunk. */
void writer_thread_name_self(uint32_t tid)
{
	writer_proc_begin();
	proc_thread_name(tid);
	writer_proc_end();
}

static void note_record(unsigned level, const char *text, size_t len,
                        void *arg)
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
	if (g_fd < 0)
		return;
	writer_proc_begin();
	note_take(note_record, NULL);
	writer_proc_end();
}

/* ---- fork ---- */

void writer_fork_prepare(void)
{
	lock(&proc_lock);
	lock(&reg_lock);
}

void writer_fork_parent(void)
{
	unlock(&reg_lock);
	unlock(&proc_lock);
}

void writer_fork_child(tls_t *t)
{
	memcpy(&reg_lock, &mutex_init_value, sizeof reg_lock);
	memcpy(&lazy_lock, &mutex_init_value, sizeof lazy_lock);
	memcpy(&proc_lock, &mutex_init_value, sizeof proc_lock);
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
	if (g_fd >= 0)
		prim_close(g_fd);
	g_fd = -1;
	atomic_store(&g_write_failed, 0);
	atomic_store(&g_events_written, 0);
	atomic_store(&g_events_dropped, 0);
	proc_len = 0;
	proc_seq = 0;
	if (t->wb) {
		wb = t->wb;
		memcpy(&wb->flush_lock, &mutex_init_value, sizeof mutex_init_value);
		wb->tid = t->tid;
		wb->seq = 0;
		wb->closed = 0;
		wb->thread = (uintptr_t)pthread_self();
		wb->owner = t;
		wb->next = active.next;
		wb->prev = &active;
		active.next->prev = wb;
		active.next = wb;
		t->drops = 0;
		chunk_start(t);
	}
}

uint32_t writer_tid_of(uintptr_t th)
{
	uint32_t tid = 0;
	lock(&reg_lock);
	for (wbuf_t *wb = active.next; wb != &active; wb = wb->next)
		if (wb->thread == th) {
			tid = wb->tid;
			break;
		}
	unlock(&reg_lock);
	return tid;
}
