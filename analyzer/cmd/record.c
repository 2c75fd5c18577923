/*
 * record.c - `mallock record [options] -- CMD ARGS...`: runs CMD with
 * libmallock.so preloaded, passes its exit status through, and says on
 * stderr where the trace went.
 *
 * The shim is found relative to this executable (find_shim, cli.h): in the
 * build tree and wherever an installed tree is unpacked. The trace path is
 * expanded here, in the child just before exec, so that the path printed is the
 * path the shim opens: %p becomes the child's pid (exec keeps it), %e the base
 * name of the program run. Processes the program forks see a path without %p
 * and append ".<pid>" to it (see docs/configuration.md).
 *
 * After the command exits, its trace and those of the processes it forked
 * (PATH.<pid>, written since the start) are compressed (trace_compress.h):
 * off the host's threads, at no cost to the run. A trace some process still
 * has open (a child that outlived the command) is left as it is.
 * `--no-compress` or MALLOCK_COMPRESS=0 keep the traces raw.
 *
 * A statically linked program (no PT_INTERP: a static Go binary, say)
 * never loads the preloaded shim: that is said in one line before it runs.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "trace_compress.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h> /* optarg, optind */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_OUTPUT "mallock.%e.%p.trace"

/* Exit statuses of record's own, as env(1), nice(1) and timeout(1) have
 * them; a usage error is CLI_EXIT_USAGE, any other status the command's. */
#define RECORD_EXIT_OWN 125         /* record itself failed */
#define RECORD_EXIT_CANNOT_EXEC 126 /* CMD found but not executable */
#define RECORD_EXIT_NOTFOUND 127    /* CMD not found */

enum {
	OPT_DEPTH = 256,
	OPT_UNWIND,
	OPT_NOFOLLOW,
	OPT_EXE,
	OPT_SHIM,
	OPT_NOCOMPRESS,
	OPT_LEVEL
};

static const cli_opt_t record_opts[] = {
    {"output", 'o', 1, "FILE",
     "write the trace to FILE (%p: pid, %e: program\nname)"},
    {"depth", OPT_DEPTH, 1, "N",
     "stack depth 1..64 (MALLOCK_STACK_DEPTH, default 16)"},
    {"unwind", OPT_UNWIND, 1, "libunwind|fp|none",
     "how stacks are taken "
     "(MALLOCK_UNWIND)"},
    {"no-follow-exec", OPT_NOFOLLOW, 0, NULL,
     "do not trace programs the command execs"},
    {"exe", OPT_EXE, 1, "NAME",
     "trace only processes of the program NAME\n(MALLOCK_EXE: wrappers "
     "such as sh, env, setpriv\nleave no trace)"},
    {"shim", OPT_SHIM, 1, "PATH", "use this libmallock.so"},
    {"no-compress", OPT_NOCOMPRESS, 0, NULL,
     "leave the trace uncompressed (as MALLOCK_COMPRESS=0)"},
    {"compress-level", OPT_LEVEL, 1, "N",
     "zstd level of the compression after the run\n(1..19, default 3)"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t record_cli = {
    .name = "record",
    .usage = "[options] [--] CMD [ARGS...]",
    .outro = "Options end at CMD: what follows is CMD's. Without -o, "
             "MALLOCK_OUTPUT or\n" DEFAULT_OUTPUT " is used.\n",
    .opts = record_opts,
    .operands = "CMD (the program to run)",
    .min_operands = 1,
    .max_operands = -1,
    .in_order = 1,
};

_Static_assert(TC_LEVEL_MIN == 1 && TC_LEVEL_MAX == 19 && TC_LEVEL_DEFAULT == 3,
               "record_opts' help gives the levels");

/* The shim's places relative to this executable's directory, first found
 * wins: installed (cmake --install, the .deb: PREFIX/bin/mallock and
 * PREFIX/lib/mallock/libmallock.so), then the build tree (build/bin,
 * build/lib). Nothing depends on the prefix, so an installed tree runs
 * wherever it is unpacked. */
static const char *const shim_places[] = {MALLOCK_SHIM_INSTALLED,
                                          MALLOCK_SHIM_BUILD, NULL};

int find_shim(char *out, size_t n)
{
	char self[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return -1;
	self[len] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	for (const char *const *p = shim_places; *p; p++) {
		char path[PATH_MAX + 64], real[PATH_MAX];
		if ((size_t)snprintf(path, sizeof path, "%s/%s", self, *p) >=
		    sizeof path)
			continue;
		if (realpath(path, real) && strlen(real) < n) {
			snprintf(out, n, "%s", real);
			return 0;
		}
	}
	return -1;
}

/* Expands %p, %e and %% of pattern into out. Returns 0, or -1 if too long. */
static int expand_output(const char *pattern, pid_t pid, const char *exe,
                         char *out, size_t n)
{
	size_t o = 0;
	for (const char *s = pattern; *s; s++) {
		char buf[32];
		const char *piece = buf;
		if (s[0] == '%' && s[1] == 'p') {
			snprintf(buf, sizeof buf, "%ld", (long)pid);
			s++;
		} else if (s[0] == '%' && s[1] == 'e') {
			piece = exe;
			s++;
		} else if (s[0] == '%' && s[1] == '%') {
			buf[0] = '%', buf[1] = '\0';
			s++;
		} else {
			buf[0] = *s, buf[1] = '\0';
		}
		size_t k = strlen(piece);
		if (o + k >= n)
			return -1;
		memcpy(out + o, piece, k);
		o += k;
	}
	out[o] = '\0';
	return 0;
}

static volatile sig_atomic_t record_child;

/* Passes a termination request (timeout(1), a service manager) on to the
 * command, which then exits and flushes its trace; this process follows. */
static void forward_signal(int sig)
{
	if (record_child > 0)
		kill((pid_t)record_child, sig);
}

/* The base name of cmd, resolved through PATH when it has no slash. */
static const char *program_name(const char *cmd)
{
	const char *slash = strrchr(cmd, '/');
	return slash ? slash + 1 : cmd;
}

/* Prepends shim to LD_PRELOAD. Returns 0 or -1. */
/* The file cmd runs, through PATH when it has no slash, into out; -1 when
 * none is found (execvp will say why). */
static int resolve_cmd(const char *cmd, char *out, size_t n)
{
	if (strchr(cmd, '/'))
		return snprintf(out, n, "%s", cmd) < (int)n ? 0 : -1;
	const char *p = getenv("PATH");
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t k = strcspn(p, ":");
		if (snprintf(out, n, "%.*s/%s", (int)(k ? k : 1), k ? p : ".",
		             cmd) < (int)n &&
		    access(out, X_OK) == 0)
			return 0;
		p += k + (p[k] == ':');
	}
	return -1;
}

/* 1 when path is an ELF executable without PT_INTERP (statically linked:
 * the dynamic loader, hence LD_PRELOAD, never runs), else 0. */
static int static_elf(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_Ehdr eh;
	int is_static = 0;
	if (read(fd, &eh, sizeof eh) == (ssize_t)sizeof eh &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 &&
	    eh.e_phnum < 512) {
		is_static = 1;
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			if (pread(fd, &ph, sizeof ph,
			          (off_t)(eh.e_phoff + i * sizeof ph)) !=
			    (ssize_t)sizeof ph) {
				is_static = 0;
				break;
			}
			if (ph.p_type == PT_INTERP) {
				is_static = 0;
				break;
			}
		}
	}
	close(fd);
	return is_static;
}

static int set_preload(const char *shim)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old)
		return setenv("LD_PRELOAD", shim, 1);
	size_t n = strlen(shim) + strlen(old) + 2;
	char *v = malloc(n);
	if (!v)
		return -1;
	snprintf(v, n, "%s:%s", shim, old);
	int rc = setenv("LD_PRELOAD", v, 1);
	free(v);
	return rc;
}

/* What the compression after the run did, over all the traces. */
typedef struct rec_pack {
	int level;
	unsigned done, skipped, bad;
	uint64_t in, out, events;
} rec_pack_t;

/* Compresses one trace, adding to p; says what went wrong or was left. */
static void pack_one(rec_pack_t *p, const char *path)
{
	char err[PATH_MAX + 160];
	tc_result_t r;
	int rc = tc_compress(path, NULL, p->level, &r, err, sizeof err);
	if (rc) {
		fprintf(stderr, "mallock: %s: not compressed: %s\n", path, err);
		p->skipped++;
		return;
	}
	if (r.outcome == TC_REWRITTEN || r.outcome == TC_UNCHANGED) {
		p->done++;
		p->in += r.bytes_in;
		p->out += r.bytes_out;
		p->events += r.events;
		p->bad += r.bad;
	} else {
		p->skipped++;
	}
	/* Only what the summary line does not say: a trace left as it
	 * was, or a bad chunk and the bytes kept after it. */
	if (r.outcome != TC_REWRITTEN || r.bad)
		tc_say("mallock: ", path, &r, 0);
}

/* Whether s is one or more ".<digits>": what the shim appends for a child
 * (its pid), and again for a grandchild or where a file was in the way. */
static int pid_suffix(const char *s)
{
	if (!*s)
		return 0;
	while (*s) {
		size_t k = s[0] == '.' ? strspn(s + 1, "0123456789") : 0;
		if (!k)
			return 0;
		s += 1 + k;
	}
	return 1;
}

/* The traces of the processes the command started: PATH.<pid>[.<n>...] in
 * PATH's directory, modified since the record started. */
static void pack_children(rec_pack_t *p, const char *path,
                          const struct timespec *since)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : path;
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	size_t blen = strlen(base);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		if (strncmp(n, base, blen) != 0 || !pid_suffix(n + blen))
			continue;
		char full[PATH_MAX];
		struct stat st;
		if ((size_t)snprintf(full, sizeof full, "%s%s%s",
		                     slash ? dir : "", slash ? "/" : "",
		                     n) >= sizeof full ||
		    lstat(full, &st) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_mtim.tv_sec < since->tv_sec ||
		    (st.st_mtim.tv_sec == since->tv_sec &&
		     st.st_mtim.tv_nsec < since->tv_nsec))
			continue;
		pack_one(p, full);
	}
	closedir(d);
}

int cmd_record(int argc, char **argv)
{
	const char *output = NULL, *shim_arg = NULL;
	int output_given = 0;
	int i = 1;
	/* MALLOCK_COMPRESS=0 means no compression at all, here too. */
	const char *zenv = getenv("MALLOCK_COMPRESS");
	char *zend;
	int pack = !(zenv && *zenv && strtol(zenv, &zend, 10) == 0 && !*zend);
	int level = TC_LEVEL_DEFAULT;

	cli_t cli = {.cmd = &record_cli};
	int c;
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		long v;
		switch (c) {
		case CLI_DONE:
			return cli.status;
		case 'o':
			output = optarg;
			output_given = 1;
			break;
		case OPT_DEPTH: /* the shim's range (shim/core/config.h) */
			if (cli_number("record", "--depth", optarg, 1, 64, &v))
				return CLI_EXIT_USAGE;
			setenv("MALLOCK_STACK_DEPTH", optarg, 1);
			break;
		case OPT_UNWIND:
			if (strcmp(optarg, "libunwind") &&
			    strcmp(optarg, "fp") && strcmp(optarg, "none"))
				return cli_bad_value(
				    "record", "--unwind", optarg,
				    "not libunwind, fp or none");
			setenv("MALLOCK_UNWIND", optarg, 1);
			break;
		case OPT_EXE:
			setenv("MALLOCK_EXE", optarg, 1);
			break;
		case OPT_NOFOLLOW:
			setenv("MALLOCK_FOLLOW_EXEC", "0", 1);
			break;
		case OPT_SHIM:
			shim_arg = optarg;
			break;
		case OPT_NOCOMPRESS:
			pack = 0;
			break;
		case OPT_LEVEL:
			if (cli_number("record", "--compress-level", optarg,
			               TC_LEVEL_MIN, TC_LEVEL_MAX, &v))
				return CLI_EXIT_USAGE;
			level = (int)v;
			break;
		}
	}
	i = optind;

	char shim[PATH_MAX];
	if (shim_arg) {
		if (!realpath(shim_arg, shim)) {
			return cli_bad_value("record", "--shim", shim_arg,
			                     strerror(errno));
		}
	} else if (find_shim(shim, sizeof shim) < 0) {
		fprintf(stderr,
		        "mallock record: libmallock.so not found beside this "
		        "program (expected " MALLOCK_SHIM_INSTALLED
		        " or " MALLOCK_SHIM_BUILD "); use --shim PATH\n");
		return RECORD_EXIT_OWN;
	}
	if (!output)
		output = getenv("MALLOCK_OUTPUT");
	if (!output || !*output)
		output = DEFAULT_OUTPUT;
	if (set_preload(shim) < 0) {
		fprintf(stderr, "mallock record: cannot set LD_PRELOAD\n");
		return RECORD_EXIT_OWN;
	}

	/* The child expands the path (it knows its pid, which exec keeps) and
	 * writes it back through a pipe, so the parent can name the file. */
	int fds[2], efd[2];
	if (pipe2(fds, O_CLOEXEC) < 0 || pipe2(efd, O_CLOEXEC) < 0) {
		perror("mallock record: pipe");
		return RECORD_EXIT_OWN;
	}
	const char *exe = program_name(argv[i]);
	struct timespec started;
	clock_gettime(CLOCK_REALTIME, &started);
	char cmdpath[PATH_MAX];
	int is_static = resolve_cmd(argv[i], cmdpath, sizeof cmdpath) == 0 &&
	                static_elf(cmdpath);
	if (is_static)
		fprintf(stderr,
		        "mallock record: %s is statically linked: the "
		        "shim cannot be preloaded into it, so mallock "
		        "will see nothing of it\n",
		        argv[i]);
	pid_t pid = fork();
	if (pid < 0) {
		perror("mallock record: fork");
		return RECORD_EXIT_OWN;
	}
	if (pid == 0) {
		char path[PATH_MAX];
		close(fds[0]);
		close(efd[0]);
		if (expand_output(output, getpid(), exe, path, sizeof path) <
		    0) {
			fprintf(stderr,
			        "mallock record: output path too long\n");
			_exit(RECORD_EXIT_OWN);
		}
		/* -o names the file to write, as a compiler's -o does: an old
		 * regular file there is replaced. Anything else (a symlink, a
		 * device) is left alone, and the shim then writes PATH.<pid>.
		 */
		struct stat old;
		if (output_given && lstat(path, &old) == 0 &&
		    S_ISREG(old.st_mode))
			unlink(path);
		if (write(fds[1], path, strlen(path)) < 0)
			_exit(RECORD_EXIT_OWN);
		setenv("MALLOCK_OUTPUT", path, 1);
		execvp(argv[i], argv + i);
		/* The parent says it: the exec's errno, through the pipe that
		 * a successful exec closes with nothing written. */
		int e = errno;
		if (write(efd[1], &e, sizeof e) < 0)
			_exit(RECORD_EXIT_NOTFOUND);
		_exit(e == ENOENT ? RECORD_EXIT_NOTFOUND
		                  : RECORD_EXIT_CANNOT_EXEC);
	}
	close(fds[1]);
	close(efd[1]);
	char path[PATH_MAX];
	ssize_t got = 0, r;
	while ((r = read(fds[0], path + got, sizeof path - 1 - (size_t)got)) >
	       0)
		got += r;
	path[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	int exec_errno = 0;
	while ((r = read(efd[0], &exec_errno, sizeof exec_errno)) < 0 &&
	       errno == EINTR)
		;
	close(efd[0]);
	if (r == (ssize_t)sizeof exec_errno) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		fprintf(stderr,
		        "mallock record: cannot run %s: exec failed: %s\n",
		        argv[i], strerror(exec_errno));
		return exec_errno == ENOENT ? RECORD_EXIT_NOTFOUND
		                            : RECORD_EXIT_CANNOT_EXEC;
	}

	/* Signals meant for the program (^C) reach it through the process
	 * group; this process waits for it and does not die first. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	record_child = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("mallock record: waitpid");
			return RECORD_EXIT_OWN;
		}
	}
	/* The command is gone (its pid may be reused): no more forwarding.
	 * A signal now stops the compression and removes its temporary
	 * file; the traces stay as they were. */
	record_child = 0;
	if (pack)
		tc_signals();
	struct stat st;
	if (path[0] && lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* Something else was at the path: the shim wrote beside it. */
		size_t n = strlen(path);
		snprintf(path + n, sizeof path - n, ".%ld", (long)pid);
	}
	int have = path[0] && stat(path, &st) == 0;
	if (have)
		fprintf(stderr, "mallock: trace written to %s (%lld bytes)\n",
		        path, (long long)st.st_size);
	else if (path[0])
		fprintf(stderr, "mallock: no trace at %s (%s)\n", path,
		        is_static ? "the program is statically linked"
		                  : "see the shim's warnings above");
	if (pack && path[0]) {
		rec_pack_t p = {.level = level};
		double t0 = mono_seconds();
		if (have && S_ISREG(st.st_mode))
			pack_one(&p, path);
		pack_children(&p, path, &started);
		char a[32], b[32], c[40];
		if (p.done)
			fprintf(stderr,
			        "mallock: %s compressed %s -> %s%s in "
			        "%.2f s\n",
			        p.done > 1 ? "traces" : "trace",
			        tc_size(a, sizeof a, p.in),
			        tc_size(b, sizeof b, p.out),
			        tc_per_event(c, sizeof c, p.out,
			                     p.bad ? 0 : p.events),
			        mono_seconds() - t0);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		/* Die of the same signal, as a shell would report it. */
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;
	}
	return RECORD_EXIT_OWN;
}
