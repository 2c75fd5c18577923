/*
 * symbols.h - offline symbolization of recorded return addresses with
 * elfutils libdw, from the trace's module maps; and the folded, user-facing
 * view of a stack.
 *
 * A module whose build-id differs from the recorded one, or whose file is
 * gone, is named in a note and its frames are left as addresses: never
 * given wrong names.
 */
#ifndef MALLOCK_SYMBOLS_H
#define MALLOCK_SYMBOLS_H

#include "model.h"

#include <stdbool.h>
#include <stdint.h>

/* How a frame is folded away from what the user reads: SYM_RUNTIME
 * (libc/libstdc++/allocator internals) is folded at both ends of a stack,
 * SYM_SHIM (libmallock.so and its unwinder) always. */
#define SYM_USER 0 /* shown */
#define SYM_RUNTIME 1
#define SYM_SHIM 2

/* A function's short names for text (cxxname.h), one per full name; its
 * group is shared by the full names with one short text, ambiguous once
 * two of them (overloads) met: they are then shown with parameters. */
typedef struct shortgroup {
	const char *text, *full; /* the first full name */
	bool ambiguous;
} shortgroup_t;
typedef struct shortname {
	const char *text, *full;
	const char *params; /* text with the (short) parameter list */
	shortgroup_t *grp;
} shortname_t;

typedef struct frame {
	const char *function;  /* demangled, in full; NULL when unknown */
	const shortname_t *sn; /* its short form, NULL: the same */
	const char *file;      /* NULL when unknown */
	uint32_t line;         /* 0 when unknown */
	uint32_t start_line;   /* the function's first line (DW_AT_decl_line),
	                          0 when unknown */
	const char *module;    /* path; NULL when outside every module */
	uint64_t address;      /* the recorded return address */
	uint64_t offset;       /* address - the module's bias */
	bool inlined;          /* inlined into the next frame */
	uint8_t fold;          /* SYM_* */
} frame_t;

typedef struct symtab symtab_t;

/*
 * Prepares symbolization of m's modules (m->sym). With enable false, every
 * frame stays an address. Notes missing files and build-id mismatches in
 * m's notes. Separate debug files are looked for by build-id in each of
 * debug_dirs (NULL-terminated, or NULL; kept, not copied), then in
 * /usr/lib/debug and the debuginfod client's cache, then where libdw looks
 * (.gnu_debuglink). Allocates; freed by sym_close().
 */
void sym_open(model_t *m, bool enable, const char *const *debug_dirs);
void sym_close(model_t *m);

/*
 * The frames of one recorded address (inlined calls expanded, innermost
 * first). Returns their number (>= 1); *out points into a cache owned by
 * m->sym, valid until sym_close().
 */
int sym_addr(model_t *m, uint64_t addr, const frame_t **out);
/* The address and file offset of md's first PT_LOAD segment, from its
 * ELF file; false when the file was not opened. */
bool sym_module_load(model_t *m, const module_t *md, uint64_t *start,
                     uint64_t *file_offset);

/*
 * The user-facing frames of stack index si: symbolized, with shim frames
 * removed and runtime frames removed from both ends. Writes at most max
 * frames to out and returns their number; 0 for NONE32; one "[unknown]"
 * frame for a stack whose STACK record never arrived.
 */
int stack_view(model_t *m, uint32_t si, frame_t *out, int max);

/* The stack's site: its first user-facing frame. Returns false (and a
 * zeroed *out) when the stack has none. */
bool sym_stack_site(model_t *m, uint32_t si, frame_t *out);

/* The raw return address of the stack's first user frame (before inline
 * expansion), for grouping lock instances into classes; 0 if none. */
uint64_t stack_site_pc(model_t *m, uint32_t si);

/* The path of the recorded module holding addr (code or data), or NULL. */
const char *sym_module_path(model_t *m, uint64_t addr);

/* The ELF data symbol (.symtab, else .dynsym: an object or TLS symbol, as
 * `nm` lists it) of a recorded module whose range holds addr, demangled,
 * with *off the offset of addr in it; NULL when none does (or the module
 * is not symbolized). Owned by m->sym. */
const char *sym_data(model_t *m, uint64_t addr, uint64_t *off);

/* 1 with *index when addr is the lock of element *index of tcmalloc's
 * (gperftools) Static::central_cache_ in the recorded module holding it,
 * the array found from Static::InitStaticVars()'s code (its symbol is
 * not exported); 0 otherwise. The index is the size class; its size in
 * bytes is tcmalloc's run-time size map, not in the file. */
int sym_tc_central(model_t *m, uint64_t addr, uint64_t *index);

/* The function's name for text: short (no parameter list, std::string,
 * no default template arguments; with the parameter list, its types
 * short, where overloads meet); NULL when unknown.
 * JSON shows frame_t.function. */
const char *frame_name(const frame_t *f);

/* "function (file:line)" (the function as frame_name) or "module+0xoff" or
 * "0xaddr", into buf. */
const char *frame_label(const frame_t *f, char *buf, size_t len);

/* A module whose frames stayed unnamed. */
typedef struct sym_missing {
	const char *module, *build_id; /* the model's */
	uint64_t frames; /* distinct return addresses left unnamed */
	char *package;   /* the Debian package owning it, or NULL */
	char *hint;      /* how to get them, one sentence */
} sym_missing_t;
/*
 * After the analysis: counts the return addresses resolved so far that
 * stayed unnamed in user (not folded) modules, notes the total and, for
 * the 8 modules with the most, where to get their symbols (`dpkg -S`
 * names the package when dpkg is installed; all calls together are cut
 * off after 3 s). Call once. Returns the number of such modules.
 */
size_t sym_missing_notes(model_t *m);
/* Those modules (owned by m->sym), most frames first; their number. */
size_t sym_missing(const model_t *m, const sym_missing_t **out);
#endif
