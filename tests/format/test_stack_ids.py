#!/usr/bin/env python3
"""Stack ids are dense: the shim numbers stacks 1, 2, ... in the order
they are first seen, so that an event's stack or site id takes 1 or 2
bytes of the trace (shim/core/stack.c; slot indexes of the 2^20-slot
table took 3).

usage: test_stack_ids.py MALLOCK SVCQUEUE TMPDIR

svcqueue is recorded raw; `mallock dump` lists every record. Each STACK
id is defined once; every id an event names is defined; the largest id
is at most the number of stacks plus a few (an id drawn by a thread that
lost the race for its slot is never used).
"""
import os
import re
import shutil
import subprocess
import sys

from chunkfile import check, done

MALLOCK, SVCQUEUE, TMP = sys.argv[1:4]
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
trace = os.path.join(TMP, "sq.trace")
r = subprocess.run([MALLOCK, "record", "--no-compress", "-o", trace, "--",
                    SVCQUEUE, "--container=tree", "--duration=0.3"],
                   capture_output=True, text=True, timeout=120)
check(r.returncode == 0, "svcqueue recorded: " + r.stderr[-300:])
d = subprocess.run([MALLOCK, "dump", trace], capture_output=True,
                   text=True, timeout=120)
check(d.returncode == 0, "mallock dump: " + d.stderr[-300:])
defined = [int(x) for x in re.findall(r" STACK id=(\d+) ", d.stdout)]
used = {int(x) for x in re.findall(r" (?:stack|site)=(\d+)", d.stdout)}
used.discard(0)
check(len(defined) >= 5, "stacks defined: %d" % len(defined))
check(len(defined) == len(set(defined)), "each stack id defined once")
check(used <= set(defined),
      "every id an event names is defined: %s" % sorted(used - set(defined)))
check(defined and max(defined) <= len(defined) + 4,
      "ids dense: the largest %d for %d stacks" %
      (max(defined or [0]), len(defined)))
done("format_stack_ids")
