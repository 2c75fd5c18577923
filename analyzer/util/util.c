/*
 * util.c - allocation that fails loudly, growable arrays, a string arena,
 * human-readable number formatting, and whole reads and writes of a file
 * descriptor for the analyzer.
 *
 * The analyzer is a batch tool: an allocation failure is fatal and reported
 * as one line on stderr with exit status 3.
 */
#define _GNU_SOURCE /* pread */
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void oom(size_t n)
{
	fprintf(stderr, "mallock: out of memory (%zu bytes)\n", n);
	exit(3);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *d = xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

void *vec_grow(void *arr, size_t es, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 16;
	while (c <= need)
		c *= 2;
	arr = xrealloc(arr, c * es);
	memset((char *)arr + *cap * es, 0, (c - *cap) * es);
	*cap = c;
	return arr;
}

#define ARENA_BLK 65536
struct arena_blk {
	arena_blk_t *next;
	size_t used, cap;
	char data[];
};

char *arena_strndup(arena_t *a, const char *s, size_t n)
{
	arena_blk_t *b = a->head;
	if (!b || b->cap - b->used < n + 1) {
		size_t cap = n + 1 > ARENA_BLK ? n + 1 : ARENA_BLK;
		b = xmalloc(sizeof *b + cap);
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
	}
	char *d = b->data + b->used;
	memcpy(d, s, n);
	d[n] = 0;
	b->used += n + 1;
	return d;
}

char *arena_strdup(arena_t *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

void arena_free(arena_t *a)
{
	while (a->head) {
		arena_blk_t *n = a->head->next;
		free(a->head);
		a->head = n;
	}
}

char *human_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
	return buf;
}

char *human_count(char *buf, size_t len, double n)
{
	if (n < 1e4)
		snprintf(buf, len, "%.0f", n);
	else if (n < 1e6)
		snprintf(buf, len, "%.1fk", n / 1e3);
	else if (n < 1e9)
		snprintf(buf, len, "%.1fM", n / 1e6);
	else
		snprintf(buf, len, "%.1fG", n / 1e9);
	return buf;
}

const char *path_base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int fd_read_at(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k =
		    pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = 0;
			return -1;
		}
		got += (size_t)k;
	}
	return 0;
}

int fd_write_all(int fd, const void *buf, size_t n)
{
	while (n) {
		ssize_t k = write(fd, buf, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf = (const char *)buf + k;
		n -= (size_t)k;
	}
	return 0;
}

double mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
