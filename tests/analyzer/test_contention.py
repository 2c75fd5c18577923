#!/usr/bin/env python3
"""Plain lock contention is a finding (lock_contention), and one lock is
one finding. mktrace's `contention` scenario (exact times, 1 tick = 1 ns)
has, over R rounds:

  "plain"  no allocation; per round ct_long_update holds it 8000 ns while
           ct-1 waits 7000 ns, ct_short_update's hold then makes ct-2
           wait 1400 ns; holds 8000, 500, 500, 500 ns.
  "abig"   contended (900 ns a round), its holders spend half their hold
           time in the allocator, at two allocation sites: one
           alloc_under_lock finding, scored as the lock's whole lost wait.
  "atiny"  contended the same, 0.5% of each hold in the allocator: a
           lock_contention finding and no alloc_under_lock.

Then the evidence's bounds: a finder that puts a member its kind does not
declare, or one member twice, makes the analyzer abort (unit_evidence;
its checks that every kind's members fit EV_MAX are analyzer_unit_evidence)."""
import re
import subprocess
from common import *

R = 1000
path, _ = mktrace("contention", "contention.trace", "--rounds", R)
d = report_json(path)
by_lock = {}
for f in d["findings"]:
    by_lock.setdefault(f.get("lock_name"), []).append(f)

# plain: exactly one finding, lock_contention, W exact, the top one.
fs = by_lock.get("plain", [])
eq([f["kind"] for f in fs], ["lock_contention"], "plain: one finding")
eq(d["findings"][0]["lock_name"], "plain", "plain is the top finding")
f = fs[0]
ev = f["evidence"]
eq(f["score"], 8400 * R, "plain: score = W (ns)")
eq(ev["lock_wait_ns"], 8400 * R, "plain: lock_wait_ns")
eq(ev["contended"], 2 * R, "plain: contended")
eq(ev["acquisitions"], 4 * R, "plain: acquisitions")
eq(ev["contended_share"], 0.5, "plain: contended share")
eq(ev["max_waiters"], 2, "plain: max waiters")
eq(ev["threads"], 4, "plain: threads that took it")
eq(ev["waiting_threads"], 2, "plain: threads that waited")
# Holds 500 ns (3 a round) and 8000 ns (1): log2 buckets [256, 512) and
# [4096, 8192), whose tops are 512 and 8192, the latter capped at the
# longest hold.
eq(ev["hold_median_ns"], 512, "plain: median hold (bucket top)")
eq(ev["hold_p99_ns"], 8000, "plain: p99 hold (capped at the longest)")
eq(ev["hold_max_ns"], 8000, "plain: longest hold")
eq(ev["allocator_share_of_hold"], 0, "plain: no allocator time")
eq(ev["own_work_share"], 1, "plain: all own work")
eq(ev["holder_stacks"], 2, "plain: holder stacks")
eq(ev["top_holder_wait_caused_ns"], 7000 * R, "plain: top holder's wait")
near(ev["top_holder_share"], 7000 / 8400, 1e-5, "plain: top holder share")
hs = [(h["wait_caused_ns"], h["stack"][0]["function"]) for h in f["holders"]]
eq(hs, [(7000 * R, "ct_long_update"), (1400 * R, "ct_short_update")],
   "plain: holders ranked by the wait they caused")
ws = [(w["wait_ns"], w["waits"], w["stack"][0]["function"])
      for w in f["waiters"]]
eq(ws, [(8400 * R, 2 * R, "ct_short_update")], "plain: waiters")
eq(f["site"]["function"], "ct_long_update", "plain: the code is the holder's")
check("ct_long_update" in f["advice"] and "long holds" in f["advice"],
      "plain: advice names the long holder: " + f["advice"])

# abig: one alloc_under_lock finding, scored W, with the contention
# evidence.
fs = by_lock.get("abig", [])
eq([f["kind"] for f in fs], ["alloc_under_lock"], "abig: one finding")
if fs:
    eq(fs[0]["score"], 900 * R, "abig: score = W")
    eq(fs[0]["evidence"].get("hold_median_ns"), 1000,
       "abig: hold median (bucket top 1024, capped at the longest)")
    near(fs[0]["evidence"]["allocator_share_of_hold"], 0.5, 1e-9,
         "abig: allocator share")
    eq(len(fs[0].get("holders", [])), 1, "abig: holders listed")
    # Both allocation sites are in the one finding (alloc_under_lock is
    # one per lock): nothing left to fold.
    eq(fs[0]["evidence"].get("sites"), 2, "abig: both allocation sites")
    eq(fs[0]["evidence"].get("alloc_sites_folded"), 0,
       "abig: no other alloc_under_lock finding of its lock to fold")

# atiny: lock_contention, its allocator share in the evidence.
fs = by_lock.get("atiny", [])
eq([f["kind"] for f in fs], ["lock_contention"], "atiny: one finding")
if fs:
    eq(fs[0]["score"], 900 * R, "atiny: score = W")
    near(fs[0]["evidence"]["allocator_share_of_hold"], 0.01, 1e-9,
         "atiny: allocator share")

# No alloc_under_lock finding scores above the time its lock lost.
for f in d["findings"]:
    if f["kind"] == "alloc_under_lock":
        check(f["score"] <= f["evidence"]["lock_wait_ns"],
              "alloc_under_lock score within its lock's wait")

# The text report shows the holds and what the holders did.
rc, out, err = run("report", path)
eq(rc, 0, "text report")
check("#1 lock_contention" in out, "text: lock_contention first")
check("median <= 512 ns, p99 <= 8.0 us" in out, "text: hold distribution")
check("holders     7.0 ms" in out, "text: holders with the wait caused")

# A lock whose holders spend a meaningful share holding an inner lock
# (mktrace's mixed: "outer" holds "inner" for 200 of its 310 ns) is named
# by its nested_lock finding, with the contention evidence; the inner
# lock, whose waits all happen inside the outer, is that finding's too.
mixed, _ = mktrace("mixed", "mixed.trace", "--rounds", R)
dm = report_json(mixed)
on = lambda name: [f["kind"] for f in dm["findings"]
                   if f.get("lock_name") == name]
eq(on("outer"), ["nested_lock"], "outer: one finding, nested_lock")
eq(on("inner"), [], "inner: left to the nested_lock finding")
# The text's holds line gives each finding's own holds and acquisitions
# (the alloc_under_lock lock's 800 holds are 600 acquisitions: its holds
# also end condition waits).
rc, out, err = run("report", mixed)
flat = " ".join(out.split())
pairs = [(int(f["evidence"]["holds"]), int(f["evidence"]["acquisitions"]))
         for f in dm["findings"] if "holds" in f["evidence"] and
         "hold_median_ns" in f["evidence"]]
check(any(h != a for h, a in pairs), "mixed: a finding whose holds are "
      "not its acquisitions: %r" % pairs)
for h, a in pairs:
    check(re.search(r"%d holds, median <= [^;]*; [0-9.]+%% of %d "
                    r"acquisitions contended" % (h, a), flat),
          "text: %d holds of %d acquisitions in a holds line" % (h, a))
nf = [f for f in dm["findings"] if f["kind"] == "nested_lock"]
if nf:
    check(nf[0]["score"] >= nf[0]["evidence"].get("lock_wait_ns", -1) > 0,
          "nested_lock scored at least the outer lock's W")
    check("holders" in nf[0] and "hold_median_ns" in nf[0]["evidence"],
          "nested_lock carries the contention evidence")

# A member its kind does not declare, or one put twice, aborts, loudly:
# so a finding never holds more than its kind declares, which fits EV_MAX.
unit = os.path.join(os.path.dirname(MKTRACE), "unit_evidence")
for mode, why in (("undeclared", "a member its kind does not declare"),
                  ("twice", "a member it already has")):
    r = subprocess.run([unit, mode], capture_output=True, text=True)
    check(r.returncode != 0, "unit_evidence %s: a finder putting %s must "
          "fail (rc %d)" % (mode, why, r.returncode))
    check(why in r.stderr, "unit_evidence %s: says why: %s" % (mode, r.stderr))

done("test_contention")
