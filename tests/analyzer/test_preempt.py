#!/usr/bin/env python3
"""Preemption is not a slow allocator. A thread descheduled inside malloc
makes the call slow without the allocator doing anything: rsyslog's #1 on
a loaded 2-vCPU machine was slow_alloc [high], "3856 of 520.8k calls slow,
mean 669.2 us, median 8 ns, 0 ns waiting on the allocator's own lock".

A forged trace (format 1.4, every call timed, 1 tick = 1 ns), one thread,
no lock, calls 1 ms apart, 40 calls per site:
- site 100, 64-byte blocks: 35 calls of 500 us with no wait on the
  allocator's lock. Likely preemption: set apart, no slow_alloc for it.
- site 101, 64-byte blocks: 35 calls of 500 us, each after a 400 us wait on
  the allocator's own lock (ALLOC_LOCK_WAIT): allocator work, slow_alloc.
- site 102, 256 KiB blocks: 35 calls of 500 us, no lock wait: a block the
  allocator may map or zero, never preemption by time alone: slow_alloc.
- site 103, 64-byte blocks: 32 calls of 20 us (slow, under 100 us) and 8 of
  500 us: slow_alloc counts the 32, its score leaves the 8 out, its
  sentence says 8 were set apart as preemption.
Site 104 makes 400 fast calls (50 ns), so that the median call is fast.
The trace-wide note says how many calls were set apart and why, and the
totals count them (preempted_allocator_calls).

A second trace (format 1.5): site 105 makes 40 calls of 20 us, 12 of them
preceded by ALLOC_MIGRATED (the shim saw the call end on another CPU),
one of those after an allocator-lock wait: a call that moved CPU was
descheduled, whatever its time: 12 set apart (migrated_calls 12), 28 slow."""
from common import *

N, SLOW = 40, 35


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def process():
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/forged") + s(b"forged") + s(b"h") + s(b"test")
    proc = meta(0x80, body)
    for sid in (100, 101, 102, 103, 104, 105):
        proc += meta(0x82, uv(sid) + uv(1) + uv(0x1000 * sid))
    proc += meta(0x83, uv(9) + uv(0x9900) + uv(5) + uv(0))
    return proc


class Stream:
    def __init__(self):
        self.rec, self.last, self.lastp, self.t = [], 1000, 0, 2000

    def at(self, tsc, code, fields):
        self.rec.append(bytes([code]) + uv(tsc - self.last) + fields)
        self.last = tsc

    def alloc(self, ticks, stack, size=64, lock_wait=0, migrated=False):
        self.t += 1000000
        if lock_wait:
            self.at(self.t - ticks + lock_wait, 0x0e, uv(9) + uv(lock_wait))
        if migrated:  # ALLOC_MIGRATED(from CPU 0, to CPU 1), 1.5
            self.at(self.t, 0x17, uv(0) + uv(1))
        p = 0x100000 * stack + 64 * len(self.rec)
        self.at(self.t, 0x01, uv(zz(p - self.lastp)) + uv(size) +
                uv(stack) + uv(ticks) + b"\x00")
        self.lastp = p


def trace(name, build, minor=4):
    w = Stream()
    build(w)
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(minor))
        f.write(chunk(0, process()))
        f.write(chunk(7, b"".join(w.rec)))
    return path


def slow_of(d, stack):
    return [f for f in d["findings"] if f["kind"] == "slow_alloc" and
            (f.get("site") or {}).get("address") == hex(0x1000 * stack)]


def build(w):
    for i in range(400):
        w.alloc(50, 104)
    for i in range(N):
        w.alloc(500000 if i < SLOW else 50, 100)
    for i in range(N):
        w.alloc(500000 if i < SLOW else 50, 101,
                lock_wait=400000 if i < SLOW else 0)
    for i in range(N):
        w.alloc(500000 if i < SLOW else 50, 102, size=256 * 1024)
    for i in range(N):
        w.alloc(20000 if i < 32 else 500000, 103)


path = trace("preempt.trace", build)
d = report_json("--no-symbols", path)
tot = d["totals"]
eq(tot.get("preempted_allocator_calls"), SLOW + 8,
   "preempted calls: site 100's and 103's long ones")
eq(tot.get("migrated_allocator_calls"), 0, "none moved CPU")
eq(len(slow_of(d, 100)), 0, "site 100: preemption is no slow_alloc")
for stack, what in ((101, "allocator-lock waits"), (102, "256 KiB blocks")):
    f = slow_of(d, stack)
    eq(len(f), 1, "site %d (%s): slow_alloc" % (stack, what))
    for x in f[:1]:
        eq(x["evidence"]["slow_calls"], SLOW, "site %d: slow calls" % stack)
        eq(x["evidence"].get("preempted_calls"), 0,
           "site %d: none set apart" % stack)
f = slow_of(d, 103)
eq(len(f), 1, "site 103: slow_alloc for its 20 us calls")
for x in f[:1]:
    ev = x["evidence"]
    eq(ev["slow_calls"], 32, "site 103: slow calls without the preempted")
    eq(ev["slow_ns"], 32 * 20000, "site 103: their time")
    eq(ev.get("preempted_calls"), 8, "site 103: preempted calls")
    eq(ev.get("preempted_ns"), 8 * 500000, "site 103: their time")
    check(x["score"] <= 32 * 20000, "site 103: score %r leaves the "
          "preempted time out" % x["score"])
rc, out, err = run("report", "--no-symbols", "--top", "50", path)
eq(rc, 0, "text report")
text = " ".join(out.split())
check("43 timed allocator calls were set apart as preemption, not "
      "allocator slowness (slow_alloc leaves them out): 0 moved to another "
      "CPU during the call, 43 took over 100 us with no wait on the "
      "allocator's own lock for a block under 128 KiB" in text,
      "the note says how many and why")
check("Set apart as preemption, not counted: 8 timed calls (4.0 ms in "
      "all)" in text, "site 103's sentence says what was set apart")


def build_mig(w):
    for i in range(400):
        w.alloc(50, 104)
    for i in range(N):
        w.alloc(20000, 105, migrated=i < 12, lock_wait=5000 if i == 0 else 0)


path = trace("migrated.trace", build_mig, minor=5)
d = report_json("--no-symbols", path)
eq(d["totals"].get("preempted_allocator_calls"), 12, "1.5: preempted calls")
eq(d["totals"].get("migrated_allocator_calls"), 12, "1.5: migrated calls")
f = slow_of(d, 105)
eq(len(f), 1, "site 105: slow_alloc for the calls that stayed on a CPU")
for x in f[:1]:
    ev = x["evidence"]
    eq(ev["slow_calls"], N - 12, "site 105: slow calls")
    eq(ev.get("preempted_calls"), 12, "site 105: set apart")
    eq(ev.get("migrated_calls"), 12, "site 105: all moved CPU")
rc, out, err = run("report", "--no-symbols", "--top", "50", path)
eq(rc, 0, "1.5 text report")
text = " ".join(out.split())
check("12 timed allocator calls were set apart as preemption, not "
      "allocator slowness (slow_alloc leaves them out): 12 moved to another "
      "CPU during the call, 0 took over" in text, "1.5: the note")
check("12 timed calls (240.0 us in all, 12 of them moved to another CPU "
      "during the call)" in text, "1.5: site 105's sentence")
rc, out, err = run("dump", path)
eq(rc, 0, "mallock dump of a 1.5 trace")
check("ALLOC_MIGRATED" in out and "from=0" in out and "to=1" in out,
      "dump names ALLOC_MIGRATED and its fields")
done("analyzer_preempt")
