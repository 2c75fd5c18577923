#!/usr/bin/env python3
"""Speed after `mallock detach` against a process never attached (issue 17
item 3). A benchmark that prints numbers, not a test.

usage: detach_bench.py BUILD_DIR [PAIRS] [REPS]

lateapp (tests/server/lateapp.c), its background thread stopped, times PAIRS malloc(64)+free pairs and PAIRS
mutex lock+unlock pairs ("bench N": ns per iteration, one of each pair),
REPS times, in three processes: never attached, attached and recording,
attached then detached. Prints each run and the medians. Needs gdb and
ptrace (root, or ptrace_scope 0).
"""
import os
import statistics
import subprocess
import sys

BUILD = os.path.abspath(sys.argv[1])
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000000
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 7
MALLOCK = os.path.join(BUILD, "bin", "mallock")
APP = os.path.join(BUILD, "bin", "lateapp")
TMP = os.path.join(BUILD, "detach_bench")
os.makedirs(TMP, exist_ok=True)


def run(mode):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
    env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
    p = subprocess.Popen([APP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env)
    p.stdout.readline()

    def ask(cmd):
        p.stdin.write(cmd + "\n")
        p.stdin.flush()
        return p.stdout.readline().strip()

    ask("quiet")  # no background thread: the loop alone
    ask("bench %d" % PAIRS)  # warm-up
    if mode != "never attached":
        for cmd in (["attach", "-o", os.path.join(TMP, "b.%p.trace")],
                    ["detach"])[:1 if mode == "recording" else 2]:
            r = subprocess.run([MALLOCK] + cmd + [str(p.pid)],
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit("mallock %s failed: %s" % (cmd[0], r.stderr))
    ns = [float(ask("bench %d" % PAIRS).split()[1]) for _ in range(REPS)]
    p.stdin.write("quit\n")
    p.stdin.close()
    p.wait()
    return ns


res = {}
for mode in ("never attached", "detached", "recording"):
    res[mode] = run(mode)
    print("%-15s ns/iteration: %s  median %.2f  min %.2f" % (
        mode, " ".join("%.2f" % x for x in res[mode]),
        statistics.median(res[mode]), min(res[mode])))
for f in (statistics.median, min):
    base, det = f(res["never attached"]), f(res["detached"])
    print("detached / never attached (%s): %.3f (%+.2f ns per iteration)" %
          (f.__name__, det / base, det - base))
