#!/usr/bin/env python3
"""Hold forms (trace format 1.8), recorded: holdrec, under
MALLOCK_HOLD_EVERY=16, takes each of its locks a known number of times
(tests/analyzer/holdrec.c). Its untimed holds with nothing inside must be
stored as hold forms (HOLD_UNTIMED, and HOLD_SHARED_UNTIMED for the
rwlock's reads: trace_stats' "stored" lines), and still read as an
acquisition and a release each: the trace's acquisitions and releases of
the threads named holdrec match, END counts every event, and the
report's acquisitions and holds of every lock are exact, its contended
releases too (a release a thread waited for is never a hold form).
With MALLOCK_FLUSH_MS=3, other threads write an idle thread's buffer and
its own flush encodes the rest again (shim/core/wbuf.c write_range), hold
forms included: holdrec_flick's counts and END's must come out exact too.

usage: test_hold_records.py MALLOCK MKTRACE SRCDIR HOLDREC TRACE_STATS"""
import subprocess
from common import *

APP, TRACE_STATS = sys.argv[4], sys.argv[5]
PLAIN, RD, SPIN, NEST, CROSS, ALLOC, CONT, FLICK = (
    20000, 5000, 2000, 2000, 2000, 2000, 20, 5000)
META = {"PROCESS", "MODULE", "STACK", "LOCK_NEW", "LOCK_NAME", "THREAD_NAME",
        "END", "NOTE"}
ACQS = ("ACQ", "ACQ_SHARED", "ACQ_UNTIMED", "ACQ_SHARED_UNTIMED",
        "ACQ_SAMPLED", "ACQ_SHARED_SAMPLED", "ACQ_WAIT", "ACQ_SHARED_WAIT")
RELS = ("REL", "REL_CONTENDED")

trace = os.path.join(TMP, "holdrec.trace")
env = dict(os.environ, MALLOCK_HOLD_EVERY="16", MALLOCK_FLUSH_MS="3")
r = subprocess.run([MALLOCK, "record", "--no-compress", "-o", trace, "--",
                    APP], env=env, capture_output=True, text=True,
                   timeout=300)
eq(r.returncode, 0, "holdrec ran (stderr %r)" % r.stderr)

# The trace: hold forms stored, every event read back.
st = subprocess.run([TRACE_STATS, trace], capture_output=True, text=True,
                    timeout=120)
eq(st.returncode, 0, "trace_stats (stderr %r)" % st.stderr)
stored, per, events, end = {}, {}, 0, None
for ln in st.stdout.splitlines():
    f = ln.split()
    if len(f) == 3 and f[0] == "stored":
        stored[f[1]] = int(f[2])
    elif len(f) == 2 and f[0].isupper() and f[0] not in META:
        events += int(f[1])
    elif len(f) >= 4 and f[0] == "end" and f[2] == "events":
        end = int(f[3])
    elif len(f) > 2 and f[0] == "thread" and f[2] == "holdrec":
        for kv in f[3:]:
            k, v = kv.split("=")
            per[k] = per.get(k, 0) + int(v)
print("stored forms: %s" % sorted(stored.items()))
print("holdrec's lock records: %s" % sorted(
    (k, v) for k, v in per.items() if k.startswith(("ACQ", "REL"))))
holds = stored.get("HOLD_UNTIMED", 0) + stored.get("HOLD_UNTIMED_LAST", 0)
shared = (stored.get("HOLD_SHARED_UNTIMED", 0) +
          stored.get("HOLD_SHARED_UNTIMED_LAST", 0))
# About 15 of 16 of the 2 * (PLAIN + SPIN + NEST) holds that can be one.
check(holds > (PLAIN + SPIN + NEST), "untimed holds stored as hold forms: "
      "%d" % holds)
check(shared > RD, "shared untimed holds stored as hold forms: %d" % shared)
each = 2 * (PLAIN + RD + SPIN + 2 * NEST + 2 * CROSS + ALLOC)
eq(sum(per.get(k, 0) for k in ACQS), each, "holdrec's acquisitions")
eq(sum(per.get(k, 0) for k in RELS), each, "holdrec's releases")
eq(end, events, "END's events and the event records read")

# The report: every lock's acquisitions and holds exact.
d = report_json(trace)


def lock(name):
    ls = [l for l in d["locks"]
          if l.get("name") == name or l.get("label") == name]
    eq(len(ls), 1, "one lock %s in the report" % name)
    return ls[0] if ls else {}


for name, n in (("holdrec_plain", 2 * PLAIN), ("holdrec_rw", 2 * RD),
                ("holdrec_spin", 2 * SPIN), ("holdrec_outer", 2 * NEST),
                ("holdrec_inner", 2 * NEST), ("holdrec_a", 2 * CROSS),
                ("holdrec_b", 2 * CROSS), ("holdrec_alloc", 2 * ALLOC),
                ("holdrec_cont", 2 * CONT), ("holdrec_flick", FLICK)):
    lk = lock(name)
    eq(lk.get("acquisitions"), n, "%s: acquisitions" % name)
    eq(lk.get("holds"), n, "%s: holds" % name)
eq(lock("holdrec_rw").get("shared_acquisitions"), 2 * RD,
   "holdrec_rw: shared acquisitions")
eq(lock("holdrec_alloc").get("holds_with_alloc"), 2 * ALLOC,
   "holdrec_alloc: holds with an allocation")
plain = lock("holdrec_plain")
check(0 < plain.get("timed_holds", 0) < plain.get("holds", 0) // 4,
      "holdrec_plain: about one hold in 16 timed (%s of %s)"
      % (plain.get("timed_holds"), plain.get("holds")))
cont = lock("holdrec_cont")
eq(cont.get("contended"), CONT, "holdrec_cont: contended acquisitions")
eq(cont.get("contended_holds"), CONT, "holdrec_cont: contended releases")
done("analyzer_hold_records")
