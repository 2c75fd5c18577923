/*
 * protobuf.h - a small protocol-buffers encoder for the pprof and Perfetto
 * outputs: varints, length-delimited strings and bytes, packed repeated
 * varints and nested messages, into one growable buffer.
 *
 * Why our own and not libprotobuf-c: the two outputs use four wire shapes
 * only, the Go runtime writes pprof the same way (runtime/pprof/
 * protobuf.go), and libprotobuf-c would need generated code plus a C++
 * compiler package at build time, and a whole message tree in memory.
 *
 * Invariants: a nested message opened with pb_open is closed with pb_close
 * in LIFO order; its length is back-patched (the body is shifted when the
 * length needs more than one byte). Every call may allocate (exits on out
 * of memory, like util.h).
 */
#ifndef MALLOCK_PROTOBUF_H
#define MALLOCK_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb {
	uint8_t *p;
	size_t n, cap;
} pb_t;

/* Field with a varint value (wire type 0); written even when 0. */
void pb_u64(pb_t *b, uint32_t field, uint64_t v);
/* Signed as two's complement varint (int64, not sint64). */
void pb_i64(pb_t *b, uint32_t field, int64_t v);
/* Field with a fixed 64-bit value (wire type 1), e.g. Perfetto flow ids. */
void pb_fixed64(pb_t *b, uint32_t field, uint64_t v);
/* Length-delimited field (wire type 2). */
void pb_bytes(pb_t *b, uint32_t field, const void *s, size_t n);
/* A string; NULL is written as "". */
void pb_str(pb_t *b, uint32_t field, const char *s);
/* Packed repeated varints. Nothing when n == 0. */
void pb_packed(pb_t *b, uint32_t field, const uint64_t *v, size_t n);
/* Opens a nested message of field; returns the mark to give pb_close. */
size_t pb_open(pb_t *b, uint32_t field);
void pb_close(pb_t *b, size_t mark);
/* Empties the buffer (keeps its memory). */
static inline void pb_reset(pb_t *b)
{
	b->n = 0;
}
void pb_free(pb_t *b);

#endif
