#!/usr/bin/env python3
"""Locks of a program's own, made with syscall(SYS_futex).
futexlock takes a three-state futex mutex in futexlock_contend_here(),
first in rounds that wait for certain, then on four threads; recorded under the shim, the report lists the futex word
by its symbol with its wait, the waiters' stacks through that function,
and the wakers' stacks (the holder's side). Its start event, a word the
workers wait on and only main wakes, is a signal word: its waits were
waiting for work, not lost. A futex_lock finding names the word, the
waiting function (lock) and the releasing one (unlock). A program whose threads take no lock mallock
can see gets the blind-spot line in its header; a static program is named
as such by `mallock record` before it runs.

usage: test_futex.py MALLOCK MKTRACE SRCDIR FUTEXLOCK FUTEXLOCK_STATIC"""
import subprocess
from common import *

APP, STATIC = sys.argv[4], sys.argv[5]


def record(name, *args):
    trace = os.path.join(TMP, name)
    r = subprocess.run([MALLOCK, "record", "-o", trace, "--", APP] +
                       list(args), capture_output=True, text=True,
                       timeout=120)
    eq(r.returncode, 0, "futexlock ran (stderr %r)" % r.stderr)
    return trace


def frames(stack):
    return [f.get("function") for f in stack]


# The contention is made, not hoped for: futexlock's 16 forced rounds each
# hold the lock until the other thread sleeps on its word, then wake it
# (futexlock.c). Alone, they are exactly 16 waits and 16 wakes.
d = report_json(record("forced.trace", "0"))
word = [l for l in d["locks"] if l["label"] == "futexlock_word"]
eq([(l["futex_waits"], l["futex_wakes"]) for l in word], [(16, 16)],
   "the forced rounds alone: the word's (waits, wakes)")

# With the free-for-all: at least those 16, above FUTEX_MIN_WAITS (10) for
# its futex_lock finding, whatever the machine's load.
trace = record("futex.trace", "3000")
d = report_json(trace)
word = [l for l in d["locks"] if l["label"] == "futexlock_word"]
check(len(word) == 1, "the futex word is listed, named by its symbol")
w = word[0] if word else {}
eq(w.get("kind"), "futex", "its kind")
check(w.get("futex_waits", 0) >= 16 and w.get("wait_ns", 0) > 0,
      "waits with wait time: %r" % {k: w.get(k) for k in
                                     ("futex_waits", "wait_ns")})
eq(w.get("acquisitions"), 0, "no acquisitions are claimed")
eq(w.get("hold_ns"), 0, "no hold time is claimed")
check(w.get("futex_lock_word") is True, "a lock word (its waiters wake it)")
eq(w.get("idle_wait_ns"), 0, "a lock word's waits are lost time")
cp = w.get("contention_points", [])
check(cp and all("futexlock_contend_here" in frames(p["stack"])
                 for p in cp), "waiter stacks pass futexlock_contend_here")
check(cp and "lock" in frames(cp[0]["stack"]), "the waiter is in lock()")
wk = w.get("wakers", [])
check(wk and wk[0]["wakes"] > 0 and "unlock" in frames(wk[0]["stack"]) and
      "futexlock_contend_here" in frames(wk[0]["stack"]),
      "the waker's stack: unlock < futexlock_contend_here")
eq(w.get("futex_wakes"), sum(p["wakes"] for p in wk) if len(wk) < 8
   else w.get("futex_wakes"), "wakes add up")
check(d["totals"]["futex_waits"] >= w.get("futex_waits", 0) and
      d["totals"]["futex_lock_wait_ns"] >= w.get("wait_ns", 0),
      "totals count the futex waits")
cls = [c for c in d["lock_classes"] if c["label"] == "futexlock_word"]
check(cls and cls[0]["wakers"] and cls[0]["futex_lock_word"],
      "its class has the wakers too")

ready = [l for l in d["locks"] if l["label"] == "futexlock_ready"]
check(ready and ready[0]["futex_waits"] >= 1, "the start event was waited on")
if ready:
    r0 = ready[0]
    check(r0["futex_lock_word"] is False and r0["wait_ns"] > 0 and
          r0["idle_wait_ns"] == r0["wait_ns"],
          "the start event is a signal word: waiting for work %r" %
          {k: r0[k] for k in ("futex_lock_word", "wait_ns",
                              "idle_wait_ns")})
    check(r0["wakers"] and "main" in frames(r0["wakers"][0]["stack"]),
          "main woke it")
eq(d["trace"]["blind_spot"], None, "no blind-spot line when futexes are seen")
workers = [t for t in d["threads"] if t["role"] == "worker (waits on futex words)"]
check(len(workers) >= 2, "the workers' role: %r" % [t["role"] for t in d["threads"]])
if ready:
    check(sum(t["cond_sleep_ns"] for t in workers) >= ready[0]["wait_ns"] and
          sum(t["lock_wait_ns"] for t in workers) <= w.get("wait_ns", 0),
          "threads: signal-word waits are sleeps, lock-word waits lock waits")

# The futex_lock finding names the word, the waiting code and the
# releasing code (the lock and unlock functions past the futex() wrapper
# both go through).
fl = [f for f in d["findings"] if f["kind"] == "futex_lock"]
eq([f["lock_name"] for f in fl], ["futexlock_word"],
   "a futex_lock finding for the lock word only (not futexlock_ready)")
if fl:
    f = fl[0]
    eq((f["lock"], f["evidence"]["futex_waits"], f["evidence"]["lock_wait_ns"]),
       (w.get("id"), w.get("futex_waits"), w.get("wait_ns")),
       "its evidence is the word's waits")
    eq(f["score"], min(w.get("wait_ns", 0), d["trace"]["duration_ns"]),
       "scored by the lost wait, capped at the trace's span")
    check("futexlock_contend_here" in frames(f["stack"]) and
          "lock" in frames(f["stack"]) and
          "unlock" in frames(f.get("waker_stack") or []),
          "its stacks: the waiters' through lock(), the wakers' through "
          "unlock()")
    check(f["advice"].startswith("Threads wait for this lock in lock (") and
          "releases it in unlock (" in f["advice"],
          "the advice names lock() and unlock(), not futex(): %r" %
          f["advice"])

rc, out, err = run("report", trace)
eq(rc, 0, "text report")
check("futex_lock [" in out and "lock   futexlock_word" in out,
      "the text report lists the finding")
check("futexlock_word" in out and "wakers" in out and
      "futex waits through syscall()" in out, "the text report shows them")
check("futexlock_contend_here" in out, "... with the waiter's function")

# Threads that take no lock mallock can see: the header says so.
d = report_json(record("none.trace", "none"))
bl = d["trace"]["blind_spot"]
check(bl and "invisible" in bl, "the blind-spot line: %r" % bl)
rc, out, err = run("report", os.path.join(TMP, "none.trace"))
check("mallock saw no lock of this program" in out, "... in the text header")

# A static program: `mallock record` says so before it runs.
rc, out, err = run("record", "-o", os.path.join(TMP, "static.trace"), "--",
                   STATIC, "none")
check("is statically linked" in err and
      "(the program is statically linked)" in err,
      "record names a static program, before and after: %r" % err)
rc, out, err = run("record", "-o", os.path.join(TMP, "dyn.trace"), "--",
                   APP, "none")
check("statically linked" not in err, "... and not a dynamic one")
done("test_futex")
