/*
 * trace_format.h - the mallock trace format, version 1: what the shim writes
 * and the analyzer reads. docs/trace-format.md is its specification; this
 * header is the one place the byte layout is written down in code, so the
 * writer and the reader cannot disagree.
 *
 * Layout: a 16-byte file header, then chunks. A chunk is a 48-byte header
 * (length, CRC-32, thread, clock pair) and a payload of records. A record is
 * one type byte, then either a fixed list of varint fields (core events,
 * types below 0x80) or a varint length and that many bytes (metadata, types
 * 0x80 and above, skippable by a reader that does not know them).
 *
 * Invariants:
 * - All integers are little-endian (fixed fields) or LEB128 varints.
 * - Every core event starts with dt: TSC ticks since the previous core event
 *   of the same chunk (the first: since the chunk's tsc_base).
 * - Pointers in ALLOC/FREE/REALLOC are zigzag deltas from the previous pointer
 *   of the chunk (starting at 0).
 * - One chunk holds the events of one thread, in that thread's order.
 * - The encoders here never allocate and never call out of this header:
 *   the shim calls them inside its hooks.
 */
#ifndef MALLOCK_TRACE_FORMAT_H
#define MALLOCK_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FMT_FILE_MAGIC "MALLOCK\x1a"
#define FMT_FILE_MAGIC_LEN 8
#define FMT_VERSION_MAJOR 1
/* 1.1: PROCESS flags and trailing fields; 1.2: zstd-compressed chunks;
 * 1.3: FUTEX_WAIT, FUTEX_WAKE, kind futex; 1.4: PROCESS time_every and
 * untimed allocator calls (ticks 0); 1.5: ALLOC_MIGRATED; 1.6: timed holds
 * (ACQ_UNTIMED, ACQ_SAMPLED and their shared forms, PROCESS hold_every);
 * 1.7: compact forms (FMT_COMPACT_RECORDS); 1.8: hold forms
 * (FMT_HOLD_RECORDS); 1.9: LOCK_INIT_NEW */
#define FMT_VERSION_MINOR 9
#define FMT_FILE_HEADER_SIZE 16

#define FMT_CHUNK_MAGIC 0x434b4c4du /* "MLKC" as little-endian bytes */
#define FMT_CHUNK_HEADER_SIZE 48
#define FMT_CHUNK_MAX_PAYLOAD (16u << 20) /* a reader refuses larger chunks */
/* Chunk flags (1.2). FMT_CHUNKF_ZSTD: the payload as stored is a u32
 * little-endian length of the records (at most FMT_CHUNK_MAX_PAYLOAD), then
 * one zstd frame holding exactly that many bytes of records; payload_len
 * and the CRC cover what is stored. */
#define FMT_CHUNKF_ZSTD 1u
#define FMT_ZSTD_PREFIX 4u
/* A compressed chunk's records are at most this many times its stored
 * payload_len: a reader sizes no buffer beyond it, so a forged length
 * cannot make it allocate more than this multiple of the file; a writer
 * stores a chunk that compresses better than this uncompressed. */
#define FMT_ZSTD_MAX_RATIO 16u
#define FMT_VARINT_MAX 10 /* bytes in a 64-bit LEB128 */
#define FMT_STR_MAX 4096  /* longest string field */
#define FMT_STACK_MAX 256 /* most frames in one STACK record */

/*
 * Core events: X(name, code, layout). After the type byte and dt, the fields
 * follow the layout, one letter each: 'u' unsigned varint; 'p' a pointer, as
 * a zigzag delta from the chunk's previous pointer; 'r' a pointer, as a
 * zigzag delta from the field before it (REALLOC's new pointer vs its old).
 * fmt_decode() reads the fields by this table, so it is the single truth.
 * The fields' names are FMT_CORE_FIELDS below.
 * A new core event needs a new minor version at least: a reader older
 * than it stops at the first such record (docs/trace-format.md, "Forward
 * compatibility"); changing an existing one needs a new major version.
 */
/* clang-format off */
#define FMT_CORE_RECORDS(X)                                                    \
	X(ALLOC, 0x01, "puuuu")                                                \
	X(FREE, 0x02, "pu")                                                    \
	X(REALLOC, 0x03, "pruuu")                                              \
	X(ACQ, 0x04, "uu")                                                     \
	X(ACQ_SHARED, 0x05, "uu")                                              \
	X(ACQ_WAIT, 0x06, "uuuu")                                              \
	X(ACQ_SHARED_WAIT, 0x07, "uuuu")                                       \
	X(TRY_FAIL, 0x08, "uu")                                                \
	X(REL, 0x09, "u")                                                      \
	X(REL_CONTENDED, 0x0a, "uu")                                           \
	X(COND_WAIT, 0x0b, "uu")                                               \
	X(COND_WAKE, 0x0c, "uuu")                                              \
	X(COND_SIGNAL, 0x0d, "uu")                                             \
	X(ALLOC_LOCK_WAIT, 0x0e, "uu")                                         \
	X(THREAD_START, 0x0f, "u")                                             \
	X(THREAD_EXIT, 0x10, "")                                               \
	X(DROP, 0x11, "u")                                                     \
	X(LOCK_INIT, 0x12, "uu")                                               \
	X(LOCK_DESTROY, 0x13, "u")                                             \
	X(MARK, 0x14, "u")                                                     \
	X(FUTEX_WAIT, 0x15, "uuu")                                             \
	X(FUTEX_WAKE, 0x16, "uuu")                                             \
	X(ALLOC_MIGRATED, 0x17, "uu")                                          \
	X(ACQ_UNTIMED, 0x18, "uu")                                             \
	X(ACQ_SHARED_UNTIMED, 0x19, "uu")                                      \
	X(ACQ_SAMPLED, 0x1a, "uu")                                             \
	X(ACQ_SHARED_SAMPLED, 0x1b, "uu")

/*
 * Core event fields: X(record, index, FIELD, name), in each record's wire
 * order, one row per layout letter (THREAD_EXIT has none). Readers write
 * r->f[FMT_ALLOC_SIZE]; `mallock dump` prints the names. Comments: units
 * and meaning where the name does not say it all.
 */
#define FMT_CORE_FIELDS(X)                                                     \
	X(ALLOC, 0, PTR, "ptr")                                                \
	X(ALLOC, 1, SIZE, "size")                                              \
	X(ALLOC, 2, STACK, "stack")                                            \
	X(ALLOC, 3, TICKS, "ticks") /* in the real allocator */                \
	X(ALLOC, 4, FN, "fn") /* FMT_FN_* */                                   \
	X(FREE, 0, PTR, "ptr")                                                 \
	X(FREE, 1, TICKS, "ticks")                                             \
	X(REALLOC, 0, OLD, "old")                                              \
	X(REALLOC, 1, NEW, "new") /* a delta from OLD */                       \
	X(REALLOC, 2, SIZE, "size")                                            \
	X(REALLOC, 3, STACK, "stack")                                          \
	X(REALLOC, 4, TICKS, "ticks")                                          \
	X(ACQ, 0, LOCK, "lock")                                                \
	X(ACQ, 1, SITE, "site") /* stack id of the one-frame call site */      \
	X(ACQ_SHARED, 0, LOCK, "lock")                                         \
	X(ACQ_SHARED, 1, SITE, "site")                                         \
	X(ACQ_WAIT, 0, LOCK, "lock")                                           \
	X(ACQ_WAIT, 1, STACK, "stack")                                         \
	X(ACQ_WAIT, 2, WAIT, "wait") /* ticks */                               \
	X(ACQ_WAIT, 3, WAITERS, "waiters") /* incl. self */                    \
	X(ACQ_SHARED_WAIT, 0, LOCK, "lock")                                    \
	X(ACQ_SHARED_WAIT, 1, STACK, "stack")                                  \
	X(ACQ_SHARED_WAIT, 2, WAIT, "wait")                                    \
	X(ACQ_SHARED_WAIT, 3, WAITERS, "waiters")                              \
	X(TRY_FAIL, 0, LOCK, "lock")                                           \
	X(TRY_FAIL, 1, SITE, "site")                                           \
	X(REL, 0, LOCK, "lock")                                                \
	X(REL_CONTENDED, 0, LOCK, "lock")                                      \
	X(REL_CONTENDED, 1, STACK, "stack") /* the holder's, at release */     \
	X(COND_WAIT, 0, COND, "cond")                                          \
	X(COND_WAIT, 1, LOCK, "lock") /* the mutex, released by the wait */    \
	X(COND_WAKE, 0, COND, "cond")                                          \
	X(COND_WAKE, 1, LOCK, "lock") /* re-acquired */                        \
	X(COND_WAKE, 2, FLAGS, "flags")                                        \
	X(COND_SIGNAL, 0, COND, "cond")                                        \
	X(COND_SIGNAL, 1, FLAGS, "flags")                                      \
	X(ALLOC_LOCK_WAIT, 0, LOCK, "lock") /* the futex word's object id */   \
	X(ALLOC_LOCK_WAIT, 1, WAIT, "wait") /* ticks */                        \
	X(THREAD_START, 0, PARENT, "parent") /* tid */                         \
	X(DROP, 0, COUNT, "count") /* events lost before this point */         \
	X(LOCK_INIT, 0, LOCK, "lock")                                          \
	X(LOCK_INIT, 1, STACK, "stack") /* the init site */                    \
	X(LOCK_DESTROY, 0, LOCK, "lock")                                       \
	X(MARK, 0, WHAT, "what") /* FMT_MARK_* */                              \
	X(FUTEX_WAIT, 0, LOCK, "lock") /* the futex word's id (kind futex) */  \
	X(FUTEX_WAIT, 1, STACK, "stack") /* the waiter's */                    \
	X(FUTEX_WAIT, 2, WAIT, "wait") /* ticks asleep in the kernel */        \
	X(FUTEX_WAKE, 0, LOCK, "lock")                                         \
	X(FUTEX_WAKE, 1, STACK, "stack") /* the waker's */                     \
	X(FUTEX_WAKE, 2, WOKEN, "woken") /* waiters woken (>= 1) */            \
	X(ALLOC_MIGRATED, 0, FROM, "from") /* CPU the timed call began on */   \
	X(ALLOC_MIGRATED, 1, TO, "to") /* and the one it ended on */          \
	X(ACQ_UNTIMED, 0, LOCK, "lock")                                        \
	X(ACQ_UNTIMED, 1, SITE, "site")                                        \
	X(ACQ_SHARED_UNTIMED, 0, LOCK, "lock")                                 \
	X(ACQ_SHARED_UNTIMED, 1, SITE, "site")                                 \
	X(ACQ_SAMPLED, 0, LOCK, "lock")                                        \
	X(ACQ_SAMPLED, 1, SITE, "site")                                        \
	X(ACQ_SHARED_SAMPLED, 0, LOCK, "lock")                                 \
	X(ACQ_SHARED_SAMPLED, 1, SITE, "site")
/* clang-format on */

/* FMT_<record>_<FIELD>: a field's index in fmt_record_t.f. */
enum fmt_field {
#define FMT_FIELD_(rec, i, field, name) FMT_##rec##_##field = i,
	FMT_CORE_FIELDS(FMT_FIELD_)
#undef FMT_FIELD_
};

/* The acquisitions share their fields' places (lock, then the site or
 * stack; the waited ones add the wait and the waiters): a reader may read
 * any of them by FMT_ACQ_* and FMT_ACQ_WAIT_*. */
_Static_assert(FMT_ACQ_LOCK == FMT_ACQ_UNTIMED_LOCK &&
                   FMT_ACQ_LOCK == FMT_ACQ_SHARED_UNTIMED_LOCK &&
                   FMT_ACQ_LOCK == FMT_ACQ_SAMPLED_LOCK &&
                   FMT_ACQ_LOCK == FMT_ACQ_SHARED_SAMPLED_LOCK &&
                   FMT_ACQ_SITE == FMT_ACQ_UNTIMED_SITE &&
                   FMT_ACQ_SITE == FMT_ACQ_SHARED_UNTIMED_SITE &&
                   FMT_ACQ_SITE == FMT_ACQ_SAMPLED_SITE &&
                   FMT_ACQ_SITE == FMT_ACQ_SHARED_SAMPLED_SITE,
               "uncontended acquisitions share a layout");
_Static_assert(FMT_ACQ_LOCK == FMT_ACQ_WAIT_LOCK &&
                   FMT_ACQ_LOCK == FMT_ACQ_SHARED_LOCK &&
                   FMT_ACQ_LOCK == FMT_ACQ_SHARED_WAIT_LOCK &&
                   FMT_ACQ_SITE == FMT_ACQ_WAIT_STACK &&
                   FMT_ACQ_SITE == FMT_ACQ_SHARED_SITE &&
                   FMT_ACQ_SITE == FMT_ACQ_SHARED_WAIT_STACK &&
                   FMT_ACQ_WAIT_WAIT == FMT_ACQ_SHARED_WAIT_WAIT &&
                   FMT_ACQ_WAIT_WAITERS == FMT_ACQ_SHARED_WAIT_WAITERS,
               "acquisition records share a layout");

/*
 * Compact forms (1.7): shorter encodings of the commonest core events,
 * X(name, code, base, layout). A reader decodes one as its base record
 * (fmt_record_t.type is base, f[] holds all of base's fields): nothing
 * past the decoder knows them. After the type byte and dt, one layout
 * letter per field of base, in its order:
 *   'u' a varint, as in base;
 *   'q' a pointer, as a zigzag delta from the chunk's previous pointer in
 *       units of 16 bytes (written only when the delta is a multiple of
 *       16: malloc's alignment), which it becomes;
 *   'z' a varint times 16 (a size that is a multiple of 16);
 *   '0' not written: 0;
 *   'k' not written: the chunk's last lock (FMT_LOCK_RECORD below).
 * The writer uses a compact form whenever its conditions hold (the
 * fmt_put_* encoders below), else the base record.
 * REL_LAST_DT and ACQ_LAST_DT are FMT_DT_CODES codes each: code
 * REL_LAST_DT + j is a REL_LAST whose dt is (j + 1) * 128 plus the dt
 * written (a hold of 128 to 2047 ticks then takes one byte of dt, not
 * two), and ACQ_LAST_DT + j the same for ACQ_LAST.
 */
/* clang-format off */
#define FMT_COMPACT_RECORDS(X)                                                 \
	X(ALLOC_MALLOC, 0x1c, ALLOC, "quuu0")                                  \
	X(ALLOC_MALLOC_UNTIMED, 0x1d, ALLOC, "quu00")                          \
	X(FREE_ALIGNED, 0x1e, FREE, "qu")                                      \
	X(FREE_UNTIMED, 0x1f, FREE, "q0")                                      \
	X(COND_SIGNAL_ONE, 0x20, COND_SIGNAL, "u0")                            \
	X(ACQ_LAST, 0x21, ACQ, "ku")                                           \
	X(ACQ_SHARED_LAST, 0x22, ACQ_SHARED, "ku")                             \
	X(ACQ_UNTIMED_LAST, 0x23, ACQ_UNTIMED, "ku")                           \
	X(ACQ_SHARED_UNTIMED_LAST, 0x24, ACQ_SHARED_UNTIMED, "ku")             \
	X(ACQ_SAMPLED_LAST, 0x25, ACQ_SAMPLED, "ku")                           \
	X(ACQ_SHARED_SAMPLED_LAST, 0x26, ACQ_SHARED_SAMPLED, "ku")             \
	X(REL_LAST, 0x27, REL, "k")                                            \
	X(LOCK_DESTROY_LAST, 0x28, LOCK_DESTROY, "k")                          \
	X(REL_LAST_DT, 0x29, REL, "k")                                         \
	X(ALLOC_MALLOC_SIZE16, 0x38, ALLOC, "qzuu0")                           \
	X(ALLOC_MALLOC_UNTIMED_SIZE16, 0x39, ALLOC, "qzu00")                   \
	X(ACQ_LAST_DT, 0x3a, ACQ, "ku")
#define FMT_DT_CODES 15 /* REL_LAST_DT 0x29-0x37, ACQ_LAST_DT 0x3a-0x48 */
/* clang-format on */

/*
 * Hold forms (1.8): one record for an untimed hold, X(name, code, base,
 * layout): an uncontended acquisition of type base (ACQ_UNTIMED or
 * ACQ_SHARED_UNTIMED) and the release of the same lock that ended it,
 * when the thread recorded nothing between the two and no thread waited
 * for the lock. After the type byte and dt, one layout letter per field
 * of base, as the compact forms' ('k': the chunk's last lock). A reader
 * decodes one as two records at the record's time: base, then REL of the
 * same lock (fmt_decode returns them one call after the other), so that
 * nothing past the decoder knows them and every acquisition and release
 * is still counted. A writer may use a hold form whenever its conditions
 * hold (fmt_put_hold), its _LAST form when the lock is the chunk's last
 * lock, or write the two records (docs/trace-format.md, "Hold forms").
 */
/* clang-format off */
#define FMT_HOLD_RECORDS(X)                                                    \
	X(HOLD_UNTIMED, 0x49, ACQ_UNTIMED, "uu")                               \
	X(HOLD_SHARED_UNTIMED, 0x4a, ACQ_SHARED_UNTIMED, "uu")                 \
	X(HOLD_UNTIMED_LAST, 0x4b, ACQ_UNTIMED, "ku")                          \
	X(HOLD_SHARED_UNTIMED_LAST, 0x4c, ACQ_SHARED_UNTIMED, "ku")
/* clang-format on */

/*
 * LOCK_INIT_NEW (1.9): one record for a lock's definition and its init,
 * when the lock is first seen at its init: a LOCK_NEW (flags
 * FMT_LOCKF_INIT) and a LOCK_INIT of the same id. After the type byte and
 * dt: id as a zigzag delta from the chunk's last new id plus 1 (the id
 * of the chunk's previous LOCK_INIT_NEW; 0 at the chunk's start), addr as
 * a zigzag delta from the chunk's previous pointer (which it does not
 * change), kind, stack (LOCK_INIT's). A reader decodes it as two records
 * from two calls: the LOCK_NEW (metadata, its body built by the decoder,
 * at the time before the record's dt), then the LOCK_INIT at the record's
 * time; its id is the chunk's last
 * lock afterwards. The layout, for tools that count bytes per field:
 * 'i' the id delta, 'a' the address delta.
 */
#define FMT_LOCK_INIT_NEW 0x4d
#define FMT_LOCK_INIT_NEW_LAYOUT "iauu"

/* Metadata records: X(name, code, fields), each framed by a varint length. */
/* clang-format off */
#define FMT_META_RECORDS(X)                                                    \
	X(PROCESS, 0x80, "pid u, ppid u, realtime_ns u, tsc u, mono_ns u, "    \
	                 "tsc_hz u, depth u, unwinder u, flags u, exe str, "   \
	                 "cmdline str, hostname str, version str, "            \
	                 "sample_bytes u (1.1), max_bytes u (1.1), "           \
	                 "time_every u (1.4), hold_every u (1.6)")             \
	X(MODULE, 0x81, "bias u, lo u, hi u, path str, build_id bytes")        \
	X(STACK, 0x82, "id u, n u, frame0 u, frame[i] s(vs frame[i-1])")       \
	X(LOCK_NEW, 0x83, "id u, addr u, kind u, flags u")                     \
	X(LOCK_NAME, 0x84, "id u, flags u, name str")                          \
	X(THREAD_NAME, 0x85, "tid u, name str")                                \
	X(END, 0x86, "events u, dropped u, flags u")                           \
	X(NOTE, 0x87, "level u, text str")
/* clang-format on */

enum fmt_type {
#define FMT_ENUM_(name, code, fields) FMT_##name = code,
	FMT_CORE_RECORDS(FMT_ENUM_) FMT_META_RECORDS(FMT_ENUM_)
#undef FMT_ENUM_
};
enum fmt_compact_type {
#define FMT_CENUM_(name, code, base, layout) FMT_##name = code,
	FMT_COMPACT_RECORDS(FMT_CENUM_) FMT_HOLD_RECORDS(FMT_CENUM_)
#undef FMT_CENUM_
};

/* The chunk's last lock (1.7): the lock field (field 0) of its previous
 * record of one of these base types, 0 before the first. The writer and
 * the reader both keep it, for the 'k' letter of compact forms. */
#define FMT_LOCK_RECORDS_MASK                                                  \
	((1ull << FMT_ACQ) | (1ull << FMT_ACQ_SHARED) |                        \
	 (1ull << FMT_ACQ_WAIT) | (1ull << FMT_ACQ_SHARED_WAIT) |              \
	 (1ull << FMT_REL) | (1ull << FMT_REL_CONTENDED) |                     \
	 (1ull << FMT_LOCK_INIT) | (1ull << FMT_LOCK_DESTROY) |                \
	 (1ull << FMT_ACQ_UNTIMED) | (1ull << FMT_ACQ_SHARED_UNTIMED) |        \
	 (1ull << FMT_ACQ_SAMPLED) | (1ull << FMT_ACQ_SHARED_SAMPLED))
#define FMT_LOCK_RECORD(type)                                                  \
	((type) < 64 && ((FMT_LOCK_RECORDS_MASK >> (type)) & 1))

#define FMT_IS_META(type) (((type)&0x80u) != 0)

/* ALLOC fn: which entry point allocated. */
/* clang-format off */
#define FMT_ALLOC_FNS(X)                                                       \
	X(MALLOC, 0, "malloc") X(CALLOC, 1, "calloc")                          \
	X(MEMALIGN, 2, "memalign") X(POSIX_MEMALIGN, 3, "posix_memalign")      \
	X(ALIGNED_ALLOC, 4, "aligned_alloc") X(VALLOC, 5, "valloc")            \
	X(PVALLOC, 6, "pvalloc") X(NEW, 7, "operator new")                     \
	X(NEW_ARRAY, 8, "operator new[]") X(HOOK, 9, "allocator hook")         \
	X(REALLOCARRAY, 10, "reallocarray")
/* clang-format on */
enum fmt_alloc_fn {
#define FMT_FN_ENUM_(name, code, str) FMT_FN_##name = code,
	FMT_ALLOC_FNS(FMT_FN_ENUM_)
#undef FMT_FN_ENUM_
};

/* LOCK_NEW kind: what the object is. */
/* clang-format off */
#define FMT_LOCK_KINDS(X)                                                      \
	X(MUTEX, 0, "mutex") X(RWLOCK, 1, "rwlock") X(SPIN, 2, "spinlock")     \
	X(COND, 3, "cond") X(ALLOC_INTERNAL, 4, "allocator-internal")          \
	X(FUTEX, 5, "futex")
/* clang-format on */
enum fmt_lock_kind {
#define FMT_KIND_ENUM_(name, code, str) FMT_KIND_##name = code,
	FMT_LOCK_KINDS(FMT_KIND_ENUM_)
#undef FMT_KIND_ENUM_
};

/* LOCK_NEW flags */
#define FMT_LOCKF_INIT 1u   /* first seen at pthread_*_init */
#define FMT_LOCKF_STATIC 2u /* first seen at an acquisition (static init) */
/* LOCK_NAME flags */
#define FMT_NAMEF_QUEUE 1u /* the user marked the lock queue-like */
/* COND_WAKE flags */
#define FMT_WAKEF_TIMEDOUT 1u
#define FMT_WAKEF_ERROR 2u
/* COND_SIGNAL flags */
#define FMT_SIGF_BROADCAST 1u
/* MARK what */
#define FMT_MARK_PAUSE 0u
#define FMT_MARK_RESUME 1u
/* PROCESS flags (1.1) */
#define FMT_PROCF_START_PAUSED 1u /* recording started paused */
#define FMT_PROCF_SAMPLED 2u      /* allocations sampled: see sample_bytes */
#define FMT_PROCF_CAPPED_SIZE 4u  /* the writer had a size cap (max_bytes) */
/* PROCESS unwinder */
#define FMT_UNWIND_LIBUNWIND 0u
#define FMT_UNWIND_FP 1u
#define FMT_UNWIND_NONE 2u
/* END flags */
#define FMT_ENDF_CLEAN 1u /* written by the final flush at exit */
/* NOTE level */
#define FMT_NOTE_INFO 0u
#define FMT_NOTE_WARN 1u

/* The chunk header, as decoded; on disk it is 48 little-endian bytes:
 *   0 magic u32 | 4 payload_len u32 | 8 crc32 u32 | 12 tid u32 |
 *  16 seq u32   | 20 flags u32      | 24 tsc_base u64 | 32 tsc_flush u64 |
 *  40 mono_flush_ns u64
 * crc32 is zlib's CRC-32 of bytes 12..47 followed by the payload. */
typedef struct fmt_chunk_header {
	uint32_t magic;
	uint32_t payload_len;
	uint32_t crc32;
	uint32_t tid; /* 0: process-level chunk (PROCESS, MODULE...) */
	uint32_t seq; /* per-thread chunk sequence number, from 0 */
	uint32_t flags;
	uint64_t tsc_base;
	uint64_t tsc_flush;
	uint64_t mono_flush_ns;
} fmt_chunk_header_t;

/* ---- varints: inline, allocation-free, used by the shim's hot path ---- */

static inline uint8_t *fmt_put_u(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t fmt_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t fmt_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *fmt_put_s(uint8_t *p, int64_t v)
{
	return fmt_put_u(p, fmt_zigzag(v));
}

/* Writes a string field: varint length, then the bytes (no NUL). */
static inline uint8_t *fmt_put_str(uint8_t *p, const char *s, size_t n)
{
	if (n > FMT_STR_MAX)
		n = FMT_STR_MAX;
	p = fmt_put_u(p, n);
	memcpy(p, s, n);
	return p + n;
}

/*
 * Reads one varint at *p (not past end). Returns 0 and advances *p, or -1
 * when the varint runs past end or is longer than 10 bytes.
 */
static inline int fmt_get_u(const uint8_t **p, const uint8_t *end,
                            uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* ---- encoder state: one per chunk being filled ---- */

typedef struct fmt_enc {
	uint64_t last_tsc;  /* timestamp of the previous core event */
	uint64_t last_ptr;  /* previous pointer (ALLOC/FREE/REALLOC) */
	uint64_t last_lock; /* the chunk's last lock (FMT_LOCK_RECORD) */
	uint64_t last_new;  /* the chunk's last new id (LOCK_INIT_NEW) */
} fmt_enc_t;

/* Worst-case bytes of one core event (type byte + 7 varints). */
#define FMT_EVENT_MAX (1 + 7 * FMT_VARINT_MAX)

static inline uint8_t *fmt_put_head(uint8_t *p, fmt_enc_t *e, unsigned type,
                                    uint64_t tsc)
{
	*p++ = (uint8_t)type;
	/* A clock that steps back (another core's TSC read earlier) is clamped:
	 * dt is never negative. */
	uint64_t dt = tsc > e->last_tsc ? tsc - e->last_tsc : 0;
	e->last_tsc += dt;
	return fmt_put_u(p, dt);
}

static inline uint8_t *fmt_put_ptr(uint8_t *p, fmt_enc_t *e, uint64_t ptr)
{
	p = fmt_put_s(p, (int64_t)(ptr - e->last_ptr));
	e->last_ptr = ptr;
	return p;
}

/* ---- the compact forms' encoders (1.7): each writes a whole core event,
 * type byte included, in its shortest form; the shim's hooks and the
 * writer's re-encoding share them ---- */

/* ALLOC(ptr, size, stack, ticks, fn) at tsc. */
static inline uint8_t *fmt_put_alloc(uint8_t *p, fmt_enc_t *e, uint64_t tsc,
                                     uint64_t ptr, uint64_t size,
                                     uint64_t stack, uint64_t ticks,
                                     uint64_t fn)
{
	uint64_t d = ptr - e->last_ptr;
	if (__builtin_expect(((d & 15) | fn) != 0, 0)) {
		p = fmt_put_head(p, e, FMT_ALLOC, tsc);
		p = fmt_put_ptr(p, e, ptr);
		p = fmt_put_u(p, size);
		p = fmt_put_u(p, stack);
		p = fmt_put_u(p, ticks);
		return fmt_put_u(p, fn);
	}
	e->last_ptr = ptr;
	unsigned type =
	    (size & 15) ? FMT_ALLOC_MALLOC : FMT_ALLOC_MALLOC_SIZE16;
	_Static_assert(FMT_ALLOC_MALLOC_UNTIMED == FMT_ALLOC_MALLOC + 1 &&
	                   FMT_ALLOC_MALLOC_UNTIMED_SIZE16 ==
	                       FMT_ALLOC_MALLOC_SIZE16 + 1,
	               "an untimed form follows its timed one");
	p = fmt_put_head(p, e, type + !ticks, tsc);
	p = fmt_put_s(p, (int64_t)d >> 4);
	p = fmt_put_u(p, (size & 15) ? size : size >> 4);
	p = fmt_put_u(p, stack);
	return ticks ? fmt_put_u(p, ticks) : p;
}

/* FREE(ptr, ticks) at tsc. */
static inline uint8_t *fmt_put_free(uint8_t *p, fmt_enc_t *e, uint64_t tsc,
                                    uint64_t ptr, uint64_t ticks)
{
	uint64_t d = ptr - e->last_ptr;
	if (__builtin_expect((d & 15) != 0, 0)) {
		p = fmt_put_head(p, e, FMT_FREE, tsc);
		p = fmt_put_ptr(p, e, ptr);
		return fmt_put_u(p, ticks);
	}
	e->last_ptr = ptr;
	p = fmt_put_head(p, e, ticks ? FMT_FREE_ALIGNED : FMT_FREE_UNTIMED,
	                 tsc);
	p = fmt_put_s(p, (int64_t)d >> 4);
	return ticks ? fmt_put_u(p, ticks) : p;
}

/* The _LAST form of an uncontended acquisition type (ACQ, ACQ_SHARED and
 * their untimed and sampled forms), or 0. */
static inline unsigned fmt_acq_last(unsigned type)
{
	switch (type) {
	case FMT_ACQ:
		return FMT_ACQ_LAST;
	case FMT_ACQ_SHARED:
		return FMT_ACQ_SHARED_LAST;
	case FMT_ACQ_UNTIMED:
		return FMT_ACQ_UNTIMED_LAST;
	case FMT_ACQ_SHARED_UNTIMED:
		return FMT_ACQ_SHARED_UNTIMED_LAST;
	case FMT_ACQ_SAMPLED:
		return FMT_ACQ_SAMPLED_LAST;
	case FMT_ACQ_SHARED_SAMPLED:
		return FMT_ACQ_SHARED_SAMPLED_LAST;
	}
	return 0;
}

/* The type byte and dt of a form whose dt group starts at dt_first
 * (REL_LAST, ACQ_LAST): dt's bits 7-10 in the type byte when it has no
 * others, and dt's low 7 bits as a one-byte varint; else type and dt as
 * fmt_put_head() writes them. */
static inline uint8_t *fmt_put_head_dt(uint8_t *p, fmt_enc_t *e, unsigned type,
                                       unsigned dt_first, uint64_t tsc)
{
	uint64_t dt = tsc > e->last_tsc ? tsc - e->last_tsc : 0;
	uint64_t j = dt >> 7;
	if (j && j <= FMT_DT_CODES) {
		*p++ = (uint8_t)(dt_first + j - 1);
		e->last_tsc += dt;
		*p++ = (uint8_t)(dt & 127);
		return p;
	}
	return fmt_put_head(p, e, type, tsc);
}

/* A record of a base type whose field 0 is a lock (FMT_LOCK_RECORD) with
 * one more field b (nb 1) or none (nb 0), at tsc: its _LAST form when the
 * lock is the chunk's last lock and it has one. */
static inline uint8_t *fmt_put_lockrec(uint8_t *p, fmt_enc_t *e, unsigned type,
                                       uint64_t tsc, uint64_t lock, int nb,
                                       uint64_t b)
{
	unsigned last = 0;
	if (lock == e->last_lock)
		last = type == FMT_REL            ? FMT_REL_LAST
		       : type == FMT_LOCK_DESTROY ? FMT_LOCK_DESTROY_LAST
		                                  : fmt_acq_last(type);
	if (last == FMT_REL_LAST) {
		p = fmt_put_head_dt(p, e, last, FMT_REL_LAST_DT, tsc);
	} else if (last == FMT_ACQ_LAST) {
		p = fmt_put_head_dt(p, e, last, FMT_ACQ_LAST_DT, tsc);
	} else if (last) {
		p = fmt_put_head(p, e, last, tsc);
	} else {
		p = fmt_put_head(p, e, type, tsc);
		p = fmt_put_u(p, lock);
		e->last_lock = lock;
	}
	return nb ? fmt_put_u(p, b) : p;
}

/* An untimed hold (1.8) of lock, acquired at site (ACQ_UNTIMED, or
 * ACQ_SHARED_UNTIMED when shared) and released, both at tsc: its hold
 * form, the _LAST one when lock is the chunk's last lock. */
static inline uint8_t *fmt_put_hold(uint8_t *p, fmt_enc_t *e, int shared,
                                    uint64_t tsc, uint64_t lock, uint64_t site)
{
	_Static_assert(FMT_HOLD_SHARED_UNTIMED == FMT_HOLD_UNTIMED + 1 &&
	                   FMT_HOLD_SHARED_UNTIMED_LAST ==
	                       FMT_HOLD_UNTIMED_LAST + 1,
	               "a shared hold form follows its exclusive one");
	unsigned s = shared != 0;
	if (lock == e->last_lock) {
		p = fmt_put_head(p, e, FMT_HOLD_UNTIMED_LAST + s, tsc);
	} else {
		p = fmt_put_head(p, e, FMT_HOLD_UNTIMED + s, tsc);
		p = fmt_put_u(p, lock);
		e->last_lock = lock;
	}
	return fmt_put_u(p, site);
}

/* LOCK_NEW(id, addr, kind, FMT_LOCKF_INIT) and LOCK_INIT(id, stack) at
 * tsc, of a lock first seen at this init, as one LOCK_INIT_NEW (1.9). */
static inline uint8_t *fmt_put_init_new(uint8_t *p, fmt_enc_t *e, uint64_t tsc,
                                        uint64_t id, uint64_t addr,
                                        uint64_t kind, uint64_t stack)
{
	p = fmt_put_head(p, e, FMT_LOCK_INIT_NEW, tsc);
	p = fmt_put_s(p, (int64_t)(id - e->last_new - 1));
	p = fmt_put_s(p, (int64_t)(addr - e->last_ptr));
	p = fmt_put_u(p, kind);
	e->last_new = e->last_lock = id;
	return fmt_put_u(p, stack);
}

/* COND_SIGNAL(cond, flags) at tsc. */
static inline uint8_t *fmt_put_signal(uint8_t *p, fmt_enc_t *e, uint64_t tsc,
                                      uint64_t cond, uint64_t flags)
{
	p = fmt_put_head(p, e, flags ? FMT_COND_SIGNAL : FMT_COND_SIGNAL_ONE,
	                 tsc);
	p = fmt_put_u(p, cond);
	return flags ? fmt_put_u(p, flags) : p;
}

/* ---- chunk framing (format.c) ---- */

/* Writes the 16-byte file header into out. */
void fmt_file_header(uint8_t out[FMT_FILE_HEADER_SIZE]);

/*
 * Checks a file header. Returns 0, or -1 (not a mallock trace) or -2 (a
 * version this code cannot read); the version found goes to major and minor.
 */
int fmt_file_header_check(const uint8_t *in, size_t n, unsigned *major,
                          unsigned *minor);

/*
 * Fills the 48 header bytes out[] from h (computing the CRC over h and the
 * payload). Allocation-free; safe in the shim's hooks.
 */
void fmt_chunk_seal(uint8_t out[FMT_CHUNK_HEADER_SIZE], fmt_chunk_header_t *h,
                    const uint8_t *payload);

/* Decodes 48 header bytes. Returns 0, or -1 on a bad magic or a payload
 * length over FMT_CHUNK_MAX_PAYLOAD. Does not check the CRC. */
int fmt_chunk_parse(const uint8_t in[FMT_CHUNK_HEADER_SIZE],
                    fmt_chunk_header_t *h);

/* The records of a chunk whose CRC matched: stored itself, or for a
 * compressed chunk its decompressed bytes in *buf (grown with realloc as
 * needed; the caller frees it). On return *out and *outlen describe the
 * records. Returns 0, or -1 when a compressed payload is malformed (its
 * length prefix too large, the frame corrupt, or not exactly that long).
 * In the analyzer's format library only (format/inflate.c): the shim
 * never decompresses. */
int fmt_chunk_inflate(const fmt_chunk_header_t *h, const uint8_t *stored,
                      uint8_t **buf, size_t *cap, const uint8_t **out,
                      uint32_t *outlen);

/* Returns 0 when the CRC of raw header bytes and payload matches h->crc32. */
int fmt_chunk_verify(const uint8_t in[FMT_CHUNK_HEADER_SIZE],
                     const fmt_chunk_header_t *h, const uint8_t *payload);

/* ---- record decoding (format.c) ---- */

/*
 * One decoded record. For core events, tsc is absolute (chunk base plus the
 * sum of dts) and f[] holds the fields in wire order, with pointer deltas
 * already resolved to absolute pointers. For metadata, body/body_len give the
 * record's bytes (use fmt_get_u and fmt_get_str on them). wire is the type
 * byte as stored: type, or the compact form (1.7), hold form (1.8) or
 * LOCK_INIT_NEW (1.9) that stood for it (both records of a hold form or
 * of a LOCK_INIT_NEW carry its code).
 */
typedef struct fmt_record {
	unsigned type;
	unsigned wire;
	uint64_t tsc;
	uint64_t f[7];
	unsigned nf;
	const uint8_t *body;
	size_t body_len;
} fmt_record_t;

/* Decoder state over one chunk payload. p is the next record, or the
 * record of two whose second is still to come (a hold form's REL, 1.8; a
 * LOCK_INIT_NEW's LOCK_INIT, 1.9): then pair_end is the byte after it
 * (else NULL). new_body holds the body of a LOCK_INIT_NEW's LOCK_NEW. */
typedef struct fmt_dec {
	const uint8_t *p, *end, *start;
	uint64_t tsc;
	uint64_t last_ptr;
	uint64_t last_lock; /* the chunk's last lock (FMT_LOCK_RECORD) */
	uint64_t last_new;  /* the chunk's last new id (LOCK_INIT_NEW) */
	const uint8_t *pair_end;
	uint64_t init_stack; /* the pending LOCK_INIT's stack */
	uint8_t new_body[4 * FMT_VARINT_MAX];
} fmt_dec_t;

void fmt_dec_init(fmt_dec_t *d, const fmt_chunk_header_t *h,
                  const uint8_t *payload);

/*
 * Decodes the next record. Returns 1 with *r filled, 0 at the end of the
 * payload, -1 on a malformed record (bad varint, length past the payload,
 * unknown core type); then *err_off is its offset inside the payload. A
 * compact form comes back as its base record, a hold form as two records
 * from two calls (its acquisition, then REL), a LOCK_INIT_NEW as two
 * (LOCK_NEW, whose body lives in *d until its LOCK_INIT is returned, then
 * LOCK_INIT).
 */
int fmt_decode(fmt_dec_t *d, fmt_record_t *r, size_t *err_off);

/* Reads a string field (varint length + bytes) from a metadata body.
 * Returns 0 with s and n pointing into the body, or -1. */
int fmt_get_str(const uint8_t **p, const uint8_t *end, const char **s,
                size_t *n);

/* The field layout of a core type (see FMT_CORE_RECORDS), or NULL when
 * type is not a core type. */
const char *fmt_core_layout(unsigned type);

/* A compact type's wire layout (FMT_COMPACT_RECORDS, or a hold form's:
 * FMT_HOLD_RECORDS, or LOCK_INIT_NEW's) and base type in *base (a hold
 * form's: its acquisition; LOCK_INIT_NEW's: LOCK_INIT), or NULL when type
 * is none of them. */
const char *fmt_compact_layout(unsigned type, unsigned *base);
/* Nonzero when type is a hold form (FMT_HOLD_RECORDS). */
int fmt_is_hold(unsigned type);

/* The record's name ("ALLOC", ...; compact types' and hold forms' too),
 * or NULL for an unknown type. */
const char *fmt_type_name(unsigned type);
/* The name of field i of a core type ("size", ...; FMT_CORE_FIELDS), or
 * NULL when the type has no such field. */
const char *fmt_field_name(unsigned type, unsigned i);
const char *fmt_alloc_fn_name(unsigned fn);
const char *fmt_lock_kind_name(unsigned kind);

#endif /* MALLOCK_TRACE_FORMAT_H */
