/*
 * injectapp.c - a host whose threads must not notice `mallock attach`'s
 * injected call (tests/server/inject_test.py).
 *
 * usage: injectapp busy|mixed
 * Prints "ready PID", then two threads each run a fixed floating-point
 * recurrence held in SSE registers for a fraction of a second and print its
 * bits. In "mixed" mode a third thread is blocked in read() on a pipe that main
 * writes "hello" to after 1.5 s: it prints what read() returned. The
 * output of a run that was attached must equal a bare run's: a register,
 * an SSE/AVX value or an interrupted system call not restored shows as a
 * different line.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int pfd[2];

static void *spin(void *arg)
{
	double a = 1.0 + (double)(long)arg, b = 0.5;
	for (long i = 0; i < 100 * 1000 * 1000L; i++) {
		a = a * 0.999999999 + b;
		b = b * 1.000000001 - 1e-9 * a;
	}
	unsigned long long ba, bb;
	memcpy(&ba, &a, 8);
	memcpy(&bb, &b, 8);
	printf("spin %ld: %016llx %016llx\n", (long)arg, ba, bb);
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	char buf[16] = "";
	ssize_t n = read(pfd[0], buf, sizeof buf - 1);
	printf("read %zd '%s'\n", n, n > 0 ? buf : "");
	return NULL;
}

int main(int argc, char **argv)
{
	int mixed = argc > 1 && !strcmp(argv[1], "mixed");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(pfd) != 0)
		return 1;
	printf("ready %d\n", (int)getpid());
	pthread_t t[3];
	pthread_create(&t[0], NULL, spin, (void *)1L);
	if (mixed)
		pthread_create(&t[2], NULL, reader, NULL);
	spin((void *)0L);
	pthread_join(t[0], NULL);
	if (mixed) {
		sleep(1);
		if (write(pfd[1], "hello", 5) != 5)
			return 1;
		pthread_join(t[2], NULL);
	}
	return 0;
}
