#!/usr/bin/env python3
"""`mallock attach PID` (docs/server.md, "Attach to a running process").

usage: attach_test.py MALLOCK ATTACHAPP TMPDIR [tcmalloc]

attachapp runs WITHOUT the shim, for 6 s (a shorter run could end before
the checks on a loaded machine); after 0.5 s `mallock attach` injects it
(ptrace, analyzer/target/inject.c), the app runs on and exits by itself. Checks: the app's exit status
and output are unchanged, the trace exists and its report shows allocations
and lock acquisitions made after the attach, allocations inside lock holds
(an alloc_under_lock finding), the blocks allocated before the attach
counted as unknown frees (not cross-thread); `mallock ctl status` answers;
a report read after `mallock ctl stop`, while the app runs, says "attached
at" and "window closed by ctl at" and holds the attach notes;
a second attach is refused; an attach the kernel would not permit (PID 1
as uid 65534) is refused in one line with exit status 2.

With `tcmalloc`, ATTACHAPP is linked with libtcmalloc.so.4: no malloc
slot is left alone, the report says the hooks forward to tcmalloc, and the
same checks hold (the blocks allocated before the attach are freed by
tcmalloc through the free hook: the app's exit status shows it survived).

Exits 77 (CTest SKIP_RETURN_CODE) when ptrace is blocked in this
environment, decided before mallock runs (ptrace_blocked): any refusal or
failure of `mallock attach` itself is a test failure.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from srvcheck import SKIP, attach_workdir, check, fail, ptrace_blocked  # noqa: F401

MALLOCK, APP, TMP = sys.argv[1:4]
TCMALLOC = sys.argv[4:5] == ["tcmalloc"]


attach_workdir(TMP)

env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
# 12 s: the report of the window while the app runs took over 5 s at
# load 10 (tcmalloc's variant makes millions of events a second).
app = subprocess.Popen([APP, "12"], stdout=subprocess.PIPE, text=True,
                       env=env)
ready = app.stdout.readline()
check(ready.startswith("attachapp: ready"), "attachapp started: " +
      ready.strip())
time.sleep(0.5)
with open("/proc/%d/maps" % app.pid) as f:
    maps = f.read()
check("libmallock" not in maps, "the app runs without the shim")
if TCMALLOC:
    check("libtcmalloc" in maps, "the app is linked with tcmalloc")

trace = os.path.join(TMP, "a.%p.trace")
t0 = time.time()
r = subprocess.run([MALLOCK, "attach", "-o", trace, str(app.pid)],
                   capture_output=True, text=True)
print("attach took %.2f s, exit %d:\n%s%s" % (time.time() - t0, r.returncode,
                                              r.stdout, r.stderr))
if r.returncode != 0:
    app.kill()
    app.wait()
    fail("mallock attach exits %d where ptrace is permitted" % r.returncode)
check(r.returncode == 0 and "recording (mallock attach)" in r.stdout,
      "mallock attach answers recording")
if TCMALLOC:
    check("left alone" not in r.stdout,
          "no slot bound to tcmalloc is left alone")

st = subprocess.run([MALLOCK, "ctl", "status", str(app.pid)],
                    capture_output=True, text=True)
check(st.returncode == 0 and "recording" in st.stdout,
      "mallock ctl status on the attached process: " + st.stdout.strip())
again = subprocess.run([MALLOCK, "attach", str(app.pid)],
                       capture_output=True, text=True)
check(again.returncode == 1 and "already has libmallock.so" in again.stderr,
      "a second attach is refused: " + again.stderr.strip())

# A window closed by ctl, reported while the app still runs: the header
# says so and that the recording began at the attach, and the attach
# notes are in the trace already (they were written only at exit).
path = trace.replace("%p", str(app.pid))
time.sleep(0.5)
stop = subprocess.run([MALLOCK, "ctl", "stop", str(app.pid)],
                      capture_output=True, text=True)
check(stop.returncode == 0 and "paused" in stop.stdout,
      "mallock ctl stop: " + stop.stdout.strip() + stop.stderr.strip())
mid = subprocess.run([MALLOCK, "report", "--top", "1", path],
                     capture_output=True, text=True)
head = " ".join(mid.stdout.split("Findings")[0].split())
check(mid.returncode == 0 and app.poll() is None,
      "reported while the app runs: report exit %d, app %r: %s"
      % (mid.returncode, app.poll(), mid.stderr.strip()))
check("attached at " in head and "window closed by ctl at " in head and
      "did not exit cleanly" not in head,
      "the header says attached at, window closed by ctl: " + head)
check("recording started at the attach" in head and
      "started with the program" not in head,
      "the recording started at the attach: " + head)
check("attached: " in head, "the attach notes are in the trace: " + head)
start = subprocess.run([MALLOCK, "ctl", "start", str(app.pid)],
                       capture_output=True, text=True)
check(start.returncode == 0 and "recording" in start.stdout,
      "mallock ctl start: " + start.stdout.strip() + start.stderr.strip())

out, _ = app.communicate(timeout=30)
check(app.returncode == 0, "the app exits normally (status %d)" %
      app.returncode)
check("attachapp: ops" in out, "the app prints its count: " + out.strip())

check(os.path.exists(path), "the trace exists: " + path)
rep = subprocess.run([MALLOCK, "report", "--format=json", path],
                     capture_output=True, text=True)
check(rep.returncode == 0, "mallock report reads it " + rep.stderr.strip())
j = json.loads(rep.stdout)
tot = j["totals"]
check(tot["allocations"] > 1000, "allocations after attach: %d" %
      tot["allocations"])
check(tot["lock_acquisitions"] > 1000, "lock acquisitions after attach: %d"
      % tot["lock_acquisitions"])
# attachapp's ring holds at most RING (256) blocks at the attach. More
# frees are unknown: the workers run on while the shim switches the GOT
# slots (free before malloc, docs/server.md), so a block allocated in that
# window through the unswitched malloc slot is freed through the switched
# free slot. The window is a few hundred microseconds on a quiet machine
# (hundreds of such frees, about 0.03% of them) and ten times that on a
# loaded one (7456 of 2.9M seen at load 12). 5% of the frees bounds it and
# still fails an analyzer that counts every free unknown, or none.
bound = 256 + tot["frees"] // 20
check(0 < tot["unknown_frees"] <= bound,
      "blocks allocated before the attach are unknown frees: %d (1..%d)" %
      (tot["unknown_frees"], bound))
# (Whether an unknown free is also counted cross-thread cannot be told from
# these totals: analyzer_report's --unknown-free trace asserts it exactly.)
check(tot["cross_thread_frees"] + tot["unknown_frees"] <= tot["frees"],
      "cross-thread and unknown frees are at most the frees")
in_holds = sum(l.get("allocs_in_holds", 0) for l in j["locks"])
kinds = [f["kind"] for f in j["findings"]]
check(in_holds > 0, "allocations inside lock holds: %d" % in_holds)
check("alloc_under_lock" in kinds, "an alloc_under_lock finding: %s" % kinds)
notes = " | ".join(n["text"] for t in j["traces"] for n in t["notes"])
check("attached" in notes, "the report says the shim was attached: " + notes)
if TCMALLOC:
    check("malloc family hooks forward to" in notes and
          "libtcmalloc" in notes,
          "the malloc family's hooks forward to tcmalloc")
    lock = max(j["locks"], key=lambda l: l.get("acquisitions", 0))
    check(lock.get("allocs_in_holds", 0) > 1000,
          "allocations in the busiest lock's holds: %d" %
          lock.get("allocs_in_holds", 0))
check(j["traces"][0]["clean_exit"], "the trace ends cleanly (END at exit)")

# A refused attach: one line, exit 2, before ptrace is used.
cmd = [MALLOCK, "attach", "1"]
if os.geteuid() == 0:
    if not shutil.which("setpriv"):
        print("SKIP: setpriv is missing for the refusal case")
        sys.exit(SKIP)
    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
no = subprocess.run(cmd, capture_output=True, text=True)
lines = no.stderr.strip().splitlines()
check(no.returncode == 2 and len(lines) == 1 and "refused" in lines[0],
      "attaching to pid 1 as an unprivileged user is refused (exit %d): %s"
      % (no.returncode, no.stderr.strip()))
print("PASS")
