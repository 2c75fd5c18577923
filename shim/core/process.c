/*
 * process.c - the trace file's opening records (process.h).
 */
#include "process.h"

#include "config.h"
#include "modules.h"
#include "note.h"
#include "prim.h"
#include "trace_format.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef MALLOCK_VERSION
#define MALLOCK_VERSION "0"
#endif

uint64_t g_tsc_hz;
char g_trace_path[1100];

static const char *exe_base(char *buf, size_t cap)
{
	prim_exe_path(buf, cap);
	const char *slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

/*
 * Where this process image's traces go, fixed at its first open (review
 * #16: a forked child resolved the pattern at its first write, after
 * daemon()'s chdir("/"), a chroot or a setuid, and traced to / or not at
 * all). base_dirfd: the output directory (O_PATH, high fd), when the
 * pattern's directory part names the same directory for every process (no
 * '%' in it); base_abs: that directory's absolute path ("" when the pattern
 * is relative and the working directory is unknown). A child creates its
 * file with openat(base_dirfd) while that fd is still the directory (a
 * daemon may have closed it), else by the absolute path.
 */
static int base_ready;
static int base_dirfd = -1;
static prim_fid_t base_fid;
static char base_cwd[CONFIG_PATH_MAX];

static void base_setup(void)
{
	base_ready = 1;
	const char *pat = g_cfg.output;
	const char *slash = strrchr(pat, '/');
	char dir[CONFIG_PATH_MAX];
	size_t dlen = slash ? (size_t)(slash - pat) : 1;
	if (slash && dlen == 0)
		dlen = 1; /* "/name" */
	memcpy(dir, slash ? pat : ".", dlen);
	dir[dlen] = 0;
	prim_getcwd(base_cwd, sizeof base_cwd);
	if (base_cwd[0] != '/')
		base_cwd[0] = 0;
	if (strchr(dir, '%'))
		return; /* per-process directory: resolved by path */
	base_dirfd = prim_open_dir(dir);
	if (base_dirfd >= 0) {
		prim_fid(base_dirfd, &base_fid);
		prim_fd_keep(PRIM_KEEP_OUTDIR, base_dirfd);
	}
}

/* Creates the file named by the expanded pattern path: by base_dirfd and
 * its last component when the directory is fixed and the fd still is it,
 * else by the absolute path (relative paths are taken from the working
 * directory at start). Sets g_trace_path (absolute when known). */
static int open_expanded(const char *path)
{
	char abs[sizeof g_trace_path];
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	const char *rel = path[0] == '.' && path[1] == '/' ? path + 2 : path;
	if (path[0] == '/' || !base_cwd[0])
		snprintf(abs, sizeof abs, "%s", path);
	else
		snprintf(abs, sizeof abs, "%s%s%s", base_cwd,
		         base_cwd[1] ? "/" : "", rel);
	int err;
	if (base_dirfd >= 0 && prim_fid_same(base_dirfd, &base_fid))
		err = writer_open(base_dirfd, name, abs);
	else
		err = writer_open(-100 /* AT_FDCWD */, abs, abs);
	if (!err)
		snprintf(g_trace_path, sizeof g_trace_path, "%s", abs);
	return err;
}

int process_open_output(int child)
{
	char exe[512], path[CONFIG_PATH_MAX], alt[CONFIG_PATH_MAX + 32];
	uint32_t pid = prim_getpid();
	if (!base_ready)
		base_setup();
	if (config_output_path(path, sizeof path, pid,
	                       exe_base(exe, sizeof exe), child) != 0) {
		shim_warn("MALLOCK_OUTPUT expands to a path longer than %d "
		          "bytes; recording off",
		          CONFIG_PATH_MAX);
		return -1;
	}
	int err = open_expanded(path);
	if (err == EEXIST) {
		/* Never overwrite, never follow a symlink: pick a new name. */
		for (int i = 0; i < 100 && err == EEXIST; i++) {
			if (i == 0)
				snprintf(alt, sizeof alt, "%s.%u", path, pid);
			else
				snprintf(alt, sizeof alt, "%s.%u.%d", path, pid,
				         i);
			err = open_expanded(alt);
		}
		if (!err) {
			if (!child)
				shim_warn("%s exists; tracing to %s", path,
				          g_trace_path);
			else
				shim_info("tracing to %s", g_trace_path);
			return 0;
		}
	}
	if (err) {
		shim_warn("cannot create trace file %s: %s; recording off",
		          path, prim_strerror(err));
		return -1;
	}
	shim_info("tracing to %s", g_trace_path);
	return 0;
}

void process_drop_unrecorded(void)
{
	if (!writer_unrecorded() || note_warning_count() || !g_trace_path[0])
		return;
	const char *slash = strrchr(g_trace_path, '/');
	const char *name = slash ? slash + 1 : g_trace_path;
	/* Only the file itself, by the directory fd while it is still the
	 * output directory, else by its absolute path. */
	if (base_dirfd >= 0 && prim_fid_same(base_dirfd, &base_fid)) {
		if (writer_is_file(base_dirfd, name))
			unlinkat(base_dirfd, name, 0);
	} else if (g_trace_path[0] == '/' &&
	           writer_is_file(-100 /* AT_FDCWD */, g_trace_path)) {
		unlinkat(-100 /* AT_FDCWD */, g_trace_path, 0);
	}
}

const char *process_trace_path(void)
{
	return g_trace_path;
}

void process_write_header(void)
{
	static uint8_t body[3 * FMT_STR_MAX + 16 * FMT_VARINT_MAX + 64];
	char exe[1024], cmdline[FMT_STR_MAX], host[256], comm[64];
	uint64_t tsc, mono;
	uint8_t *p = body;

	prim_exe_path(exe, sizeof exe);
	ssize_t cl =
	    prim_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
	if (cl < 0)
		cl = 0;
	while (cl > 0 && cmdline[cl - 1] == 0)
		cl--; /* argv joined with NUL bytes, no trailing NUL */
	prim_hostname(host, sizeof host);
	prim_clock_pair(&tsc, &mono);

	p = fmt_put_u(p, prim_getpid());
	p = fmt_put_u(p, prim_getppid());
	p = fmt_put_u(p, prim_realtime_ns());
	p = fmt_put_u(p, tsc);
	p = fmt_put_u(p, mono);
	p = fmt_put_u(p, g_tsc_hz);
	p = fmt_put_u(p, (uint64_t)g_cfg.depth);
	p = fmt_put_u(p, (uint64_t)g_cfg.unwind);
	/* 1.1: flags and the sampling interval (docs/trace-format.md). */
	p = fmt_put_u(p, (g_cfg.start_paused ? FMT_PROCF_START_PAUSED : 0u) |
	                     (g_cfg.sample_bytes ? FMT_PROCF_SAMPLED : 0u) |
	                     (g_cfg.max_bytes ? FMT_PROCF_CAPPED_SIZE : 0u));
	p = fmt_put_str(p, exe, strlen(exe));
	p = fmt_put_str(p, cmdline, (size_t)cl);
	p = fmt_put_str(p, host, strlen(host));
	p = fmt_put_str(p, MALLOCK_VERSION, strlen(MALLOCK_VERSION));
	p = fmt_put_u(p, (uint64_t)g_cfg.sample_bytes);
	p = fmt_put_u(p, (uint64_t)g_cfg.max_bytes);
	p = fmt_put_u(p, (uint64_t)g_cfg.time_every); /* 1.4 */
	p = fmt_put_u(p, (uint64_t)g_cfg.hold_every); /* 1.6 */

	writer_proc_begin();
	writer_proc_meta(FMT_PROCESS, body, (size_t)(p - body));
	writer_proc_end();
	modules_emit(); /* not under proc_lock (modules.c: lock order) */
	writer_proc_begin();
	ssize_t n = prim_read_file("/proc/thread-self/comm", comm, sizeof comm);
	while (n > 0 && (comm[n - 1] == '\n' || comm[n - 1] == 0))
		n--;
	if (n > 0) {
		p = body;
		p = fmt_put_u(p, prim_gettid());
		p = fmt_put_str(p, comm, (size_t)n);
		writer_proc_meta(FMT_THREAD_NAME, body, (size_t)(p - body));
	}
	writer_proc_end();
	writer_notes();
}
