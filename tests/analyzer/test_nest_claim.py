#!/usr/bin/env python3
"""A wait is counted in one finding. memcached: waiters lost 447.2 ms on a
mutex (its lock_contention finding), 115.3 ms of them by threads holding
another lock that nobody waited on; a nested_lock finding scored those
115.3 ms again and ranked second. Once a finding speaks for the inner
lock's wait, a nested_lock finding with it inside keeps only its outer
lock's part, and goes when its outer lock was never waited on.

A trace written here, 1 tick = 1 ns, 20 rounds:
  thread 7: ACQ outer(1); +100 ACQ_WAIT inner(2) (waited 100 ns);
            +200 REL inner; +10 REL outer
  thread 8: ACQ_WAIT inner(2) (waited 400 ns); +300 REL inner
The inner lock's waiters lost 20 x 500 ns, 20 x 100 of them while the
outer lock was held; the outer lock was never waited on."""
from common import *

proc = proc_record(b"/bin/nest", b"nest")
acq, acq_wait, rel = lock_acq, lock_acq_wait, lock_rel

R = 20
t7 = b"".join(acq(1000, 1) + acq_wait(200, 2, 100) + rel(200, 2) +
              rel(10, 1) for _ in range(R))
t8 = b"".join(acq_wait(1010, 2, 400) + rel(300, 2) for _ in range(R))
path = os.path.join(TMP, "nest_claim.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc) + chunk(7, t7) + chunk(8, t8))

d = report_json("--no-symbols", "--all", path)
inner = [lk for lk in d["locks"] if lk["id"] == 2]
eq(len(inner), 1, "the inner lock")
eq(inner[0]["wait_ns"] if inner else None, R * 500, "the inner lock's wait")
cont = [x for x in d["findings"] if x["kind"] == "lock_contention"]
eq([x.get("lock") for x in cont], [2], "lock_contention on the inner lock")
if cont:
    eq(cont[0]["score"], R * 500, "it scores the inner lock's whole wait")
nested = [x for x in d["findings"] if x["kind"] == "nested_lock"]
eq([x["score"] for x in nested], [],
   "no nested_lock finding counts the inner lock's wait again")
total = sum(x["score"] for x in d["findings"] if x.get("lock") in (1, 2))
check(total <= R * 500, "the findings of the two locks score %s, more than "
      "the %d ns waited" % (total, R * 500))
done("analyzer_nest_claim")
