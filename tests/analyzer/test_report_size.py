#!/usr/bin/env python3
"""The report's size follows lock classes and sites, not instances (issue
13, item 7: 82k mutexes of one class made a 103 MB JSON): the JSON of a
100k-lock trace stays under 5 MB, lists the top locks and classes with a
total for the rest, and --all lists every one. Prints the JSON's size and
the report's peak memory (measured, not asserted)."""
import resource
from common import *

N = 100000
path, _ = mktrace("locks", "locks.trace", "--locks", N)
rc, out, err = run("report", "--format=json", path)
eq(rc, 0, "report of %d locks: %s" % (N, err.strip()))
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("JSON of %d locks: %d bytes; report peak RSS %d KB" %
      (N, len(out), rss))
check(len(out) < 5 * 1024 * 1024, "JSON under 5 MB: %d bytes" % len(out))
d = json.loads(out)
listed, rest = d["locks"], d["locks_not_listed"]
check(0 < len(listed) <= 60, "top locks listed: %d" % len(listed))
eq(len(listed) + rest["locks"], N, "listed + not listed = every instance")
eq(sum(l["acquisitions"] for l in listed) + rest["acquisitions"],
   d["totals"]["lock_acquisitions"], "the rest's acquisitions complete "
   "the total")
eq(sum(l["wait_ns"] for l in listed) + rest["wait_ns"],
   d["totals"]["lock_wait_ns"], "the rest's wait completes the total")
eq(len(d["lock_classes"]), 1, "one class (one init line)")
eq(d["lock_classes"][0]["instances"], N, "the class counts every instance")
eq(d["lock_classes_not_listed"]["classes"], 0, "no class left out")
eq(sum(d["lock_classes"][0]["wait_hist_log2_ns"]), N,
   "the class's wait histogram holds every wait")

# --all lists everything (a smaller trace).
path, _ = mktrace("locks", "locks2k.trace", "--locks", 2000)
d = report_json("--all", path)
eq((len(d["locks"]), d["locks_not_listed"]["locks"]), (2000, 0),
   "--all: every instance")
d = report_json(path)
check(len(d["locks"]) <= 60, "default: the top locks only")
done("analyzer_report_size")
