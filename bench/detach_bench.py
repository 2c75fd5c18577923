#!/usr/bin/env python3
"""Speed after `mallock detach` against a process never attached.
A benchmark that prints numbers, not a test.

usage: detach_bench.py BUILD_DIR [PAIRS] [REPS]

Three lateapp processes (tests/server/lateapp.c, background thread
stopped): one never attached, one attached then detached, one attached and
recording. Each "bench PAIRS" times PAIRS malloc(64)+free pairs and PAIRS
mutex lock+unlock pairs (ns per iteration, one of each pair). The three are
asked in turn, REPS rounds, so that a busy machine slows all three alike.
Prints every run, the medians and minima, and the ratios. Needs gdb and
ptrace (root, or ptrace_scope 0).
"""
import os
import statistics
import subprocess
import sys

BUILD = os.path.abspath(sys.argv[1])
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000000
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 9
MALLOCK = os.path.join(BUILD, "bin", "mallock")
APP = os.path.join(BUILD, "bin", "lateapp")
TMP = os.path.join(BUILD, "detach_bench")
os.makedirs(TMP, exist_ok=True)
MODES = ("never attached", "detached", "recording")


class App:
    def __init__(self, mode):
        env = {k: v for k, v in os.environ.items()
               if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
        env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
        self.p = subprocess.Popen([APP], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.p.stdout.readline()
        self.ask("quiet")  # no background thread: the loop alone
        cmds = {"never attached": [],
                "detached": [["attach", "-o", os.path.join(TMP, "b.%p.trace")],
                             ["detach"]],
                "recording": [["attach", "-o",
                               os.path.join(TMP, "b.%p.trace")]]}[mode]
        for cmd in cmds:
            r = subprocess.run([MALLOCK] + cmd + [str(self.p.pid)],
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit("mallock %s failed: %s" % (cmd[0], r.stderr))
        self.ask("bench %d" % PAIRS)  # warm-up

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        self.p.wait()


apps = {m: App(m) for m in MODES}
res = {m: [] for m in MODES}
for _ in range(REPS):
    for m in MODES:
        res[m].append(float(apps[m].ask("bench %d" % PAIRS).split()[1]))
for m in MODES:
    apps[m].close()
    print("%-15s ns/iteration: %s  median %.2f  min %.2f" % (
        m, " ".join("%.2f" % x for x in res[m]), statistics.median(res[m]),
        min(res[m])))
for f in (statistics.median, min):
    base, det = f(res["never attached"]), f(res["detached"])
    print("detached / never attached (%s): %.3f (%+.2f ns per iteration)" %
          (f.__name__, det / base, det - base))
