#!/usr/bin/env python3
"""A timed allocator call that ends on another CPU than it began on is
preemption, not allocator work (trace format 1.5, ALLOC_MIGRATED). migrate
runs under the shim with libmigalloc.so after it, whose malloc(777) moves
the thread to another CPU before it returns (sched_setaffinity on itself:
deterministic), 40 times, and 40 malloc(64) that stay; every call timed
(MALLOCK_TIME_EVERY=1).

The trace must mark each malloc(777) and no other call ALLOC_MIGRATED, the
report count them as preempted and migrated, and slow_alloc must not
report the 777-byte site for them. Exit 77 (skip) on a machine with one CPU
for the process, or where the shim cannot read the CPU (no rdtscp and no
glibc rseq area).

Arguments after the common three: SHIM MIGALLOC MIGRATE."""
import subprocess
from common import *

SHIM, MIGALLOC, MIGRATE = sys.argv[4], sys.argv[5], sys.argv[6]
N = 40

trace = os.path.join(TMP, "migrate.trace")
env = dict(os.environ, LD_PRELOAD=SHIM + ":" + MIGALLOC,
           MALLOCK_OUTPUT=trace, MALLOCK_TIME_EVERY="1")
r = subprocess.run([MIGRATE], env=env, capture_output=True, text=True,
                   timeout=120)
eq(r.returncode, 0, "migrate exit status (stderr %r)" % r.stderr)
words = r.stdout.split()
if len(words) == 4 and (int(words[1]) < 2 or words[3] != "1"):
    print("skip: %s" % r.stdout.strip())
    sys.exit(77)
rc, out, err = run("dump", trace)
eq(rc, 0, "mallock dump")
lines = out.splitlines()
mig = [i for i, l in enumerate(lines) if "ALLOC_MIGRATED" in l]
eq(len(mig), N, "one ALLOC_MIGRATED per malloc(777)")


def next_of_thread(i):
    """The thread's next record after line i: a chunk may end between an
    ALLOC_MIGRATED and its ALLOC, the ALLOC then in the thread's next
    chunk, after chunk headers and other threads' records."""
    tid = lines[i].split()[0]
    for l in lines[i + 1:]:
        if l.split()[:1] == [tid]:
            return l
    return ""


after = [next_of_thread(i) for i in mig]
check(all(" ALLOC " in l and "size=777" in l for l in after),
      "each precedes its malloc(777): %r" % [l for l in after
                                             if "size=777" not in l][:3])
d = report_json("--no-symbols", trace)
tot = d["totals"]
eq(tot.get("migrated_allocator_calls"), N, "migrated calls")
check(tot.get("preempted_allocator_calls", 0) >= N, "preempted calls")
for f in d["findings"]:
    if f["kind"] == "slow_alloc":
        check(f["evidence"].get("migrated_calls", 0) == 0 or
              f["evidence"]["slow_calls"] < N,
              "slow_alloc counts no migrated call as slow: %r" %
              f["evidence"])
done("analyzer_migrated")
