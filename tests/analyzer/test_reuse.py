#!/usr/bin/env python3
"""A block freed on one thread and handed to another thread's malloc before
the free returned (make demo: tcmalloc moves the block to its central free
list, then goes on releasing others, while the churn thread's malloc takes
it). Each record is stamped when its call returns, so the malloc's record
is the earlier one. Merged by those stamps, the free was matched to the new
block: a free made under "queue" was charged to the other thread's
allocation site ("alloc_under_lock queue @ churn_alloc", a lock the churn
thread never takes), and the new block's own free became an unknown free.
A free is merged at its start (tsc - ticks), which precedes any reuse of
its block (analyzer/trace/reader.c). The second trace below forges the same race
for a realloc that moves its block.

A small trace written here, 1 tick = 1 ns (time: what happens):
  thread 7 (producer): 1010 ALLOC p (stack 100)
  thread 8 (consumer): 1100 ACQ queue; 1400 FREE p (300 ns: began at 1100);
                       1410 REL queue
  thread 9 (churn):    1200 ALLOC p (stack 200, 10 ns); 1500 FREE p
The consumer's free is the producer's block's, under "queue"; the churn
thread's free is its own block's, under no lock."""
from common import *


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def write(name, body):
    """A trace: the file header, then body (its chunks). Returns its path."""
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(1))
        f.write(body)
    return path


def under_lock(path):
    """The folded alloc-under-lock report's (lock, block site) lines."""
    rc, out, err = run("report", "--no-symbols", "--format=folded",
                       "--metric=alloc-under-lock", path)
    eq(rc, 0, "folded report of " + os.path.basename(path))
    return [l for l in out.splitlines() if "[alloc under" in l]


P = 0x5000
body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
body += s(b"/bin/reuse") + s(b"reuse") + s(b"h") + s(b"test")
proc = meta(0x80, body)
# STACK ids 100 and 200, one frame each (the allocation sites); lock 1,
# "queue", taken at call site 300 (a stack the trace does not define).
proc += meta(0x82, uv(100) + uv(1) + uv(0x1100))
proc += meta(0x82, uv(200) + uv(1) + uv(0x2200))
proc += meta(0x83, uv(1) + uv(0x9100) + uv(0) + uv(0))
proc += meta(0x84, uv(1) + uv(0) + s(b"queue"))
# Records: type, dt (ticks since the chunk's previous record), fields.
alloc = lambda dt, stack, ns: (b"\x01" + uv(dt) + uv(zz(P)) + uv(64) +
                               uv(stack) + uv(ns) + b"\x00")
free = lambda dt, ns: b"\x02" + uv(dt) + uv(zz(0)) + uv(ns)
t7 = alloc(10, 100, 10)                                      # 1010
consumer = chunk(8, b"\x04" + uv(100) + uv(1) + uv(300) +    # 1100 ACQ 1
                 b"\x02" + uv(300) + uv(zz(P)) + uv(300) +    # 1400 FREE
                 b"\x09" + uv(10) + uv(1))                     # 1410 REL
t9 = alloc(200, 200, 10) + free(300, 20)                     # 1200, 1500
path = write("reuse.trace",
             chunk(0, proc) + chunk(7, t7) + consumer + chunk(9, t9))

d = report_json("--no-symbols", "--all", path)
eq(d["totals"]["unknown_frees"], 0, "unknown frees")
eq(d["totals"]["frees"], 2, "frees")
eq(d["totals"]["cross_thread_frees"], 1, "cross-thread frees (the consumer's)")
q = lock_by_name(d, "queue")
eq(q["allocations_in_holds"], 1, "allocator calls under queue")
lines = under_lock(path)
eq(len(lines), 1, "one (lock, block site) pair: %r" % lines)
check(lines and "0x1100" in lines[0] and "0x2200" not in lines[0],
      "the free under queue is charged to the producer's site (0x1100), "
      "not the churn thread's (0x2200): %r" % lines)

# The churn thread frees its block again before the consumer's free
# returns. The model keeps one displaced block for a free due within the
# clock skew (the last case below), which rescues the trace above whatever
# the merge; here only the merge at the free's start can: merged at its
# end, the churn thread's free (began at 1240) took the producer's block
# and the consumer's free the churn thread's.
#   thread 7: 1010 ALLOC p (stack 100)
#   thread 8: 1100 ACQ queue; 1400 FREE p (began at 1100); 1410 REL queue
#   thread 9: 1200 ALLOC p (stack 200, 10 ns); 1250 FREE p (10 ns)
t9 = alloc(200, 200, 10) + free(50, 10)                      # 1200, 1250
path = write("again.trace",
             chunk(0, proc) + chunk(7, t7) + consumer + chunk(9, t9))
d = report_json("--no-symbols", "--all", path)
eq(d["totals"]["unknown_frees"], 0, "freed again: unknown frees")
by = {a["site"]["address"]: a for a in d["alloc_sites"]}
for addr, want in (("0x1100", (1, 0, 1)), ("0x2200", (1, 0, 0))):
    a = by.get(addr, {})
    eq((a.get("frees"), a.get("live"), a.get("cross_thread_frees")), want,
       "freed again: site %s (frees, live, cross-thread): the consumer's "
       "free is the producer's block's, the churn thread's its own" % addr)
lines = under_lock(path)
check(len(lines) == 1 and "0x1100" in lines[0] and "0x2200" not in lines[0],
      "freed again: the free under queue is charged to the producer's site "
      "(0x1100), not the churn thread's (0x2200): %r" % lines)

# A realloc that moves its block frees the old one inside the call, so the
# same race: thread 7's realloc of X (began at 1100) returned at 1400,
# after thread 9's malloc had been given X at 1200. Merged whole at its
# end, the realloc freed thread 9's block and thread 9's own free of X was
# unknown; merged whole at its start, it would take its new block Y at
# 1100, before thread 8's free of Y (began at 1200) gave Y back. Its free
# of X merges at its start, its allocation of Y at its end:
#   thread 8: 1005 ALLOC Y (stack 400); 1300 FREE Y (100 ns: began at 1200)
#   thread 7: 1010 ALLOC X (stack 100); 1400 REALLOC X -> Y (stack 300,
#             300 ns: began at 1100); 1600 FREE Y
#   thread 9: 1200 ALLOC X (stack 200); 1500 FREE X (20 ns)
# Every block is freed by the thread that allocated it.
X, Y = 0x5000, 0x9000
at = lambda dt, last, ptr, stack, ns: (b"\x01" + uv(dt) + uv(zz(ptr - last)) +
                                       uv(64) + uv(stack) + uv(ns) + b"\x00")
fr = lambda dt, last, ptr, ns: b"\x02" + uv(dt) + uv(zz(ptr - last)) + uv(ns)
t8 = at(5, 0, Y, 400, 10) + fr(295, Y, Y, 100)                # 1005, 1300
t7 = at(10, 0, X, 100, 10)                                   # 1010
t7 += (b"\x03" + uv(390) + uv(zz(0)) + uv(zz(Y - X)) + uv(128) + uv(300) +
       uv(300))                                              # 1400 REALLOC
t7 += fr(200, Y, Y, 10)                                      # 1600
t9 = at(200, 0, X, 200, 10) + fr(300, X, X, 20)              # 1200, 1500
proc2 = proc + meta(0x82, uv(300) + uv(1) + uv(0x3300))
proc2 += meta(0x82, uv(400) + uv(1) + uv(0x4400))
path = write("realloc.trace",
             chunk(0, proc2) + chunk(7, t7) + chunk(8, t8) + chunk(9, t9))
d = report_json("--no-symbols", "--all", path)
eq(d["totals"]["unknown_frees"], 0, "realloc: unknown frees")
eq(d["totals"]["cross_thread_frees"], 0, "realloc: cross-thread frees")
eq(d["totals"]["frees"], 3, "realloc: frees")
eq(d["totals"]["allocations"], 3, "realloc: allocations")
eq(d["totals"]["reallocs"], 1, "realloc: reallocs")
by = {a["site"]["address"]: a for a in d["alloc_sites"]}
# site: (frees, lifetime ns) - each block freed once by its own thread;
# thread 7's X ends at the realloc's return (1400 - 1010), as before.
for addr, life in (("0x1100", 390), ("0x2200", 300), ("0x3300", 200),
                   ("0x4400", 295)):
    a = by.get(addr)
    check(a is not None, "realloc: site %s listed" % addr)
    if a:
        eq((a["frees"], a["live"], a["cross_thread_frees"],
            a["lifetime_max_ns"]), (1, 0, 0, life),
           "realloc: site %s (frees, live, cross-thread, lifetime)" % addr)

# A free preempted inside the allocator: tcmalloc hands the freed block to
# its central free list in a first batch, then waits on that list's lock
# (its holder preempted) for the next batch. The wait is recorded
# (ALLOC_LOCK_WAIT) when it ends, inside the free, before the FREE: keyed
# at that stamp, it pushed the free past the churn thread's malloc of the
# block, which had returned meanwhile, and the free was matched to the new
# block (1 unknown free). The wait is keyed at its call's start:
#   thread 7: 1010 ALLOC p (stack 100)
#   thread 8: 1100 ACQ queue; 1300 ALLOC_LOCK_WAIT (100 ns); 1400 FREE p
#             (300 ns: began at 1100); 1410 REL queue
#   thread 9: 1200 ALLOC p (stack 200, 10 ns); 1500 FREE p
# The second form puts the free in the thread's next chunk (a flush came
# between the wait and the free).
alw = lambda dt: b"\x0e" + uv(dt) + uv(6) + uv(100)


def chunk_seq(tid, seq, payload, base):
    return tracefmt.chunk(tid, payload, base=base, seq=seq, flush=base + 10)


acq = b"\x04" + uv(100) + uv(1) + uv(300)                   # 1100 ACQ 1
t7 = alloc(10, 100, 10)                                      # 1010
t9 = alloc(200, 200, 10) + free(300, 20)                     # 1200, 1500
freep = b"\x02" + uv(100) + uv(zz(P)) + uv(300)             # 1400 FREE
rel = b"\x09" + uv(10) + uv(1)                              # 1410 REL
one = chunk(8, acq + alw(200) + freep + rel)
two = (chunk_seq(8, 0, acq + alw(200), 1000) +
       chunk_seq(8, 1, b"\x02" + uv(100) + uv(zz(P)) + uv(300) + rel, 1300))
for form, t8 in (("one chunk", one), ("next chunk", two)):
    path = write("preempted.trace",
                 chunk(0, proc) + chunk(7, t7) + t8 + chunk(9, t9))
    d = report_json("--no-symbols", "--all", path)
    eq(d["totals"]["unknown_frees"], 0, f"preempted free ({form}): unknown "
       "frees")
    eq(d["totals"]["cross_thread_frees"], 1,
       f"preempted free ({form}): cross-thread frees (the consumer's)")
    eq(d["totals"]["allocator_lock_waits"], 1,
       f"preempted free ({form}): allocator lock waits")
    q = lock_by_name(d, "queue")
    eq(q["allocator_lock_wait_ns_in_holds"], 100,
       f"preempted free ({form}): the wait in queue's hold")
    by = {a["site"]["address"]: a for a in d["alloc_sites"]}
    for addr in ("0x1100", "0x2200"):
        a = by.get(addr, {})
        eq((a.get("frees"), a.get("live")), (1, 0),
           f"preempted free ({form}): site {addr} (frees, live)")
# Two CPUs' clocks differ: the consumer's free of p began 50 ns after the
# churn thread's malloc of p returned, by the stamps (its CPU's TSC ahead
# by more than the free took). Merged by them, the free came after the
# address was taken again and was matched to the churn thread's block,
# whose own free was then unknown (148 of 2.5M frees in a recorded demo
# trace on a 2-vCPU KVM guest, 0 to 231 ticks late). An ALLOC of a live
# address keeps the old block for the free that is due within the skew:
#   thread 7: 1010 ALLOC p (stack 100)
#   thread 8: 1100 ACQ queue; 1270 FREE p (20 ns: began at 1250);
#             1280 REL queue
#   thread 9: 1200 ALLOC p (stack 200, 10 ns); 1500 FREE p
# The second form loses thread 7's free and thread 9 frees p 60 us later,
# beyond the window: thread 9's free is its own block's, and thread 7's
# block stays live, as a block whose free was never recorded does.
t8 = (acq + b"\x02" + uv(170) + uv(zz(P)) + uv(20) +        # 1270 FREE
      b"\x09" + uv(10) + uv(1))                              # 1280 REL
for form, t8_, t9_, want in (
        ("skewed", t8, alloc(200, 200, 10) + free(300, 20),
         {"0x1100": (1, 0, 1), "0x2200": (1, 0, 0)}),
        ("lost free", b"", alloc(200, 200, 10) + free(60000, 20),
         {"0x1100": (0, 1, 0), "0x2200": (1, 0, 0)})):
    path = write("skew.trace", chunk(0, proc) + chunk(7, t7) +
                 (chunk(8, t8_) if t8_ else b"") + chunk(9, t9_))
    d = report_json("--no-symbols", "--all", path)
    eq(d["totals"]["unknown_frees"], 0, f"{form}: unknown frees")
    eq(d["totals"]["cross_thread_frees"], want["0x1100"][2],
       f"{form}: cross-thread frees")
    by = {a["site"]["address"]: a for a in d["alloc_sites"]}
    for addr, fl in want.items():
        a = by.get(addr, {})
        eq((a.get("frees"), a.get("live"), a.get("cross_thread_frees")), fl,
           f"{form}: site {addr} (frees, live, cross-thread)")
    if t8_:
        lines = under_lock(path)
        check(len(lines) == 1 and "0x1100" in lines[0],
              f"{form}: the free under queue is charged to the producer's "
              f"site (0x1100): {lines!r}")
done("analyzer_reuse")
