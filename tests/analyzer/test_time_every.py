#!/usr/bin/env python3
"""Allocator calls outside locks timed one in N (MALLOCK_TIME_EVERY, trace
format 1.4). calib runs under the shim with libslowalloc.so after it, so
every malloc and free spends a known, fixed time (slowalloc.h); its
critical sections call the allocator a known number of times, and between
sections each thread calls malloc and free K more times without the lock.

What must hold in every run, however busy the machine:
- counts are exact: the calls in holds, and every call counted once;
- every call made inside a hold is timed: the lock's allocator time is at
  least the known one (a call left untimed there adds nothing);
- with N > 1, about (N - 1) / N of the calls outside are untimed (the shim
  draws intervals of mean N), and none with N = 1; the report says so in a
  note only when some call was untimed;
- the untimed calls outside are mallocs and frees alike, (N - 1) / N of
  each (`mallock dump`: the calls outside are malloc(32), those inside
  malloc(64), and every free in a hold is timed): a shim that timed every
  N-th call of the malloc, free, malloc, ... pattern would time only one
  of the two;
- the time the report gives the calls outside (allocator_ns minus the
  holds' share) is an estimate scaled from the timed ones: at least 0.9 of
  the fixed cost (preemption only adds; a reader that does not scale sees
  1/N of it). Its upper side is not checked: preemption of a 2-core
  machine running other tests adds several times the fixed cost.

Arguments after the common three: SHIM SLOWALLOC CALIB."""
import json
import os
import subprocess
import common
from common import *

SHIM, SLOWALLOC, CALIB = sys.argv[4], sys.argv[5], sys.argv[6]
THREADS, ROUNDS, ALLOCS, OUTSIDE = 2, 1000, 2, 16


def untimed_kinds(trace):
    """(untimed malloc(32) calls, untimed frees) from the dump."""
    r = subprocess.run([MALLOCK, "dump", trace], capture_output=True,
                       text=True, timeout=120)
    eq(r.returncode, 0, "mallock dump exit status")
    a = f = 0
    for line in r.stdout.splitlines():
        if " ticks=0" not in line:
            continue
        if " ALLOC " in line and " size=32 " in line:
            a += 1
        elif " FREE " in line:
            f += 1
    return a, f


def record(every, attempt):
    trace = os.path.join(TMP, "te-%s-%d.trace" % (every, attempt))
    env = dict(os.environ, LD_PRELOAD=SHIM + ":" + SLOWALLOC,
               MALLOCK_OUTPUT=trace)
    env.pop("MALLOCK_TIME_EVERY", None)
    # Calls outside locks only: every hold (and the calls in it) timed,
    # whatever MALLOCK_TIME_EVERY (test_timed_holds.py covers holds).
    env["MALLOCK_HOLD_EVERY"] = "1"
    if every is not None:
        env["MALLOCK_TIME_EVERY"] = str(every)
    r = subprocess.run([CALIB, "--threads", str(THREADS), "--rounds",
                        str(ROUNDS), "--busy", "2000", "--gap", "0",
                        "--allocs", str(ALLOCS), "--outside", str(OUTSIDE)],
                       env=env, capture_output=True, text=True, timeout=120)
    eq(r.returncode, 0, "calib exit status (stderr %r)" % r.stderr)
    return json.loads(r.stdout), report_json(trace), trace


def judge(every, attempt):
    """One run and its checks."""
    n = every or 16
    known, d, trace = record(every, attempt)
    what = "MALLOCK_TIME_EVERY=%s, run %d" % (every, attempt)
    locks = [lk for lk in d["locks"] if lk["kind"] == "mutex" and
             lk["acquisitions"] >= known["sections"]]
    eq(len(locks), 1, what + ": one mutex with every section's acquisition")
    if len(locks) != 1:
        return
    lk = locks[0]
    in_calls = known["sections"] * 2 * ALLOCS
    out_calls = known["sections"] * 2 * OUTSIDE
    eq(lk["allocations_in_holds"], in_calls, what + ": calls in holds")
    check(lk["allocator_ns_in_holds"] >= known["known_allocator_ns"],
          what + ": every call in a hold timed (%d ns >= known %d)" % (
              lk["allocator_ns_in_holds"], known["known_allocator_ns"]))
    tot = d["totals"]
    untimed = tot.get("untimed_allocator_calls")
    notes = [x for x in d["trace"]["notes"]
             if "MALLOCK_TIME_EVERY" in x["text"]]
    if n == 1:
        eq(untimed, 0, what + ": no untimed call")
        eq(len(notes), 0, what + ": no timing note")
    else:
        # Intervals of mean n: out_calls / n timed, give or take a few
        # percent; the main thread's own calls outside add a few dozen.
        lo = out_calls * (1 - 1.0 / n) * 0.97
        hi = out_calls * (1 - 1.0 / n) * 1.03 + 100
        check(lo <= untimed <= hi, what + ": %d untimed calls, expected "
              "%.0f to %.0f of %d outside" % (untimed, lo, hi, out_calls))
        eq(len(notes), 1, what + ": the timing note")
        ua, uf = untimed_kinds(trace)
        each = out_calls / 2 * (1 - 1.0 / n)
        for k, v in (("malloc(32)", ua), ("free", uf)):
            check(each * 0.95 <= v <= each * 1.05 + 50, what + ": %d untimed "
                  "%s calls, expected %.0f +- 5%%" % (v, k, each))
    est = tot["allocator_ns"] - lk["allocator_ns_in_holds"]
    ratio = est / known["known_outside_ns"]
    print("%s: %d untimed; outside estimate %d ns, known %d ns: %.3f" % (
        what, untimed, est, known["known_outside_ns"], ratio))
    check(ratio >= 0.9, what + ": outside estimate %.3f of the known cost "
          "(at least 0.9)" % ratio)


# calib itself, bare, with more threads than the runs use: a failure below
# must be mallock's. A shared block pointer in its loop outside the lock
# once let two threads free one block (glibc aborted 20 of 20 such runs).
r = subprocess.run([CALIB, "--threads", "8", "--rounds", "2000", "--busy",
                    "0", "--gap", "0", "--allocs", "1", "--outside", "200"],
                   capture_output=True, text=True, timeout=120)
eq(r.returncode, 0, "calib alone, 8 threads: exit status (stderr %r)" %
   r.stderr)
for every in (None, 1, 4):
    judge(every, 1)
done("analyzer_time_every")
