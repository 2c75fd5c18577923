/*
 * tccentral.h - finding tcmalloc's (gperftools) Static::central_cache_, the
 * array of central free lists whose SpinLocks a trace records, in a
 * module that may be stripped (tccentral.c), for symbols.c.
 */
#ifndef MALLOCK_TCCENTRAL_H
#define MALLOCK_TCCENTRAL_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

/* 1 with the array's start (*base, an address of the ELF file's own, bias
 * 0) and its element size (*stride) when dm defines
 * Static::InitStaticVars() and its code shows exactly one
 * (lea central_cache_, add $sizeof(element)) pair on one register; 0
 * otherwise (*base and *stride then unspecified). Allocates nothing of
 * its own (libdw caches the module's symbol table). */
int tc_central_of(Dwfl_Module *dm, uint64_t *base, uint64_t *stride);

#endif
