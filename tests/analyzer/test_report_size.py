#!/usr/bin/env python3
"""The report's size follows lock classes and sites, not instances
(82k mutexes of one class made a 103 MB JSON): the JSON of a
100k-lock trace stays under 5 MB, lists the top locks and classes with a
total for the rest, and --all lists every one.

Memory per lock instance: the report's peak RSS, less that of a 2000-lock
report, over the 98000 more locks, stays under PER_LOCK_MAX bytes: about
1000 now (a lock's counters, its (lock, thread) entries and the maps; its
(lock, stack) pairs are kept per site), 1650 before they were and before
the starvation finder's 48-byte peer per (lock, thread)."""
import resource
from common import *

PER_LOCK_MAX = 1300
# ASan's shadow and quarantine (make test-sanitize), as test_hostile.py.
if "libasan" in subprocess.run(["ldd", MALLOCK], capture_output=True,
                               text=True).stdout:
    PER_LOCK_MAX *= 4


def peak_rss_kb(*args):
    """Runs mallock ARGS in a child of its own; its peak RSS in KB and its
    (status, stdout, stderr)."""
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "sys.stdout.buffer.write(b'%d\\n' % resource.getrusage("
             "resource.RUSAGE_CHILDREN).ru_maxrss + r.stdout)\n"
             "sys.stderr.buffer.write(r.stderr)\n"
             "sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, "-c", probe, MALLOCK] +
                       [str(a) for a in args], capture_output=True, text=True)
    no_sanitizer_finding([MALLOCK] + list(args), r.stderr)
    kb, _, out = r.stdout.partition("\n")
    return int(kb), (r.returncode, out, r.stderr)


N = 100000
path, _ = mktrace("locks", "locks.trace", "--locks", N)
rss, (rc, out, err) = peak_rss_kb("report", "--format=json", path)
eq(rc, 0, "report of %d locks: %s" % (N, err.strip()))
small, _ = mktrace("locks", "locks2k.trace", "--locks", 2000)
rss2k, (rc2, _, err2) = peak_rss_kb("report", "--format=json", small)
eq(rc2, 0, "report of 2000 locks: %s" % err2.strip())
per_lock = (rss - rss2k) * 1024 / (N - 2000)
print("JSON of %d locks: %d bytes; report peak RSS %d KB (2000 locks: %d "
      "KB): %.0f bytes per lock" % (N, len(out), rss, rss2k, per_lock))
check(len(out) < 5 * 1024 * 1024, "JSON under 5 MB: %d bytes" % len(out))
check(per_lock < PER_LOCK_MAX, "memory per lock instance under %d bytes: "
      "%.0f" % (PER_LOCK_MAX, per_lock))
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
path = small
d = report_json("--all", path)
eq((len(d["locks"]), d["locks_not_listed"]["locks"]), (2000, 0),
   "--all: every instance")
d = report_json(path)
check(len(d["locks"]) <= 60, "default: the top locks only")
done("analyzer_report_size")
