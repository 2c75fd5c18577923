/*
 * tls.c - the hot path's globals, defined beside their declarations in
 * tls.h: the thread's state, the one global test of every hook (g_off), the
 * next control poll, the ticks of the flush and spin intervals, and the
 * recording epoch. Each starts at the value that sends the first hook call
 * to the slow path, which sets it up (init.c, control.c).
 */
#include "tls.h"

__thread tls_t shim_tls __attribute__((tls_model("initial-exec"))) = {
    .gate = GATE_UNINIT,
};
_Atomic unsigned g_off = SHIM_OFF_INIT;
_Atomic uint32_t g_trace_gen;
uint64_t g_stop_tsc = UINT64_MAX;
uint64_t g_flush_ticks = UINT64_MAX;
uint64_t g_spin_ticks;
_Atomic uint32_t g_epoch = 1;
