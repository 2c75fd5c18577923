/*
 * dump.c - `mallock dump [--merged] TRACE`: every record of a trace, one per
 * line, for debugging the writer and the reader. By default in file order
 * with a line per chunk header; with --merged in the reader's time order
 * (the order the analyzer folds them in: a FREE at its start, tsc - ticks,
 * reader.h; a REALLOC that moved its block once, at its end, though the
 * analyzer frees its old block at its start).
 *
 * Field names come from trace_format.h's FMT_CORE_FIELDS.
 */
#include "cli.h"
#include "meta.h"
#include "reader.h"

#include <getopt.h> /* optind */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void put_str(FILE *o, const char *k, meta_str_t s)
{
	fprintf(o, " %s=\"", k);
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.s[i];
		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
			fprintf(o, "\\x%02x", c);
		else
			fputc(c, o);
	}
	fputc('"', o);
}

static void put_meta(FILE *o, const fmt_record_t *r)
{
	switch (r->type) {
	case FMT_PROCESS: {
		meta_process_t p;
		if (meta_process(r, &p) < 0)
			break;
		fprintf(o,
		        " pid=%" PRIu64 " ppid=%" PRIu64 " realtime_ns=%" PRIu64
		        " tsc=%" PRIu64 " mono_ns=%" PRIu64 " tsc_hz=%" PRIu64
		        " depth=%" PRIu64 " unwinder=%" PRIu64
		        " flags=%" PRIu64,
		        p.pid, p.ppid, p.realtime_ns, p.tsc, p.mono_ns,
		        p.tsc_hz, p.depth, p.unwinder, p.flags);
		put_str(o, "exe", p.exe);
		put_str(o, "cmdline", p.cmdline);
		put_str(o, "hostname", p.hostname);
		put_str(o, "version", p.version);
		return;
	}
	case FMT_MODULE: {
		meta_module_t p;
		if (meta_module(r, &p) < 0)
			break;
		fprintf(o, " bias=0x%" PRIx64 " lo=0x%" PRIx64 " hi=0x%" PRIx64,
		        p.bias, p.lo, p.hi);
		put_str(o, "path", p.path);
		fprintf(o, " build_id=");
		for (size_t i = 0; i < p.build_id.n; i++)
			fprintf(o, "%02x", (unsigned char)p.build_id.s[i]);
		return;
	}
	case FMT_STACK: {
		static meta_stack_t p;
		if (meta_stack(r, &p) < 0)
			break;
		fprintf(o, " id=%" PRIu64 " n=%u", p.id, p.n);
		for (uint32_t i = 0; i < p.n; i++)
			fprintf(o, " 0x%" PRIx64, p.frame[i]);
		return;
	}
	case FMT_LOCK_NEW: {
		meta_lock_new_t p;
		if (meta_lock_new(r, &p) < 0)
			break;
		fprintf(o,
		        " id=%" PRIu64 " addr=0x%" PRIx64
		        " kind=%s flags=%" PRIu64,
		        p.id, p.addr, fmt_lock_kind_name((unsigned)p.kind),
		        p.flags);
		return;
	}
	case FMT_LOCK_NAME: {
		meta_lock_name_t p;
		if (meta_lock_name(r, &p) < 0)
			break;
		fprintf(o, " id=%" PRIu64 " flags=%" PRIu64, p.id, p.flags);
		put_str(o, "name", p.name);
		return;
	}
	case FMT_THREAD_NAME: {
		meta_thread_name_t p;
		if (meta_thread_name(r, &p) < 0)
			break;
		fprintf(o, " tid=%" PRIu64, p.tid);
		put_str(o, "name", p.name);
		return;
	}
	case FMT_END: {
		meta_end_t p;
		if (meta_end(r, &p) < 0)
			break;
		fprintf(
		    o, " events=%" PRIu64 " dropped=%" PRIu64 " flags=%" PRIu64,
		    p.events, p.dropped, p.flags);
		return;
	}
	case FMT_NOTE: {
		meta_note_t p;
		if (meta_note(r, &p) < 0)
			break;
		fprintf(o, " level=%" PRIu64, p.level);
		put_str(o, "text", p.text);
		return;
	}
	default:
		fprintf(o, " len=%zu", r->body_len);
		return;
	}
	fprintf(o, " MALFORMED len=%zu", r->body_len);
}

static void put_record(FILE *o, uint32_t tid, const fmt_record_t *r)
{
	const char *name = fmt_type_name(r->type);
	fprintf(o, "tid=%u tsc=%" PRIu64 " ", tid, r->tsc);
	if (name)
		fputs(name, o);
	else
		fprintf(o, "TYPE_0x%02x", r->type);
	if (FMT_IS_META(r->type)) {
		put_meta(o, r);
	} else {
		for (unsigned i = 0; i < r->nf; i++) {
			const char *k = fmt_field_name(r->type, i);
			if (!k)
				k = "f";
			bool hex = !strcmp(k, "ptr") || !strcmp(k, "old") ||
			           !strcmp(k, "new");
			if (hex)
				fprintf(o, " %s=0x%" PRIx64, k, r->f[i]);
			else if (r->type == FMT_ALLOC && i == FMT_ALLOC_FN)
				fprintf(o, " %s=%s", k,
				        fmt_alloc_fn_name((unsigned)r->f[i]));
			else
				fprintf(o, " %s=%" PRIu64, k, r->f[i]);
		}
	}
	fputc('\n', o);
}

static void walk_cb(void *ctx, uint32_t chunk_no, const fmt_chunk_header_t *h,
                    uint64_t off, const fmt_record_t *rec)
{
	FILE *o = ctx;
	if (!rec) {
		fprintf(o,
		        "# chunk %u at byte %" PRIu64 ": tid=%u seq=%u len=%u "
		        "flags=%u tsc_base=%" PRIu64 " tsc_flush=%" PRIu64
		        " mono_flush_ns=%" PRIu64 "\n",
		        chunk_no + 1, off, h->tid, h->seq, h->payload_len,
		        h->flags, h->tsc_base, h->tsc_flush, h->mono_flush_ns);
		return;
	}
	put_record(o, h->tid, rec);
}

static const cli_opt_t dump_opts[] = {
    {"merged", 256, 0, NULL,
     "every thread's records in the reader's time\norder (the order "
     "mallock report folds them in),\nno chunk lines"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t dump_cli = {
    .name = "dump",
    .usage = "[--merged] TRACE",
    .intro = "Without --merged: every record in file order, a line per "
             "chunk header.\n",
    .opts = dump_opts,
    .operands = "TRACE",
    .min_operands = 1,
    .max_operands = 1,
};

int cmd_dump(int argc, char **argv)
{
	bool merged = false;
	cli_t cli = {.cmd = &dump_cli};
	int c;
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		if (c == CLI_DONE)
			return cli.status;
		if (c == 256)
			merged = true;
	}
	const char *path = argv[optind];
	reader_t *r;
	char err[256];
	int rc = reader_open(path, &r, err, sizeof err);
	if (rc) {
		fprintf(stderr, "mallock: %s: %s\n", path, err);
		return rc;
	}
	const reader_info_t *in = reader_info(r);
	printf("# %s: %" PRIu64 " bytes, %u chunks, %u threads, clock %s "
	       "(%.6f ns/tick)\n",
	       path, in->file_size, in->chunks, reader_streams(r),
	       in->clock_source, in->ns_per_tick);
	int ret = 0;
	if (merged) {
		reader_ev_t ev;
		while ((rc = reader_next(r, &ev)) > 0)
			if (ev.part != READER_REALLOC_FREE)
				put_record(stdout, ev.tid, ev.rec);
		if (rc < 0)
			ret = -1;
	} else {
		uint64_t eo = 0;
		if (reader_walk(r, walk_cb, stdout, &eo) < 0) {
			printf("# malformed record at byte %" PRIu64 "\n", eo);
			ret = -1;
		}
	}
	in = reader_info(r);
	if (in->truncated)
		printf("# trace truncated at byte %" PRIu64 ": %u of %u chunks "
		       "read (%s)\n",
		       in->truncated_at, in->chunks, in->chunks_total, in->why);
	reader_close(r);
	(void)ret;
	return 0;
}
