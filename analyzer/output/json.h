/*
 * json.h - a small streaming JSON writer: objects, arrays, escaped strings,
 * integers printed exactly, indentation by depth.
 *
 * Invariants: commas and newlines are placed by the writer; callers pair
 * every jw_obj/jw_arr with jw_end; a key is written with jw_key before each
 * value inside an object.
 */
#ifndef MALLOCK_JSON_H
#define MALLOCK_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

typedef struct jw {
	FILE *f;
	int depth;
	bool first[JW_MAX_DEPTH];
	bool after_key;
	int compact_from; /* depth from which output stays on one line */
} jw_t;

void jw_init(jw_t *w, FILE *f);
void jw_obj(jw_t *w);
void jw_arr(jw_t *w);
void jw_end(jw_t *w, char close); /* '}' or ']' */
void jw_key(jw_t *w, const char *k);
void jw_str(jw_t *w, const char *s); /* NULL -> null */
void jw_u64(jw_t *w, uint64_t v);
void jw_num(jw_t *w, double v); /* integral values print as integers */
void jw_bool(jw_t *w, bool v);
void jw_null(jw_t *w);
/* key + value shorthands */
void jw_kstr(jw_t *w, const char *k, const char *s);
void jw_ku64(jw_t *w, const char *k, uint64_t v);
void jw_knum(jw_t *w, const char *k, double v);
void jw_kbool(jw_t *w, const char *k, bool v);

#endif
