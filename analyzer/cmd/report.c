/*
 * report.c - `mallock report [options] TRACE...`: option parsing, loading
 * each trace (load.c), filtering and ranking the findings, and dispatch to
 * the output format.
 *
 * TRACE "-" is the standard input: a regular file there is read in place
 * (/proc/self/fd/0), anything else (a pipe) is first copied into an
 * unnamed temporary file in $TMPDIR (O_TMPFILE, or a file unlinked at once:
 * nothing is left behind),
 * since the reader reads at offsets and the binary outputs read each trace
 * twice.
 *
 * Exit status (cli.h): 0 (also for a truncated trace, which is reported up
 * to its last good chunk), 1 on an I/O error, 2 on a usage error or when a
 * file is not a mallock trace or of an unsupported version.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include "cli.h"
#include "load.h"
#include "progress.h"
#include "report.h"
#include "symbols.h"
#include "thresholds.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h> /* optarg, optind */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h> /* isatty */

enum {
	O_FORMAT = 256,
	O_TOP,
	O_METRIC,
	O_LOCK,
	O_THREAD,
	O_SEV,
	O_PER,
	O_NOSYM,
	O_TH,
	O_FROM,
	O_TO,
	O_PROGRESS,
	O_NOPROGRESS,
	O_ALL,
	O_DEBUGDIR,
	O_NOFOLD,
	O_STATS,
	O_ASSAMPLED
};

static const cli_opt_t report_opts[] = {
    {"format", O_FORMAT, 1, "text|json|folded|pprof|perfetto|html",
     "output (default text; pprof, perfetto\nand html need -o FILE or a "
     "pipe)"},
    {"top", O_TOP, 1, "N", "findings shown in text (default 10)"},
    {"metric", O_METRIC, 1, "wait|hold|caused|alloc-under-lock|cross-thread",
     "what folded stacks and pprof count\n(default wait)"},
    {"lock", O_LOCK, 1, "ID|NAME",
     "only this lock (id, name or site "
     "function)"},
    {"progress", O_PROGRESS, 0, NULL,
     "progress on stderr (default: on a\nterminal, in the foreground)"},
    {"no-progress", O_NOPROGRESS, 0, NULL, "no progress on stderr"},
    {"from", O_FROM, 1, "T",
     "perfetto: only this window (s, ms, us,\nns since the trace's first "
     "event)"},
    {"to", O_TO, 1, "T", "perfetto: the window's end"},
    {"thread", O_THREAD, 1, "TID|NAME[,...]", "only these threads' events"},
    {"min-severity", O_SEV, 1, "info|low|medium|high",
     "only findings of this severity or more"},
    {"per-process", O_PER, 0, NULL,
     "one report per trace instead of one "
     "for all"},
    {"all", O_ALL, 0, NULL,
     "JSON: list every lock and lock class (default:\nthe top 50, the "
     "named and the ones findings name)"},
    {"no-symbols", O_NOSYM, 0, NULL, "leave frames as addresses"},
    {"no-fold", O_NOFOLD, 0, NULL,
     "keep a record for every destroyed lock\n(same report, more memory)"},
    {"stats", O_STATS, 0, NULL, "the model's lock table on stderr"},
    {"as-sampled", O_ASSAMPLED, 1, "N",
     "text, json: a trace that timed every\nhold and call "
     "(MALLOCK_TIME_EVERY=1)\nread as if one in N had been timed"},
    {"debug-dir", O_DEBUGDIR, 1, "DIR",
     "look there first for separate debug\nfiles "
     "(DIR/.build-id/xx/rest.debug,\nDIR/NAME.debug); may be repeated"},
    {"output", 'o', 1, "FILE", "write there instead of stdout"},
    {"thresholds", O_TH, 0, NULL, "print the findings' thresholds and exit"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t report_cli = {
    .name = "report",
    .usage = "[options] TRACE...",
    .intro = "TRACE - is the standard input.\n",
    .opts = report_opts,
    .operands = "TRACE (a file, or - for the standard input)",
    .min_operands = 1,
    .max_operands = -1,
};

static void print_thresholds(void)
{
#define TH_PRINT_(name, value, unit, doc)                                      \
	printf("%-24s %10lld %-12s %s\n", #name, (long long)value, unit, doc);
	THRESHOLDS(TH_PRINT_)
#undef TH_PRINT_
}

static int parse_metric(const char *s)
{
	static const char *const names[] = {
#define METRIC_NAME_(e, name) name,
	    METRICS(METRIC_NAME_)
#undef METRIC_NAME_
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* "1.5", "1.5s", "200ms", "50us", "10ns" -> ns. Returns 0, or
 * -1 when s is not such a time. */
static int parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double scale;
	} units[] = {
	    {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v >= 0))
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (strcmp(end, units[i].unit) == 0) {
			if (v * units[i].scale >= 1.8e19)
				return -1;
			*ns = (uint64_t)(v * units[i].scale);
			return 0;
		}
	return -1;
}

/* A path the reader can open for the trace on stdin, into out: 0, or -1
 * after one line on stderr. */
static int stdin_trace(char *out, size_t n)
{
	struct stat st;
	if (fstat(0, &st) != 0) {
		fprintf(stderr, "mallock report: -: no standard input: %s\n",
		        strerror(errno));
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		snprintf(out, n, "/proc/self/fd/0");
		return 0;
	}
	if (isatty(0)) {
		fprintf(stderr, "mallock report: -: the standard input is a "
		                "terminal, not a trace (mallock report - < "
		                "TRACE, or a pipe)\n");
		return -1;
	}
	const char *dir = getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
		/* A file system without O_TMPFILE: a named file, unlinked at
		 * once. */
		char tmpl[PATH_MAX];
		if ((size_t)snprintf(tmpl, sizeof tmpl,
		                     "%s/mallock-stdin.XXXXXX",
		                     dir) < sizeof tmpl &&
		    (fd = mkostemp(tmpl, O_CLOEXEC)) >= 0)
			unlink(tmpl);
	}
	if (fd < 0) {
		fprintf(stderr,
		        "mallock report: -: cannot make a temporary file in %s "
		        "for the standard input: %s\n",
		        dir, strerror(errno));
		return -1;
	}
	static char buf[1 << 16];
	for (;;) {
		ssize_t k = read(0, buf, sizeof buf);
		if (k == 0)
			break;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 || fd_write_all(fd, buf, (size_t)k) != 0) {
			fprintf(stderr,
			        "mallock report: -: copying the standard input "
			        "to a temporary file in %s: %s\n",
			        dir, strerror(errno));
			close(fd);
			return -1;
		}
	}
	snprintf(out, n, "/proc/self/fd/%d", fd);
	return 0; /* fd stays open until exit: the file's only name */
}

static bool keep(const report_t *r, const finding_t *f)
{
	if (f->severity < r->min_sev)
		return false;
	if (r->lock_filter && !report_class_matches(r, f->m, f->cls) &&
	    !report_class_matches(r, f->m, f->cls2))
		return false;
	return true;
}

/* Output formats; the binary ones return an error. */
enum { F_TEXT, F_JSON, F_FOLDED, F_PPROF, F_PERFETTO, F_HTML };

static int emit(report_t *r, int format, FILE *out)
{
	size_t k = 0;
	findings_sort(&r->f);
	for (size_t i = 0; i < r->f.n; i++)
		if (keep(r, &r->f.v[i]))
			r->f.v[k++] = r->f.v[i];
	r->f.n = k;
	if (format == F_TEXT)
		report_text(r, out);
	else if (format == F_JSON)
		report_json(r, out);
	else if (format == F_FOLDED)
		report_folded(r, out);
	else if (format == F_PPROF)
		return report_pprof(r, out);
	else if (format == F_PERFETTO)
		return report_perfetto(r, out);
	else if (format == F_HTML)
		return report_html(r, out);
	return 0;
}

int cmd_report(int argc, char **argv)
{
	report_t r = {0};
	int format = 0, c, rc = 0, progress = PROGRESS_AUTO;
	bool nofold = false, stats = false;
	const char *outpath = NULL;
	char *thread_arg = NULL;
	const char **threads = NULL;
	load_opts_t lo = {.symbols = true};
	const char *debug_dirs[33] = {0};
	size_t ndebug = 0;
	lo.debug_dirs = debug_dirs;

	r.top = 10;
	r.metric = METRIC_WAIT;
	cli_t cli = {.cmd = &report_cli};
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		switch (c) {
		case CLI_DONE:
			return cli.status;
		case O_FORMAT:
			format = !strcmp(optarg, "text")       ? F_TEXT
			         : !strcmp(optarg, "json")     ? F_JSON
			         : !strcmp(optarg, "folded")   ? F_FOLDED
			         : !strcmp(optarg, "pprof")    ? F_PPROF
			         : !strcmp(optarg, "perfetto") ? F_PERFETTO
			         : !strcmp(optarg, "html")     ? F_HTML
			                                       : -1;
			if (format < 0)
				return cli_bad_value(
				    "report", "--format", optarg,
				    "not text, json, folded, pprof, "
				    "perfetto or html");
			break;
		case O_TOP: {
			long v;
			if (cli_number("report", "--top", optarg, 0, 1000000,
			               &v))
				return CLI_EXIT_USAGE;
			r.top = (int)v;
			break;
		}
		case O_METRIC:
			r.metric = parse_metric(optarg);
			if (r.metric < 0)
				return cli_bad_value(
				    "report", "--metric", optarg,
				    "not wait, hold, caused, "
				    "alloc-under-lock or cross-thread");
			break;
		case O_LOCK:
			r.lock_filter = optarg;
			break;
		case O_THREAD:
			thread_arg = optarg;
			break;
		case O_SEV:
			r.min_sev = severity_parse(optarg);
			if (r.min_sev < 0)
				return cli_bad_value(
				    "report", "--min-severity", optarg,
				    "not info, low, medium or high");
			break;
		case O_ALL:
			r.all = true;
			break;
		case O_NOFOLD:
			nofold = true;
			break;
		case O_STATS:
			stats = true;
			break;
		case O_ASSAMPLED: {
			long n;
			if (cli_number("report", "--as-sampled", optarg, 2, 127,
			               &n))
				return CLI_EXIT_USAGE;
			lo.as_sampled = (uint32_t)n;
			break;
		}
		case O_PER:
			r.per_process = true;
			break;
		case O_NOSYM:
			lo.symbols = false;
			break;
		case O_DEBUGDIR: {
			struct stat st;
			if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode) ||
			    ndebug == 32)
				return cli_bad_value(
				    "report", "--debug-dir", optarg,
				    ndebug == 32 ? "more than 32 given"
				                 : "not a directory");
			debug_dirs[ndebug++] = optarg;
			break;
		}
		case O_TH:
			print_thresholds();
			return 0;
		case 'o':
			outpath = optarg;
			break;
		case O_PROGRESS:
			progress = PROGRESS_ON;
			break;
		case O_NOPROGRESS:
			progress = PROGRESS_OFF;
			break;
		case O_FROM: /* the timeline's window */
		case O_TO:
			r.window = true;
			if (parse_time(optarg,
			               c == O_FROM ? &r.from_ns : &r.to_ns))
				return cli_bad_value(
				    "report", c == O_FROM ? "--from" : "--to",
				    optarg,
				    "not a time (seconds, or a number with "
				    "s, ms, us or ns)");
			break;
		}
	}
	if (r.to_ns && r.from_ns >= r.to_ns)
		return cli_usage_error("report", "--from must be before --to");
	char *targ = NULL;
	if (thread_arg) {
		size_t n = 2;
		for (const char *p = thread_arg; *p; p++)
			n += *p == ',';
		threads = xcalloc(n, sizeof *threads);
		targ = xstrdup(thread_arg);
		size_t k = 0;
		for (char *s = strtok(targ, ","); s; s = strtok(NULL, ","))
			threads[k++] = s;
		lo.thread_filter = threads;
	}
	/* The replay of the other outputs reads the records as stored. */
	if (lo.as_sampled && format != F_TEXT && format != F_JSON) {
		free(threads);
		free(targ);
		return cli_usage_error(
		    "report", "--as-sampled: text and json output only");
	}
	/* A binary profile is not for a terminal. */
	if (format >= F_PPROF && !outpath && isatty(1)) {
		free(threads);
		free(targ);
		return cli_usage_error("report",
		                       "--format=%s needs -o FILE (binary "
		                       "output, not for a terminal)",
		                       format == F_PPROF      ? "pprof"
		                       : format == F_PERFETTO ? "perfetto"
		                                              : "html");
	}
	FILE *out = stdout;
	if (outpath && !(out = fopen(outpath, "w"))) {
		fprintf(stderr, "mallock report: %s: cannot write: %s\n",
		        outpath, strerror(errno));
		free(threads);
		free(targ);
		return 1;
	}
	/* Folding drops instances that --all lists, --lock matches by id,
	 * and a replay (the binary outputs) would meet again. */
	lo.fold_locks = !nofold && !r.all && !r.lock_filter && format < F_PPROF;
	/* The binary outputs read each trace a second time */
	progress_init(progress, format >= F_PPROF ? 3 : 2);
	r.nm = (size_t)(argc - optind);
	r.m = xcalloc(r.nm, sizeof *r.m);
	char stdin_path[64];
	int stdin_used = 0;
	for (size_t i = 0; i < r.nm && !rc; i++) {
		const char *path = argv[optind + (int)i];
		if (!strcmp(path, "-")) {
			if (stdin_used++ ||
			    stdin_trace(stdin_path, sizeof stdin_path)) {
				if (stdin_used > 1)
					fprintf(
					    stderr,
					    "mallock report: -: the standard "
					    "input can be read only once\n");
				rc = 1;
				break;
			}
			path = stdin_path;
		}
		rc = load_trace(path, &r.m[i], &r.f, &lo);
		if (!rc && stats)
			fprintf(stderr,
			        "mallock: %s: lock records: %zu kept, %zu at "
			        "most; %" PRIu64 " destroyed locks folded into "
			        "%zu tuples (%" PRIu64 " compactions)\n",
			        path, r.m[i].nlock, r.m[i].lock_peak,
			        r.m[i].folded, r.m[i].nfold,
			        r.m[i].fold_compactions);
		/* The report names it as given; the binary outputs read it
		 * again by its path (replay.c), so they keep the fd's. */
		if (!rc && path == stdin_path && format < F_PPROF)
			r.m[i].path = "-";
	}
	if (!rc && r.per_process && r.nm > 1) {
		findings_t all = r.f;
		for (size_t i = 0; i < r.nm; i++) {
			report_t one = r;
			one.m = &r.m[i];
			one.nm = 1;
			memset(&one.f, 0, sizeof one.f);
			for (size_t j = 0; j < all.n; j++)
				if (all.v[j].m == &r.m[i]) {
					VEC_RESERVE(one.f.v, one.f.cap,
					            one.f.n);
					one.f.v[one.f.n++] = all.v[j];
				}
			rc |= emit(&one, format, out);
			free(one.f.v);
		}
	} else if (!rc) {
		rc = emit(&r, format, out);
	}
	for (size_t i = 0; i < r.nm; i++)
		load_free(&r.m[i]);
	free(r.m);
	free(r.f.v);
	free(threads);
	free(targ);
	if (out != stdout && fclose(out) != 0 && !rc)
		rc = 1;
	return rc;
}
