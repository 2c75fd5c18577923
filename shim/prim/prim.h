/*
 * prim.h - the operating-system and libc primitives the shim needs, behind one
 * small interface: clocks, thread and process ids, dynamic symbol lookup,
 * environment and /proc reads, anonymous memory, raw file output.
 *
 * Invariants:
 * - No function here allocates through malloc (the ones that may call libc
 *   code which allocates, such as prim_dlsym_next, say so: their callers hold
 *   the re-entry guard, so such allocations go straight to the real allocator).
 * - No function here takes a lock of the shim; none is on the hot path except
 *   the inline clock prim_tsc().
 * - The rest of the shim never calls dlsym, syscall or reads /proc directly.
 */
#ifndef MALLOCK_SHIM_PRIM_H
#define MALLOCK_SHIM_PRIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* prim_tsc_cpu's CPU when it cannot tell. */
#define PRIM_CPU_NONE UINT32_MAX

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* The event clock: the TSC (about 10 ns, not serializing). */
static inline uint64_t prim_tsc(void)
{
	return __rdtsc();
}
#define PRIM_HAVE_TSC 1
/* How prim_tsc_cpu learns the CPU (prim_cpu_init): 0 it does not (until
 * then), 1 rdtscp, 2 the thread's rseq area (prim_rseq_off). */
extern int prim_cpu_how;
extern long prim_rseq_off;
/*
 * The TSC and the CPU it was read on: the TSC and the cpu_id the kernel
 * keeps in the thread's rseq area (glibc 2.35 registers one per thread: a
 * load at the thread pointer plus __rseq_offset, updated before the thread
 * returns to user space on its new CPU), else rdtscp (Linux keeps the CPU
 * number in the low 12 bits of TSC_AUX) when the processor has it, else
 * the TSC and PRIM_CPU_NONE. An instruction and a load: no lock, no call,
 * safe in any hook.
 */
static inline uint64_t prim_tsc_cpu(uint32_t *cpu)
{
	if (prim_cpu_how == 1) {
		unsigned aux;
		uint64_t v = __rdtscp(&aux);
		*cpu = aux & 0xfffu;
		return v;
	}
	uint64_t v = __rdtsc();
	if (prim_cpu_how == 2) {
		const char *tp = __builtin_thread_pointer();
		/* struct rseq: cpu_id_start u32, then cpu_id u32 */
		*cpu = *(const volatile uint32_t *)(tp + prim_rseq_off + 4);
	} else {
		*cpu = PRIM_CPU_NONE;
	}
	return v;
}
#else
uint64_t prim_mono_ns(void);
static inline uint64_t prim_tsc(void)
{
	return prim_mono_ns();
}
#define PRIM_HAVE_TSC 0
static inline uint64_t prim_tsc_cpu(uint32_t *cpu)
{
	*cpu = PRIM_CPU_NONE;
	return prim_tsc();
}
#endif

/* Enables prim_tsc_cpu's CPU: glibc's rseq area when registered
 * (__rseq_offset and __rseq_size, looked up with dlsym: may allocate),
 * else rdtscp when the processor has it (CPUID; Linux sets TSC_AUX to the
 * CPU). Called once at init. */
void prim_cpu_init(void);

/* A spin-wait hint. */
static inline void prim_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_mm_pause();
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* CLOCK_MONOTONIC and CLOCK_REALTIME in ns (vDSO, no allocation). */
uint64_t prim_mono_ns(void);
uint64_t prim_realtime_ns(void);

/* Reads the TSC and CLOCK_MONOTONIC together (the TSC read between two
 * monotonic reads, the tightest pair of a few tries). */
void prim_clock_pair(uint64_t *tsc, uint64_t *mono_ns);

/* Estimates the TSC frequency in Hz by timing a short (~0.5 ms) busy wait;
 * returns 0 when there is no TSC. */
uint64_t prim_tsc_hz(void);

/* The kernel thread id and the process ids (raw syscalls, no caching). */
uint32_t prim_gettid(void);
uint32_t prim_getpid(void);

/* The English description of errno value err ("No such file or
 * directory"), without strerror's translation: strerror goes through
 * gettext, which takes a lock of libc's that the host may hold (hook.h). */
const char *prim_strerror(int err);
uint32_t prim_getppid(void);

/* dlsym(RTLD_NEXT, name) / dlvsym(RTLD_NEXT, name, version), as seen from
 * libmallock.so. May allocate (dlerror state): call with the guard held or
 * during bootstrap. Returns NULL when absent. */
void *prim_dlsym_next(const char *name);
void *prim_dlvsym_next(const char *name, const char *version);
/* dlsym(RTLD_DEFAULT, name): the first definition in the global scope. */
void *prim_dlsym_default(const char *name);

/* The path of the loaded object that contains addr ("" if unknown; the
 * main executable's dladdr name may be empty too). */
const char *prim_object_of(const void *addr);

/* Nonzero when addr is where a loaded object defines the symbol name, or
 * an alias of it (dladdr1 finds a symbol at exactly addr, and it is not
 * SHN_UNDEF). Zero for a canonical PLT entry: a non-PIE
 * executable that takes &malloc exports an undefined "malloc" whose value
 * is its PLT stub, which dlsym(RTLD_DEFAULT) returns. */
int prim_defines(const void *addr, const char *name);

/* getenv(); NULL when unset. Never allocates. */
const char *prim_getenv(const char *name);

/* Sets an environment variable (setenv; allocates: hold the guard). */
void prim_setenv(const char *name, const char *value);

/* Nonzero in a set-user-ID/set-group-ID (secure) process. */
int prim_secure(void);

/*
 * Reads at most cap bytes of a file (such as /proc/self/cmdline) with
 * open/read/close. Returns the number of bytes read, or -1.
 */
ssize_t prim_read_file(const char *path, char *buf, size_t cap);

/*
 * The name of thread tid of this process (/proc/self/task/TID/comm, at most
 * 15 bytes), NUL-terminated, without the newline. Returns its length, or -1.
 */
ssize_t prim_thread_name(uint32_t tid, char *buf, size_t cap);

/* readlink("/proc/self/exe"), NUL-terminated; returns the length or -1. */
ssize_t prim_exe_path(char *buf, size_t cap);

/* gethostname() into buf, NUL-terminated; empty on failure. */
void prim_hostname(char *buf, size_t cap);

/* Anonymous private memory, zero-filled, never from the hooked heap
 * (MAP_NORESERVE: untouched pages cost nothing). NULL on failure. */
void *prim_map(size_t size);
void prim_unmap(void *p, size_t size);

/*
 * Creates the trace file: O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC|
 * O_APPEND, mode 0600 (an existing file or a symlink at path is refused),
 * relative to the directory fd dirfd (or AT_FDCWD, -100). The fd is moved
 * high (prim_fd_high). Returns the fd, or -errno.
 */
int prim_create_excl(int dirfd, const char *path);

/* Reopens an existing trace file for appending (O_WRONLY|O_APPEND|
 * O_NOFOLLOW|O_CLOEXEC), relative to dirfd, moved high. fd or -errno. */
int prim_reopen_append(int dirfd, const char *path);

/* Opens a directory as an O_PATH|O_DIRECTORY|O_CLOEXEC fd, moved high (the
 * base of a forked child's trace file). fd or -errno. */
int prim_open_dir(const char *path);

/*
 * The host owns the low fd numbers: a daemon closes every fd and reopens its
 * own files, which get the same numbers. The shim's
 * own fds are moved to a high number (fcntl F_DUPFD_CLOEXEC at or above
 * min(1000, 7/8 of RLIMIT_NOFILE): 896 with the usual 1024; below
 * FD_SETSIZE, so they never grow a select() set), and checked by identity
 * before each use. Returns the
 * new fd (fd itself is closed), or fd unchanged when no high number is free.
 */
int prim_fd_high(int fd);

/* An open file's identity (st_dev, st_ino), or zero when fd is not open. */
typedef struct prim_fid {
	uint64_t dev, ino;
} prim_fid_t;
int prim_fid(int fd, prim_fid_t *id); /* 0, or -1 (not open) */
/* Nonzero when fd is open and is the file id names (one fstat). */
int prim_fid_same(int fd, const prim_fid_t *id);

/*
 * The shim's long-lived fds (the trace, its output directory, the control
 * directory and page), which the close-all hooks leave open (fd_hooks.c):
 * prim_fd_keep records fd and its identity in slot (fd -1: none);
 * prim_fds_kept writes, in ascending order, those still open as the same
 * file (a number the host has since reused is the host's) and returns
 * their count. Only fstat; any context.
 */
enum {
	PRIM_KEEP_TRACE,
	PRIM_KEEP_OUTDIR,
	PRIM_KEEP_CTLDIR,
	PRIM_KEEP_PAGE,
	PRIM_KEEP_N
};
void prim_fd_keep(int slot, int fd);
int prim_fds_kept(int out[PRIM_KEEP_N]);

/* The current directory (getcwd), NUL-terminated; "" on failure. */
void prim_getcwd(char *buf, size_t cap);

/* One write(2) of n bytes; returns 0 when all were written, else an errno
 * value (EIO for a short write). Never retries a partial write (a chunk is
 * written whole or not at all, as far as the kernel lets us). SIGPIPE and
 * SIGXFSZ raised by the call are taken back (EPIPE, EFBIG). */
int prim_write_once(int fd, const void *buf, size_t n);

/* Moves fd to a high number (near the top of RLIMIT_NOFILE's soft limit,
 * at most 65536, close-on-exec): returns the new fd (the old one is
 * closed), or fd unchanged when no high number is free. A daemon's
 * "close everything, then open my files" reuses low numbers first. */
int prim_fd_top(int fd);

/* close(2), ignoring errors. */
void prim_close(int fd);

/*
 * Remembers which file fd 2 is (the stderr the process started with). Called
 * once by the constructor (and by a fork child: its fd 2 is inherited).
 */
void prim_stderr_init(void);

/* write(2) of a message to stderr, ignoring errors, only while fd 2 is still
 * the file prim_stderr_init() saw: never into a file the host opened later
 * at fd 2, never into a closed one. SIGPIPE and SIGXFSZ cannot kill the host
 * (blocked for the call, the one it raised is taken back). No fd of the shim
 * holds the host's stderr open (a daemon that closes it releases its
 * parent's pipe). */
void prim_stderr(const char *msg, size_t n);

/* Lowest and highest address of the calling thread's stack, from
 * pthread_getattr_np (allocates: hold the guard). 0 on success. It takes
 * the thread's own glibc lock and, for the main thread, stdio's: call it
 * only at thread start (the pthread_create trampoline), never in a hook
 * (shim/hooks/hook.h: a host thread inside pthread_getattr_np holds that lock
 * while it calls realloc). */
int prim_stack_bounds(uintptr_t *lo, uintptr_t *hi);

/* The same without any lock: the mapping that contains sp, read from
 * /proc/self/maps with open/read/close only (no stdio, no allocation).
 * For the main thread's stack, which grows, lo is extended down by
 * RLIMIT_STACK (not below the mapping under it). 0 on success. */
int prim_stack_bounds_of(uintptr_t sp, uintptr_t *lo, uintptr_t *hi);

/* Gives size bytes of prim_map() memory at p back as zero pages, in place
 * (madvise MADV_DONTNEED; no new address space is needed: a fork child
 * under RLIMIT_AS resets its tables with it). */
void prim_zero(void *p, size_t size);

/* The number of threads of this process (/proc/self/status, read with
 * open/read only), or 0 when unknown. */
unsigned prim_thread_count(void);

/*
 * The loaded object that contains pc, as dl_iterate_phdr would describe it
 * (bias, name, program headers; no adds/subs, no TLS), without the
 * loader's lock: _dl_find_object (glibc 2.35+) and the ELF header at the
 * start of the object's mapping. Returns 0, or -1 (no object there, an
 * unusual layout, or no _dl_find_object in this libc).
 */
struct dl_phdr_info;
int prim_object_info(uintptr_t pc, struct dl_phdr_info *info);

/* This process's start time: /proc/self/stat field 22 (clock ticks since
 * boot), 0 if unreadable. */
uint64_t prim_start_time(void);

/* sched_yield(). */
void prim_yield(void);

/* Nonzero when the calling thread runs on its alternate signal stack
 * (sigaltstack). Async-signal-safe (one system call). */
int prim_on_altstack(void);

#endif
