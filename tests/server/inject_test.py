#!/usr/bin/env python3
"""`mallock attach` leaves the threads of its host as they were (analyzer/target/inject.c).

usage: inject_test.py MALLOCK INJECTAPP TMPDIR

For each mode of injectapp ("busy": every thread computing, so the call runs
on a thread stopped mid-computation; "mixed": one thread blocked in read(),
which the call runs on and which must resume its read), a bare run and a run
attached 0.1 s after start must print the same lines (the bits of SSE
recurrences, the bytes read) and exit 0; the attach must succeed and the
trace must exist. No timing is asserted; every run is bounded by a timeout
only to catch a hang.
"""
import os
import shutil
import subprocess
import sys
import time
from srvcheck import SKIP, check, fail  # noqa: F401

MALLOCK, APP, TMP = sys.argv[1:4]


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")

for mode in ("busy", "mixed"):
    bare = subprocess.run([APP, mode], capture_output=True, text=True,
                          timeout=120, env=env)
    check(bare.returncode == 0, f"{mode}: bare run exits 0")
    want = sorted(bare.stdout.splitlines()[1:])
    app = subprocess.Popen([APP, mode], stdout=subprocess.PIPE, text=True,
                           env=env)
    ready = app.stdout.readline()
    check(ready.startswith("ready"), f"{mode}: app started")
    time.sleep(0.1)
    out = os.path.join(TMP, f"{mode}.trace")
    a = subprocess.run([MALLOCK, "attach", "-o", out, str(app.pid)],
                       capture_output=True, text=True, timeout=150)
    print(a.stdout + a.stderr)
    check(a.returncode == 0, f"{mode}: mallock attach exits 0")
    try:
        rest, _ = app.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        app.kill()
        fail(f"{mode}: the attached app hung")
    check(app.returncode == 0, f"{mode}: attached app exits 0 "
          f"(status {app.returncode})")
    got = sorted(rest.splitlines())
    check(got == want, f"{mode}: same output as bare\n  bare {want}\n"
          f"  attached {got}")
    check(os.path.exists(out), f"{mode}: trace written")
print("inject: ok")
