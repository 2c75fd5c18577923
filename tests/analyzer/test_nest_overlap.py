#!/usr/bin/env python3
"""A nested hold counts only while the outer lock is held: memcached
releases its LRU lock before the item lock it took under it, and the inner
hold counted to the inner release (34.0 ms) exceeded the outer class's
whole hold (22.9 ms) while the finding said "100.0% of its hold time".

A trace written here, 1 tick = 1 ns, 20 rounds:
  thread 7: ACQ outer(1); +100 ACQ inner(2); +200 REL outer; +700 REL inner
            (outer held 300 ns, inner 900 ns, both at once 200 ns)
  thread 8: ACQ_WAIT outer (waited 50 ns); +10 REL outer
The nesting's inner hold is 20 x 200 ns, its share of the outer's hold
(20 x 300 + 20 x 10 ns) 4000 / 6200; counted to the inner's release it
was 20 x 900 ns, more than the outer lock was held at all."""
from common import *

proc = proc_record(b"/bin/nest", b"nest")
acq, acq_wait, rel = lock_acq, lock_acq_wait, lock_rel

R = 20
t7 = b"".join(acq(1000, 1) + acq(100, 2) + rel(200, 1) + rel(700, 2)
              for _ in range(R))
t8 = b"".join(acq_wait(1990, 1, 50) + rel(10, 1) for _ in range(R))
path = os.path.join(TMP, "nest_overlap.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc) + chunk(7, t7) + chunk(8, t8))

d = report_json("--no-symbols", "--all", path)
outer = [lk for lk in d["locks"] if lk["id"] == 1]
eq(len(outer), 1, "the outer lock")
eq(outer[0]["hold_ns"] if outer else None, R * 300 + R * 10,
   "the outer lock's hold")
nested = [x for x in d["findings"] if x["kind"] == "nested_lock"]
eq(len(nested), 1, "nested_lock findings")
if nested:
    ev = nested[0]["evidence"]
    eq(ev.get("inner_hold_ns_while_outer_held"), R * 200,
       "inner hold while the outer is held: the overlap only")
    near(ev.get("outer_hold_share_in_inner", 0), 4000 / 6200, 1e-6,
         "share of the outer's hold spent holding the inner")
    check(ev.get("inner_hold_ns_while_outer_held", 0) <= outer[0]["hold_ns"],
          "the nested part never exceeds the outer's hold")
done("analyzer_nest_overlap")
