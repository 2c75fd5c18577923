#!/usr/bin/env python3
"""Stable names: two windows of one process name a lock alike. A lock the
trace has no init of (initialised before the window, or statically) was
keyed and named by the first site seen taking it, which differs between
windows (rsyslog's queue mutex: "first taken in rsyslogd+0x60074" in one,
"first taken in qqueueEnqMsg" in the next), so `mallock diff` showed one
lock as two. It is keyed and named by the site with the most holds.

mktrace window: lock 9000 first taken at stats_update (--window-first 0) or
outer_op (1), then 2 holds per round at queue_put and 1 at queue_take."""
from common import *

p0, _ = mktrace("window", "w0.trace", "--rounds", 200, "--window-first", 0)
p1, _ = mktrace("window", "w1.trace", "--rounds", 200, "--window-first", 1)
labels = []
for p in (p0, p1):
    d = report_json(p)
    lk = [l for l in d["locks"] if l["id"] == 9000]
    eq(len(lk), 1, "the lock")
    labels.append(lk[0]["label"] if lk else None)
    cls = [c for c in d["lock_classes"] if lk and c["class"] == lk[0]["class"]]
    eq(cls[0]["site"]["function"] if cls else None, "queue_put",
       "the class's site: the site with the most holds")
eq(labels[0], labels[1], "the lock's name in both windows")
check((labels[0] or "").startswith("mutex taken in queue_put (mktrace.c:"),
      "named by its main site: %s" % labels[0])
rc, out, err = run("diff", "--format=json", p0, p1)
eq(rc, 0, "diff exit")
rows = json.loads(out)["locks"]
eq(len(rows), 1, "diff: one row for the lock: %s" % [r["lock"] for r in rows])
if rows:
    check(rows[0]["before"] is not None and rows[0]["after"] is not None,
          "diff: the lock matched in both windows")
    eq(rows[0]["delta"]["wait_ns"], 0, "diff: no change in wait")
done("analyzer_window_names")
