#!/usr/bin/env python3
"""`mallock attach` leaves the host's files and state alone
(docs/server.md, section 6).

usage: attach_host_test.py MALLOCK SIGDAEMON TMPDIR
sigdaemon (its own SIGUSR1/SIGUSR2 handlers mean shutdown) runs without
the shim, its fd 2 on its own log file, MALLOCK_SIGNAL=USR2 in its
environment (so the attached shim has a warning to give: the program
handles that signal):
- an attach whose trace cannot be created fails (exit 1, the reason on
  attach's stderr) and leaves the process attachable: the next attach
  works, and `ctl status` then says "recording (mallock attach)";
- the shim's warning reaches attach's stderr, not the host's log, and
  says nothing false about `mallock ctl`;
- no handler of the daemon ran.
Exits 77 when ptrace is blocked here (decided without mallock).
"""
import os
import signal
import subprocess
import sys
import time
from srvcheck import attach_workdir, check, fail

MALLOCK, DAEMON, TMP = sys.argv[1:4]

attach_workdir(TMP)

env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_SIGNAL"] = "USR2"
ctl_dir = os.path.join(TMP, "ctl")
os.mkdir(ctl_dir, 0o700)
env["MALLOCK_CTL_DIR"] = ctl_dir
log_path = os.path.join(TMP, "daemon.log")
log = open(log_path, "w")
log.write("daemon: started\n")
log.flush()
d = subprocess.Popen([DAEMON, TMP, "0"], env=env, stdout=log, stderr=log)
pids = [d.pid]
try:
    for _ in range(500):
        if os.path.exists(os.path.join(TMP, "ready")):
            break
        time.sleep(0.01)
    else:
        fail("sigdaemon did not start")
    pids = [int(w) for w in open(os.path.join(TMP, "ready")).read().split()
            if w != "plain"]
    time.sleep(0.2)

    def attach(out):
        r = subprocess.run([MALLOCK, "attach", "-o", out, str(d.pid)],
                           capture_output=True, text=True, timeout=200)
        print("$ mallock attach -o %s -> %d\n%s%s"
              % (out, r.returncode, r.stdout, r.stderr), end="")
        return r

    r = attach(os.path.join(TMP, "no-such-dir", "t.%p.trace"))
    check(r.returncode == 1 and "cannot create trace file" in r.stderr,
          "an attach whose trace cannot be created fails, saying why")
    r = attach(os.path.join(TMP, "t.%p.trace"))
    check(r.returncode == 0 and "recording (mallock attach)" in r.stdout,
          "the next attach works")
    warn = [ln for ln in r.stderr.splitlines() if "warning:" in ln]
    check(warn and "signal 12" in warn[0],
          "the shim's warning reaches attach's stderr: %s" % warn)
    check(not any("ctl` is off" in ln or "ctl` are off" in ln
                  for ln in warn), "and says nothing false about ctl")
    r = subprocess.run([MALLOCK, "ctl", "status", str(d.pid)],
                       capture_output=True, text=True, timeout=30)
    print(r.stdout + r.stderr, end="")
    check(r.returncode == 0 and "recording (mallock attach)" in r.stdout,
          "ctl status after attach: recording (mallock attach)")
    time.sleep(0.2)
    text = open(log_path).read()
    check(text == "daemon: started\n",
          "nothing written to the host's log: %r" % text)
    marks = [f for f in os.listdir(TMP) if f.startswith("shutdown")]
    check(not marks and d.poll() is None,
          "no handler of the daemon ran (%s)" % marks)
    d.send_signal(signal.SIGTERM)
    check(d.wait(20) == 0, "the daemon ends on SIGTERM, exit 0")
finally:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
print("PASS")
