#!/usr/bin/env python3
"""Allocation findings are per allocation site (the first frame outside the
allocator, the shim and libc): one allocating line (queue_put) reached from
two callers is one finding with both stacks as evidence. The text report
shows each lock finding's contention points (waiter stacks) and contending
points (holder stacks), and the lock table's top locks' too, within 100
columns. `mallock diff` matches allocator-internal locks by kind, whatever
their address."""
from common import *

p, _ = mktrace("cascade", "two.trace", "--rounds", 200, "--two-callers")
d = report_json(p)
aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"]
eq(len(aul), 1, "one alloc_under_lock finding for one site")
f = aul[0]
eq(f["site"]["function"], "queue_put", "its site")
eq(f["stacks_total"], 2, "two stacks reach the site")
eq(f["evidence"]["stacks"], 2, "evidence: stacks")
eq(f["stacks_unit"], "allocator_ns", "stacks_unit")
eq([s["stack"][1]["function"] for s in f["stacks"]],
   ["producer_main", "producer_alt"], "the callers, heaviest first")
eq(sum(s["value"] for s in f["stacks"]), f["evidence"]["site_allocator_ns"],
   "the stacks' values add up to the site's")
eq(f["stack"], f["stacks"][0]["stack"], "stack: the heaviest")
for kind in ("cross_thread_free", "slow_alloc"):
    fs = [x for x in d["findings"] if x["kind"] == kind]
    eq(len(fs), 1, kind + ": one finding for the site")
    if fs:
        eq(fs[0]["stacks_total"], 2, kind + ": two stacks")
# The same trace without the second caller: the same site, one stack.
p1, _ = mktrace("cascade", "one.trace", "--rounds", 200)
d1 = report_json(p1)
f1 = [x for x in d1["findings"] if x["kind"] == "alloc_under_lock"][0]
eq(f1["evidence"]["site_allocator_ns"], f["evidence"]["site_allocator_ns"],
   "grouping keeps the site's totals")
eq(f1["stacks_total"], 1, "one stack")

# lock_classes carry the class's contention and contending points.
q = [c for c in d["lock_classes"] if c["name"] == "queue"][0]
eq(q["contention_points"][0]["waits"], 400, "queue: waits of the top waiter stack")
eq(q["contending_points"][0]["wait_caused_ns"], 800000, "queue: wait caused")

rc, out, err = run("report", p)
eq(rc, 0, "text report")
check("2 stacks reach this site" in out, "text: the site's stacks")
check("queue_put (mktrace.c" in out and "< producer_alt" in out,
      "text: the second caller")
check("\n   waiters " in out and "\n   holders " in out,
      "text: the finding's contention and contending points")
check("Contention in the top locks" in out and "\n    waiters " in out,
      "text: the lock table's contention points")
check(max(len(l) for l in out.splitlines()) <= 100, "text: 100 columns")

# diff: the allocator-internal lock moved (another address in each run).
b, _ = mktrace("cascade", "b.trace", "--rounds", 100, "--alloc-lock-addr", 0x9000)
a, _ = mktrace("cascade", "a.trace", "--rounds", 200, "--alloc-lock-addr", 0x7000)
rc, out, err = run("diff", "--format=json", b, a)
eq(rc, 0, "diff exit")
dd = json.loads(out)
internal = [lk for lk in dd["locks"] if lk["lock"].startswith("allocator-internal")]
eq(len(internal), 1, "allocator-internal locks matched as one row")
if internal:
    check(internal[0]["before"] is not None and internal[0]["after"] is not None,
          "matched in both traces")
    eq(internal[0]["delta"]["wait_ns"], 3000 * 3 * 10, "delta of their wait (10 more slow rounds of 3 producers)")
done("analyzer_sites")
