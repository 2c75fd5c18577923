#!/usr/bin/env python3
"""Reports do not depend on the hash key. The
analyzer's hash maps are keyed from getrandom() in each process
(analyzer/util/u64map.h), so two runs hash every key differently; an output
whose order followed a map's slots would differ between them. Each trace
(the golden ones, mktrace scenarios with symbols, forged ones with many
threads, locks held at once and colliding keys) is reported twice in every
format and metric, and by `mallock diff`, and the outputs must be
byte-identical.

usage: test_seed.py MALLOCK FORGE SRCDIR (FORGE: tests/analyzer/forge;
mktrace is found next to it)"""
import glob
from common import *

FORGE = MKTRACE
MK = os.path.join(os.path.dirname(FORGE), "mktrace")

traces = sorted(glob.glob(os.path.join(SRCDIR, "golden", "*.trace")))
for sc in ("cascade", "mixed", "starve", "roles"):
    path = os.path.join(TMP, sc + ".trace")
    subprocess.run([MK, sc, path, "--rounds", "300"], check=True,
                   capture_output=True)
    traces.append(path)
for shape in ("flood", "holds", "marks", "threads"):
    path = os.path.join(TMP, shape + ".trace")
    subprocess.run([FORGE, shape, "200000", path], check=True)
    traces.append(path)

commands = [["report"], ["report", "--format=json"]]
for metric in ("wait", "hold", "alloc-under-lock", "cross-thread"):
    commands.append(["report", "--format=folded", "--metric=" + metric])
for trace in traces:
    name = os.path.basename(trace)
    for cmd in commands:
        first = run(*cmd, trace)
        eq(first[0], 0, "%s %s: exit status" % (name, cmd))
        second = run(*cmd, trace)
        check(first == second, "%s %s: two runs differ" % (name, cmd))
for a, b in zip(traces, traces[1:]):
    first = run("diff", "--format=json", a, b)
    check(first == run("diff", "--format=json", a, b),
          "diff %s %s: two runs differ" % (a, b))
done("analyzer_seed")
