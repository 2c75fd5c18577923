/*
 * dwpool.h - the process-wide pool of files handed to libdw (dwpool.c),
 * for symbols.c: each file is opened in a Dwfl once however many models
 * (traces of one report) map it, and looked up at its link addresses
 * (address - the module's recorded bias).
 */
#ifndef MALLOCK_DWPOOL_H
#define MALLOCK_DWPOOL_H

#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <sys/stat.h>

/* The pooled file for path (fd open on it, status st: sym_open_regular),
 * reported to libdw on first use. Takes fd: libdw keeps it or it is
 * closed. Returns its slot, with one more reference; never fails (a file
 * libdw refused has no module, see dwpool_error). May allocate; may move
 * the pool, so keep slots, not pointers. */
uint32_t dwpool_get(const char *path, int fd, const struct stat *st);

/* Drops one reference to slot. A file no model uses stays open for the
 * next trace; beyond 64 such files the least recently used is freed. */
void dwpool_put(uint32_t slot);

/* The libdw module of a referenced slot (owned by the pool, valid until
 * its last dwpool_put), or NULL when libdw refused the file. */
Dwfl_Module *dwpool_module(uint32_t slot);

/* dwfl_module_addrname of link address pc in a referenced slot's file,
 * looked up once per file and pc (owned by the pool, valid until the
 * slot's last dwpool_put); NULL as libdw says, or when it refused the
 * file. May allocate. */
const char *dwpool_addrname(uint32_t slot, Dwarf_Addr pc);

/* Why libdw refused the file of slot (owned by the pool), or NULL. */
const char *dwpool_error(uint32_t slot);

#endif
