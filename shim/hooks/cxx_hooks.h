/*
 * cxx_hooks.h - what the C++ operator hooks (cxx_hooks.c) offer the rest of
 * the shim: the next operators looked up at init, and bound by attach.
 */
#ifndef MALLOCK_SHIM_CXX_HOOKS_H
#define MALLOCK_SHIM_CXX_HOOKS_H

/* At init (the caller holds the gate): every operator looked up once, so
 * that a hook does not call dlsym, which takes the loader's lock (hook.h).
 * Only an operator absent now (libstdc++ dlopen'ed later) is looked up in
 * its first hook. */
void cxx_init(void);

/*
 * attach.c, a shim loaded late (`mallock attach`): the operators the
 * program's C++ call slots are bound to, set before any slot points at a
 * hook. Returns 0, or -1 for a name that is not an operator of cxx_ops.h
 * (or std::__throw_bad_alloc).
 */
int cxx_next_bind(const char *sym, void *fn);

#endif
