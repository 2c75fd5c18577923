/*
 * fmt_py.c - writes the Python view of the trace format (trace_format.py)
 * from format/trace_format.h's lists, so that the Python tests forge
 * records by name and never spell a layout: each core record's code,
 * layout and field names (FMT_CORE_RECORDS, FMT_CORE_FIELDS), the metadata
 * codes, the headers' sizes and magic, the chunk header's fields with
 * their offsets and sizes (fmt_chunk_header_t, whose on-disk order it
 * keeps), and the flag, kind and fn constants; and the control page's
 * fields with their offsets and sizes (ctl_page_t, format/ctl_page.h), the
 * one other layout the Python tests write.
 *
 *   fmt_py OUT.py
 */
#include "ctl_page.h"
#include "trace_format.h"

#include <stddef.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	FILE *o = argc == 2 ? fopen(argv[1], "w") : NULL;
	if (!o) {
		fprintf(stderr, "usage: fmt_py OUT.py\n");
		return 2;
	}
	fprintf(o, "\"\"\"The trace format as format/trace_format.h defines it,"
	           " written by\ntests/lib/fmt_py.c at build time: do not "
	           "edit.\"\"\"\n\n");
	fprintf(o, "VERSION = (%d, %d)\nFILE_MAGIC = b\"MALLOCK\\x1a\"\n",
	        FMT_VERSION_MAJOR, FMT_VERSION_MINOR);
	fprintf(o, "FILE_HEADER_SIZE = %d\nCHUNK_MAGIC = %#x\n",
	        FMT_FILE_HEADER_SIZE, FMT_CHUNK_MAGIC);
	fprintf(o, "CHUNK_HEADER_SIZE = %d\n", FMT_CHUNK_HEADER_SIZE);
	fprintf(o, "# (name, offset, size) in on-disk order, little-endian\n"
	           "CHUNK_HEADER = (\n");
#define F_(m)                                                                  \
	fprintf(o, "    (\"%s\", %zu, %zu),\n", #m,                            \
	        offsetof(fmt_chunk_header_t, m),                               \
	        sizeof(((fmt_chunk_header_t *)0)->m))
	F_(magic);
	F_(payload_len);
	F_(crc32);
	F_(tid);
	F_(seq);
	F_(flags);
	F_(tsc_base);
	F_(tsc_flush);
	F_(mono_flush_ns);
#undef F_
	fprintf(o, ")\n\n# core records: name -> (code, layout, field names)\n"
	           "CORE = {\n");
#define R_(name, code, layout)                                                 \
	do {                                                                   \
		fprintf(o, "    \"%s\": (%#04x, \"%s\", (", #name, code,       \
		        layout);                                               \
		for (unsigned i = 0; fmt_field_name(code, i); i++)             \
			fprintf(o, "\"%s\", ", fmt_field_name(code, i));       \
		fprintf(o, ")),\n");                                           \
	} while (0);
	FMT_CORE_RECORDS(R_)
#undef R_
	fprintf(o, "}\n\n# metadata records: name -> code\nMETA = {\n");
#define M_(name, code, fields) fprintf(o, "    \"%s\": %#04x,\n", #name, code);
	FMT_META_RECORDS(M_)
#undef M_
	fprintf(o, "}\n\n");
#define C_(pfx, name, code, str) fprintf(o, "%s%s = %d\n", pfx, #name, code);
#define FN_(name, code, str) C_("FN_", name, code, str)
#define KIND_(name, code, str) C_("KIND_", name, code, str)
	FMT_ALLOC_FNS(FN_)
	FMT_LOCK_KINDS(KIND_)
#undef FN_
#undef KIND_
#undef C_
#define K_(n) fprintf(o, "%s = %u\n", #n, (unsigned)FMT_##n)
	K_(LOCKF_INIT);
	K_(LOCKF_STATIC);
	K_(NAMEF_QUEUE);
	K_(WAKEF_TIMEDOUT);
	K_(WAKEF_ERROR);
	K_(SIGF_BROADCAST);
	K_(MARK_PAUSE);
	K_(MARK_RESUME);
	K_(PROCF_START_PAUSED);
	K_(PROCF_SAMPLED);
	K_(PROCF_CAPPED_SIZE);
	K_(UNWIND_LIBUNWIND);
	K_(UNWIND_FP);
	K_(UNWIND_NONE);
	K_(ENDF_CLEAN);
	K_(NOTE_INFO);
	K_(NOTE_WARN);
	K_(CHUNKF_ZSTD);
#undef K_
	fprintf(o,
	        "\n# the control page (ctl_page_t, format/ctl_page.h): "
	        "(name, offset, size)\n# of each field in order, "
	        "little-endian\nCTL_PAGE_MAGIC = %#x\n"
	        "CTL_PAGE_SIZE = %u\nCTL_PAGE = (\n",
	        CTLP_MAGIC, CTLP_SIZE);
#define P_(m)                                                                  \
	fprintf(o, "    (\"%s\", %zu, %zu),\n", #m, offsetof(ctl_page_t, m),   \
	        sizeof(((ctl_page_t *)0)->m))
	P_(magic);
	P_(layout);
	P_(pid);
	P_(uid);
	P_(start_time);
	P_(signal);
	P_(start_uid);
	P_(request);
	P_(served);
	P_(gen);
	P_(state);
	P_(bytes);
	P_(polls);
	P_(version);
	P_(why);
	P_(trace);
	P_(exe);
	P_(wake_sig);
	P_(attached);
	P_(cost_every);
	P_(cost_calls);
	P_(cost_sampled);
	P_(cost_ns);
	P_(cost_over);
	P_(flush_req);
	P_(flush_ms);
#undef P_
	fprintf(o, ")\n");
	return fclose(o) != 0;
}
