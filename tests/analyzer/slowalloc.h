/*
 * slowalloc.h - the fixed costs of libslowalloc.so (slowalloc.c), shared
 * with the calibration program (calib.c) that computes the known share of
 * hold time spent in the allocator from them.
 */
#ifndef MALLOCK_SLOWALLOC_H
#define MALLOCK_SLOWALLOC_H

#define SLOWALLOC_MALLOC_NS 2000 /* every malloc busy-waits this long */
#define SLOWALLOC_FREE_NS 1000   /* every free (of a non-NULL block) */

#endif
