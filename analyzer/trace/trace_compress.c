/*
 * trace_compress.c - compressing a finished trace (trace_compress.h): the
 * engine of `mallock compress` (cmd/compress.c) and of the end of `mallock
 * record`.
 *
 * Why here and not in the shim: compressing on the host's threads cost
 * the host 8 to 44 points of throughput (docs/performance.md, "Where
 * compression runs, and why"); after the program exits the CPU is free and
 * a higher level costs only the user's wait.
 *
 * Each good chunk is compressed on its own (one thread's 64 KiB of
 * records, the unit a reader reads and a cut trace loses), so the format's
 * properties hold unchanged: every chunk has its CRC over what is written,
 * and a trace read up to its last good chunk gives the same events.
 */
#define _GNU_SOURCE
#include "trace_compress.h"

#include "meta.h"
#include "trace_format.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define MIN_LEN 256 /* smaller chunks stay as they are, as in the shim */

/* The temporary file being written, for the signal handler to remove. */
static char tmp_path[PATH_MAX + 32];
static volatile sig_atomic_t tmp_set;

static void on_signal(int sig)
{
	if (tmp_set)
		unlink(tmp_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

void tc_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

char *tc_size(char *buf, size_t len, uint64_t n)
{
	if (n >= 1000000)
		snprintf(buf, len, "%.1f MB", (double)n / 1e6);
	else if (n >= 1000)
		snprintf(buf, len, "%.1f kB", (double)n / 1e3);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)n);
	return buf;
}

char *tc_per_event(char *buf, size_t len, uint64_t bytes, uint64_t events)
{
	if (events)
		snprintf(buf, len, " (%.2f B/event)",
		         (double)bytes / (double)events);
	else
		buf[0] = '\0';
	return buf;
}

/* Whether /proc/<pid>/fdinfo/<fd> says the descriptor may write (unknown:
 * yes). */
static int fd_writes(pid_t pid, const char *fd)
{
	char p[320], line[128];
	snprintf(p, sizeof p, "/proc/%d/fdinfo/%s", (int)pid, fd);
	FILE *f = fopen(p, "re");
	if (!f)
		return 1;
	int w = 1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "flags:", 6) == 0) {
			unsigned long fl = strtoul(line + 6, NULL, 8);
			w = (fl & O_ACCMODE) != O_RDONLY;
			break;
		}
	fclose(f);
	return w;
}

pid_t tc_writer_alive(dev_t dev, ino_t ino, pid_t hint)
{
	DIR *d = opendir("/proc");
	pid_t self = getpid();
	int hint_readable = 0;
	if (!d)
		return hint > 0 && (kill(hint, 0) == 0 || errno == EPERM) ? hint
		                                                          : 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == self)
			continue;
		char p[64];
		snprintf(p, sizeof p, "/proc/%ld/fd", pid);
		int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (pid == hint)
			hint_readable = 1;
		DIR *fds = fdopendir(dfd);
		if (!fds) {
			close(dfd);
			continue;
		}
		struct dirent *f;
		pid_t found = 0;
		while ((f = readdir(fds))) {
			struct stat st;
			if (f->d_name[0] == '.' ||
			    fstatat(dfd, f->d_name, &st, 0) != 0)
				continue;
			if (st.st_dev == dev && st.st_ino == ino &&
			    fd_writes((pid_t)pid, f->d_name)) {
				found = (pid_t)pid;
				break;
			}
		}
		closedir(fds);
		if (found) {
			closedir(d);
			return found;
		}
	}
	closedir(d);
	/* The writer named in the trace exists but its descriptors are out
	 * of reach (another user's process): it may be writing. */
	if (hint > 0 && !hint_readable &&
	    (kill(hint, 0) == 0 || errno == EPERM))
		return hint;
	return 0;
}

/* The pid of PROCESS in the first chunk (0 when it cannot be read). */
static pid_t trace_pid(int fd, uint64_t size)
{
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	fmt_chunk_header_t h;
	if (size < FMT_FILE_HEADER_SIZE + FMT_CHUNK_HEADER_SIZE ||
	    fd_read_at(fd, hb, sizeof hb, FMT_FILE_HEADER_SIZE) < 0 ||
	    fmt_chunk_parse(hb, &h) < 0 || h.tid != 0 ||
	    h.payload_len > size - FMT_FILE_HEADER_SIZE - FMT_CHUNK_HEADER_SIZE)
		return 0;
	uint8_t *buf = xmalloc(h.payload_len ? h.payload_len : 1), *z = NULL;
	size_t zcap = 0;
	const uint8_t *recs;
	uint32_t n;
	pid_t pid = 0;
	if (fd_read_at(fd, buf, h.payload_len,
	               FMT_FILE_HEADER_SIZE + FMT_CHUNK_HEADER_SIZE) == 0 &&
	    fmt_chunk_verify(hb, &h, buf) == 0 &&
	    fmt_chunk_inflate(&h, buf, &z, &zcap, &recs, &n) == 0) {
		fmt_chunk_header_t hr = h;
		hr.payload_len = n;
		fmt_dec_t dec;
		fmt_record_t rec;
		size_t eo;
		meta_process_t mp;
		fmt_dec_init(&dec, &hr, recs);
		while (fmt_decode(&dec, &rec, &eo) > 0)
			if (rec.type == FMT_PROCESS &&
			    meta_process(&rec, &mp) == 0) {
				pid = (pid_t)mp.pid;
				break;
			}
	}
	free(buf);
	free(z);
	return pid;
}

/* Core events among n bytes of records (up to a malformed one). */
static uint64_t count_events(const fmt_chunk_header_t *h, const uint8_t *recs,
                             uint32_t n)
{
	fmt_chunk_header_t hr = *h;
	hr.payload_len = n;
	fmt_dec_t dec;
	fmt_record_t rec;
	size_t eo;
	uint64_t k = 0;
	fmt_dec_init(&dec, &hr, recs);
	while (fmt_decode(&dec, &rec, &eo) > 0)
		k += !FMT_IS_META(rec.type);
	return k;
}

/* State of one rewrite: buffers grow to the largest chunk. */
typedef struct tc {
	int in, out;
	uint8_t *pay, *raw, *z, *chk;
	size_t paycap, rawcap, zcap, chkcap;
	ZSTD_CCtx *cc;
	ZSTD_DCtx *dc;
	uint32_t changed; /* chunks whose stored bytes differ from the input */
} tc_t;

static void grow(uint8_t **p, size_t *cap, size_t need)
{
	if (*cap < need || !*p) {
		free(*p);
		*cap = need ? need : 1;
		*p = xmalloc(*cap);
	}
}

/*
 * Writes one good chunk (header bytes hb, parsed h, stored payload t->pay,
 * records recs/n) to t->out: compressed when that is smaller than what is
 * stored, after checking that the frame decompresses to the records; else
 * as it was. 0, or -1 on a write error.
 */
static int put_chunk(tc_t *t, const uint8_t *hb, const fmt_chunk_header_t *h,
                     const uint8_t *recs, uint32_t n, tc_result_t *r)
{
	if (n >= MIN_LEN) {
		size_t bound = ZSTD_compressBound(n);
		grow(&t->z, &t->zcap,
		     FMT_CHUNK_HEADER_SIZE + FMT_ZSTD_PREFIX + bound);
		uint8_t *zp = t->z + FMT_CHUNK_HEADER_SIZE;
		size_t k =
		    ZSTD_compress2(t->cc, zp + FMT_ZSTD_PREFIX, bound, recs, n);
		size_t total = k + FMT_ZSTD_PREFIX;
		if (!ZSTD_isError(k) && total < n && total < h->payload_len &&
		    n <= (size_t)FMT_ZSTD_MAX_RATIO * total) {
			grow(&t->chk, &t->chkcap, n);
			size_t back = ZSTD_decompressDCtx(
			    t->dc, t->chk, n, zp + FMT_ZSTD_PREFIX, k);
			if (!ZSTD_isError(back) && back == n &&
			    memcmp(t->chk, recs, n) == 0) {
				zp[0] = (uint8_t)n;
				zp[1] = (uint8_t)(n >> 8);
				zp[2] = (uint8_t)(n >> 16);
				zp[3] = (uint8_t)(n >> 24);
				fmt_chunk_header_t nh = *h;
				nh.flags |= FMT_CHUNKF_ZSTD;
				nh.payload_len = (uint32_t)total;
				fmt_chunk_seal(t->z, &nh, zp);
				r->packed++;
				t->changed++;
				return fd_write_all(t->out, t->z,
				                    FMT_CHUNK_HEADER_SIZE +
				                        total);
			}
		}
	}
	if (h->flags & FMT_CHUNKF_ZSTD)
		r->packed++;
	if (fd_write_all(t->out, hb, FMT_CHUNK_HEADER_SIZE) < 0)
		return -1;
	return fd_write_all(t->out, t->pay, h->payload_len);
}

/* Copies [off, end) of t->in to t->out. 0, or -1 (errno). */
static int copy_rest(tc_t *t, uint64_t off, uint64_t end)
{
	grow(&t->pay, &t->paycap, 1u << 20);
	while (off < end) {
		size_t n =
		    end - off < t->paycap ? (size_t)(end - off) : t->paycap;
		if (fd_read_at(t->in, t->pay, n, off) < 0 ||
		    fd_write_all(t->out, t->pay, n) < 0)
			return -1;
		off += n;
	}
	return 0;
}

/* Walks the chunks from the file header on, writing each (put_chunk); at
 * the first bad one, copies the rest as it is. 0, or -1 with err set. */
static int rewrite(tc_t *t, uint64_t size, tc_result_t *r, char *err,
                   size_t errlen)
{
	uint8_t hb[FMT_CHUNK_HEADER_SIZE];
	uint64_t off = FMT_FILE_HEADER_SIZE;
	while (off < size) {
		fmt_chunk_header_t h;
		const char *why = NULL;
		if (size - off < FMT_CHUNK_HEADER_SIZE)
			why = "incomplete chunk header";
		else if (fd_read_at(t->in, hb, sizeof hb, off) < 0)
			goto read_error;
		else if (fmt_chunk_parse(hb, &h) < 0)
			why = "bad chunk header";
		else if (h.payload_len > size - off - FMT_CHUNK_HEADER_SIZE)
			why = "incomplete chunk";
		if (!why) {
			grow(&t->pay, &t->paycap, h.payload_len);
			if (fd_read_at(t->in, t->pay, h.payload_len,
			               off + FMT_CHUNK_HEADER_SIZE) < 0)
				goto read_error;
			const uint8_t *recs;
			uint32_t n;
			if (fmt_chunk_verify(hb, &h, t->pay) < 0)
				why = "CRC mismatch";
			else if (fmt_chunk_inflate(&h, t->pay, &t->raw,
			                           &t->rawcap, &recs, &n) < 0)
				why = "corrupt compressed payload";
			else {
				r->chunks++;
				r->events += count_events(&h, recs, n);
				if (put_chunk(t, hb, &h, recs, n, r) < 0)
					goto write_error;
				off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
				continue;
			}
		}
		r->bad = 1;
		r->bad_at = off;
		r->tail = size - off;
		snprintf(r->why, sizeof r->why, "chunk %u: %s", r->chunks + 1,
		         why);
		if (copy_rest(t, off, size) < 0) {
			if (errno)
				goto write_error;
			goto read_error;
		}
		break;
	}
	return 0;
read_error:
	snprintf(err, errlen, "read error at byte %llu: %s",
	         (unsigned long long)off,
	         errno ? strerror(errno) : "file shrank");
	return -1;
write_error:
	snprintf(err, errlen, "cannot write %s: %s", tmp_path, strerror(errno));
	return -1;
}

/* Opens a temporary file beside target (target.mallock-XXXXXX). */
static int open_temp(const char *target, char *err, size_t errlen)
{
	if ((size_t)snprintf(tmp_path, sizeof tmp_path, "%s.mallock-XXXXXX",
	                     target) >= sizeof tmp_path) {
		snprintf(err, errlen, "path too long");
		return -1;
	}
	int fd = mkostemp(tmp_path, O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp_path,
		         strerror(errno));
		return -1;
	}
	tmp_set = 1;
	return fd;
}

static void drop_temp(int fd)
{
	if (fd >= 0)
		close(fd);
	if (tmp_set) {
		unlink(tmp_path);
		tmp_set = 0;
	}
}

/* fsync of the directory holding path, so the rename survives a crash. */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int tc_compress(const char *path, const char *out, int level, tc_result_t *r,
                char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	struct stat st, ost;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		return 1;
	}
	if (!out) {
		struct stat lst;
		if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
			snprintf(err, errlen,
			         "a symbolic link: give the file "
			         "it points to, or -o OUT");
			close(fd);
			return 1;
		}
	} else if (stat(out, &ost) == 0) {
		if (!S_ISREG(ost.st_mode)) {
			snprintf(err, errlen, "%s: not a regular file", out);
			close(fd);
			return 1;
		}
		if (ost.st_dev == st.st_dev && ost.st_ino == st.st_ino)
			out = NULL; /* the same file: in place */
	}
	uint8_t fh[FMT_FILE_HEADER_SIZE];
	unsigned major = 0, minor = 0;
	int rc = (uint64_t)st.st_size < sizeof fh ? -1
	         : fd_read_at(fd, fh, sizeof fh, 0) < 0
	             ? -1
	             : fmt_file_header_check(fh, sizeof fh, &major, &minor);
	if (rc < 0) {
		if (rc == -1)
			snprintf(err, errlen, "not a mallock trace%s",
			         st.st_size ? "" : " (empty file)");
		else
			snprintf(err, errlen,
			         "trace format version %u.%u not "
			         "supported (this mallock reads %d.x)",
			         major, minor, FMT_VERSION_MAJOR);
		close(fd);
		return 2;
	}
	r->bytes_in = r->bytes_out = (uint64_t)st.st_size;
	if (!out) {
		pid_t w = tc_writer_alive(st.st_dev, st.st_ino,
		                          trace_pid(fd, (uint64_t)st.st_size));
		if (w) {
			r->outcome = TC_LIVE;
			r->writer = w;
			close(fd);
			return 0;
		}
	}

	tc_t t = {.in = fd, .out = -1};
	const char *target = out ? out : path;
	t.out = open_temp(target, err, errlen);
	if (t.out < 0) {
		close(fd);
		return 1;
	}
	t.cc = ZSTD_createCCtx();
	t.dc = ZSTD_createDCtx();
	rc = 1;
	if (!t.cc || !t.dc ||
	    ZSTD_isError(
	        ZSTD_CCtx_setParameter(t.cc, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(
	        ZSTD_CCtx_setParameter(t.cc, ZSTD_c_checksumFlag, 1))) {
		snprintf(err, errlen, "cannot set up zstd level %d", level);
		goto done;
	}
	fmt_file_header(
	    fh); /* this version: 1.2 or later reads compressed chunks */
	if (fd_write_all(t.out, fh, sizeof fh) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp_path,
		         strerror(errno));
		goto done;
	}
	if (rewrite(&t, (uint64_t)st.st_size, r, err, errlen) < 0)
		goto done;
	/* In place, the file must not have changed while it was read (a
	 * writer the check above missed); a copy is a snapshot of the bytes
	 * there were when it started (a writer only appends). */
	struct stat now, cur;
	if (!out && (fstat(fd, &now) < 0 || now.st_size != st.st_size ||
	             now.st_mtim.tv_sec != st.st_mtim.tv_sec ||
	             now.st_mtim.tv_nsec != st.st_mtim.tv_nsec ||
	             stat(path, &cur) < 0 || cur.st_ino != st.st_ino ||
	             cur.st_dev != st.st_dev)) {
		r->outcome = TC_CHANGED;
		rc = 0;
		goto done;
	}
	if (!out && t.changed == 0) {
		r->outcome = TC_UNCHANGED;
		rc = 0;
		goto done;
	}
	struct stat ts;
	if (fsync(t.out) < 0 || fstat(t.out, &ts) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp_path,
		         strerror(errno));
		goto done;
	}
	if (!out) {
		/* The trace's owner and mode, as far as this user may set them.
		 */
		if (fchown(t.out, st.st_uid, st.st_gid) < 0) {
			/* not the owner: the file becomes this user's */
		}
		fchmod(t.out, st.st_mode & 07777);
	}
	if (rename(tmp_path, target) < 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp_path,
		         target, strerror(errno));
		goto done;
	}
	tmp_set = 0;
	sync_dir(target);
	r->bytes_out = (uint64_t)ts.st_size;
	r->outcome = TC_REWRITTEN;
	rc = 0;
done:
	drop_temp(t.out);
	close(fd);
	ZSTD_freeCCtx(t.cc);
	ZSTD_freeDCtx(t.dc);
	free(t.pay);
	free(t.raw);
	free(t.z);
	free(t.chk);
	return rc;
}

int tc_say(const char *prefix, const char *path, const tc_result_t *r,
           double secs)
{
	char a[32], b[32], c[40];
	switch (r->outcome) {
	case TC_LIVE:
		fprintf(stderr,
		        "%s%s: still open for writing by pid %d: left as "
		        "it is (compress it after that process exits, or "
		        "with -o OUT)\n",
		        prefix, path, (int)r->writer);
		return 1;
	case TC_CHANGED:
		fprintf(stderr,
		        "%s%s: changed while it was compressed (a "
		        "process still writes it?): left as it is\n",
		        prefix, path);
		return 1;
	case TC_UNCHANGED:
		fprintf(stderr,
		        "%s%s: no chunk gets smaller (already "
		        "compressed?): left as it is\n",
		        prefix, path);
		break;
	case TC_REWRITTEN:
		/* With a bad tail kept, bytes per event would mislead. */
		fprintf(stderr, "%s%s: compressed %s -> %s%s in %.2f s\n",
		        prefix, path, tc_size(a, sizeof a, r->bytes_in),
		        tc_size(b, sizeof b, r->bytes_out),
		        tc_per_event(c, sizeof c, r->bytes_out,
		                     r->bad ? 0 : r->events),
		        secs);
		break;
	}
	if (r->bad)
		fprintf(stderr,
		        "%s%s: %s at byte %llu: the %u good chunks "
		        "before it %s (%u compressed), the %llu bytes "
		        "from there on kept as they were\n",
		        prefix, path, r->why, (unsigned long long)r->bad_at,
		        r->chunks,
		        r->outcome == TC_REWRITTEN ? "rewritten" : "read",
		        r->packed, (unsigned long long)r->tail);
	return 0;
}
