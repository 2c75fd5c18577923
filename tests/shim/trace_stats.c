/*
 * trace_stats - prints what a trace holds, for the shim's tests and for
 * eyeballing: record counts by type (and "stored NAME n": the compact and
 * hold forms as written), per thread, the END record.
 *
 *   trace_stats FILE           summary (one "key value" per line)
 *   trace_stats -d FILE        every record, one per line
 *   trace_stats -c TYPE FILE   the number of TYPE records (e.g. ALLOC)
 *
 * Exit status: 0, or 1 when the file is damaged (the message says where).
 */
#include "trace_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tr_stats_t st;

static int dump_cb(const fmt_chunk_header_t *h, const fmt_record_t *r,
                   void *arg)
{
	(void)arg;
	printf("tid=%u seq=%u tsc=%" PRIu64 " %s", h->tid, h->seq, r->tsc,
	       fmt_type_name(r->type) ? fmt_type_name(r->type) : "?");
	for (unsigned i = 0; i < r->nf; i++)
		printf(" %" PRIu64, r->f[i]);
	if (r->body) {
		const uint8_t *p = r->body, *end = r->body + r->body_len;
		uint64_t v = 0;
		const char *s = "";
		size_t n = 0;
		switch (r->type) {
		case FMT_THREAD_NAME:
			fmt_get_u(&p, end, &v);
			fmt_get_str(&p, end, &s, &n);
			printf(" tid=%" PRIu64 " name=%.*s", v, (int)n, s);
			break;
		case FMT_NOTE:
			fmt_get_u(&p, end, &v);
			fmt_get_str(&p, end, &s, &n);
			printf(" level=%" PRIu64 " %.*s", v, (int)n, s);
			break;
		case FMT_MODULE:
			for (int i = 0; i < 3; i++) {
				fmt_get_u(&p, end, &v);
				printf(" %#" PRIx64, v);
			}
			fmt_get_str(&p, end, &s, &n);
			printf(" %.*s", (int)n, s);
			break;
		default:
			while (p < end && fmt_get_u(&p, end, &v) == 0)
				printf(" %" PRIu64, v);
		}
	}
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "-d")) {
		char err[256];
		if (tr_walk(argv[2], dump_cb, NULL, err, sizeof err) != 0) {
			fprintf(stderr, "trace_stats: %s\n", err);
			return 1;
		}
		return 0;
	}
	const char *path = argc == 2 ? argv[1] : argc == 4 ? argv[3] : NULL;
	if (!path || (argc == 4 && strcmp(argv[1], "-c"))) {
		fprintf(stderr, "usage: trace_stats [-d | -c TYPE] FILE\n");
		return 2;
	}
	if (tr_stats(path, &st) != 0) {
		fprintf(stderr, "trace_stats: %s\n", st.error);
		return 1;
	}
	if (argc == 4) {
		int code = tr_type_code(argv[2]);
		if (code < 0) {
			fprintf(stderr, "trace_stats: unknown type %s\n",
			        argv[2]);
			return 2;
		}
		printf("%" PRIu64 "\n", st.by_type[code]);
		return 0;
	}
	printf("pid %u\nppid %u\nexe %s\n", st.pid, st.ppid, st.exe);
	for (int i = 0; i < 256; i++)
		if (st.by_type[i])
			printf("%s %" PRIu64 "\n", fmt_type_name((unsigned)i),
			       st.by_type[i]);
	/* the compact (1.7) and hold (1.8) forms as stored */
	for (int i = 0; i < 0x80; i++)
		if (st.by_wire[i] && !fmt_core_layout((unsigned)i))
			printf("stored %s %" PRIu64 "\n",
			       fmt_type_name((unsigned)i), st.by_wire[i]);
	printf("end %d events %" PRIu64 " dropped %" PRIu64 " flags %" PRIu64
	       "\n",
	       st.have_end, st.end_events, st.end_dropped, st.end_flags);
	printf("drops %" PRIu64 "\nmax_frames %" PRIu64 "\nthreads %u\n",
	       st.drop_sum, st.stack_frames_max, st.nthreads);
	for (unsigned i = 0; i < st.nthreads && i < 64; i++) {
		tr_thread_t *t = &st.threads[i];
		printf("thread %u %s", t->tid, t->name[0] ? t->name : "-");
		for (int k = 0; k < 256; k++)
			if (t->by_type[k] && !FMT_IS_META(k))
				printf(" %s=%" PRIu64,
				       fmt_type_name((unsigned)k),
				       t->by_type[k]);
		printf("\n");
	}
	return 0;
}
