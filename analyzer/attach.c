/*
 * attach.c - `mallock attach [-o FILE] [--duration S] PID`: starts recording
 * in a process that is already running, without a restart (docs/server.md,
 * "Attach to a running process").
 *
 * How: gdb, in batch mode, attaches to PID, calls dlopen() on libmallock.so
 * inside it (RTLD_NOW|RTLD_NODELETE), then mallock_attach_impl(OUTPUT, S),
 * which starts the shim and rewrites the GOT slots of the hooked functions
 * in every loaded module (shim/attach.c), and detaches. The function's
 * one-line answer comes back through gdb's output. The process keeps
 * running; `mallock ctl stop|start|status PID` controls it from then on.
 * `mallock detach PID` has gdb call mallock_detach_impl(), which gives
 * every slot back and ends the trace (the library stays mapped).
 *
 * The calls (x86-64): gdb's own `call` saves and restores every register,
 * the vector state included, and gdb 13 cannot write that state back on
 * CPUs with AMX ("Couldn't write extended state status: Bad address"; the
 * process is left broken). So a gdb Python script makes the call itself:
 * it picks a thread stopped inside a system call (its vector registers are
 * not live there: the kernel preserved them, the C code around a system
 * call keeps none across it), saves the general registers, points the
 * thread at the function with a return address at the program's entry
 * point (never executed again) under a breakpoint, lets the process run
 * until the thread gets there, and puts the registers back (the system
 * call is then restarted as after any signal). Elsewhere gdb's `call`.
 *
 * As root, gdb runs with the target's uid and gid when the target is not
 * root and is dumpable: gdb then parses the target's files with no more
 * privilege than their owner (review #22).
 *
 * Before gdb is run, the ptrace permission is checked as the kernel will
 * (same real uid and gid as the target's real, effective and saved ids, a
 * dumpable target, the Yama ptrace_scope), unless this process has
 * CAP_SYS_PTRACE: a refusal is one line naming the reason.
 *
 * Exit status: 0 attached and recording; 1 usage or failure (gdb missing,
 * no such process, the injection failed: one line saying why); 2 refused
 * (ptrace is not permitted for this user, or the kernel refused it).
 */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CAP_SYS_PTRACE_BIT 19
#define GDB_TIMEOUT_S 120
#define DEFAULT_OUTPUT "mallock.%e.%p.trace"

static void attach_usage(FILE *f)
{
	fprintf(f,
	        "usage: mallock attach [options] PID\n"
	        "  -o FILE          write the trace to FILE (%%p: pid, %%e: program "
	        "name;\n"
	        "                   default %s in this directory)\n"
	        "  --duration S     stop recording by itself after S seconds\n"
	        "  --shim PATH      inject this libmallock.so\n"
	        "  --gdb PATH       the gdb to run (default: gdb from PATH)\n"
	        "Injects the shim into the running process PID with gdb. Stop "
	        "recording with\n`mallock ctl stop PID`, or end it with "
	        "`mallock detach PID` (the process then\nruns as before the "
	        "attach; the library stays mapped).\n",
	        DEFAULT_OUTPUT);
}

/* libmallock.so beside this executable (../lib), as record.c finds it. */
static int find_shim(char *out, size_t n)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0)
		return -1;
	self[len] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(path, sizeof path, "%s/../lib/libmallock.so", self);
	char real[PATH_MAX];
	if (!realpath(path, real) || strlen(real) >= n)
		return -1;
	snprintf(out, n, "%s", real);
	return 0;
}

/* An executable named name in PATH (or name itself if it has a '/'). */
static int find_in_path(const char *name, char *out, size_t n)
{
	if (strchr(name, '/')) {
		snprintf(out, n, "%s", name);
		return access(out, X_OK);
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *end = strchr(path, ':');
		size_t len = end ? (size_t)(end - path) : strlen(path);
		if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path,
		                            name) < n &&
		    access(out, X_OK) == 0)
			return 0;
		path += len + (end ? 1 : 0);
	}
	return -1;
}

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

/*
 * Whether the kernel will let gdb (our child, with our credentials) attach
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
		        "forbids every ptrace attach (until reboot)\n", cmd_name);
		return 2;
	}
	if (scope == 2 && !cap) {
		fprintf(stderr,
		        "mallock %s: refused: kernel.yama.ptrace_scope=2 "
		        "lets only root (CAP_SYS_PTRACE) attach to a process; "
		        "run it as root\n", cmd_name);
		return 2;
	}
	long uid[4], gid[4];
	if (status_ids(st, "Uid:", uid) != 0 || status_ids(st, "Gid:", gid)) {
		fprintf(stderr, "mallock %s: cannot read the owner of pid "
		                "%ld\n", cmd_name, pid);
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
		        "user or root may trace it\n", cmd_name,
		        pid, uid[1], me);
		return 2;
	}
	if (gid[0] != mygid || gid[1] != mygid || gid[2] != mygid) {
		fprintf(stderr,
		        "mallock %s: refused: pid %ld runs with gid %ld "
		        "(set-group-ID) and you have gid %ld without "
		        "CAP_SYS_PTRACE: run as root\n", cmd_name,
		        pid, gid[1], mygid);
		return 2;
	}
	struct stat sb;
	snprintf(path, sizeof path, "/proc/%ld", pid);
	if (stat(path, &sb) == 0 && (long)sb.st_uid != me) {
		/* /proc/PID belongs to root when the process is not
		 * dumpable. */
		fprintf(stderr,
		        "mallock %s: refused: pid %ld is not dumpable "
		        "(it changed credentials or called "
		        "prctl(PR_SET_DUMPABLE, 0)): only root may trace it\n",
		        cmd_name, pid);
		return 2;
	}
	if (scope == 1) {
		fprintf(stderr,
		        "mallock %s: refused: kernel.yama.ptrace_scope=1 "
		        "lets a process trace only its own descendants: run "
		        "it as root (or sysctl "
		        "kernel.yama.ptrace_scope=0)\n", cmd_name);
		return 2;
	}
	return 0;
}

/* Nonzero when pid already maps libmallock.so. */
static int has_shim(long pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int found = 0;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, "/libmallock.so") != NULL;
	fclose(f);
	return found;
}

/* Runs gdb with the script, its stdout and stderr into out (NUL-ended),
 * as uid/gid when uid >= 0 (else with our credentials). Returns gdb's exit
 * status, or -1 when it could not run or timed out. */
static int run_gdb(const char *gdb, long pid, const char *script, long uid,
                   long gid, char *out, size_t cap, int *timed_out)
{
	int pfd[2];
	*timed_out = 0;
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return -1;
	char pids[32];
	snprintf(pids, sizeof pids, "%ld", pid);
	pid_t child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		if (uid >= 0 && (setgroups(0, NULL) != 0 ||
		                 setgid((gid_t)gid) != 0 ||
		                 setuid((uid_t)uid) != 0 || setuid(0) == 0)) {
			fprintf(stderr, "cannot drop to uid %ld gid %ld: %s\n",
			        uid, gid, strerror(errno));
			_exit(127);
		}
		execl(gdb, gdb, "-q", "-batch", "-nx", "-iex",
		      "set debuginfod enabled off", "-iex", "set auto-load off",
		      "-p", pids, "-x", script, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", gdb, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	size_t n = 0;
	time_t deadline = time(NULL) + GDB_TIMEOUT_S;
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		char buf[4096];
		ssize_t r = read(pfd[0], buf, sizeof buf);
		if (r > 0) {
			size_t k = (size_t)r < cap - 1 - n ? (size_t)r : cap - 1 - n;
			memcpy(out + n, buf, k);
			n += k;
			continue;
		}
		if (r == 0)
			break;
		if (errno != EAGAIN && errno != EINTR)
			break;
		if (time(NULL) > deadline) {
			*timed_out = 1;
			kill(child, SIGTERM);
			break;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	out[n] = 0;
	close(pfd[0]);
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (*timed_out)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The line of out that starts with tag (without it), or NULL. */
static char *tagged_line(char *out, const char *tag)
{
	char *p = out;
	size_t len = strlen(tag);
	while (p && *p) {
		if (!strncmp(p, tag, len)) {
			char *e = strchr(p, '\n');
			if (e)
				*e = 0;
			return p + len;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* The last non-empty line of gdb's output that is not a banner. */
static void last_lines(const char *out)
{
	const char *p = out;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len && (strstr(p, "ptrace") || strstr(p, "rror") ||
		            strstr(p, "No symbol") || strstr(p, "signal") ||
		            strstr(p, "annot")))
			fprintf(stderr, "  gdb: %.*s\n", (int)len, p);
		p += len + (e ? 1 : 0);
	}
}

/* s as hex digits (for bytes.fromhex in the gdb script: no quoting). */
static void hexstr(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	for (; *s && o + 3 <= cap; s++, o += 2)
		snprintf(out + o, 3, "%02x", (unsigned char)*s);
	out[o] = 0;
}

/* The program's entry point (AT_ENTRY in /proc/PID/auxv), 0 if unknown. */
static unsigned long target_entry(long pid)
{
	char path[64];
	unsigned long v[2], entry = 0;
	snprintf(path, sizeof path, "/proc/%ld/auxv", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (read(fd, v, sizeof v) == (ssize_t)sizeof v && v[0] != 0)
		if (v[0] == 9 /* AT_ENTRY */)
			entry = v[1];
	close(fd);
	return entry;
}

/*
 * The script's first part: mc_call(FN, ARGS) calls FN in the target (ARGS
 * are ints or bytes, bytes passed as NUL-ended copies) and returns its
 * result; mc_say(TAG, P) prints "TAG <C string at P>". On x86-64 the call
 * is made by hand (see the top of this file); elsewhere with gdb's call.
 */
static const char mc_prelude[] =
    "import gdb, struct\n"
    "gdb.execute('set pagination off')\n"
    "gdb.execute('set confirm off')\n"
    "gdb.execute('handle SIGUSR1 SIGUSR2 SIGALRM SIGCHLD SIGPIPE SIGWINCH "
    "SIGURG SIGPROF SIGIO SIGVTALRM nostop noprint pass')\n"
    "MC_MASK = (1 << 64) - 1\n"
    "MC_REGS = ('rax', 'rbx', 'rcx', 'rdx', 'rsi', 'rdi', 'rbp', 'rsp', "
    "'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'rip', 'eflags', "
    "'orig_rax')\n"
    "mc_th = None\n"
    "def mc_reg(n):\n"
    "    return int(gdb.parse_and_eval('$' + n))\n"
    "def mc_set(n, v):\n"
    "    gdb.execute('set $%s = %d' % (n, v))\n"
    "def mc_pick():\n"
    "    for th in sorted(gdb.selected_inferior().threads(), "
    "key=lambda t: t.num):\n"
    "        th.switch()\n"
    "        if mc_reg('orig_rax') >= 0:\n"
    "            return th\n"
    "    raise gdb.GdbError('no thread of the process is waiting in a system "
    "call (all are running): try again at a quieter moment')\n"
    "def mc_call_x86(fn, args):\n"
    "    global mc_th\n"
    "    if mc_th is None:\n"
    "        mc_th = mc_pick()\n"
    "    mc_th.switch()\n"
    "    addr = int(gdb.parse_and_eval('(long)&' + fn))\n"
    "    saved = [(n, mc_reg(n)) for n in MC_REGS]\n"
    "    inf = gdb.selected_inferior()\n"
    "    top = (dict(saved)['rsp'] - 256) & ~15\n"
    "    vals = []\n"
    "    for a in args:\n"
    "        if isinstance(a, bytes):\n"
    "            top = (top - len(a) - 1) & ~15\n"
    "            inf.write_memory(top, a + b'\\0')\n"
    "            vals.append(top)\n"
    "        else:\n"
    "            vals.append(a)\n"
    "    sp = (top - 64) & ~15\n"
    "    inf.write_memory(sp - 8, struct.pack('<Q', MC_ENTRY))\n"
    "    mc_set('orig_rax', -1)\n"
    "    mc_set('rsp', sp - 8)\n"
    "    for n, v in zip(('rdi', 'rsi', 'rdx', 'rcx', 'r8', 'r9'), vals):\n"
    "        mc_set(n, v)\n"
    "    mc_set('rax', 0)\n"
    "    mc_set('rip', addr)\n"
    "    bp = gdb.Breakpoint('*%d' % MC_ENTRY, internal=True)\n"
    "    bp.thread = mc_th.global_num\n"
    "    try:\n"
    "        for i in range(1000):\n"
    "            gdb.execute('continue', to_string=True)\n"
    "            cur = gdb.selected_thread()\n"
    "            if cur is not None and cur.global_num == mc_th.global_num:\n"
    "                if (mc_reg('rip') & MC_MASK) == MC_ENTRY:\n"
    "                    break\n"
    "                raise gdb.GdbError('the call of %s stopped at a fault' "
    "% fn)\n"
    "        else:\n"
    "            raise gdb.GdbError('the call of %s did not return' % fn)\n"
    "    finally:\n"
    "        bp.delete()\n"
    "    mc_th.switch()\n"
    "    r = mc_reg('rax') & MC_MASK\n"
    "    for n, v in saved:\n"
    "        mc_set(n, v)\n"
    "    return r\n"
    "def mc_call_gdb(fn, args):\n"
    "    def lit(a):\n"
    "        if isinstance(a, bytes):\n"
    "            return '\"' + ''.join('\\\\x%02x' % c for c in a) + "
    "'\"'\n"
    "        return '%d' % a\n"
    "    e = '(long)((long(*)())%s)(%s)' % (fn, ', '.join(lit(a) for a in "
    "args))\n"
    "    return int(gdb.parse_and_eval(e)) & MC_MASK\n"
    "def mc_call(fn, args):\n"
    "    return (mc_call_x86 if MC_X86 else mc_call_gdb)(fn, args)\n"
    "def mc_say(tag, p):\n"
    "    inf = gdb.selected_inferior()\n"
    "    out = b''\n"
    "    while p and len(out) < 8192:\n"
    "        n = 4096 - (p + len(out)) % 4096\n"
    "        chunk = bytes(inf.read_memory(p + len(out), min(n, 256)))\n"
    "        if b'\\0' in chunk:\n"
    "            out += chunk[:chunk.index(b'\\0')]\n"
    "            break\n"
    "        out += chunk\n"
    "    print(tag + ' ' + out.decode('utf-8', 'replace'), flush=True)\n";

/* The credentials gdb should run with: the target's uid/gid (*uid >= 0)
 * when we are root and the target is not root, has one uid and one gid,
 * and is dumpable (/proc/PID is then its uid's); else *uid = -1 (our own).
 * Yama's ptrace_scope 1 would forbid that uid to attach: root stays. */
static void gdb_credentials(long pid, long *uid, long *gid)
{
	char path[64], st[8192];
	long u[4], g[4];
	struct stat sb;
	*uid = *gid = -1;
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (geteuid() != 0 || read_text(path, st, sizeof st) != 0 ||
	    status_ids(st, "Uid:", u) != 0 || status_ids(st, "Gid:", g) != 0)
		return;
	snprintf(path, sizeof path, "/proc/%ld", pid);
	if (u[0] == 0 || u[0] != u[1] || u[0] != u[2] || g[0] != g[1] ||
	    g[0] != g[2] || stat(path, &sb) != 0 || (long)sb.st_uid != u[0])
		return;
	char scope[32];
	if (read_text("/proc/sys/kernel/yama/ptrace_scope", scope,
	              sizeof scope) == 0 &&
	    strtol(scope, NULL, 10) != 0)
		return;
	*uid = u[0];
	*gid = g[0];
}

/*
 * Runs gdb on pid with the prelude and body (Python, using mc_call and
 * mc_say), as gdb_credentials() says. Returns gdb's exit status, -1 when it
 * could not run or timed out (*timed_out), -2 after printing why the
 * script could not be written.
 */
static int gdb_session(const char *gdb, long pid, const char *body,
                       char *out, size_t cap, int *timed_out)
{
	unsigned long entry = target_entry(pid);
	if (!entry) {
		fprintf(stderr, "mallock: cannot read the entry point of pid "
		                "%ld (/proc/%ld/auxv)\n", pid, pid);
		return -2;
	}
	char script[] = "/tmp/mallock-attach.XXXXXX.py";
	int fd = mkstemps(script, 3);
	if (fd < 0) {
		fprintf(stderr, "mallock: cannot create a gdb script in /tmp: "
		                "%s\n", strerror(errno));
		return -2;
	}
	long uid, gid;
	gdb_credentials(pid, &uid, &gid);
	if (uid >= 0 && fchown(fd, (uid_t)uid, (gid_t)gid) != 0)
		uid = gid = -1;
	FILE *sf = fdopen(fd, "w");
	fprintf(sf, "MC_ENTRY = %lu\nMC_X86 = %d\n%s", entry,
#if defined(__x86_64__)
	        1,
#else
	        0,
#endif
	        mc_prelude);
	fprintf(sf, "try:\n");
	for (const char *l = body; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		fprintf(sf, "    %.*s\n", (int)len, l);
		l += len + (e ? 1 : 0);
	}
	fprintf(sf, "except (gdb.error, gdb.GdbError) as e:\n"
	            "    print('MALLOCK_GDBERROR ' + str(e), flush=True)\n"
	            "gdb.execute('detach')\n");
	fclose(sf);
	int grc = run_gdb(gdb, pid, script, uid, gid, out, cap, timed_out);
	unlink(script);
	return grc;
}

/* What went wrong when gdb gave no answer of ours: one line (and gdb's own
 * relevant lines). Returns the exit status: 2 refused, 1 otherwise. */
static int gdb_failure(const char *cmd, long pid, char *out, int grc)
{
	char *msg;
	if (strstr(out, "ptrace: Operation not permitted")) {
		fprintf(stderr,
		        "mallock %s: refused: the kernel does not let gdb "
		        "trace pid %ld (ptrace: Operation not permitted; a "
		        "seccomp or container policy, or another tracer)\n",
		        cmd, pid);
		return 2;
	}
	if (strstr(out, "ptrace: No such process")) {
		fprintf(stderr, "mallock %s: no process %ld\n", cmd, pid);
		return 1;
	}
	if ((msg = tagged_line(out, "MALLOCK_GDBERROR "))) {
		fprintf(stderr, "mallock %s: pid %ld: gdb: %s\n", cmd, pid, msg);
		return 1;
	}
	fprintf(stderr,
	        "mallock %s: gdb (exit %d) gave no answer from pid %ld; what "
	        "it said:\n",
	        cmd, grc, pid);
	last_lines(out);
	return 1;
}

int cmd_attach(int argc, char **argv)
{
	const char *output = NULL, *shim_opt = NULL, *gdb_opt = NULL;
	long duration = 0, pid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			attach_usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			output = argv[++i];
		} else if (!strcmp(a, "--duration") && i + 1 < argc) {
			duration = strtol(argv[++i], &end, 10);
			if (*end || duration <= 0 || duration > 31536000) {
				fprintf(stderr, "mallock attach: --duration "
				                "wants whole seconds, 1..31536000\n");
				return 1;
			}
		} else if (!strcmp(a, "--shim") && i + 1 < argc) {
			shim_opt = argv[++i];
		} else if (!strcmp(a, "--gdb") && i + 1 < argc) {
			gdb_opt = argv[++i];
		} else if (a[0] != '-' && !pid) {
			pid = strtol(a, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, "mallock attach: '%s' is not a "
				                "process id\n", a);
				return 1;
			}
		} else {
			attach_usage(stderr);
			return 1;
		}
	}
	if (!pid) {
		attach_usage(stderr);
		return 1;
	}

	int rc = ptrace_permitted(pid);
	if (rc)
		return rc;
	if (has_shim(pid)) {
		fprintf(stderr,
		        "mallock attach: pid %ld already has libmallock.so "
		        "(preloaded, or attached before): use `mallock ctl "
		        "start|stop|status %ld`\n",
		        pid, pid);
		return 1;
	}

	char shim[PATH_MAX], gdb[PATH_MAX];
	if (shim_opt) {
		if (!realpath(shim_opt, shim)) {
			fprintf(stderr, "mallock attach: %s: %s\n", shim_opt,
			        strerror(errno));
			return 1;
		}
	} else if (find_shim(shim, sizeof shim) != 0) {
		fprintf(stderr, "mallock attach: libmallock.so not found beside "
		                "this program (expected ../lib/libmallock.so); "
		                "use --shim PATH\n");
		return 1;
	}
	if (find_in_path(gdb_opt ? gdb_opt : "gdb", gdb, sizeof gdb) != 0) {
		fprintf(stderr,
		        "mallock attach: gdb is needed to inject the shim into "
		        "a running process and was not found%s%s (Debian/Ubuntu: "
		        "apt-get install gdb; Fedora: dnf install gdb)\n",
		        gdb_opt ? ": " : " in PATH", gdb_opt ? gdb_opt : "");
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
		fprintf(stderr, "mallock attach: cannot get the current "
		                "directory: %s\n", strerror(errno));
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
	char h_shim[2 * PATH_MAX + 1], h_out[2 * (PATH_MAX + 64) + 1];
	hexstr(shim, h_shim, sizeof h_shim);
	hexstr(out_abs, h_out, sizeof h_out);
	/* 0x1002 = RTLD_NOW | RTLD_NODELETE: the GOT slots will point into
	 * the shim for the rest of the process's life. */
	char body[sizeof h_shim + sizeof h_out + 512];
	snprintf(body, sizeof body,
	         "h = mc_call('dlopen', [bytes.fromhex('%s'), 0x1002])\n"
	         "if h == 0:\n"
	         "    mc_say('MALLOCK_DLERROR', mc_call('dlerror', []))\n"
	         "else:\n"
	         "    mc_say('MALLOCK_ATTACH', mc_call('mallock_attach_impl', "
	         "[bytes.fromhex('%s'), %ld]))\n",
	         h_shim, h_out, duration);
	static char out[1 << 16];
	int timed_out;
	int grc = gdb_session(gdb, pid, body, out, sizeof out, &timed_out);
	if (grc == -2)
		return 1;
	if (timed_out) {
		fprintf(stderr,
		        "mallock attach: gdb did not finish within %d s "
		        "(the process may be stopped inside the allocator or "
		        "the dynamic loader); it was stopped\n",
		        GDB_TIMEOUT_S);
		return 1;
	}
	char *msg;
	if ((msg = tagged_line(out, "MALLOCK_ATTACH "))) {
		if (!strncmp(msg, "ok ", 3)) {
			unsigned patched = 0, modules = 0, skipped = 0;
			int used = 0;
			sscanf(msg + 3, "%u %u %u %n", &patched, &modules,
			       &skipped, &used);
			char *path = msg + 3 + used, *detail = strchr(path, '\t');
			if (detail)
				*detail++ = 0;
			printf("pid %ld: recording (mallock attach): %u call "
			       "slots in %u modules redirected to the shim\n"
			       "  trace %s\n",
			       pid, patched, modules, path);
			if (duration)
				printf("  recording stops by itself after %ld s\n",
				       duration);
			printf("  stop with `mallock ctl stop %ld`; the trace is "
			       "complete when the process exits or at `mallock "
			       "detach %ld`\n",
			       pid, pid);
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
	if ((msg = tagged_line(out, "MALLOCK_DLERROR "))) {
		fprintf(stderr,
		        "mallock attach: pid %ld: dlopen(%s) failed inside the "
		        "process: %s\n",
		        pid, shim, msg);
		return 1;
	}
	return gdb_failure("attach", pid, out, grc);
}

static void detach_usage(FILE *f)
{
	fprintf(f, "usage: mallock detach [--gdb PATH] PID\n"
	           "Undoes `mallock attach PID`: every call slot the attach "
	           "redirected gets its old\nvalue back, the trace is "
	           "written to its end, and the process runs on as before\n"
	           "the attach (libmallock.so stays mapped, unused).\n");
}

int cmd_detach(int argc, char **argv)
{
	const char *gdb_opt = NULL;
	long pid = 0;
	cmd_name = "detach";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			detach_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--gdb") && i + 1 < argc) {
			gdb_opt = argv[++i];
		} else if (a[0] != '-' && !pid) {
			pid = strtol(a, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, "mallock detach: '%s' is not a "
				                "process id\n", a);
				return 1;
			}
		} else {
			detach_usage(stderr);
			return 1;
		}
	}
	if (!pid) {
		detach_usage(stderr);
		return 1;
	}
	int rc = ptrace_permitted(pid);
	if (rc)
		return rc;
	if (!has_shim(pid)) {
		fprintf(stderr, "mallock detach: pid %ld has no libmallock.so: "
		                "nothing to detach\n", pid);
		return 1;
	}
	char gdb[PATH_MAX];
	if (find_in_path(gdb_opt ? gdb_opt : "gdb", gdb, sizeof gdb) != 0) {
		fprintf(stderr, "mallock detach: gdb is needed and was not "
		                "found%s%s (apt-get install gdb)\n",
		        gdb_opt ? ": " : " in PATH", gdb_opt ? gdb_opt : "");
		return 1;
	}
	static char out[1 << 16];
	int timed_out;
	int grc = gdb_session(gdb, pid,
	                      "mc_say('MALLOCK_DETACH', "
	                      "mc_call('mallock_detach_impl', []))\n",
	                      out, sizeof out, &timed_out);
	if (grc == -2)
		return 1;
	if (timed_out) {
		fprintf(stderr, "mallock detach: gdb did not finish within %d "
		                "s; it was stopped\n", GDB_TIMEOUT_S);
		return 1;
	}
	char *msg = tagged_line(out, "MALLOCK_DETACH ");
	if (!msg)
		return gdb_failure("detach", pid, out, grc);
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
		       "attach: left as they are\n", changed);
	return 0;
}
