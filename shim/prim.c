/*
 * prim.c - the OS and libc primitives declared in prim.h. The only file of the
 * shim that calls dlsym, reads /proc or the environment, or maps memory.
 *
 * Invariant: nothing here calls malloc itself; the libc functions that may
 * (dlsym, setenv, pthread_getattr_np) are documented in prim.h and are only
 * called with the re-entry guard held, so their allocations are unrecorded.
 */
#include "prim.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t prim_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t prim_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void prim_clock_pair(uint64_t *tsc, uint64_t *mono_ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t m0 = prim_mono_ns();
		uint64_t t = prim_tsc();
		uint64_t m1 = prim_mono_ns();
		if (m1 - m0 < best) {
			best = m1 - m0;
			*tsc = t;
			*mono_ns = m0 + (m1 - m0) / 2;
		}
	}
}

uint64_t prim_tsc_hz(void)
{
	if (!PRIM_HAVE_TSC)
		return 0;
	uint64_t t0, m0, t1, m1;
	prim_clock_pair(&t0, &m0);
	do
		prim_clock_pair(&t1, &m1);
	while (m1 - m0 < 500000);
	return (uint64_t)((double)(t1 - t0) * 1e9 / (double)(m1 - m0));
}

uint32_t prim_gettid(void)
{
	return (uint32_t)gettid();
}

uint32_t prim_getpid(void)
{
	return (uint32_t)getpid();
}

uint32_t prim_getppid(void)
{
	return (uint32_t)getppid();
}

void *prim_dlsym_next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

void *prim_dlvsym_next(const char *name, const char *version)
{
	return dlvsym(RTLD_NEXT, name, version);
}

void *prim_dlsym_default(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

const char *prim_object_of(const void *addr)
{
	Dl_info info;
	if (!addr || !dladdr(addr, &info) || !info.dli_fname)
		return "";
	return info.dli_fname;
}

int prim_defines(const void *addr, const char *name)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	(void)name; /* an alias (tc_malloc) may be the name dladdr gives */
	return addr &&
	       dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) &&
	       info.dli_saddr == addr && sym && sym->st_shndx != SHN_UNDEF;
}

const char *prim_getenv(const char *name)
{
	return getenv(name);
}

void prim_setenv(const char *name, const char *value)
{
	setenv(name, value, 1);
}

int prim_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

ssize_t prim_read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return (ssize_t)n;
}

ssize_t prim_thread_name(uint32_t tid, char *buf, size_t cap)
{
	char path[48];
	snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
	ssize_t n = prim_read_file(path, buf, cap - 1);
	if (n <= 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
		n--;
	buf[n] = 0;
	return n;
}

ssize_t prim_exe_path(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return n;
}

void prim_hostname(char *buf, size_t cap)
{
	if (gethostname(buf, cap) != 0)
		buf[0] = 0;
	buf[cap - 1] = 0;
}

void *prim_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void prim_unmap(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

int prim_create_excl(const char *path)
{
	int fd = open(path,
	              O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
	                  O_APPEND,
	              0600);
	return fd < 0 ? -errno : fd;
}

/*
 * write(2), retried on EINTR. A write past RLIMIT_FSIZE raises SIGXFSZ,
 * whose default action kills the host (seen with `ulimit -f 0`: the host
 * died of the trace's file header, then of the warning written to a
 * stderr redirected to a file). Block it for the call, and take back the
 * signal this call raised, so the write just fails with EFBIG. A SIGXFSZ
 * that was already pending is left for the program. Returns the byte count
 * or -errno.
 */
static ssize_t write_guarded(int fd, const void *buf, size_t n)
{
	sigset_t xfsz, old, pend;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	int was_pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
	ssize_t r;
	do
		r = write(fd, buf, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		r = -errno;
	if (r == -EFBIG && !was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&xfsz, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int prim_write_once(int fd, const void *buf, size_t n)
{
	ssize_t r = write_guarded(fd, buf, n);
	if (r < 0)
		return (int)-r;
	return (size_t)r == n ? 0 : EIO;
}

void prim_close(int fd)
{
	close(fd);
}

void prim_stderr(const char *msg, size_t n)
{
	int saved = errno;
	write_guarded(2, msg, n);
	errno = saved;
}

int prim_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return -1;
	int r = pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	if (r != 0)
		return -1;
	*lo = (uintptr_t)addr;
	*hi = (uintptr_t)addr + size;
	return 0;
}

void prim_yield(void)
{
	sched_yield();
}

uint64_t prim_start_time(void)
{
	char buf[1024];
	ssize_t n = prim_read_file("/proc/self/stat", buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* The command name may hold spaces and ')': fields start after the
	 * last ')'; field 3 (state) is the first one there. */
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	for (int field = 3; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

int prim_fd_high(int fd)
{
	struct rlimit rl;
	long lo = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)rl.rlim_cur <= lo + 16)
		lo = (long)rl.rlim_cur > 64 ? (long)rl.rlim_cur - 16 : 3;
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, (int)lo);
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
}
