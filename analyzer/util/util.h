/*
 * util.h - the analyzer's small helpers: allocation that fails loudly, a
 * growable array, and a string arena.
 *
 * Invariants: xmalloc() and friends never return NULL (out of memory prints
 * one line and exits with status 3); VEC_RESERVE keeps capacity >= length.
 */
#ifndef MALLOCK_UTIL_H
#define MALLOCK_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* malloc/calloc/realloc/strndup that exit(3) with a message on failure. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrndup(const char *s, size_t n);
char *xstrdup(const char *s);

/* Grows *arr (element size es) so that index `need` fits; returns the
 * (possibly moved) array. *cap is updated. Never fails (exits). */
void *vec_grow(void *arr, size_t es, size_t *cap, size_t need);

#define VEC_RESERVE(arr, cap, need)                                            \
	do {                                                                   \
		if ((size_t)(need) >= (cap))                                   \
			(arr) =                                                \
			    vec_grow((arr), sizeof *(arr), &(cap), (need));    \
	} while (0)

/* An append-only arena of strings; freed at once. */
typedef struct arena_blk arena_blk_t;
typedef struct arena {
	arena_blk_t *head;
} arena_t;

/* Copies n bytes of s as a NUL-terminated string owned by a. */
char *arena_strndup(arena_t *a, const char *s, size_t n);
char *arena_strdup(arena_t *a, const char *s);
/* Frees every string of a. */
void arena_free(arena_t *a);

/* Formats ns as "12.3 ms", "450 ns"... into buf (>= 16 bytes); returns buf. */
char *human_ns(char *buf, size_t len, double ns);
/* Formats a count as "12.3k", "4.5M"... */
char *human_count(char *buf, size_t len, double n);
/* Basename of a path (pointer into path). */
const char *path_base(const char *path);

/* Reads exactly n bytes at offset off (pread, EINTR retried): 0, or -1 with
 * errno set (0 when the file ended first). */
int fd_read_at(int fd, void *buf, size_t n, uint64_t off);
/* Writes all n bytes (write, EINTR retried): 0, or -1 with errno set. */
int fd_write_all(int fd, const void *buf, size_t n);
/* CLOCK_MONOTONIC in seconds, for the durations commands print. */
double mono_seconds(void);

#endif
