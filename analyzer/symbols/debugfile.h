/*
 * debugfile.h - finding the separate debug file of a stripped module
 * (debugfile.c), for symbols.c. Paths come from the trace, which may be
 * forged: nothing here opens a file that could block (a FIFO) or takes a
 * debug file whose build-id is not the module's.
 */
#ifndef MALLOCK_DEBUGFILE_H
#define MALLOCK_DEBUGFILE_H

#include <elfutils/libdwfl.h>
#include <sys/stat.h>

/* Opens path for reading only if it is a regular file (a FIFO without a
 * writer does not block the open, a tty does not become ours). Returns the
 * fd, which the caller owns, and its status in *st; or -1 with errno set
 * (EINVAL: not a regular file). */
int sym_open_regular(const char *path, struct stat *st);

/* The directories of --debug-dir (NULL-terminated, or NULL), searched
 * before the system's; sym_open sets it. */
extern const char *const *sym_debug_dirs;

/* Dwfl_Callbacks.find_debuginfo: by build-id first, then libdw's standard
 * search once the places it would open are checked to be regular files.
 * Returns an fd libdw owns, or -1 (the module keeps its own symbols). */
int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                       Dwarf_Addr base, const char *file_name,
                       const char *debuglink_file, GElf_Word debuglink_crc,
                       char **debuginfo_file_name);

#endif
