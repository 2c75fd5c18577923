/*
 * fuzz_report.c - the libFuzzer target over the trace reader and the whole
 * report path. Each input is written to a memfd and
 * run through the commands a user types, in-process:
 *
 *   mallock report --format=text  (symbols on for one input in 16, chosen
 *                                   by a hash of its bytes: the MODULE paths
 *                                   in it reach libdw, as for a user; libdw
 *                                   on libc costs milliseconds, so not for
 *                                   every input)
 *   mallock report --format=json --no-symbols
 *   mallock report --format=folded --metric=M --no-symbols (M from the size)
 *   mallock dump, mallock dump --merged
 *   mallock diff --no-symbols FILE FILE
 *
 * Half of the inputs (by the same hash) get their chunk CRCs recomputed
 * first: a mutation inside a payload would otherwise almost always fail the
 * CRC and stop at the chunk check, never reaching the record decoder, the
 * aggregation or the outputs.
 *
 * Contract checked here: every command returns 0 (a good or truncated
 * trace) or 2 (not a mallock trace, or an unsupported version), report and
 * diff also 1 (a trace of which no chunk could be read); anything
 * else aborts, and so does any sanitizer report, leak or exit(). The
 * one-line-error contract on stderr is checked by tests/fuzz/run.sh over
 * the corpus afterwards, with the command-line binary.
 *
 * Output goes to /dev/null (stdout is redirected once at start-up).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "trace_format.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	int fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		fflush(stdout);
		dup2(fd, 1);
		close(fd);
	}
	/* The analyzer never needs the environment's debuginfod. */
	unsetenv("DEBUGINFOD_URLS");
	return 0;
}

/* Rewrites the CRC of every complete chunk of buf (the file layout of
 * trace_format.h), stopping at the first bad header. */
static void fix_crcs(uint8_t *buf, size_t size)
{
	size_t off = FMT_FILE_HEADER_SIZE;
	while (off <= size && size - off >= FMT_CHUNK_HEADER_SIZE) {
		fmt_chunk_header_t h;
		if (fmt_chunk_parse(buf + off, &h) < 0 ||
		    h.payload_len > size - off - FMT_CHUNK_HEADER_SIZE)
			return;
		fmt_chunk_seal(buf + off, &h,
		               buf + off + FMT_CHUNK_HEADER_SIZE);
		off += FMT_CHUNK_HEADER_SIZE + h.payload_len;
	}
}

static void run(const char *what, int (*cmd)(int, char **), int argc,
                char **argv)
{
	int rc = cmd(argc, argv);
	fflush(stdout);
	if (rc != 0 && rc != 2 && (rc != 1 || !strncmp(what, "dump", 4))) {
		fprintf(stderr,
		        "fuzz_report: %s returned %d (want 0 or 2, or 1 from "
		        "report or diff)\n",
		        what, rc);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const metrics[] = {
	    "wait", "hold", "alloc-under-lock", "cross-thread"};
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	const uint8_t *bytes = data;
	uint8_t *copy = NULL;
	if (h & 1) {
		copy = malloc(size ? size : 1);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		fix_crcs(copy, size);
		bytes = copy;
	}
	int fd = memfd_create("trace", MFD_CLOEXEC);
	if (fd < 0) {
		free(copy);
		return 0;
	}
	size_t done = 0;
	while (done < size) {
		ssize_t k = write(fd, bytes + done, size - done);
		if (k <= 0)
			break;
		done += (size_t)k;
	}
	free(copy);
	if (done < size) {
		close(fd);
		return 0;
	}
	char path[64], metric[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	snprintf(metric, sizeof metric, "--metric=%s", metrics[size % 4]);

	char *text[] = {
	    "report", "--format=text", "--top=50", "-o", "/dev/null",
	    path,     "--no-symbols",  NULL};
	run("report text", cmd_report, (h >> 1) % 16 == 0 ? 6 : 7, text);
	char *json[] = {"report", "--format=json", "--no-symbols",
	                "-o",     "/dev/null",     path,
	                NULL};
	run("report json", cmd_report, 6, json);
	char *folded[] = {"report", "--format=folded", metric, "--no-symbols",
	                  "-o",     "/dev/null",       path,   NULL};
	run("report folded", cmd_report, 7, folded);
	char *dump[] = {"dump", path, NULL};
	run("dump", cmd_dump, 2, dump);
	char *merged[] = {"dump", "--merged", path, NULL};
	run("dump --merged", cmd_dump, 3, merged);
	char *diff[] = {"diff", "--no-symbols", "--format=json",
	                path,   path,           NULL};
	run("diff", cmd_diff, 5, diff);
	close(fd);
	return 0;
}
