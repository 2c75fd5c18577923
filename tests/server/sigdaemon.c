/*
 * sigdaemon.c - a daemon whose own SIGUSR1 and SIGUSR2 handlers mean
 * "shut down": each writes DIR/shutdown.PID.SIG and exits 3 at once, as
 * PostgreSQL's checkpointer or nginx's master act on theirs.
 *
 * usage: sigdaemon DIR [CHILDREN]
 * The process installs both handlers, forks CHILDREN workers (default 2)
 * and one more child that execs `sigdaemon DIR 0 plain` without
 * LD_PRELOAD (a process of the tree that does not run under the shim),
 * writes DIR/ready with every pid ("PID1 PID2 ... plain PIDn"), then each
 * process idles in sigsuspend. Every return from sigsuspend (SIGHUP is
 * "wake up and work") makes one allocation and one mutex lock, and
 * appends "PID woke N" to DIR/woke. SIGTERM ends the process (exit 0).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static volatile sig_atomic_t term;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void on_shutdown(int sig)
{
	char path[512];
	int n = snprintf(path, sizeof path, "%s/shutdown.%d.%d", dir,
	                 (int)getpid(), sig);
	if (n > 0 && (size_t)n < sizeof path) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			close(fd);
	}
	_exit(3);
}

static void on_hup(int sig)
{
	(void)sig;
}

static void on_term(int sig)
{
	(void)sig;
	term = 1;
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0) {
		perror("sigdaemon: sigaction");
		exit(1);
	}
}

static void idle(void)
{
	sigset_t none;
	sigemptyset(&none);
	unsigned long n = 0;
	while (!term) {
		sigsuspend(&none);
		if (term)
			break;
		pthread_mutex_lock(&mu);
		char *p = malloc(64);
		if (p)
			snprintf(p, 64, "%d woke %lu\n", (int)getpid(), ++n);
		pthread_mutex_unlock(&mu);
		char path[512];
		snprintf(path, sizeof path, "%s/woke", dir);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0 && p) {
			if (write(fd, p, strlen(p)) < 0)
				perror("sigdaemon: write");
		}
		if (fd >= 0)
			close(fd);
		free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: sigdaemon DIR [CHILDREN]\n");
		return 2;
	}
	dir = argv[1];
	int children = argc > 2 ? atoi(argv[2]) : 2;
	int plain = argc > 3 && !strcmp(argv[3], "plain");
	handle(SIGUSR1, on_shutdown);
	handle(SIGUSR2, on_shutdown);
	handle(SIGHUP, on_hup);
	handle(SIGTERM, on_term);
	if (plain) {
		idle();
		return 0;
	}
	/* Signals that arrive before sigsuspend must not be lost. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	char line[512];
	int len = snprintf(line, sizeof line, "%d", (int)getpid());
	pid_t kids[16];
	int nk = 0;
	for (int i = 0; i <= children && i < 15; i++) {
		pid_t c = fork();
		if (c < 0) {
			perror("sigdaemon: fork");
			return 1;
		}
		if (c == 0 && i == children) {
			unsetenv("LD_PRELOAD");
			sigprocmask(SIG_SETMASK, &old, NULL);
			execl("/proc/self/exe", argv[0], dir, "0", "plain",
			      (char *)NULL);
			_exit(127);
		}
		if (c == 0) {
			idle();
			return 0;
		}
		kids[nk++] = c;
		len += snprintf(line + len, sizeof line - (size_t)len, "%s%d",
		                i == children ? " plain " : " ", (int)c);
	}
	char path[512], tmp[520];
	snprintf(path, sizeof path, "%s/ready", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "%s\n", line);
	fclose(f);
	rename(tmp, path);
	idle();
	for (int i = 0; i < nk; i++) {
		kill(kids[i], SIGTERM);
		waitpid(kids[i], NULL, 0);
	}
	return 0;
}
