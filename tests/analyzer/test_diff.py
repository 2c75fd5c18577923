#!/usr/bin/env python3
"""mallock diff: the cascade trace (allocation under the queue lock) before
and the precise one (the allocation moved out) after: the queue class is
matched by name, its allocator time in holds goes to zero, its wait and
hold stay; the alloc_under_lock finding is "gone"."""
from common import *

before, _ = mktrace("cascade", "before.trace", "--rounds", 500)
after, _ = mktrace("precise", "after.trace", "--rounds", 500)
rc, out, err = run("diff", "--format=json", before, after)
eq(rc, 0, "diff exit")
d = json.loads(out)
eq(d["schema"], "mallock.diff/1", "schema")
locks = {lk["lock"]: lk for lk in d["locks"]}
check("queue" in locks and "stats" in locks, "classes matched by name")
q = locks["queue"]
eq(q["before"]["allocator_ns_in_holds"], 2340 * 500, "before allocator in holds")
eq(q["after"]["allocator_ns_in_holds"], 0, "after allocator in holds")
eq(q["delta"]["allocator_ns_in_holds"], -2340 * 500, "delta allocator")
eq(q["delta"]["wait_ns"], 0, "delta wait")
eq(q["delta"]["hold_ns"], 0, "delta hold")
aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"]
eq(len(aul), 1, "one alloc_under_lock row")
eq(aul[0]["status"], "gone", "alloc_under_lock gone after")
check(aul[0]["key"].startswith("queue @ queue_put"), "finding key")
rc, out, err = run("diff", before, after)
eq(rc, 0, "text diff")
check("alloc_under_lock" in out and "gone" in out, "text diff names it")
check(max(len(l) for l in out.splitlines()) <= 100, "100 columns")
# The text's changes are (after - before) / before: the allocator time went
# from 1.6 ms to 900 us, one alloc_churn finding from 1.2 ms to 450 us.
head = [l for l in out.splitlines() if l.strip().startswith("lock wait")]
check(len(head) == 1 and "(+0%)" in head[0] and "(-44%)" in head[0],
      "text diff: header changes (lock wait +0%%, allocator -44%%): %s" % head)
churn = [l for l in out.splitlines()
         if l.strip().startswith("alloc_churn") and "queue_put" in l]
check(len(churn) == 1 and churn[0].split()[6] == "-62%",
      "text diff: alloc_churn at queue_put -62%%: %s" % churn)
# Twice the rounds after: every figure of the queue class doubles (+100%);
# the other way round it halves (-50%).
double, _ = mktrace("cascade", "double.trace", "--rounds", 1000)
for a, b, want in ((before, double, "+100%"), (double, before, "-50%")):
    rc, out, err = run("diff", a, b)
    eq(rc, 0, "text diff %s" % want)
    queue = [l.split() for l in out.splitlines()
             if l.strip().startswith("queue ")]
    check(len(queue) == 1 and [w for w in queue[0] if w.endswith("%")] ==
          [want] * 3, "text diff: queue wait, hold, allocator %s: %s"
          % (want, queue))
rc, out, err = run("diff", before)
eq(rc, 2, "usage error (docs/mallock.md)")
empty = os.path.join(TMP, "e.trace")
open(empty, "w").close()
rc, out, err = run("diff", before, empty)
eq(rc, 2, "diff: not a trace")
done("analyzer_diff")
