/*
 * writer_proc.c - the process-level chunk (tid 0, writer.h): the records
 * of the process (PROCESS, MODULE, NOTE, THREAD_NAME, END) built under
 * proc_lock and written as chunks of tid 0, and the ends of a trace that
 * close with one: the final flush, the exec flush and the fatal flush.
 *
 * proc_lock is taken alone or before reg_lock (wbuf.c); the process chunk
 * is mmap'd at its first use, never from the hooked heap. END counts add
 * up over a file's END records: each says only what the earlier ones did
 * not (end_sent_*).
 */
#include "writer.h"
#include "writer_int.h"

#include "note.h"
#include "prim.h"
#include "real.h"

#include <string.h>

pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *proc_chunk; /* 48 header bytes + PROC_CAP payload */
static size_t proc_len;
static uint32_t proc_seq;
#define PROC_CAP (256u << 10)
/* What the END records written so far said (END counts add up: a failed
 * exec writes one, the exit a second with the rest). */
static uint64_t end_sent_written, end_sent_dropped;

static void proc_write(void);

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

/* The final and the exec flush: every buffer (wbuf_flush_all), then thread
 * names, pending notes, a NOTE (why, if any) and END (flags) as one process
 * chunk. When the caller interrupted the writer (an exit or exec from a
 * signal handler), only a NOTE and END, built on the stack: the process
 * chunk may be half built by the interrupted code, and thread names need
 * the registry. */
static void flush_all_end(int close, const char *why, unsigned flags)
{
	const char *skipped = wbuf_flush_all(close);
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
void writer_fatal(tls_t *self, const char *why)
{
	if (!writer_owner())
		return;
	g_in_fatal = 1;
	atomic_fetch_or(&g_off, SHIM_OFF_STOPPED);
	wbuf_fatal_flush(self);
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
		if (wb->tid && wb->gen == atomic_load(&g_trace_gen))
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

void writer_proc_rearm(void)
{
	wlock(&proc_lock, W_PROC);
	writer_proc_fork_child();
	wunlock(&proc_lock, W_PROC);
}

void writer_proc_fork_child(void)
{
	end_sent_written = end_sent_dropped = 0;
	proc_len = 0;
	proc_seq = 0;
}
