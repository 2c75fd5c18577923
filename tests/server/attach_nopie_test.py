#!/usr/bin/env python3
"""`mallock attach` to a non-PIE executable that takes realloc's address
(docs/server.md, section 6, "Which allocator the hooks call").

usage: attach_nopie_test.py MALLOCK NOPIEAPP TMPDIR
The loader binds every module's realloc, and dlsym(RTLD_DEFAULT,
"realloc"), to a stub in the executable's PLT that jumps to libc's: one
allocator. Checks: the executable has that shape (an undefined realloc
with a nonzero value, else the test cannot show anything: failure); the
attach leaves no slot alone and says nothing of "two allocators"; the
malloc family forwards to libc; the report of the window holds reallocs.
Exits 77 when ptrace is blocked here (decided without mallock).
"""
import json
import os
import subprocess
import sys
import time
from srvcheck import attach_workdir, check, fail

MALLOCK, APP, TMP = sys.argv[1:4]

attach_workdir(TMP)

syms = subprocess.run(["readelf", "--dyn-syms", "-W", APP],
                      capture_output=True, text=True).stdout
stub = [ln.strip() for ln in syms.splitlines()
        if any(w.startswith("realloc@") for w in ln.split()) and
        " UND " in ln and int(ln.split()[1], 16) != 0]
check(stub, "nopieapp has a canonical PLT stub for realloc: %s" % stub)

env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
app = subprocess.Popen([APP, "4"], stdout=subprocess.PIPE, text=True,
                       env=env)
try:
    check(app.stdout.readline().startswith("nopieapp: ready"),
          "nopieapp started")
    time.sleep(0.3)
    trace = os.path.join(TMP, "n.trace")
    r = subprocess.run([MALLOCK, "attach", "-o", trace, str(app.pid)],
                       capture_output=True, text=True, timeout=200)
    print(r.stdout + r.stderr, end="")
    check(r.returncode == 0, "attach exit 0")
    check("two allocators" not in r.stdout + r.stderr and
          "left alone" not in r.stdout, "no slot left alone")
    out, _ = app.communicate(timeout=60)
    check(app.returncode == 0, "nopieapp exits 0: " + out.strip())
finally:
    if app.poll() is None:
        app.kill()
rep = subprocess.run([MALLOCK, "report", "--format=json", trace],
                     capture_output=True, text=True)
if rep.returncode != 0:
    fail("report: " + rep.stderr)
d = json.loads(rep.stdout)
notes = " | ".join(n["text"] for t in d["traces"] for n in t["notes"])
check("malloc family hooks forward to" in notes and "libc.so" in notes,
      "the malloc family forwards to libc")
check(d["totals"]["reallocs"] > 100,
      "reallocs recorded: %d" % d["totals"]["reallocs"])
print("PASS")
