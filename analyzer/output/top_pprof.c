/*
 * top_pprof.c - `mallock top --pprof-dir` (top_pprof.h): the interval's
 * profile, from the window's by subtracting the previous look's values,
 * which live in a memfd between looks:
 *   header (top_pprof_hdr_t), then one entry per sample key of the last
 *   look: its key's length, its values (PP_VALUES, the window's), the key.
 */
#define _GNU_SOURCE
#include "top_pprof.h"

#include "report.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TP_VALUES 4 /* report_pprof.c's PP_VALUES */
#define TP_MAGIC 0x6d6c6b7070726f66ull

struct top_pprof {
	char *dir;
	char *tmp; /* DIR/.mallock-top-TOP.pb.gz.tmp */
	int fd;    /* the memfd */
};

typedef struct top_pprof_hdr {
	uint64_t magic;
	uint32_t failed;      /* a write failed: no more profiles */
	uint64_t nent, bytes; /* entries after the header, and their bytes */
} top_pprof_hdr_t;

typedef struct tp_ent {
	uint32_t len;
	uint32_t nv;
	uint64_t v[TP_VALUES];
} tp_ent_t;

/* The previous look's entries (sorted by key) and this look's, being
 * written. */
typedef struct tp_look {
	const char *prev;  /* the bytes read from the memfd */
	const char **pent; /* entry starts, sorted by key */
	size_t npent;
	char *next; /* this look's entries */
	size_t nnext, len, cap;
	uint64_t kept; /* samples written */
} tp_look_t;

static int read_all(int fd, void *p, size_t n, off_t off)
{
	char *c = p;
	while (n) {
		ssize_t r = pread(fd, c, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r, n -= (size_t)r, off += r;
	}
	return 0;
}

static int write_all(int fd, const void *p, size_t n, off_t off)
{
	const char *c = p;
	while (n) {
		ssize_t w = pwrite(fd, c, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w, n -= (size_t)w, off += w;
	}
	return 0;
}

static int ent_cmp_key(const char *a, size_t la, const char *e)
{
	tp_ent_t h;
	memcpy(&h, e, sizeof h);
	size_t n = la < h.len ? la : h.len;
	int c = memcmp(a, e + sizeof h, n);
	return c ? c : la < h.len ? -1 : la > h.len;
}

static int by_key(const void *a, const void *b)
{
	const char *x = *(const char *const *)a;
	tp_ent_t h;
	memcpy(&h, x, sizeof h);
	return ent_cmp_key(x + sizeof h, h.len, *(const char *const *)b);
}

/* The previous look's entry of key, or NULL. */
static const char *prev_of(const tp_look_t *l, const char *key, size_t len)
{
	size_t lo = 0, hi = l->npent;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = ent_cmp_key(key, len, l->pent[mid]);
		if (!c)
			return l->pent[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* pprof_delta_t.fn: keeps key's window values for the next look and
 * leaves v the interval's (the window's minus the previous look's; a
 * value that went down, which a window's sums do not, counts 0). */
static bool delta(void *ctx, const char *key, size_t len, uint64_t *v, int nv)
{
	tp_look_t *l = ctx;
	tp_ent_t e = {.len = (uint32_t)len, .nv = (uint32_t)nv};
	for (int i = 0; i < nv && i < TP_VALUES; i++)
		e.v[i] = v[i];
	while (l->len + sizeof e + len > l->cap) {
		l->cap = l->cap ? 2 * l->cap : 65536;
		l->next = xrealloc(l->next, l->cap);
	}
	memcpy(l->next + l->len, &e, sizeof e);
	memcpy(l->next + l->len + sizeof e, key, len);
	l->len += sizeof e + len;
	l->nnext++;
	const char *p = prev_of(l, key, len);
	tp_ent_t o = {0};
	if (p)
		memcpy(&o, p, sizeof o);
	bool any = false;
	for (int i = 0; i < nv && i < TP_VALUES; i++) {
		v[i] = v[i] >= o.v[i] ? v[i] - o.v[i] : 0;
		any |= v[i] != 0;
	}
	l->kept += any;
	return any;
}

/* Reads the previous look's entries into l: 0, or -1 when the memfd
 * holds none that can be trusted (then none are used). */
static int load_prev(top_pprof_t *t, const top_pprof_hdr_t *h, tp_look_t *l)
{
	if (!h->nent)
		return 0;
	char *buf = xmalloc(h->bytes + 1);
	if (read_all(t->fd, buf, h->bytes, sizeof *h) < 0) {
		free(buf);
		return -1;
	}
	l->pent = xcalloc(h->nent, sizeof *l->pent);
	size_t off = 0;
	for (uint64_t i = 0; i < h->nent; i++) {
		tp_ent_t e;
		if (h->bytes - off < sizeof e)
			break;
		memcpy(&e, buf + off, sizeof e);
		if (h->bytes - off - sizeof e < e.len)
			break;
		l->pent[l->npent++] = buf + off;
		off += sizeof e + e.len;
	}
	l->prev = buf;
	qsort(l->pent, l->npent, sizeof *l->pent, by_key);
	return 0;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes the profile to t->tmp and renames it to path: 0, or -1 with
 * errno set. */
static int write_profile(top_pprof_t *t, model_t *m, const pprof_delta_t *d,
                         const char *path)
{
	FILE *out = fopen(t->tmp, "we");
	if (!out)
		return -1;
	report_t r = {.m = m, .nm = 1, .top = 10, .metric = METRIC_WAIT};
	int rc = report_pprof_delta(&r, d, out);
	int e = rc ? EIO : 0;
	if (fflush(out) != 0)
		e = e ? e : errno;
	if (fclose(out) != 0)
		e = e ? e : errno;
	if (!e && rename(t->tmp, path) != 0)
		e = errno;
	if (e) {
		unlink(t->tmp);
		errno = e;
		return -1;
	}
	return 0;
}

void top_pprof_look(void *ctx, model_t *m, const live_view_t *v)
{
	top_pprof_t *t = ctx;
	top_pprof_hdr_t h;
	if (read_all(t->fd, &h, sizeof h, 0) < 0 || h.magic != TP_MAGIC ||
	    h.failed)
		return;
	tp_look_t l = {0};
	if (load_prev(t, &h, &l) < 0)
		l.npent = 0;
	uint64_t ivl = (uint64_t)llround(v->ivl_s * 1e9);
	uint64_t off = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	uint64_t end = v->until_mono_ns + off;
	pprof_delta_t d = {.fn = delta,
	                   .ctx = &l,
	                   .time_ns = end - ivl,
	                   .duration_ns = ivl,
	                   .comment = "mallock top --pprof-dir: one interval"};
	size_t n = strlen(t->dir) + 64;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/mallock-%" PRIu64 "-%013" PRIu64 ".pb.gz", t->dir,
	         v->pid, end / 1000000u);
	const char *what = NULL;
	if (write_profile(t, m, &d, path) < 0) {
		what = path;
	} else if (write_all(t->fd, l.next, l.len, sizeof h) < 0) {
		/* The entries, then the header that counts them (load_prev
		 * checks every length against bytes). */
		what = "the values kept for the next profile";
	} else {
		h.nent = l.nnext;
		h.bytes = l.len;
	}
	if (what) {
		fprintf(stderr,
		        "mallock top: cannot write %s: %s: no more profiles "
		        "are written (top goes on)\n",
		        what, strerror(errno));
		h.failed = 1;
	}
	if (write_all(t->fd, &h, sizeof h, 0) < 0 && !what)
		fprintf(stderr,
		        "mallock top: cannot write the values kept for the "
		        "next profile: %s\n",
		        strerror(errno));
	free(path);
	free((void *)l.prev);
	free(l.pent);
	free(l.next);
}

top_pprof_t *top_pprof_open(const char *dir, long top, char *why, size_t n)
{
	struct stat st;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(why, n, "--pprof-dir %s: cannot make it: %s", dir,
		         strerror(errno));
		return NULL;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, n, "--pprof-dir %s: not a directory", dir);
		return NULL;
	}
	top_pprof_t *t = xcalloc(1, sizeof *t);
	t->fd = -1;
	t->dir = xstrdup(dir);
	size_t k = strlen(dir) + 64;
	t->tmp = xmalloc(k);
	snprintf(t->tmp, k, "%s/.mallock-top-%ld.pb.gz.tmp", dir, top);
	/* The check: a file made, written and renamed where the profiles
	 * go, then removed. */
	char *probe = xmalloc(k);
	snprintf(probe, k, "%s/.mallock-top-%ld.probe", dir, top);
	errno = 0;
	FILE *f = fopen(t->tmp, "we");
	int e = 0;
	if (!f || fputs("probe", f) < 0)
		e = errno ? errno : EIO;
	if (f && fclose(f) != 0 && !e)
		e = errno;
	if (!e && rename(t->tmp, probe) != 0)
		e = errno;
	unlink(t->tmp);
	unlink(probe);
	free(probe);
	if (e) {
		snprintf(why, n, "--pprof-dir %s: cannot write there: %s", dir,
		         strerror(e));
		top_pprof_close(t);
		return NULL;
	}
	t->fd = memfd_create("mallock-top-pprof", MFD_CLOEXEC);
	top_pprof_hdr_t h = {.magic = TP_MAGIC};
	if (t->fd < 0 || write_all(t->fd, &h, sizeof h, 0) < 0) {
		snprintf(why, n, "--pprof-dir: no memory file: %s",
		         strerror(errno));
		top_pprof_close(t);
		return NULL;
	}
	return t;
}

void top_pprof_close(top_pprof_t *t)
{
	if (!t)
		return;
	unlink(t->tmp);
	if (t->fd >= 0)
		close(t->fd);
	free(t->dir);
	free(t->tmp);
	free(t);
}
