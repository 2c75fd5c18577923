#!/usr/bin/env python3
"""`mallock report --as-sampled=N`: a trace that timed every hold and
allocator call (PROCESS time_every and hold_every 1) read as the shim's
default timing would have written it: of the nests of holds begun by an
uncontended acquisition one in N is sampled (its holds and calls weigh N)
and the others untimed (no time); a nest begun by a contended acquisition
stays exact; of the allocator calls outside holds one in N keeps its time.
Counts and waits stay exact; the header says what was done.

A trace written here, 1 tick = 1 ns, every hold and call timed:
  thread 7, 64 times: ACQ 1; ALLOC (30 ns) in the hold; REL 1 (a hold of
    100 ns); then an ALLOC (50 ns) outside any hold;
  then ACQ_WAIT 1 (waited 70); ALLOC (15 ns); REL 1 (a hold of 40 ns).
Read as sampled, S of the 64 uncontended nests are timed (the reader's
draws: 1 to 31 nests apart, mean 16) and weigh 16: hold_ns = 16 x 100 x S
+ 40, allocator time in holds 16 x 30 x S + 15, exactly.

Arguments: the common three (tests/analyzer/common.py)."""
from common import *

K, N = 64, 16


def trace(name, every):
    proc = proc_record(b"/bin/holds", b"holds", every, every)
    enc = tracefmt.Enc()
    t7 = b""
    for i in range(K):
        t7 += tracefmt.event("ACQ", 10, 1, 0)
        t7 += enc.event("ALLOC", 40, 0x10000 + 0x100 * i, 64, 0, 30,
                        FMT.FN_MALLOC)
        t7 += lock_rel(60, 1)
        t7 += enc.event("ALLOC", 100, 0x80000 + 0x100 * i, 32, 0, 50,
                        FMT.FN_MALLOC)
    t7 += lock_acq_wait(100, 1, 70)
    t7 += enc.event("ALLOC", 20, 0x9000, 64, 0, 15, FMT.FN_MALLOC)
    t7 += lock_rel(20, 1)
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(6))
        f.write(chunk(0, proc) + chunk(7, t7))
    return path


def lock1(d):
    return [lk for lk in d["locks"] if lk["id"] == 1][0]


path = trace("full.trace", 1)

# As recorded: every hold timed at weight 1.
d = report_json("--no-symbols", path)
lk = lock1(d)
eq((lk["holds"], lk["timed_holds"], lk["hold_ns"],
    lk["allocator_ns_in_holds"], lk["contended"], lk["wait_ns"]),
   (K + 1, K + 1, 100 * K + 40, 30 * K + 15, 1, 70), "as recorded")

# As sampled: S nests timed, each standing for N.
d = report_json("--no-symbols", "--as-sampled=%d" % N, path)
lk = lock1(d)
sampled = lk["timed_holds"] - 1
check(2 <= sampled <= 12,
      "%d of %d uncontended nests sampled, one in %d drawn" % (sampled, K, N))
eq((lk["holds"], lk["contended"], lk["wait_ns"], lk["allocations_in_holds"]),
   (K + 1, 1, 70, K + 1), "counts and waits stay exact")
eq(lk["hold_ns"], N * 100 * sampled + 40, "hold time: sampled nests x N")
eq(lk["allocator_ns_in_holds"], N * 30 * sampled + 15,
   "allocator time in holds: the sampled nests' calls x N, the contended "
   "nest's once")
eq(d["totals"]["untimed_holds"], K - sampled, "untimed holds")
# Each untimed hold holds one call; the rest are the calls outside.
untimed = d["totals"]["untimed_allocator_calls"] - (K - sampled)
check(K - 12 <= untimed <= K - 2,
      "%d of the %d calls outside holds untimed" % (untimed, K))
notes = " ".join(n["text"] for n in d["trace"]["notes"])
check("read as if sampled (--as-sampled=16)" in notes and
      "MALLOCK_HOLD_EVERY" in notes and "MALLOCK_TIME_EVERY" in notes,
      "the header says the trace was read as sampled: " + notes)
# The same draws every time (the report is reproducible).
eq(lock1(report_json("--no-symbols", "--as-sampled=%d" % N, path)),
   lk, "a second report")

# A trace whose holds were already sampled: refused, one line, exit 2.
rc, out, err = run("report", "--as-sampled=16", trace("sampled.trace", 16))
eq(rc, 2, "exit status on a sampled trace")
check("--as-sampled needs a trace that timed every hold and call" in err and
      err.count("\n") == 1, "one-line error: " + err)
# Not a count the shim would use, or an output that replays the trace.
for args in (["--as-sampled=1"], ["--as-sampled=128"],
             ["--as-sampled=16", "--format=folded"]):
    rc, out, err = run("report", *args, path)
    check(rc != 0 and "--as-sampled" in err, "%s refused: %d %s" %
          (args, rc, err))
done("analyzer_as_sampled")
