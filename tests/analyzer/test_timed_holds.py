#!/usr/bin/env python3
"""Timed holds (trace format 1.6, MALLOCK_HOLD_EVERY): a hold begun by
ACQ_SAMPLED stands for hold_every holds, one begun by ACQ_UNTIMED adds no
time, every other hold (contended, or after a contended acquisition in its
nest) stands for itself; a timed allocator call in a hold weighs what its
thread's latest acquisition does. Counts and waits stay exact; the report
says which figures are estimates and from how many timed holds.

A trace written here, 1 tick = 1 ns, PROCESS hold_every = 4:
  thread 7, lock 1:
    1010 ACQ_SAMPLED 1; 1050 ALLOC (30 ns); 1100 REL 1   hold 90 x 4
    1100 ACQ_UNTIMED 1; 1120 ALLOC (untimed); 1120 REL 1 (no time)
    two more untimed holds with nothing in them
    1220 ACQ_WAIT 1 (waited 70); 1230 ALLOC (15 ns); 1250 REL 1
                                                        hold 30 x 1
    one more untimed hold
  thread 8, one sampled nest:
    1010 ACQ_SAMPLED 2; 1020 ACQ_SAMPLED 3; 1040 ALLOC (10 ns, x 4);
    1060 ACQ_WAIT 4 (waited 5); 1080 ALLOC (8 ns, x 1); 1090 REL 4;
    1100 REL 3; 1110 REL 2
The same trace with every hold timed at weight 1 (ACQ for ACQ_SAMPLED,
hold_every absent) gives the plain sums."""
import gzip

from common import *

EVERY = 4


def trace(name, every, sampled, untimed):
    """sampled, untimed: the core records that begin those holds."""
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/holds") + s(b"holds") + s(b"h") + s(b"test")
    body += uv(0) + uv(0) + uv(1)  # sample_bytes, max_bytes, time_every
    if every:
        body += uv(every)  # hold_every (1.6)
    proc = tracefmt.meta("PROCESS", body)
    enc = tracefmt.Enc()

    def acq(dt, lk, rec):
        return tracefmt.event(rec, dt, lk, 0)

    def alloc(dt, p, ns):
        return enc.event("ALLOC", dt, p, 64, 0, ns, FMT.FN_MALLOC)

    t7 = acq(10, 1, sampled) + alloc(40, 0x1000, 30) + lock_rel(50, 1)
    t7 += acq(0, 1, untimed) + alloc(20, 0x2000, 0) + lock_rel(0, 1)
    for _ in range(2):
        t7 += acq(0, 1, untimed) + lock_rel(0, 1)
    t7 += lock_acq_wait(100, 1, 70) + alloc(10, 0x3000, 15) + \
        lock_rel(20, 1)
    t7 += acq(0, 1, untimed) + lock_rel(0, 1)
    enc = tracefmt.Enc()
    t8 = acq(10, 2, sampled) + acq(10, 3, sampled)
    t8 += alloc(20, 0x4000, 10) + lock_acq_wait(20, 4, 5)
    t8 += alloc(20, 0x5000, 8)
    t8 += lock_rel(10, 4) + lock_rel(10, 3) + lock_rel(10, 2)
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(6))
        f.write(chunk(0, proc) + chunk(7, t7) + chunk(8, t8))
    return path


def locks(d):
    return {lk["id"]: (lk["holds"], lk["timed_holds"], lk["hold_ns"],
                       lk["hold_max_ns"], lk["allocations_in_holds"],
                       lk["allocator_ns_in_holds"], lk["contended"],
                       lk["wait_ns"])
            for lk in d["locks"] if lk["kind"] == "mutex" or
            lk["id"] in (1, 2, 3, 4, 5)}


# Sampled: lock 1's hold of 90 ns stands for 4, the contended one (30 ns)
# for itself, the untimed ones add nothing; its calls: 30 x 4 + 15. The
# nest of thread 8: locks 2 and 3 sampled (x 4), lock 4 contended (x 1);
# the call before the wait weighs 4, the one after it 1.
path = trace("timed_holds.trace", EVERY, "ACQ_SAMPLED", "ACQ_UNTIMED")
d = report_json("--no-symbols", path)
# id -> (holds, timed, hold_ns, hold_max, calls, alloc_ns, contended, wait)
eq(locks(d), {1: (6, 2, 90 * 4 + 30, 90, 3, 30 * 4 + 15, 1, 70),
              2: (1, 1, 100 * 4, 100, 2, 10 * 4 + 8, 0, 0),
              3: (1, 1, 80 * 4, 80, 2, 10 * 4 + 8, 0, 0),
              4: (1, 1, 30, 30, 1, 8, 1, 5)}, "weighted lock figures")
eq(d["totals"]["lock_holds"], 9, "holds counted")
eq(d["totals"]["untimed_holds"], 4, "holds not timed")
eq(d["totals"]["lock_acquisitions"], 9, "acquisitions counted")
eq(d["totals"]["lock_wait_ns"], 75, "waits exact")
eq(d["totals"]["allocator_calls_in_holds"], 5, "calls in holds counted")
notes = [n["text"] for n in d["trace"]["notes"]
         if "MALLOCK_HOLD_EVERY" in n["text"]]
check(len(notes) == 1 and "estimated from 5 of 9 timed holds" in notes[0],
      "the note says the hold figures are estimates: %s" % notes)
rc, out, err = run("report", "--no-symbols", path)
eq(rc, 0, "text report")
check("about, estimated from 5 of 9 timed holds" in out,
      "the lock table says its hold figures are estimates:\n" + out)

# The same holds all timed at weight 1 (a 1.5 trace's ACQ, no
# hold_every): the plain sums, no note.
path = trace("all_timed.trace", 0, "ACQ", "ACQ")
d = report_json("--no-symbols", path)
got = locks(d)
eq(got[1][:4], (6, 6, 90 + 20 + 30, 90), "lock 1, all timed")
eq(got[2][:6], (1, 1, 100, 100, 2, 18), "lock 2, all timed")
eq(d["totals"]["untimed_holds"], 0, "no untimed holds")
check(not [n for n in d["trace"]["notes"]
           if "MALLOCK_HOLD_EVERY" in n["text"]], "no hold note")

# A sampled hold the thread most likely spent preempted (at least
# PREEMPT_NS, 100 us, and HOLD_PREEMPT_X, 8, times its lock's mean timed
# hold, once 4 were timed) counts once, and the 3 holds it stood for at
# the lock's mean; a timed call in it that is preemption (150 us, a 64-byte
# block, no allocator-lock wait) counts once in the lock's allocator time.
# Lock 5: four contended holds of 1000 ns (mean 1000), a sampled hold of
# 200000 ns (counts 200000 + 3 x 1000) with a 150000 ns malloc in it, then
# a sampled hold of 5000 ns (under 100 us: 4 x 5000); every hold at site
# 7, so that pprof's hold profile (the replay's sums) has them too.
def preempted_trace(name):
    proc = proc_record(b"/bin/holds", b"holds", 1, EVERY)
    proc += tracefmt.meta("STACK", uv(7) + uv(1) + uv(0x401000))
    enc = tracefmt.Enc()
    t9 = b""
    for _ in range(4):
        t9 += lock_acq_wait(10, 5, 50, site=7) + lock_rel(1000, 5)
    t9 += tracefmt.event("ACQ_SAMPLED", 10, 5, 7)
    t9 += enc.event("ALLOC", 180000, 0x6000, 64, 0, 150000, FMT.FN_MALLOC)
    t9 += lock_rel(20000, 5)
    t9 += tracefmt.event("ACQ_SAMPLED", 10, 5, 7) + lock_rel(5000, 5)
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(6))
        f.write(chunk(0, proc) + chunk(9, t9))
    return path


def pprof_hold_sums(path):
    """Sample.value summed by index over the profile (Profile.sample = 2,
    Sample.value = 2, packed varints); the hold metric's are holds, then
    ns."""
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    tot = [0, 0]
    for f, sample in pb_fields(data):
        for g, packed in pb_fields(sample) if f == 2 else ():
            if g != 2:
                continue
            for j, v in enumerate(pb_packed(packed)[:2]):
                tot[j] += v
    return tot


path = preempted_trace("preempted.trace")
d = report_json("--no-symbols", path)
hold_ns = 4 * 1000 + 200000 + 3 * 1000 + 4 * 5000
eq(locks(d)[5], (6, 6, hold_ns, 200000, 1, 150000, 4, 200),
   "a preempted sampled hold counts once")
# The replay weighs the set-apart hold as the model did: pprof's hold
# profile sums to the JSON's hold_ns.
pb = os.path.join(TMP, "preempted.pb.gz")
rc, out, err = run("report", "--no-symbols", "--format=pprof",
                   "--metric=hold", "-o", pb, path)
eq(rc, 0, "pprof hold profile (%s)" % err)
eq(pprof_hold_sums(pb), [6, hold_ns], "pprof's holds and hold ns")
eq(d["totals"]["sampled_holds_set_apart"], 1, "holds set apart")
# The 150 us malloc in that hold counts once: at its nest's weight (4) it
# would add 3 x 150000 ns.
eq(d["totals"]["preempted_allocator_ns_set_apart"], 150000 * 3,
   "allocator time the set-apart call would add at its weight")
lk5 = [lk for lk in d["locks"] if lk["id"] == 5][0]
eq((lk5["holds_set_apart"], lk5["holds_set_apart_ns"]), (1, 199000 * 3),
   "lock 5's hold set apart and what it would add at its weight")
# What weighing it as it stood for would add: (200000 - 1000) x 3.
eq(d["totals"]["sampled_holds_set_apart_ns"], 199000 * 3,
   "hold time the set-apart hold would add at its weight")
notes = [n["text"] for n in d["trace"]["notes"]
         if "sampled holds were set apart" in n["text"]]
check(len(notes) == 1 and notes[0].startswith("1 sampled holds"),
      "the note says one hold was set apart: %s" % notes)
# The lock table says it under the table, for the lock whose set-apart
# hold would add a tenth of its hold time or more: a wait longer than the
# hold column is then no contradiction.
rc, out, err = run("report", "--no-symbols", path)
eq(rc, 0, "text report of the preempted trace (%s)" % err)
flat = " ".join(out.split())
want = ("(%s: hold 227.0 us, or 824.0 us with its 1 sampled hold set apart "
        "as preemption weighted as they stood for)" % lk5["label"])
check(want in flat, "the lock table's set-apart line %r in:\n%s" %
      (want, out))

# A lock none of whose holds was timed has no hold time to tell: the lock
# table says "-" for its hold, max hold and alloc%, not "0 ns" and 0.0%.
# Thread 7: lock 1 held twice untimed (an untimed malloc in the first),
# lock 2 once sampled (40 ns, x 4).
def untimed_only_trace(name):
    proc = proc_record(b"/bin/holds", b"holds", 1, EVERY)
    enc = tracefmt.Enc()
    t7 = tracefmt.event("ACQ_UNTIMED", 10, 1, 0)
    t7 += enc.event("ALLOC", 0, 0x1000, 64, 0, 0, FMT.FN_MALLOC)
    t7 += lock_rel(0, 1)
    t7 += tracefmt.event("ACQ_UNTIMED", 0, 1, 0) + lock_rel(0, 1)
    t7 += tracefmt.event("ACQ_SAMPLED", 10, 2, 0) + lock_rel(40, 2)
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(6))
        f.write(chunk(0, proc) + chunk(7, t7))
    return path


path = untimed_only_trace("untimed_only.trace")
d = report_json("--no-symbols", path)
eq(locks(d), {1: (2, 0, 0, 0, 1, 0, 0, 0), 2: (1, 1, 160, 40, 0, 0, 0, 0)},
   "untimed-only lock: (holds, timed, hold_ns, ...)")
label = {lk["id"]: lk["label"] for lk in d["locks"]}
rc, out, err = run("report", "--no-symbols", path)
eq(rc, 0, "text report of the untimed-only trace (%s)" % err)
table = out.split("\nLocks (")[1].split("\n\n")[0].splitlines()


def row(lock):
    rows = [l.split() for l in table if l.strip().startswith(label[lock])]
    return rows[0][-7:] if len(rows) == 1 else rows


# acq, cont%, wait, (max wait,) hold, max hold, alloc%
eq(row(1)[-3:], ["-", "-", "-"], "lock 1's hold, max hold, alloc%%:\n%s" %
   "\n".join(table))
eq(row(2)[-5:], ["160", "ns", "40", "ns", "0.0%"],
   "lock 2's hold, max hold, alloc%%:\n%s" % "\n".join(table))
check("- where none of a lock's holds was timed" in out,
      "the table's note says what its - means:\n" + "\n".join(table))
done("analyzer_timed_holds")
