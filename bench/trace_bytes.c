/*
 * trace_bytes.c - where a trace's bytes go: per record type, its count,
 * its bytes as stored raw (records, inflated when a chunk is compressed)
 * and of those the bytes of each field (the type byte, dt, then the
 * fields in wire order); chunk headers apart. For deciding a cheaper
 * encoding (docs/performance.md, "Trace bytes and the analyzer on a
 * real server's window").
 *
 * usage: trace_bytes TRACE
 */
#include "trace_format.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t n[256], bytes[256], fbytes[256][9];

/* The wire layout of core type t: a compact form's (1.7), hold form's
 * (1.8) or LOCK_INIT_NEW's (1.9: 'i' its id, 'a' its address, each one
 * varint) letters, its fields not written ('0', 'k') included (they count
 * 0 bytes). A LOCK_INIT_NEW is one core event (its LOCK_INIT; the
 * LOCK_NEW it stands for is metadata). */
static const char *wire_layout(unsigned t)
{
	unsigned base;
	const char *l = fmt_core_layout(t);
	return l ? l : fmt_compact_layout(t, &base);
}

/* Whether layout letter c is written. */
static int on_wire(char c)
{
	return c != '0' && c != 'k';
}

/* The length of the varint at p. */
static unsigned vlen(const uint8_t *p)
{
	unsigned k = 1;
	while (*p++ & 0x80)
		k++;
	return k;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: trace_bytes TRACE\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(argv[1]);
		return 1;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *f = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	uint8_t *buf = NULL;
	size_t cap = 0, off = FMT_FILE_HEADER_SIZE;
	uint64_t chunks = 0, events = 0, raw = 0;
	while (off + FMT_CHUNK_HEADER_SIZE <= size) {
		fmt_chunk_header_t h;
		if (fmt_chunk_parse(f + off, &h) != 0 ||
		    off + FMT_CHUNK_HEADER_SIZE + h.payload_len > size)
			break;
		const uint8_t *pl = f + off + FMT_CHUNK_HEADER_SIZE, *rec;
		uint32_t len;
		if (fmt_chunk_inflate(&h, pl, &buf, &cap, &rec, &len) != 0)
			break;
		chunks++;
		raw += FMT_CHUNK_HEADER_SIZE + len;
		const uint8_t *p = rec, *end = rec + len;
		while (p < end) {
			unsigned t = *p;
			const uint8_t *q = p + 1;
			if (FMT_IS_META(t)) {
				uint64_t bl;
				if (fmt_get_u(&q, end, &bl) != 0)
					break;
				q += bl;
			} else {
				const char *l = wire_layout(t);
				if (!l)
					break;
				fbytes[t][0] += 1;
				unsigned k = vlen(q); /* dt */
				fbytes[t][1] += k;
				q += k;
				for (unsigned i = 0; l[i]; i++) {
					k = on_wire(l[i]) ? vlen(q) : 0;
					fbytes[t][2 + i] += k;
					q += k;
				}
				/* a hold form (1.8): an acquisition and
				 * its release */
				events += 1 + (fmt_is_hold(t) != 0);
			}
			n[t]++;
			bytes[t] += (uint64_t)(q - p);
			p = q;
		}
		off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
	printf("%s: %zu bytes stored, %llu raw (records inflated), %llu "
	       "chunks, %llu core events: %.2f B/event stored, %.2f raw\n",
	       argv[1], size, (unsigned long long)raw,
	       (unsigned long long)chunks, (unsigned long long)events,
	       (double)size / (double)events, (double)raw / (double)events);
	printf("chunk headers: %.2f B/event\n",
	       (double)chunks * FMT_CHUNK_HEADER_SIZE / (double)events);
	printf("%-24s %12s %7s %7s  %s\n", "record", "count", "B/rec",
	       "B/event", "type dt fields... (B/rec)");
	for (unsigned t = 0; t < 256; t++) {
		if (!n[t])
			continue;
		const char *name = fmt_type_name(t);
		printf("%-24s %12llu %7.2f %7.3f ", name ? name : "?",
		       (unsigned long long)n[t],
		       (double)bytes[t] / (double)n[t],
		       (double)bytes[t] / (double)events);
		if (!FMT_IS_META(t)) {
			const char *l = wire_layout(t);
			for (unsigned i = 0; i < 2 + (l ? strlen(l) : 0); i++)
				printf(" %.2f",
				       (double)fbytes[t][i] / (double)n[t]);
		}
		printf("\n");
	}
	free(buf);
	return 0;
}
