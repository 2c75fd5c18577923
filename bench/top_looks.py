#!/usr/bin/env python3
"""The cost of `mallock top`'s looks as the window grows.

usage: top_looks.py MALLOCK SHIM SVCQUEUE DIR [COUNT] [DURATION] [THREADS]

svcqueue --producers=THREADS --consumers=THREADS (2) --duration=DURATION
(30) runs under SHIM with MALLOCK_START=paused, its trace in DIR; then
/usr/bin/time -v mallock top --batch --format=json --count COUNT (20) PID.
Per look: the window's age and events, the look's time (its line's
arrival less its watermark and the 0.185 s lag of the 100 ms flush
deadline top asks for), the longest an event waited for the screen (the line's
arrival less the previous look's watermark: an event just after it is
shown by this look; the window's start is taken as the moment top is
started, which makes both figures larger by top's start-up, not
smaller) and top's own resident set then (VmRSS of the mallock process,
its looks' children not included); at the end top's CPU and maximum RSS
(its looks' children included). docs/mallock-top.md quotes its numbers."""
import json
import os
import subprocess
import sys
import time

M, SHIM, SVC, OUT = sys.argv[1:5]
COUNT = sys.argv[5] if len(sys.argv) > 5 else "20"
DUR = sys.argv[6] if len(sys.argv) > 6 else "30"
THR = sys.argv[7] if len(sys.argv) > 7 else "2"
os.makedirs(OUT, exist_ok=True)
e = dict(os.environ)
e.update(LD_PRELOAD=SHIM, MALLOCK_START="paused",
         MALLOCK_OUTPUT=os.path.join(OUT, "t.%p.trace"))
p = subprocess.Popen([SVC, "--producers=" + THR, "--consumers=" + THR,
                      "--duration=" + DUR], env=e,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1)
t0 = time.monotonic()
top = subprocess.Popen(["/usr/bin/time", "-v", M, "top", "--batch",
                        "--format=json", "--count", COUNT, str(p.pid)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
# top's watermark lag: the 100 ms flush deadline it asks of the shim, a
# quarter more, the 10 ms poll and 50 ms (analyzer/cmd/top.c lag_of)
LAG = 0.185


def top_rss():
    """VmRSS in kB of the mallock process /usr/bin/time runs, or -1."""
    try:
        with open("/proc/%d/task/%d/children" % (top.pid, top.pid)) as f:
            kids = f.read().split()
        for k in kids:
            with open("/proc/%s/status" % k) as f:
                for l in f:
                    if l.startswith("VmRSS:"):
                        return int(l.split()[1])
    except (OSError, ValueError):
        pass
    return -1


prev = 0.0
for line in top.stdout:
    a = time.monotonic()
    d = json.loads(line)
    look = a - (t0 + d["window_age_s"] + LAG)
    print("look %2d  window %6.1f s  %10d events  look %.2f s  "
          "to screen %.2f s  rss %d kB" %
          (d["interval"], d["window_age_s"], d["events"], look,
           a - (t0 + prev), top_rss()), flush=True)
    prev = d["window_age_s"]
err = top.stderr.read()
top.wait()
for l in err.splitlines():
    if any(k in l for k in ("User time", "System time", "Percent of CPU",
                            "Elapsed", "Maximum resident")):
        print(l.strip())
p.wait()
