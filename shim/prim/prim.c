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
#include <stdatomic.h>
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
#include <sys/stat.h>
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

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
int prim_cpu_how;
long prim_rseq_off;

void prim_cpu_init(void)
{
	/* The rseq area first: a load, where rdtscp costs twice rdtsc (22
	 * against 11.5 ns: docs/performance.md). glibc 2.35's symbols,
	 * looked up so that older ones still load the shim. */
	const ptrdiff_t *off = prim_dlsym_default("__rseq_offset");
	const unsigned *size = prim_dlsym_default("__rseq_size");
	if (off && size && *size >= 8) {
		prim_rseq_off = (long)*off;
		prim_cpu_how = 2;
		return;
	}
	unsigned a, b, c, d;
	/* CPUID 0x80000001: EDX bit 27, RDTSCP (a VM may hide it) */
	if (__get_cpuid(0x80000001u, &a, &b, &c, &d) && (d & (1u << 27)))
		prim_cpu_how = 1;
}
#else
void prim_cpu_init(void)
{
}
#endif

void prim_clock_pair(uint64_t *tsc, uint64_t *mono_ns)
{
	uint64_t best = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t m0 = prim_mono_ns();
		uint64_t t = prim_tsc();
		uint64_t m1 = prim_mono_ns();
		/* i == 0: the outputs are always set (and gcc -O3 sees it). */
		if (i == 0 || m1 - m0 < best) {
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
	return addr && dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) &&
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

int prim_fd_high(int fd)
{
	struct rlimit rl;
	long lim = 1 << 20;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20))
		lim = (long)rl.rlim_cur;
	long floor = lim - lim / 8;
	if (floor > 1000)
		floor = 1000;
	if (fd < 0 || fd >= floor || floor <= 3)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)floor);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

int prim_fid(int fd, prim_fid_t *id)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		id->dev = id->ino = 0;
		return -1;
	}
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	return 0;
}

int prim_fid_same(int fd, const prim_fid_t *id)
{
	prim_fid_t now;
	return prim_fid(fd, &now) == 0 && now.dev == id->dev &&
	       now.ino == id->ino;
}

static struct {
	_Atomic int fd;
	prim_fid_t id;
} kept[PRIM_KEEP_N] = {{-1, {0, 0}}, {-1, {0, 0}}, {-1, {0, 0}}, {-1, {0, 0}}};

void prim_fd_keep(int slot, int fd)
{
	if (slot < 0 || slot >= PRIM_KEEP_N)
		return;
	atomic_store(&kept[slot].fd, -1);
	if (fd < 0 || prim_fid(fd, &kept[slot].id) != 0)
		return;
	atomic_store(&kept[slot].fd, fd);
}

int prim_fds_kept(int out[PRIM_KEEP_N])
{
	int n = 0;
	for (int i = 0; i < PRIM_KEEP_N; i++) {
		int fd = atomic_load(&kept[i].fd);
		if (fd < 0 || !prim_fid_same(fd, &kept[i].id))
			continue;
		int j = n++;
		for (; j > 0 && out[j - 1] > fd; j--)
			out[j] = out[j - 1];
		out[j] = fd;
	}
	/* Two slots on one number (not expected): once. */
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!m || out[m - 1] != out[i])
			out[m++] = out[i];
	return m;
}

int prim_create_excl(int dirfd, const char *path)
{
	int fd = openat(dirfd, path,
	                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
	                    O_APPEND,
	                0600);
	return fd < 0 ? -errno : prim_fd_high(fd);
}

int prim_reopen_append(int dirfd, const char *path)
{
	int fd =
	    openat(dirfd, path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : prim_fd_high(fd);
}

int prim_open_dir(const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : prim_fd_high(fd);
}

void prim_getcwd(char *buf, size_t cap)
{
	if (!getcwd(buf, cap))
		buf[0] = 0;
}

/*
 * write(2), retried on EINTR. A write past RLIMIT_FSIZE raises SIGXFSZ,
 * whose default action kills the host (seen with `ulimit -f 0`: the host
 * died of the trace's file header, then of the warning written to a
 * stderr redirected to a file); a write to a pipe or socket whose reader
 * has gone raises SIGPIPE (a host that never writes to stderr died of a
 * warning written to a closed pipe). Block both
 * for the call, and take back the signal this call raised, so the write
 * just fails with EFBIG or EPIPE. A signal that was already pending is left
 * for the program. Returns the byte count or -errno.
 */
static ssize_t write_guarded(int fd, const void *buf, size_t n)
{
	sigset_t mask, old, pend;
	sigemptyset(&mask);
	sigaddset(&mask, SIGXFSZ);
	sigaddset(&mask, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	int have_pend = sigpending(&pend) == 0;
	int xfsz_was = have_pend && sigismember(&pend, SIGXFSZ);
	int pipe_was = have_pend && sigismember(&pend, SIGPIPE);
	ssize_t r;
	do
		r = write(fd, buf, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		r = -errno;
	int take = r == -EFBIG && !xfsz_was   ? SIGXFSZ
	           : r == -EPIPE && !pipe_was ? SIGPIPE
	                                      : 0;
	if (take) {
		sigset_t one;
		struct timespec zero = {0, 0};
		sigemptyset(&one);
		sigaddset(&one, take);
		while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR)
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

int prim_fd_top(int fd)
{
	struct rlimit rl;
	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return fd;
	rlim_t top = rl.rlim_cur < 65536 ? rl.rlim_cur : 65536;
	if (top < 256 || (rlim_t)fd >= top - 64)
		return fd;
	int saved = errno;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - 64));
	if (hi >= 0)
		close(fd);
	errno = saved;
	return hi >= 0 ? hi : fd;
}

void prim_close(int fd)
{
	close(fd);
}

/* fd 2 as the process started with it (warnings went into
 * the host's own files once it had closed fd 2 and opened another file). No
 * dup is kept: holding the host's stderr open would keep a parent's pipe
 * from reaching end-of-file after a daemon closed its stderr. */
static prim_fid_t stderr_id;
static int stderr_ok;

void prim_stderr_init(void)
{
	stderr_ok = prim_fid(2, &stderr_id) == 0;
}

void prim_stderr(const char *msg, size_t n)
{
	int saved = errno;
	if (stderr_ok && prim_fid_same(2, &stderr_id))
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

/* Ends one /proc/self/maps line [a, b): 1 when it holds sp. The main
 * thread's stack ("[stack]", which grows) extends down by RLIMIT_STACK. */
static int maps_line(uintptr_t a, uintptr_t b, int grows, uintptr_t sp,
                     uintptr_t prev, uintptr_t *lo, uintptr_t *hi)
{
	if (sp < a || sp >= b)
		return 0;
	*lo = a;
	*hi = b;
	struct rlimit rl;
	if (grows && getrlimit(RLIMIT_STACK, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < b &&
	    b - rl.rlim_cur < a)
		*lo = b - rl.rlim_cur > prev ? b - rl.rlim_cur : prev;
	return 1;
}

int prim_stack_bounds_of(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static const char tag[] = "[stack]";
	char buf[2048];
	uintptr_t a = 0, b = 0, prev = 0;
	int field = 0, found = 0; /* field 0: start, 1: end, 2: the rest */
	unsigned tail = 0;        /* "[stack]" characters matched at the end */
	while (!found) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r && !found; i++) {
			char ch = buf[i];
			int v = ch >= '0' && ch <= '9'   ? ch - '0'
			        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			                                 : -1;
			if (ch == '\n') {
				found = maps_line(a, b, tail == sizeof tag - 1,
				                  sp, prev, lo, hi);
				prev = b;
				a = b = 0;
				field = 0;
				tail = 0;
				continue;
			}
			tail = tail < sizeof tag - 1 && ch == tag[tail]
			           ? tail + 1
			       : ch == tag[0] ? 1
			                      : 0;
			if (field < 2 && v >= 0) {
				if (field == 0)
					a = a << 4 | (uintptr_t)v;
				else
					b = b << 4 | (uintptr_t)v;
			} else if (field == 0 && ch == '-') {
				field = 1;
			} else {
				field = 2;
			}
		}
	}
	close(fd);
	return found ? 0 : -1;
}

unsigned prim_thread_count(void)
{
	char buf[4096];
	ssize_t n = prim_read_file("/proc/self/status", buf, sizeof buf - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = strstr(buf, "\nThreads:");
	return p ? (unsigned)strtoul(p + 9, NULL, 10) : 0;
}

#if defined(DLFO_STRUCT_HAS_EH_DBASE)
/* Weak: a libc older than 2.35 has none. */
extern int _dl_find_object(void *, struct dl_find_object *)
    __attribute__((weak));

int prim_object_info(uintptr_t pc, struct dl_phdr_info *info)
{
	struct dl_find_object fo;
	if (!_dl_find_object || _dl_find_object((void *)pc, &fo) != 0 ||
	    !fo.dlfo_link_map)
		return -1;
	const ElfW(Ehdr) *eh = fo.dlfo_map_start;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phoff > 65536 ||
	    (uintptr_t)eh + eh->e_phoff + eh->e_phnum * sizeof(ElfW(Phdr)) >
	        (uintptr_t)fo.dlfo_map_end)
		return -1;
	memset(info, 0, sizeof *info);
	info->dlpi_addr = fo.dlfo_link_map->l_addr;
	info->dlpi_name = fo.dlfo_link_map->l_name;
	info->dlpi_phdr =
	    (const ElfW(Phdr) *)(const void *)((const char *)eh + eh->e_phoff);
	info->dlpi_phnum = eh->e_phnum;
	return 0;
}
#else
int prim_object_info(uintptr_t pc, struct dl_phdr_info *info)
{
	(void)pc;
	(void)info;
	return -1;
}
#endif

void prim_zero(void *p, size_t size)
{
	if (p && madvise(p, size, MADV_DONTNEED) != 0)
		memset(p, 0, size);
}

void prim_yield(void)
{
	sched_yield();
}

const char *prim_strerror(int err)
{
	const char *d = strerrordesc_np(err);
	return d ? d : "unknown error";
}

int prim_on_altstack(void)
{
	stack_t ss;
	return sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
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
