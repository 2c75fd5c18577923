#!/usr/bin/env python3
"""A contended acquisition is always timed (MALLOCK_HOLD_EVERY, trace
format 1.6), recorded: plainlock's four threads hold one mutex for about
20 us of work each, with MALLOCK_HOLD_EVERY at its largest (2^20), so that
only a thread's first uncontended nest is sampled and every other
uncontended hold goes untimed. Every ACQ_WAIT's hold must still be timed:
the release that ends it on its thread reads the clock (at least 1000
ticks after the acquisition, where an untimed release would carry the
acquisition's own stamp), and untimed holds must be there too (the
sampling was on). A run that saw no contended acquisition is made again.

usage: test_contended_timed.py MALLOCK MKTRACE SRCDIR PLAINLOCK"""
import re
import subprocess
from common import *

APP = sys.argv[4]
ATTEMPTS = 5
LINE = re.compile(r"tid=(\d+) tsc=(\d+) ([A-Z_]+) lock=(\d+)")


def attempt(k):
    trace = os.path.join(TMP, "contended.%d.trace" % k)
    env = dict(os.environ, MALLOCK_HOLD_EVERY=str(1 << 20))
    r = subprocess.run([MALLOCK, "record", "--no-compress", "-o", trace,
                        "--", APP, "2000"], env=env, capture_output=True,
                       text=True, timeout=300)
    eq(r.returncode, 0, "plainlock ran (stderr %r)" % r.stderr)
    rc, out, err = run("dump", trace)
    eq(rc, 0, "mallock dump")
    open_wait = {}  # (tid, lock) -> tsc of the ACQ_WAIT
    kinds = {}
    holds = []  # (tid, ticks) of each hold begun by an ACQ_WAIT
    for line in out.splitlines():
        m = LINE.search(line)
        if not m:
            continue
        tid, tsc, kind, lock = m.group(1), int(m.group(2)), m.group(3), \
            m.group(4)
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind in ("ACQ_WAIT", "ACQ_SHARED_WAIT"):
            open_wait[(tid, lock)] = tsc
        elif kind in ("REL", "REL_CONTENDED") and (tid, lock) in open_wait:
            holds.append((tid, tsc - open_wait.pop((tid, lock))))
    print("attempt %d: %s" % (k, sorted(kinds.items())))
    return kinds, holds


for k in range(1, ATTEMPTS + 1):
    kinds, holds = attempt(k)
    if holds:
        break
check(holds, "no contended acquisition in %d recordings" % ATTEMPTS)
check(kinds.get("ACQ_UNTIMED", 0) > 0, "untimed holds recorded: %s" % kinds)
untimed = [h for h in holds if h[1] < 1000]
eq(untimed, [], "contended holds whose release was not timed "
   "(of %d)" % len(holds))
done("analyzer_contended_timed")
