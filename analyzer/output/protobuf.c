/*
 * protobuf.c - the encoder of protobuf.h.
 */
#include "protobuf.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

static void need(pb_t *b, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		b->p = xrealloc(b->p, cap);
		b->cap = cap;
	}
}

static void varint(pb_t *b, uint64_t v)
{
	need(b, 10);
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

static void key(pb_t *b, uint32_t field, unsigned wire)
{
	varint(b, (uint64_t)field << 3 | wire);
}

void pb_u64(pb_t *b, uint32_t field, uint64_t v)
{
	key(b, field, 0);
	varint(b, v);
}

void pb_i64(pb_t *b, uint32_t field, int64_t v)
{
	pb_u64(b, field, (uint64_t)v);
}

void pb_fixed64(pb_t *b, uint32_t field, uint64_t v)
{
	key(b, field, 1);
	need(b, 8);
	for (int i = 0; i < 8; i++)
		b->p[b->n++] = (uint8_t)(v >> (8 * i));
}

void pb_bytes(pb_t *b, uint32_t field, const void *s, size_t n)
{
	key(b, field, 2);
	varint(b, n);
	need(b, n);
	if (n)
		memcpy(b->p + b->n, s, n);
	b->n += n;
}

void pb_str(pb_t *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

void pb_packed(pb_t *b, uint32_t field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t mark = pb_open(b, field);
	for (size_t i = 0; i < n; i++)
		varint(b, v[i]);
	pb_close(b, mark);
}

/* The mark is the offset of the body; one byte is reserved before it for
 * the length, enough for bodies under 128 bytes (most of them). */
size_t pb_open(pb_t *b, uint32_t field)
{
	key(b, field, 2);
	need(b, 1);
	b->p[b->n++] = 0;
	return b->n;
}

void pb_close(pb_t *b, size_t mark)
{
	size_t len = b->n - mark, extra = 0;
	for (size_t v = len >> 7; v; v >>= 7)
		extra++;
	if (extra) {
		need(b, extra);
		memmove(b->p + mark + extra, b->p + mark, len);
		b->n += extra;
	}
	uint8_t *o = b->p + mark - 1;
	size_t v = len;
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o = (uint8_t)v;
}

void pb_free(pb_t *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}
