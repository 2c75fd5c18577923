/*
 * writer.c - the trace file (writer.h): its creation (now, or lazily at a
 * forked child's first write), the checked trace fd, the sealing and the
 * write of one chunk, and the byte cap (MALLOCK_MAX_BYTES). The buffers
 * are wbuf.c's, the process chunk writer_proc.c's; what they share is in
 * writer_int.h.
 *
 * Nothing here allocates through malloc, and no writer lock is taken here
 * except lazy_lock (the lazily created file, taken before any other).
 *
 * The trace fd is the host's resource too: it is kept at a high
 * number and checked by identity (st_dev, st_ino) before every write. When
 * the host closed it or put another file at its number, the file is
 * reopened by its absolute path (and checked again); when that fails,
 * recording stops with one note. An fd that failed the check is never
 * written to or closed: its number belongs to the host.
 */
#include "writer.h"
#include "writer_int.h"

#include "compress.h"
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

_Atomic int g_fd = -1;
static prim_fid_t g_fid; /* the identity of the trace file */
static char g_reopen_path[CONFIG_PATH_MAX + 64]; /* absolute, or "" */
static _Atomic uint32_t fd_fixer; /* tid recovering the fd, or 0 */
static uint32_t g_file_pid;       /* process that owns g_fd */
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
int g_in_fatal; /* writer_fatal runs: no warning (not signal-safe) */

/* A forked child creates its file at its first write, not at fork: a child
 * that execs (or _exits) right away leaves no empty trace behind. */
static _Atomic int lazy_open;
static pthread_mutex_t lazy_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*lazy_fn)(void);
static uint32_t lazy_opener; /* tid running lazy_fn (it re-enters) */
static uint32_t lazy_pid;    /* the process whose file it is */

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
int lazy_unrecorded(void)
{
	return atomic_load(&lazy_open) == 1 && !ctl_ever_recorded();
}

/* Creates the lazily opened file (once), before any lock of the writer is
 * taken: open_fn writes the opening records through the writer itself. A
 * process that has never recorded creates none (a paused server's children
 * leave no empty trace each). */
void ensure_file(void)
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

static int write_sealed(uint8_t *out, uint32_t tid, uint32_t seq,
                        uint64_t tsc_base, size_t len, uint32_t flags,
                        uint64_t events, uint64_t lost);

int write_chunk(uint8_t *chunk, uint32_t tid, uint32_t seq, uint64_t tsc_base,
                size_t len, uint64_t events, uint64_t lost, int compress)
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

/* Closes the trace fd while it is still the trace's file (the host may
 * have reused the number) and forgets it. */
static void trace_fd_forget(void)
{
	int fd = atomic_load(&g_fd);
	if (fd >= 0 && prim_fid_same(fd, &g_fid))
		prim_close(fd);
	atomic_store(&g_fd, -1);
	prim_fd_keep(PRIM_KEEP_TRACE, -1);
	atomic_store(&g_write_failed, 0);
}

void writer_rearm(void)
{
	/* Nothing writes to the ended trace any more: its buffers are
	 * closed (writer_gen_next) and recording is stopped. */
	trace_fd_forget();
	stop_why[0] = 0;
	atomic_store(&g_events_written, 0);
	atomic_store(&g_events_dropped, 0);
	writer_proc_rearm();
}

void writer_file_fork_child(void)
{
	memcpy(&lazy_lock, &mutex_init_value, sizeof lazy_lock);
	atomic_store(&fd_fixer, 0);
	trace_fd_forget(); /* the parent's */
}
