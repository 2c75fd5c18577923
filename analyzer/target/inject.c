/*
 * inject.c - a function call inside another process, with ptrace (inject.h).
 *
 * Steps of one call (inj_call): the seized thread's saved registers are
 * copied, rsp moves below the red zone and the strings written there, a
 * return address of 0 is pushed, rip is set to the function and orig_rax to
 * -1 (so that the kernel does not restart the system call the thread was
 * stopped in on top of the call), and the thread is continued. It stops
 * with SIGSEGV at rip 0 when the function returns; rax is the result. A
 * signal of the process's own that arrives meanwhile is passed on.
 *
 * Symbols: dlopen, dlsym and dlerror are looked up in the .dynsym of the
 * libc the target maps (through /proc/PID/root, so a container's own libc
 * is read), at the load address /proc/PID/maps shows.
 *
 * The target's memory is read and written with process_vm_readv/writev
 * (the kernel's ptrace-attach check), not through /proc/PID/mem: that file
 * is root's, mode 0600, when the process is not dumpable, and `mallock
 * attach` then runs with the target's uid and CAP_SYS_PTRACE alone, which
 * does not open another user's file.
 */
#define _GNU_SOURCE
#include "inject.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#define XSTATE_MAX (64 * 1024)
#define RED_ZONE 128
#define RTLD_NOW_NODELETE 0x1002

typedef struct inj {
	pid_t pid, tid;
	struct user_regs_struct regs; /* as the thread was stopped */
	unsigned char *xstate;        /* its XSAVE area, or NULL */
	size_t xlen;
	struct user_fpregs_struct fp; /* when the kernel has no XSAVE regset */
	uint64_t scratch;             /* next free byte below the red zone */
	time_t deadline;
	char *err;
	size_t en;
} inj_t;

static int fail(inj_t *ij, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ij->err, ij->en, fmt, ap);
	va_end(ap);
	return rc;
}

/* waitpid for tid with the deadline; 0, or -1 with errno (ETIMEDOUT). */
static int wait_tid(inj_t *ij, int *status)
{
	for (;;) {
		pid_t r = waitpid(ij->tid, status, __WALL | WNOHANG);
		if (r == ij->tid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (time(NULL) > ij->deadline) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct timespec ts = {0, 200 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* The thread's registers and FPU state into ij. */
static int save_state(inj_t *ij)
{
	if (ptrace(PTRACE_GETREGS, ij->tid, 0, &ij->regs) != 0)
		return -1;
	ij->xstate = malloc(XSTATE_MAX);
	if (!ij->xstate)
		return -1;
	struct iovec iov = {ij->xstate, XSTATE_MAX};
	if (ptrace(PTRACE_GETREGSET, ij->tid, (void *)NT_X86_XSTATE, &iov) ==
	    0) {
		ij->xlen = iov.iov_len;
		return 0;
	}
	free(ij->xstate);
	ij->xstate = NULL;
	return ptrace(PTRACE_GETFPREGS, ij->tid, 0, &ij->fp);
}

static int restore_state(inj_t *ij)
{
	int rc = 0;
	if (ij->xstate) {
		struct iovec iov = {ij->xstate, ij->xlen};
		rc |= ptrace(PTRACE_SETREGSET, ij->tid, (void *)NT_X86_XSTATE,
		             &iov);
	} else {
		rc |= ptrace(PTRACE_SETFPREGS, ij->tid, 0, &ij->fp);
	}
	rc |= ptrace(PTRACE_SETREGS, ij->tid, 0, &ij->regs);
	return rc;
}

/* Seizes and stops tid. 0, or an errno value. */
static int seize(inj_t *ij, pid_t tid)
{
	ij->tid = tid;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0)
		return errno;
	int st;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
	    wait_tid(ij, &st) != 0) {
		int e = errno;
		ptrace(PTRACE_DETACH, tid, 0, 0);
		return e;
	}
	if (!WIFSTOPPED(st))
		return ESRCH;
	return 0;
}

/*
 * Picks the thread to call on: the first of the process's threads (the
 * main thread first) that is blocked in a system call, so that the call
 * does not start inside the allocator or the loader with one of their
 * locks held by that very thread; else the main thread.
 */
static int pick_thread(inj_t *ij)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)ij->pid);
	pid_t tids[64];
	int n = 0;
	tids[n++] = ij->pid;
	DIR *d = opendir(path);
	if (!d)
		return ESRCH;
	struct dirent *de;
	while ((de = readdir(d)) && n < 64) {
		long t = strtol(de->d_name, NULL, 10);
		if (t > 0 && t != ij->pid)
			tids[n++] = (pid_t)t;
	}
	closedir(d);
	int first_err = 0;
	for (int i = 0; i < n; i++) {
		int e = seize(ij, tids[i]);
		if (e) {
			if (!first_err)
				first_err = e;
			continue;
		}
		struct user_regs_struct r;
		if (ptrace(PTRACE_GETREGS, tids[i], 0, &r) == 0 &&
		    (long long)r.orig_rax >= 0)
			return 0;
		ptrace(PTRACE_DETACH, tids[i], 0, 0);
	}
	if (first_err == EPERM)
		return EPERM;
	return seize(ij, ij->pid);
}

/* Writes len bytes at addr in the target. 0, or -1 with errno. */
static int mem_write(inj_t *ij, uint64_t addr, const void *p, size_t len)
{
	struct iovec l = {(void *)(uintptr_t)p, len};
	struct iovec r = {(void *)(uintptr_t)addr, len};
	ssize_t w = process_vm_writev(ij->pid, &l, 1, &r, 1, 0);
	if (w == (ssize_t)len)
		return 0;
	if (w >= 0)
		errno = EIO;
	return -1;
}

/* Copies len bytes to the target's scratch area; its address, or 0. */
static uint64_t push(inj_t *ij, const void *p, size_t len)
{
	ij->scratch = (ij->scratch - len) & ~(uint64_t)15;
	if (mem_write(ij, ij->scratch, p, len) != 0)
		return 0;
	return ij->scratch;
}

/* fn(a0, a1) on the seized thread; result in *ret. 0, or INJ_FAILED. */
static int inj_call(inj_t *ij, uint64_t fn, uint64_t a0, uint64_t a1,
                    uint64_t *ret)
{
	struct user_regs_struct r = ij->regs;
	uint64_t zero = 0;
	uint64_t sp = (ij->scratch - 256) & ~(uint64_t)15;
	sp -= 8; /* at entry, rsp + 8 is 16-aligned */
	if (mem_write(ij, sp, &zero, 8) != 0)
		return fail(ij, INJ_FAILED,
		            "cannot write to the stack of "
		            "thread %d: %s",
		            (int)ij->tid, strerror(errno));
	r.rsp = sp;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1;
	if (ptrace(PTRACE_SETREGS, ij->tid, 0, &r) != 0 ||
	    ptrace(PTRACE_CONT, ij->tid, 0, 0) != 0)
		return fail(ij, INJ_FAILED, "ptrace on thread %d: %s",
		            (int)ij->tid, strerror(errno));
	for (;;) {
		int st;
		if (wait_tid(ij, &st) != 0) {
			if (errno == ETIMEDOUT) {
				ptrace(PTRACE_INTERRUPT, ij->tid, 0, 0);
				ij->deadline = time(NULL) + 5;
				wait_tid(ij, &st);
				return fail(
				    ij, INJ_FAILED,
				    "the call did not "
				    "return in time (the thread may wait "
				    "on a lock the process holds); it was "
				    "abandoned");
			}
			return fail(ij, INJ_FAILED, "waitpid: %s",
			            strerror(errno));
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			ij->tid = 0;
			return fail(ij, INJ_FAILED,
			            "the process ended during "
			            "the call");
		}
		int sig = WSTOPSIG(st);
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, ij->tid, 0, 0);
			continue;
		}
		if (sig == SIGSEGV) {
			if (ptrace(PTRACE_GETREGS, ij->tid, 0, &r) != 0)
				return fail(ij, INJ_FAILED, "ptrace: %s",
				            strerror(errno));
			if (r.rip == 0) {
				*ret = r.rax;
				return 0;
			}
			return fail(ij, INJ_FAILED,
			            "the call crashed inside "
			            "the process (SIGSEGV at %#llx)",
			            (unsigned long long)r.rip);
		}
		ptrace(PTRACE_CONT, ij->tid, 0, (void *)(long)sig);
	}
}

static int read_str(inj_t *ij, uint64_t addr, char *out, size_t n)
{
	if (!n)
		return -1;
	struct iovec l = {out, n - 1}, rem = {(void *)(uintptr_t)addr, n - 1};
	ssize_t r = process_vm_readv(ij->pid, &l, 1, &rem, 1, 0);
	if (r <= 0) {
		out[0] = 0;
		return -1;
	}
	out[r] = 0;
	out[strnlen(out, (size_t)r)] = 0;
	return 0;
}

/* The target's libc: its path and the address its offset-0 segment is
 * mapped at. 0; 1: no libc mapped; -1: /proc/PID/maps unreadable
 * (errno). */
static int find_libc(pid_t pid, char *path, size_t n, uint64_t *base)
{
	char mp[64];
	snprintf(mp, sizeof mp, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(mp, "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	int found = 1;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, off;
		int pos = 0;
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %n", &lo, &off,
		           &pos) < 2 ||
		    !pos)
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		const char *b = strrchr(p, '/');
		b = b ? b + 1 : p;
		if (off == 0 &&
		    (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7))) {
			snprintf(path, n, "%s", p);
			*base = lo;
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* The address of the default version of the function name in the ELF file
 * at fpath, loaded with its first segment at base. 0 when absent. */
static uint64_t elf_func(const char *fpath, uint64_t base, const char *name)
{
	int fd = open(fpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	uint64_t addr = 0, first_vaddr = UINT64_MAX;
	size_t nph;
	if (e && elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) &&
			    ph.p_type == PT_LOAD && ph.p_vaddr < first_vaddr)
				first_vaddr = ph.p_vaddr & ~(uint64_t)4095;
		}
	}
	Elf_Scn *scn = NULL, *vscn = NULL, *sscn = NULL;
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM)
			sscn = scn;
		else if (sh.sh_type == SHT_GNU_versym)
			vscn = scn;
	}
	if (sscn && first_vaddr != UINT64_MAX) {
		GElf_Shdr sh;
		gelf_getshdr(sscn, &sh);
		Elf_Data *d = elf_getdata(sscn, NULL);
		Elf_Data *vd = vscn ? elf_getdata(vscn, NULL) : NULL;
		size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < cnt; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) ||
			    s.st_shndx == SHN_UNDEF ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			const char *nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (!nm || strcmp(nm, name))
				continue;
			GElf_Versym v = 0;
			if (vd)
				gelf_getversym(vd, (int)i, &v);
			addr = base - first_vaddr + s.st_value;
			if (!(v & 0x8000))
				break; /* the default version */
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return addr;
}

int inj_dlcall(pid_t pid, const char *lib, const char *sym, const char *sarg,
               long iarg, int timeout_s, char *answer, size_t n, char *err,
               size_t en)
{
	inj_t ij = {.pid = pid, .err = err, .en = en};
	ij.deadline = time(NULL) + timeout_s;
	answer[0] = 0;
	err[0] = 0;

	char libc[PATH_MAX], rooted[PATH_MAX + 32];
	uint64_t base;
	int lrc = find_libc(pid, libc, sizeof libc, &base);
	if (lrc < 0)
		return fail(&ij,
		            errno == EACCES || errno == EPERM ? INJ_REFUSED
		                                              : INJ_FAILED,
		            "cannot read /proc/%d/maps as uid %ld: %s (the "
		            "kernel's ptrace read check: a process that is not "
		            "dumpable needs CAP_SYS_PTRACE)",
		            (int)pid, (long)geteuid(), strerror(errno));
	if (lrc > 0)
		return fail(&ij, INJ_FAILED,
		            "pid %d maps no dynamic libc "
		            "(a static program cannot load the shim)",
		            (int)pid);
	snprintf(rooted, sizeof rooted, "/proc/%d/root%s", (int)pid, libc);
	uint64_t f_dlopen = elf_func(rooted, base, "dlopen");
	uint64_t f_dlsym = elf_func(rooted, base, "dlsym");
	uint64_t f_dlerror = elf_func(rooted, base, "dlerror");
	if (!f_dlopen || !f_dlsym || !f_dlerror)
		return fail(&ij, INJ_FAILED,
		            "%s has no dlopen/dlsym/dlerror "
		            "(glibc 2.34 or later is needed)",
		            libc);

	int e = pick_thread(&ij);
	if (e == EPERM)
		return fail(&ij, INJ_REFUSED,
		            "the kernel refused to trace pid "
		            "%d (ptrace: %s; a seccomp or container policy, or "
		            "another tracer)",
		            (int)pid, strerror(e));
	if (e)
		return fail(&ij, INJ_FAILED,
		            "cannot stop a thread of pid %d: %s", (int)pid,
		            strerror(e));
	int rc = INJ_FAILED;
	if (save_state(&ij) != 0) {
		rc = fail(&ij, INJ_FAILED, "cannot read thread %d: %s",
		          (int)ij.tid, strerror(errno));
		goto out;
	}
	ij.scratch = (ij.regs.rsp - RED_ZONE) & ~(uint64_t)15;
	uint64_t a_lib = push(&ij, lib, strlen(lib) + 1);
	uint64_t a_sym = push(&ij, sym, strlen(sym) + 1);
	uint64_t a_arg = sarg ? push(&ij, sarg, strlen(sarg) + 1) : 0;
	if (!a_lib || !a_sym || (sarg && !a_arg)) {
		rc = fail(&ij, INJ_FAILED, "cannot write to pid %d: %s",
		          (int)pid, strerror(errno));
		goto out;
	}
	uint64_t h, f, s;
	if ((rc = inj_call(&ij, f_dlopen, a_lib, RTLD_NOW_NODELETE, &h)))
		goto out;
	if (!h) {
		char msg[512] = "";
		if (inj_call(&ij, f_dlerror, 0, 0, &s) == 0 && s)
			read_str(&ij, s, msg, sizeof msg);
		rc = fail(&ij, INJ_FAILED,
		          "dlopen(%s) failed inside the "
		          "process: %s",
		          lib, msg[0] ? msg : "(no reason given)");
		goto out;
	}
	if ((rc = inj_call(&ij, f_dlsym, h, a_sym, &f)))
		goto out;
	if (!f) {
		rc = fail(&ij, INJ_FAILED,
		          "%s has no %s (a libmallock.so of "
		          "another version?)",
		          lib, sym);
		goto out;
	}
	if ((rc = inj_call(&ij, f, a_arg, (uint64_t)iarg, &s)))
		goto out;
	if (!s || read_str(&ij, s, answer, n) != 0)
		rc = fail(&ij, INJ_FAILED, "%s returned no answer", sym);
out:
	if (ij.tid) {
		if (restore_state(&ij) != 0 && !rc)
			rc = fail(&ij, INJ_FAILED,
			          "cannot restore thread %d: %s", (int)ij.tid,
			          strerror(errno));
		ptrace(PTRACE_DETACH, ij.tid, 0, 0);
	}
	free(ij.xstate);
	return rc;
}
