#!/usr/bin/env python3
"""Starvation needs evidence that a peer wanted the lock while others got
it. A pool that hands each task to the most recently idle worker, one
condition variable per worker, its acceptor a task on a worker thread
(mktrace lifo, varnish's design), wakes its workers very unequally on
purpose, its acceptor is never woken but signals, and no thread ever waits
for the lock: no starvation above info. The shared-condition starvation (mktrace starve)
is still found.

usage: test_pools.py MALLOCK MKTRACE SRCDIR"""
import common
from common import check, eq

path, _ = common.mktrace("lifo", "lifo.trace", "--rounds", 400)
d = common.report_json(path)
st = [f for f in d["findings"]
      if f["kind"] == "starvation" and f["severity"] != "info"]
eq(len(st), 0, "starvation above info on a most-recently-idle pool: %s" %
   [(f["severity"], f["summary"]) for f in st])
pool = common.lock_by_name(d, "pool")
eq(pool["cond_wakes"], 400 + 200 + 100 + 50 + 25 + 1, "the pool's wakes")
eq(pool["contended"], 0, "waits for the pool lock")

path, _ = common.mktrace("starve", "starve.trace")
d = common.report_json(path)
st = [f for f in d["findings"] if f["kind"] == "starvation"]
check(st and st[0]["severity"] != "info",
      "starvation on a shared condition is still found: %s" %
      [(f["severity"], f["summary"]) for f in st])
if st:
    eq(st[0]["evidence"].get("producers_left_out"), 0,
       "no client signals more than it is woken")
# The same clients taking "jobs" four times more per round, for a
# reference count, without waiting: their wakes (2.5 a round) are a tenth
# of their acquisitions (25), not what they come for (MariaDB's tpool
# workers on a task's mutex: 1031 acquisitions, 112 wakes, "starvation
# [high]" 16.06 s), so service is counted in acquisitions, which are even
# and never waited for: no starvation.
path, _ = common.mktrace("starve", "refs.trace", "--rounds", 200, "--refs", 4)
d = common.report_json(path)
jobs = common.lock_by_name(d, "jobs")
eq((jobs["acquisitions"] - 200 * 1, jobs["cond_wakes"]),
   (200 * 5 * 5, 200 * 5 // 2), "refs: (clients' acquisitions, wakes)")
st = [f for f in d["findings"] if f["kind"] == "starvation"]
eq(st, [], "no starvation where wakes are a tenth of the acquisitions")
common.done("test_pools")
