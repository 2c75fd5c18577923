/*
 * cxx_ops.h - the C++ operators new and delete the shim hooks, listed once:
 * cxx_hooks.c defines a hook per row and resolves the next operator per
 * row; attach.c binds the program's call slots by the rows' symbols.
 * shim/hooks/exports.map exports them (tests/shim/exports.sh checks it).
 *
 * CXX_NEW_OPS(X): X(symbol, index, FMT_FN_ code, has_al, has_nt, (params),
 *                   al argument, nt argument)
 * CXX_DEL_OPS(X): X(symbol, index, plain index (the fallback of the same
 *                   family), has_sz, has_al, has_nt, (params), sz argument,
 *                   al argument, nt argument)
 * Both start with (symbol, index), so CXX_OPS(X) with a variadic
 * X(sym, idx, ...) walks all twenty.
 */
#ifndef MALLOCK_SHIM_CXX_OPS_H
#define MALLOCK_SHIM_CXX_OPS_H

/* clang-format off */
#define CXX_NEW_OPS(X)                                                         \
	X(_Znwm, new_, FMT_FN_NEW, 0, 0, (size_t n), 0, NULL)                  \
	X(_Znam, new_arr, FMT_FN_NEW_ARRAY, 0, 0, (size_t n), 0, NULL)         \
	X(_ZnwmRKSt9nothrow_t, new_nt, FMT_FN_NEW, 0, 1,                       \
	  (size_t n, const void *nt), 0, nt)                                   \
	X(_ZnamRKSt9nothrow_t, new_arr_nt, FMT_FN_NEW_ARRAY, 0, 1,             \
	  (size_t n, const void *nt), 0, nt)                                   \
	X(_ZnwmSt11align_val_t, new_al, FMT_FN_NEW, 1, 0,                      \
	  (size_t n, size_t al), al, NULL)                                     \
	X(_ZnamSt11align_val_t, new_arr_al, FMT_FN_NEW_ARRAY, 1, 0,            \
	  (size_t n, size_t al), al, NULL)                                     \
	X(_ZnwmSt11align_val_tRKSt9nothrow_t, new_al_nt, FMT_FN_NEW, 1, 1,     \
	  (size_t n, size_t al, const void *nt), al, nt)                       \
	X(_ZnamSt11align_val_tRKSt9nothrow_t, new_arr_al_nt, FMT_FN_NEW_ARRAY, \
	  1, 1, (size_t n, size_t al, const void *nt), al, nt)

#define CXX_DEL_OPS(X)                                                         \
	X(_ZdlPv, del, del, 0, 0, 0, (void *p), 0, 0, NULL)                    \
	X(_ZdaPv, del_arr, del_arr, 0, 0, 0, (void *p), 0, 0, NULL)            \
	X(_ZdlPvm, del_sz, del, 1, 0, 0, (void *p, size_t sz), sz, 0, NULL)    \
	X(_ZdaPvm, del_arr_sz, del_arr, 1, 0, 0, (void *p, size_t sz), sz, 0,  \
	  NULL)                                                                \
	X(_ZdlPvRKSt9nothrow_t, del_nt, del, 0, 0, 1,                          \
	  (void *p, const void *nt), 0, 0, nt)                                 \
	X(_ZdaPvRKSt9nothrow_t, del_arr_nt, del_arr, 0, 0, 1,                  \
	  (void *p, const void *nt), 0, 0, nt)                                 \
	X(_ZdlPvSt11align_val_t, del_al, del_al, 0, 1, 0,                      \
	  (void *p, size_t al), 0, al, NULL)                                   \
	X(_ZdaPvSt11align_val_t, del_arr_al, del_arr_al, 0, 1, 0,              \
	  (void *p, size_t al), 0, al, NULL)                                   \
	X(_ZdlPvmSt11align_val_t, del_sz_al, del_al, 1, 1, 0,                  \
	  (void *p, size_t sz, size_t al), sz, al, NULL)                       \
	X(_ZdaPvmSt11align_val_t, del_arr_sz_al, del_arr_al, 1, 1, 0,          \
	  (void *p, size_t sz, size_t al), sz, al, NULL)                       \
	X(_ZdlPvSt11align_val_tRKSt9nothrow_t, del_al_nt, del_al, 0, 1, 1,     \
	  (void *p, size_t al, const void *nt), 0, al, nt)                     \
	X(_ZdaPvSt11align_val_tRKSt9nothrow_t, del_arr_al_nt, del_arr_al, 0,   \
	  1, 1, (void *p, size_t al, const void *nt), 0, al, nt)

#define CXX_OPS(X) CXX_NEW_OPS(X) CXX_DEL_OPS(X)
/* clang-format on */

#endif
