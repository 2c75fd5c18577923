#!/usr/bin/env python3
"""Two lock classes taken in both orders are one finding, a lock-order
inversion, not two nested_lock findings each advised "Keep the order"
(memcached's LRU and item locks, #1 and #4 of 37). It shows both inner
acquisition stacks and says whether an order is a trylock (failed tries in
it, no wait), or blocks in both orders (a deadlock risk).

Traces written here, 1 tick = 1 ns, 20 rounds:
  thread 7: ACQ A(1) at site 11; +50 ACQ_WAIT B(2) (stack 12, 30 ns);
            +100 REL B; +50 REL A
  thread 8: ACQ B at site 13; +50 TRY_FAIL A (site 14); +10 ACQ A at site
            15 (a trylock that succeeded); +100 REL A; +50 REL B
  blocking: thread 8 waits on A instead (ACQ_WAIT, stack 15, 40 ns)."""
import re

from common import *

body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
body += s(b"/bin/inv") + s(b"inv") + s(b"h") + s(b"test")
proc = b"\x80" + uv(len(body)) + body

acq = lambda dt, l, site: b"\x04" + uv(dt) + uv(l) + uv(site)
acq_wait = lambda dt, l, st, w: (b"\x06" + uv(dt) + uv(l) + uv(st) + uv(w) +
                                 uv(2))
try_fail = lambda dt, l, site: b"\x08" + uv(dt) + uv(l) + uv(site)
rel = lambda dt, l: b"\x09" + uv(dt) + uv(l)
R = 20


def trace(name, blocking):
    t7 = b"".join(acq(1000, 1, 11) + acq_wait(50, 2, 12, 30) + rel(100, 2) +
                  rel(50, 1) for _ in range(R))
    if blocking:
        rev = acq_wait(60, 1, 15, 40)
    else:
        rev = try_fail(50, 1, 14) + acq(10, 1, 15)
    t8 = b"".join(acq(1000, 2, 13) + rev + rel(100, 1) + rel(50, 2)
                  for _ in range(R))
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(file_header(1))
        f.write(chunk(0, proc) + chunk(7, t7) + chunk(8, t8, base=500))
    return path


for blocking in (False, True):
    d = report_json("--no-symbols", "--all",
                    trace("inversion%d.trace" % blocking, blocking))
    nested = [x for x in d["findings"] if x["kind"] == "nested_lock"]
    eq(len(nested), 1, "findings of two locks taken in both orders")
    if not nested:
        continue
    f = nested[0]
    ev = f["evidence"]
    eq({f["lock"], f.get("inner_lock")}, {1, 2}, "the two locks")
    eq(ev.get("inversion"), 1, "said to be an inversion")
    eq(ev.get("nested_acquisitions"), R, "nestings in one order")
    eq(ev.get("reverse_nested_acquisitions"), R, "nestings in the other")
    check("stack" in f and "reverse_stack" in f, "both orders' stacks")
    check("Lock order inversion" in f["advice"], "advice: " + f["advice"])
    check("Keep the order" not in f["advice"], "no 'Keep the order'")
    if blocking:
        check("can deadlock" in f["advice"],
              "both orders blocked: deadlock risk: " + f["advice"])
    else:
        # The trylock order is thread 8's: A taken inside B.
        fails = (ev.get("inner_try_failures_while_outer_held", 0) +
                 ev.get("reverse_inner_try_failures_while_outer_held", 0))
        eq(fails, R, "failed tries in the trylock order")
        check("is a trylock" in f["advice"] and "20 failed tries" in
              f["advice"], "the trylock order named: " + f["advice"])
    check("Taken in both orders" in f["summary"], "summary: " + f["summary"])
    # The advice names each lock twice ("B is taken while A is held, and
    # A while B is held"), by the label the locks table gives it.
    labels = {lk["id"]: lk["label"] for lk in d["locks"]}
    m = re.match(r"Lock order inversion: (.+?) is taken while (.+?) is "
                 r"held, and \2 while \1 is held;", f["advice"])
    check(m and {m.group(1), m.group(2)} ==
          {labels.get(1), labels.get(2)}, "the advice names both locks, "
          "as the locks table does (%r), in both orders: %s"
          % (sorted(set(labels.values())), f["advice"]))
done("analyzer_inversion")
