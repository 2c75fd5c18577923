/*
 * trace_read.c - the tests' trace reader (trace_read.h).
 */
#include "trace_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tr_walk(const char *path, tr_cb cb, void *arg, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t fh[FMT_FILE_HEADER_SIZE], ch[FMT_CHUNK_HEADER_SIZE];
	uint8_t *payload = NULL, *raw = NULL;
	size_t rawcap = 0;
	unsigned major, minor;
	int rc = -1;
	long off = 0;
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fread(fh, 1, sizeof fh, f) != sizeof fh ||
	    fmt_file_header_check(fh, sizeof fh, &major, &minor) != 0) {
		snprintf(err, errlen, "%s: bad file header", path);
		goto out;
	}
	off = FMT_FILE_HEADER_SIZE;
	payload = malloc(FMT_CHUNK_MAX_PAYLOAD);
	for (;;) {
		size_t n = fread(ch, 1, sizeof ch, f);
		if (n == 0)
			break;
		fmt_chunk_header_t h;
		if (n != sizeof ch || fmt_chunk_parse(ch, &h) != 0) {
			snprintf(err, errlen,
			         "%s: offset %ld: bad chunk header", path, off);
			goto out;
		}
		if (fread(payload, 1, h.payload_len, f) != h.payload_len) {
			snprintf(err, errlen, "%s: offset %ld: truncated chunk",
			         path, off);
			goto out;
		}
		if (fmt_chunk_verify(ch, &h, payload) != 0) {
			snprintf(err, errlen, "%s: offset %ld: CRC mismatch",
			         path, off);
			goto out;
		}
		/* Compressed chunks (1.2): the callbacks see the records. */
		const uint8_t *recs;
		uint32_t nrecs;
		if (fmt_chunk_inflate(&h, payload, &raw, &rawcap, &recs,
		                      &nrecs) != 0) {
			snprintf(err, errlen,
			         "%s: offset %ld: corrupt "
			         "compressed payload",
			         path, off);
			goto out;
		}
		long at = off;
		off += (long)(sizeof ch + h.payload_len);
		h.payload_len = nrecs;
		fmt_dec_t d;
		fmt_record_t r;
		size_t eoff;
		int k;
		fmt_dec_init(&d, &h, recs);
		while ((k = fmt_decode(&d, &r, &eoff)) > 0)
			if (cb(&h, &r, arg))
				goto done;
		if (k < 0) {
			snprintf(
			    err, errlen,
			    "%s: offset %ld: bad record at payload offset %zu",
			    path, at, eoff);
			goto out;
		}
	}
done:
	rc = 0;
out:
	free(payload);
	free(raw);
	fclose(f);
	return rc;
}

tr_thread_t *tr_thread(tr_stats_t *s, uint32_t tid)
{
	for (unsigned i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static tr_thread_t *thread_add(tr_stats_t *s, uint32_t tid)
{
	tr_thread_t *t = tr_thread(s, tid);
	if (t || s->nthreads == TR_MAX_THREADS)
		return t;
	t = &s->threads[s->nthreads++];
	t->tid = tid;
	return t;
}

static int stats_cb(const fmt_chunk_header_t *h, const fmt_record_t *r,
                    void *arg)
{
	tr_stats_t *s = arg;
	const uint8_t *p = r->body, *end = r->body + r->body_len;
	uint64_t v[9];
	const char *str;
	size_t n;
	s->by_type[r->type]++;
	/* a hold form's second record is its REL; a LOCK_INIT_NEW's first
	 * its LOCK_NEW */
	if (!(fmt_is_hold(r->wire) && r->type == FMT_REL) &&
	    !(r->wire == FMT_LOCK_INIT_NEW && r->type == FMT_LOCK_NEW))
		s->by_wire[r->wire]++;
	if (h->tid) {
		tr_thread_t *t = thread_add(s, h->tid);
		if (t)
			t->by_type[r->type]++;
	}
	switch (r->type) {
	case FMT_ALLOC:
		s->alloc_bytes += r->f[1];
		break;
	case FMT_DROP:
		s->drop_sum += r->f[0];
		break;
	case FMT_PROCESS:
		for (int i = 0; i < 9; i++)
			fmt_get_u(&p, end, &v[i]);
		s->pid = (uint32_t)v[0];
		s->ppid = (uint32_t)v[1];
		if (fmt_get_str(&p, end, &str, &n) == 0) {
			if (n >= sizeof s->exe)
				n = sizeof s->exe - 1;
			memcpy(s->exe, str, n);
			s->exe[n] = 0;
		}
		if (fmt_get_str(&p, end, &str, &n) == 0) {
			if (n > sizeof s->cmdline)
				n = sizeof s->cmdline;
			memcpy(s->cmdline, str, n);
			s->cmdline_len = n;
		}
		break;
	case FMT_THREAD_NAME:
		if (fmt_get_u(&p, end, &v[0]) == 0 &&
		    fmt_get_str(&p, end, &str, &n) == 0) {
			tr_thread_t *t = thread_add(s, (uint32_t)v[0]);
			if (t) {
				if (n > 63)
					n = 63;
				memcpy(t->name, str, n);
				t->name[n] = 0;
			}
		}
		break;
	case FMT_STACK:
		if (fmt_get_u(&p, end, &v[0]) == 0 &&
		    fmt_get_u(&p, end, &v[1]) == 0 &&
		    v[1] > s->stack_frames_max)
			s->stack_frames_max = v[1];
		break;
	case FMT_END: {
		/* END counts add up (an exec that failed writes one, the
		 * exit another); the flags are the last one's. */
		uint64_t ev = 0, dr = 0;
		fmt_get_u(&p, end, &ev);
		fmt_get_u(&p, end, &dr);
		fmt_get_u(&p, end, &s->end_flags);
		s->end_events += ev;
		s->end_dropped += dr;
		s->have_end++;
		break;
	}
	}
	return 0;
}

int tr_stats(const char *path, tr_stats_t *s)
{
	memset(s, 0, sizeof *s);
	return tr_walk(path, stats_cb, s, s->error, sizeof s->error);
}

int tr_type_code(const char *name)
{
	for (int i = 0; i < 256; i++) {
		const char *n = fmt_type_name((unsigned)i);
		if (n && !strcmp(n, name))
			return i;
	}
	return -1;
}
