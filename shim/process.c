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
#include <stdio.h>
#include <string.h>

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

int process_open_output(int child)
{
	char exe[512], path[CONFIG_PATH_MAX], alt[CONFIG_PATH_MAX + 32];
	uint32_t pid = prim_getpid();
	if (config_output_path(path, sizeof path, pid, exe_base(exe, sizeof exe),
	                       child) != 0) {
		shim_warn("MALLOCK_OUTPUT expands to a path longer than %d "
		          "bytes; recording off",
		          CONFIG_PATH_MAX);
		return -1;
	}
	int err = writer_open(path);
	if (err == EEXIST) {
		/* Never overwrite, never follow a symlink: pick a new name. */
		for (int i = 0; i < 100 && err == EEXIST; i++) {
			if (i == 0)
				snprintf(alt, sizeof alt, "%s.%u", path, pid);
			else
				snprintf(alt, sizeof alt, "%s.%u.%d", path, pid, i);
			err = writer_open(alt);
		}
		if (!err) {
			snprintf(g_trace_path, sizeof g_trace_path, "%s", alt);
			if (!child)
				shim_warn("%s exists; tracing to %s", path, alt);
			else
				shim_info("tracing to %s", alt);
			return 0;
		}
	}
	if (err) {
		shim_warn("cannot create trace file %s: %s; recording off", path,
		          strerror(err));
		return -1;
	}
	snprintf(g_trace_path, sizeof g_trace_path, "%s", path);
	shim_info("tracing to %s", path);
	return 0;
}

void process_write_header(void)
{
	static uint8_t body[3 * FMT_STR_MAX + 16 * FMT_VARINT_MAX + 64];
	char exe[1024], cmdline[FMT_STR_MAX], host[256], comm[64];
	uint64_t tsc, mono;
	uint8_t *p = body;

	prim_exe_path(exe, sizeof exe);
	ssize_t cl = prim_read_file("/proc/self/cmdline", cmdline, sizeof cmdline);
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
