#!/usr/bin/env python3
"""Allocator calls made while locks are held: a
lock's totals count every call made while it was held, however deep it
sits among the locks held, and whichever way its hold ends (a release, a
MARK, a thread exit, the end of the trace); only completed holds count in
`holds_with_alloc`. The per-stack breakdown (--metric=alloc-under-lock)
covers the 4 innermost holds of each call. The analyzer now sums a
thread's calls once and charges each hold when it ends; the numbers must
be those of charging every held lock at every call (8141b96).

A small trace written here, 1 tick = 1 ns:
  thread 7: ACQ 1..6; ALLOC p1 (10 ns, stack 100); REL 3 (out of order);
            FREE p1 (5 ns); ACQ 7; ALLOC p2 (20 ns, stack 101); MARK;
            ACQ 1; ALLOC p3 (30 ns, stack 102); THREAD_EXIT
  thread 8: ACQ 8; ALLOC p4 (40 ns, stack 103), both before thread 7's
            MARK in time (ticks 1001 and 1002), which cuts its hold too
  thread 9: after the MARK, ACQ 9; ALLOC p5 (50 ns, stack 104); the trace
            ends with lock 9 held

The lock totals are those of 8141b96; the pairs differ (see the end)."""
from common import *


body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
body += s(b"/bin/holds") + s(b"holds") + s(b"h") + s(b"test")
proc = b"\x80" + uv(len(body)) + body

acq = lambda l: b"\x04\x01" + uv(l) + b"\x00"
rel = lambda l: b"\x09\x01" + uv(l)
last = [0]


def alloc(p, ns, stack):
    r = b"\x01\x01" + uv(zz(p - last[0])) + uv(64) + uv(stack) + uv(ns) + b"\x00"
    last[0] = p
    return r


def free(p, ns):
    r = b"\x02\x01" + uv(zz(p - last[0])) + uv(ns)
    last[0] = p
    return r


t7 = b"".join(acq(i) for i in range(1, 7))
t7 += alloc(0x1000, 10, 100) + rel(3) + free(0x1000, 5)
t7 += acq(7) + alloc(0x2000, 20, 101) + b"\x14\x01\x00"  # MARK pause
t7 += acq(1) + alloc(0x3000, 30, 102) + b"\x10\x01"       # THREAD_EXIT
last[0] = 0
t8 = acq(8) + alloc(0x4000, 40, 103)
last[0] = 0
t9 = acq(9) + alloc(0x5000, 50, 104)
path = os.path.join(TMP, "holds.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc) + chunk(7, t7) + chunk(8, t8) +
            chunk(9, t9, base=5000))

d = report_json("--no-symbols", path)
# lock id -> (calls, allocs, ns, holds_with_alloc, holds)
want = {1: (4, 3, 65, 0, 0), 2: (3, 2, 35, 0, 0), 3: (1, 1, 10, 1, 1),
        4: (3, 2, 35, 0, 0), 5: (3, 2, 35, 0, 0), 6: (3, 2, 35, 0, 0),
        7: (1, 1, 20, 0, 0), 8: (1, 1, 40, 0, 0), 9: (1, 1, 50, 0, 0)}
got = {}
for lk in d["locks"]:
    got[lk["id"]] = (lk["allocations_in_holds"], lk["allocs_in_holds"],
                     lk["allocator_ns_in_holds"], lk["holds_with_alloc"],
                     lk["holds"])
eq(got, want, "lock totals")
eq(d["totals"]["allocator_calls_in_holds"], 6, "calls made in holds")
eq(d["totals"]["holds_cut_by_pause"], 7, "holds cut by the MARK (6 + 1)")

# Per stack: the first ALLOC (6 held) counts for locks 3..6 only, the FREE
# (5 held: 1 2 4 5 6) for 2 4 5 6 (one new pair: lock 2), the second ALLOC
# (6 held: 1 2 4 5 6 7) for 4 5 6 7, then (1, p3's), (8, p4's) and (9,
# p5's): 12 pairs (8141b96: 15, a pair for every lock held).
rc, out, err = run("report", "--no-symbols", "--format=folded",
                   "--metric=alloc-under-lock", path)
eq(rc, 0, "folded report")
lines = [l for l in out.splitlines() if "[alloc under" in l]
eq(len(lines), 4 + 1 + 4 + 1 + 1 + 1, "alloc-under-lock pairs: %r" % lines)
done("analyzer_holds")
