#!/usr/bin/env python3
"""`mallock attach PID` (docs/server.md, "Attach to a running process").

usage: attach_test.py MALLOCK ATTACHAPP TMPDIR [tcmalloc]

attachapp runs WITHOUT the shim, for 6 s (gdb's attach takes 1 to 3 s on a
loaded machine: a shorter run ended before the checks); after 0.5 s
`mallock attach` injects it (gdb), the app runs on and exits by itself. Checks: the app's exit status
and output are unchanged, the trace exists and its report shows allocations
and lock acquisitions made after the attach, allocations inside lock holds
(an alloc_under_lock finding), the blocks allocated before the attach
counted as unknown frees (not cross-thread); `mallock ctl status` answers;
a second attach is refused; an attach the kernel would not permit (PID 1
as uid 65534) is refused in one line with exit status 2.

With `tcmalloc`, ATTACHAPP is linked with libtcmalloc.so.4: no malloc
slot is left alone, the report says the hooks forward to tcmalloc, and the
same checks hold (the blocks allocated before the attach are freed by
tcmalloc through the free hook: the app's exit status shows it survived).

Exits 77 (CTest SKIP_RETURN_CODE) when gdb is missing or ptrace is blocked
in this environment, printing gdb's exact words.
"""
import json
import os
import shutil
import subprocess
import sys
import time

MALLOCK, APP, TMP = sys.argv[1:4]
TCMALLOC = sys.argv[4:5] == ["tcmalloc"]
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok:", msg)


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
if not shutil.which("gdb"):
    print("SKIP: gdb is not installed (mallock attach needs it)")
    sys.exit(SKIP)

env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
app = subprocess.Popen([APP, "6"], stdout=subprocess.PIPE, text=True,
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
if r.returncode != 0 and ("Operation not permitted" in r.stderr or
                          r.returncode == 2):
    app.kill()
    app.wait()
    print("SKIP: ptrace is blocked here: " + r.stderr.strip())
    sys.exit(SKIP)
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

out, _ = app.communicate(timeout=30)
check(app.returncode == 0, "the app exits normally (status %d)" %
      app.returncode)
check("attachapp: ops" in out, "the app prints its count: " + out.strip())

path = trace.replace("%p", str(app.pid))
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
check(tot["unknown_frees"] > 0,
      "blocks allocated before the attach are unknown frees: %d" %
      tot["unknown_frees"])
check(tot["cross_thread_frees"] + tot["unknown_frees"] <= tot["frees"],
      "unknown frees are not counted as cross-thread")
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

# A refused attach: one line, exit 2, before gdb runs.
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
