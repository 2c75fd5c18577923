/*
 * pkgowner.h - the Debian package that owns a file, asked of dpkg, for the
 * report's hint on where to get missing symbols.
 */
#ifndef MALLOCK_PKGOWNER_H
#define MALLOCK_PKGOWNER_H
#include <stddef.h>
#include <stdint.h>

/*
 * Writes the name of the package owning path into pkg (len bytes) and
 * returns 0. Runs `dpkg -S -- PATH` (no shell: the path comes from a
 * trace) and reads its output until deadline (CLOCK_MONOTONIC, ns), then
 * kills it. Returns -1 when dpkg owns no such file or fails, with errno
 * ENOENT when dpkg is not installed, ETIMEDOUT when it said nothing by
 * the deadline. dpkg's answers (not its time-outs)
 * are kept for the process: a path is asked once. Allocates a copy of
 * each path asked.
 */
int dpkg_owner(const char *path, char *pkg, size_t len, uint64_t deadline);
#endif
