/*
 * attach.c - `mallock attach [-o FILE] [--duration S] PID`: starts recording
 * in a process that is already running, without a restart (docs/server.md,
 * "Attach to a running process").
 *
 * How: with ptrace (inject.c, no debugger), one thread of PID calls
 * dlopen() on libmallock.so (RTLD_NOW|RTLD_NODELETE), then
 * mallock_attach_impl(OUTPUT, S), which starts the shim and rewrites the GOT
 * slots of the hooked functions in every loaded module (shim/control/attach.c).
 * The function's one-line answer is read back from the process, whose thread is
 * then restored and released. The process keeps running; `mallock ctl
 * stop|start|status PID` controls it from then on.
 *
 * `mallock detach PID` makes the process call mallock_detach_impl() the
 * same way, which gives every redirected slot back and ends the trace (the
 * library stays mapped). A later `mallock attach PID` calls
 * mallock_attach_impl() of that mapped copy again (dlopen of its path
 * returns the loaded object: no second copy, which would not fit in
 * glibc's static TLS surplus): the shim starts a new, complete trace
 * (shim/control/attach.c, attach_again), and can be detached again.
 *
 * As root, the injection runs with the target's uid and gid when the
 * target is not root: the target's files (its libc's symbol table) are
 * then read with no more privilege than their owner has. A
 * target that is not dumpable (a daemon started by root that dropped to
 * its user with setuid(), as mariadbd --user=mysql) can be traced only with
 * CAP_SYS_PTRACE: that one capability is kept across the drop, every other
 * is given up (so no file is opened with root's rights).
 *
 * Dumpable or not is read from the owner of /proc/PID/stat (root when the
 * process is not dumpable), never of /proc/PID: a directory of a process
 * always shows its effective uid, so mallock took a non-dumpable mariadbd
 * for a dumpable one, dropped every privilege and could not read its maps.
 *
 * Before ptrace is used, the permission is checked as the kernel will
 * (same real uid and gid as the target's real, effective and saved ids, a
 * dumpable target, the Yama ptrace_scope), unless this process has
 * CAP_SYS_PTRACE: a refusal is one line naming the reason.
 *
 * Exit status (cli.h): 0 attached and recording; 1 a failure (no such
 * process, the injection failed: one line saying why); 2 a usage error,
 * or refused (ptrace is not permitted for this user, or the kernel
 * refused it).
 */
#define _GNU_SOURCE
#include "cli.h"
#include "inject.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h> /* optarg, optind */
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19
#define INJECT_TIMEOUT_S 120
#define DEFAULT_OUTPUT "mallock.%e.%p.trace"

enum { OPT_DURATION = 256, OPT_SHIM };

static const cli_opt_t attach_opts[] = {
    {"output", 'o', 1, "FILE",
     "write the trace to FILE (%p: pid, %e: program "
     "name;\ndefault " DEFAULT_OUTPUT " in this directory)"},
    {"duration", OPT_DURATION, 1, "S",
     "stop recording by itself after S seconds"},
    {"shim", OPT_SHIM, 1, "PATH", "inject this libmallock.so"},
    {"help", 'h', 0, NULL, "this help"},
    {0}};

static const cli_cmd_t attach_cli = {
    .name = "attach",
    .usage = "[options] PID",
    .outro = "Injects the shim into the running process PID with ptrace. "
             "Stop recording with\n`mallock ctl stop PID`, undo it with "
             "`mallock detach PID`.\n",
    .opts = attach_opts,
    .operands = "PID (the process to attach to)",
    .min_operands = 1,
    .max_operands = 1,
};

static const cli_opt_t detach_opts[] = {{"help", 'h', 0, NULL, "this help"},
                                        {0}};

static const cli_cmd_t detach_cli = {
    .name = "detach",
    .usage = "PID",
    .intro = "Undoes `mallock attach PID`: every call slot the attach "
             "redirected gets its old\nvalue back, the trace is written "
             "to its end, and the process runs on as before\nthe attach "
             "(libmallock.so stays mapped, unused).\n",
    .opts = detach_opts,
    .operands = "PID (the process to detach from)",
    .min_operands = 1,
    .max_operands = 1,
};

/* The four ids of a "Uid:" or "Gid:" line of /proc/PID/status. */
static int status_ids(const char *status, const char *key, long ids[4])
{
	const char *p = strstr(status, key);
	if (!p)
		return -1;
	return sscanf(p + strlen(key), "%ld %ld %ld %ld", &ids[0], &ids[1],
	              &ids[2], &ids[3]) == 4
	           ? 0
	           : -1;
}

static int read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

static int have_cap_sys_ptrace(void)
{
	char st[8192];
	unsigned long long eff = 0;
	if (read_text("/proc/self/status", st, sizeof st) != 0)
		return 0;
	const char *p = strstr(st, "CapEff:");
	return p && sscanf(p + 7, "%llx", &eff) == 1 &&
	       (eff >> CAP_SYS_PTRACE_BIT) & 1;
}

/* Whether pid is dumpable: its /proc/PID/stat belongs to its effective
 * uid euid (root's when it is not dumpable; a /proc/PID directory shows
 * euid either way). 1, 0, or -1 when it cannot be told. */
static int dumpable(long pid, long euid)
{
	char path[64];
	struct stat sb;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (stat(path, &sb) != 0)
		return -1;
	return (long)sb.st_uid == euid;
}

/*
 * Whether the kernel will let this process ptrace-attach
 * to pid. Returns 0, or 2 after printing one line saying why not, or 1 when
 * there is no such process.
 */
/* "attach" or "detach": the command whose messages these are. */
static const char *cmd_name = "attach";

static int ptrace_permitted(long pid)
{
	char path[64], st[8192];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (read_text(path, st, sizeof st) != 0) {
		fprintf(stderr, "mallock %s: no process %ld\n", cmd_name, pid);
		return 1;
	}
	if (pid == (long)getpid()) {
		fprintf(stderr, "mallock %s: pid %ld is mallock itself\n",
		        cmd_name, pid);
		return 1;
	}
	int cap = have_cap_sys_ptrace();
	char scope_s[32];
	long scope = 0;
	if (read_text("/proc/sys/kernel/yama/ptrace_scope", scope_s,
	              sizeof scope_s) == 0)
		scope = strtol(scope_s, NULL, 10);
	if (scope >= 3) {
		fprintf(stderr,
		        "mallock %s: refused: kernel.yama.ptrace_scope=3 "
		        "forbids every ptrace attach (until reboot)\n",
		        cmd_name);
		return 2;
	}
	if (scope == 2 && !cap) {
		fprintf(stderr,
		        "mallock %s: refused: kernel.yama.ptrace_scope=2 "
		        "lets only root (CAP_SYS_PTRACE) attach to a process; "
		        "run it as root\n",
		        cmd_name);
		return 2;
	}
	long uid[4], gid[4];
	if (status_ids(st, "Uid:", uid) != 0 || status_ids(st, "Gid:", gid)) {
		fprintf(stderr,
		        "mallock %s: cannot read the owner of pid "
		        "%ld\n",
		        cmd_name, pid);
		return 1;
	}
	if (cap)
		return 0;
	long me = (long)getuid(), mygid = (long)getgid();
	/* PTRACE_MODE_ATTACH_REALCREDS: our real ids against the target's
	 * real, effective and saved ids. */
	if (uid[0] != me || uid[1] != me || uid[2] != me) {
		fprintf(stderr,
		        "mallock %s: refused: pid %ld runs as uid %ld and "
		        "you are uid %ld without CAP_SYS_PTRACE: only its own "
		        "user or root may trace it\n",
		        cmd_name, pid, uid[1], me);
		return 2;
	}
	if (gid[0] != mygid || gid[1] != mygid || gid[2] != mygid) {
		fprintf(stderr,
		        "mallock %s: refused: pid %ld runs with gid %ld "
		        "(set-group-ID) and you have gid %ld without "
		        "CAP_SYS_PTRACE: run as root\n",
		        cmd_name, pid, gid[1], mygid);
		return 2;
	}
	if (dumpable(pid, uid[1]) == 0) {
		fprintf(stderr,
		        "mallock %s: refused: pid %ld is not dumpable "
		        "(it changed credentials, e.g. started as root and "
		        "dropped to uid %ld, or called "
		        "prctl(PR_SET_DUMPABLE, 0)): only root "
		        "(CAP_SYS_PTRACE) may trace it\n",
		        cmd_name, pid, uid[1]);
		return 2;
	}
	if (scope == 1) {
		fprintf(stderr,
		        "mallock %s: refused: kernel.yama.ptrace_scope=1 "
		        "lets a process trace only its own descendants: run "
		        "it as root (or sysctl "
		        "kernel.yama.ptrace_scope=0)\n",
		        cmd_name);
		return 2;
	}
	return 0;
}

static int mapped_shim(long pid, char *out, size_t n);

/* Nonzero when pid has a libmallock.so that an attach must not touch: one
 * preloaded (its LD_PRELOAD names it), or another file than shim; 2 when
 * it is one detached (its page's name removed): that copy starts a new
 * trace, whatever file shim names. The same
 * file, loaded by an earlier attach, is left to the shim to answer: one
 * whose attach failed (its trace could not be created) was left as it
 * was, not started, and starts now. A started one (it maps its control
 * page) is refused here. */
static int has_shim(long pid, const char *shim)
{
	char path[64], mapped[PATH_MAX];
	if (mapped_shim(pid, mapped, sizeof mapped) != 0)
		return 0;
	static char env[1 << 16];
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, env, sizeof env - 1) : -1;
	if (fd >= 0)
		close(fd);
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(env + i) + 1) {
		env[len] = 0;
		if (!strncmp(env + i, "LD_PRELOAD=", 11) &&
		    strstr(env + i, "libmallock.so"))
			return 1;
	}
	/* A started shim maps its control page: refused without injecting. */
	char line[PATH_MAX + 128], page[48];
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	snprintf(page, sizeof page, "/%ld.page", pid);
	FILE *f = fopen(path, "re");
	int started = 0;
	while (f && !started && fgets(line, sizeof line, f))
		started = strstr(line, page) != NULL;
	if (f)
		fclose(f);
	/* `mallock detach` removes the page's name, the mapping stays. */
	if (started && strstr(line, " (deleted)"))
		return 2;
	if (started)
		return 1;
	struct stat a, b;
	return strstr(mapped, " (deleted)") || stat(mapped, &a) != 0 ||
	       stat(shim, &b) != 0 || a.st_dev != b.st_dev ||
	       a.st_ino != b.st_ino;
}

/* The credentials to inject with: the target's uid/gid (*uid >= 0)
 * when we are root and the target is not root and has one uid and one
 * gid; else *uid = -1 (our own). *keep_ptrace: the target is not dumpable,
 * so CAP_SYS_PTRACE must be kept. Yama's ptrace_scope 1 would forbid that
 * uid to attach a dumpable target: root stays. */
static void target_credentials(long pid, long *uid, long *gid,
                               bool *keep_ptrace)
{
	char path[64], st[8192];
	long u[4], g[4];
	*uid = *gid = -1;
	*keep_ptrace = false;
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (geteuid() != 0 || read_text(path, st, sizeof st) != 0 ||
	    status_ids(st, "Uid:", u) != 0 || status_ids(st, "Gid:", g) != 0)
		return;
	int d = dumpable(pid, u[1]);
	if (u[0] == 0 || u[0] != u[1] || u[0] != u[2] || g[0] != g[1] ||
	    g[0] != g[2] || d < 0)
		return;
	char scope[32];
	if (d &&
	    read_text("/proc/sys/kernel/yama/ptrace_scope", scope,
	              sizeof scope) == 0 &&
	    strtol(scope, NULL, 10) != 0)
		return;
	*uid = u[0];
	*gid = g[0];
	*keep_ptrace = !d;
}

/* Only CAP_SYS_PTRACE, effective and permitted (after a setuid() that
 * kept the permitted set): 0, or -1 with errno. */
static int only_cap_sys_ptrace(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct c[2];
	memset(c, 0, sizeof c);
	c[0].effective = c[0].permitted = 1u << CAP_SYS_PTRACE_BIT;
	return (int)syscall(SYS_capset, &h, c);
}

/* Drops this process to the credentials target_credentials() names, for
 * the injection; for a target that is not dumpable, with CAP_SYS_PTRACE
 * kept (*kept). 0, or -1 after printing why (then nothing is done). */
static int drop_to_target(long pid, long *uid, bool *kept)
{
	long gid;
	target_credentials(pid, uid, &gid, kept);
	if (*uid < 0)
		return 0;
	if ((*kept && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) ||
	    setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0 ||
	    setuid((uid_t)*uid) != 0 || (*kept && only_cap_sys_ptrace()) ||
	    setuid(0) == 0) {
		fprintf(stderr,
		        "mallock %s: cannot drop to uid %ld gid %ld%s: "
		        "%s\n",
		        cmd_name, *uid, gid,
		        *kept ? " keeping CAP_SYS_PTRACE" : "",
		        strerror(errno));
		return -1;
	}
	return 0;
}

int cmd_attach(int argc, char **argv)
{
	const char *output = NULL, *shim_opt = NULL;
	long duration = 0, pid = 0;
	cli_t cli = {.cmd = &attach_cli};
	int c;
	while ((c = cli_next(&cli, argc, argv)) != -1) {
		if (c == CLI_DONE)
			return cli.status;
		if (c == 'o')
			output = optarg;
		else if (c == OPT_SHIM)
			shim_opt = optarg;
		else if (c == OPT_DURATION &&
		         cli_number("attach", "--duration (seconds)", optarg, 1,
		                    31536000, &duration))
			return CLI_EXIT_USAGE;
	}
	if (cli_number("attach", "process id", argv[optind], 1, CLI_PID_MAX,
	               &pid))
		return CLI_EXIT_USAGE;

	int rc = ptrace_permitted(pid);
	if (rc)
		return rc;
	char shim[PATH_MAX];
	if (shim_opt) {
		if (!realpath(shim_opt, shim)) {
			fprintf(stderr, "mallock attach: %s: %s\n", shim_opt,
			        strerror(errno));
			return 1;
		}
	} else if (find_shim(shim, sizeof shim) != 0) {
		fprintf(stderr,
		        "mallock attach: libmallock.so not found beside "
		        "this program (expected " MALLOCK_SHIM_INSTALLED
		        " or " MALLOCK_SHIM_BUILD "); use --shim PATH\n");
		return 1;
	}
	int has = has_shim(pid, shim);
	if (has == 2) {
		/* Attached and detached before: its own copy, still mapped,
		 * starts a new trace (a second copy would not load: glibc's
		 * static TLS surplus, 1664 bytes by default, holds one). */
		if (mapped_shim(pid, shim, sizeof shim) != 0) {
			fprintf(stderr,
			        "mallock attach: pid %ld: its libmallock.so "
			        "is no longer mapped\n",
			        pid);
			return 1;
		}
		char *del = strstr(shim, " (deleted)");
		if (del)
			*del = 0; /* dlopen finds the loaded one by name */
		has = 0;
	}
	if (has) {
		fprintf(stderr,
		        "mallock attach: pid %ld already has libmallock.so "
		        "(preloaded, or attached before): use `mallock ctl "
		        "start|stop|status %ld`\n",
		        pid, pid);
		return 1;
	}

	/* The trace path: relative to this directory, not the target's. */
	char out_abs[PATH_MAX + 64], cwd[PATH_MAX];
	const char *pat = output ? output : DEFAULT_OUTPUT;
	if (pat[0] == '/')
		snprintf(out_abs, sizeof out_abs, "%s", pat);
	else if (getcwd(cwd, sizeof cwd))
		snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, pat);
	else {
		fprintf(stderr,
		        "mallock attach: cannot get the current "
		        "directory: %s\n",
		        strerror(errno));
		return 1;
	}
	if (output) {
		/* As `mallock record -o`: replace an old regular file (the
		 * shim itself never overwrites one). */
		struct stat sb;
		if (!strchr(out_abs, '%') && lstat(out_abs, &sb) == 0 &&
		    S_ISREG(sb.st_mode))
			unlink(out_abs);
	}
	long as_uid = -1;
	bool kept = false;
	if (drop_to_target(pid, &as_uid, &kept) != 0)
		return 1;
	static char answer[4096];
	char err[1024];
	int irc = inj_dlcall((pid_t)pid, shim, "mallock_attach_impl", out_abs,
	                     duration, INJECT_TIMEOUT_S, answer, sizeof answer,
	                     err, sizeof err);
	if (irc) {
		fprintf(stderr, "mallock attach: %s%s\n",
		        irc == INJ_REFUSED ? "refused: " : "", err);
		return irc == INJ_REFUSED ? 2 : 1;
	}
	char *msg = answer;
	/* The shim's warnings follow its answer, one "warning TEXT" line
	 * each (it writes nothing to the process's own stderr). */
	char *warn = strchr(msg, '\n');
	if (warn)
		*warn++ = 0;
	while (warn && *warn) {
		char *next = strchr(warn, '\n');
		if (next)
			*next++ = 0;
		if (!strncmp(warn, "warning ", 8))
			fprintf(stderr,
			        "mallock attach: pid %ld: warning: %s\n", pid,
			        warn + 8);
		warn = next;
	}
	if (!strncmp(msg, "ok ", 3)) {
		unsigned patched = 0, modules = 0, skipped = 0;
		int used = 0;
		sscanf(msg + 3, "%u %u %u %n", &patched, &modules, &skipped,
		       &used);
		char *path = msg + 3 + used, *detail = strchr(path, '\t');
		if (detail)
			*detail++ = 0;
		printf("pid %ld: recording (mallock attach): %u call "
		       "slots in %u modules redirected to the shim\n"
		       "  trace %s\n",
		       pid, patched, modules, path);
		if (as_uid >= 0)
			printf("  injected as uid %ld (the process's own "
			       "user)%s\n",
			       as_uid,
			       kept ? " with CAP_SYS_PTRACE (it is not "
			              "dumpable)"
			            : "");
		if (duration)
			printf("  recording stops by itself after %ld s\n",
			       duration);
		printf("  stop with `mallock ctl stop %ld`; the trace is "
		       "complete when the process exits\n",
		       pid);
		if (skipped)
			printf("  %u slots left alone: %s\n", skipped,
			       detail ? detail : "");
		if (!patched)
			fprintf(stderr,
			        "mallock attach: warning: no call was "
			        "redirected: nothing will be recorded\n");
		return 0;
	}
	fprintf(stderr, "mallock attach: pid %ld: %s\n", pid,
	        !strncmp(msg, "error ", 6) ? msg + 6 : msg);
	return 1;
}

/* The path of the libmallock.so pid maps, into out. 0, or -1. */
static int mapped_shim(long pid, char *out, size_t n)
{
	char path[64], line[PATH_MAX + 128];
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int rc = -1;
	while (rc && fgets(line, sizeof line, f)) {
		char *p = strchr(line, '/');
		if (!p || !strstr(p, "/libmallock.so"))
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(out, n, "%s", p);
		rc = 0;
	}
	fclose(f);
	return rc;
}

int cmd_detach(int argc, char **argv)
{
	long pid = 0;
	cmd_name = "detach";
	cli_t cli = {.cmd = &detach_cli};
	int c;
	while ((c = cli_next(&cli, argc, argv)) != -1)
		if (c == CLI_DONE)
			return cli.status;
	if (cli_number("detach", "process id", argv[optind], 1, CLI_PID_MAX,
	               &pid))
		return CLI_EXIT_USAGE;
	int rc = ptrace_permitted(pid);
	if (rc)
		return rc;
	char shim[PATH_MAX];
	if (mapped_shim(pid, shim, sizeof shim) != 0) {
		fprintf(stderr,
		        "mallock detach: pid %ld has no libmallock.so: "
		        "nothing to detach\n",
		        pid);
		return 1;
	}
	long as_uid = -1;
	bool kept = false;
	if (drop_to_target(pid, &as_uid, &kept) != 0)
		return 1;
	static char answer[4096];
	char err[1024];
	int irc = inj_dlcall((pid_t)pid, shim, "mallock_detach_impl", NULL, 0,
	                     INJECT_TIMEOUT_S, answer, sizeof answer, err,
	                     sizeof err);
	if (irc) {
		fprintf(stderr, "mallock detach: %s%s\n",
		        irc == INJ_REFUSED ? "refused: " : "", err);
		return irc == INJ_REFUSED ? 2 : 1;
	}
	char *msg = answer;
	if (strncmp(msg, "ok ", 3)) {
		fprintf(stderr, "mallock detach: pid %ld: %s\n", pid,
		        !strncmp(msg, "error ", 6) ? msg + 6 : msg);
		return 1;
	}
	unsigned restored = 0, changed = 0;
	int used = 0;
	sscanf(msg + 3, "%u %u %n", &restored, &changed, &used);
	printf("pid %ld: detached: %u call slots restored; nothing is "
	       "recorded from now on\n  trace %s (complete)\n",
	       pid, restored, msg + 3 + used);
	if (changed)
		printf("  %u slots were rewritten by someone else since the "
		       "attach: left as they are\n",
		       changed);
	return 0;
}
