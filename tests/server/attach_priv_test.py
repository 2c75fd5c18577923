#!/usr/bin/env python3
"""Privileges of the `mallock` command.

usage: attach_priv_test.py MALLOCK LATEAPP TMPDIR   (run as root)

1. `mallock attach` run as root against a process of another user (uid
   65534, dumpable) injects with that uid and gid (it says so: "injected as
   uid 65534"); against a root process, as root (no such line). Both
   attaches succeed and the targets run on.
2. A target started by root that drops to uid 65534 with setuid() (as
   mariadbd --user=mysql does; not dumpable afterwards: /proc/PID/maps and
   /proc/PID/mem are root's): root attaches with uid 65534 and
   CAP_SYS_PTRACE alone (it says so), the trace is written and the target
   runs on; uid 65534 itself is refused in one line naming the reason
   (exit 2), the target untouched.
3. `mallock` installed set-user-ID root and run by uid 65534 refuses to
   run: exit 1, one line on stderr, no other effect (`mallock attach
   --shim PATH` would otherwise load PATH into a process as root).

Exits 77 when not root, or setpriv is missing (prerequisites).
"""
import os
import shutil
import stat
import subprocess
import sys
import time
from srvcheck import SKIP, check, fail  # noqa: F401

MALLOCK, APP, TMP = sys.argv[1:4]
NOBODY = 65534


if os.geteuid() != 0:
    print("SKIP: needs root (it drops to uid %d itself)" % NOBODY)
    sys.exit(SKIP)
for tool in ("setpriv",):
    if not shutil.which(tool):
        print("SKIP: %s is not installed" % tool)
        sys.exit(SKIP)
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
os.chmod(TMP, 0o1777)
as_nobody = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
             "--clear-groups"]

# 1. The injection's credentials, as mallock attach reports them.
env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
for who, prefix, want in (("uid %d" % NOBODY, as_nobody,
                           "injected as uid %d " % NOBODY),
                          ("root", [], None)):
    app = subprocess.Popen(prefix + [APP], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env=env)
    check(app.stdout.readline().startswith("lateapp: ready"),
          "lateapp runs as " + who)
    r = subprocess.run([MALLOCK, "attach", "-o",
                        os.path.join(TMP, "p.%p.trace"), str(app.pid)],
                       capture_output=True, text=True)
    print(r.stdout + r.stderr)
    if r.returncode == 2 or "Operation not permitted" in r.stderr:
        app.kill()
        print("SKIP: ptrace is blocked here: " + r.stderr.strip())
        sys.exit(SKIP)
    check(r.returncode == 0, "mallock attach (as root) to a process of " +
          who + " succeeds")
    if want:
        check(want in r.stdout, "injected with the target's ids: " + want)
    else:
        check("injected as uid" not in r.stdout, "injected as root")
    app.stdin.write("work 1000\n")
    app.stdin.flush()
    check(app.stdout.readline().startswith("done 1000"),
          "the target runs on after the attach")
    app.stdin.write("quit\n")
    app.stdin.close()
    check(app.wait(timeout=30) == 0, "the target exits 0")

# 2. A daemon that drops from root to its user: not dumpable.
app = subprocess.Popen([APP], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True, env=env)
check(app.stdout.readline().startswith("lateapp: ready"), "lateapp runs")
app.stdin.write("drop %d\n" % NOBODY)
app.stdin.flush()
check(app.stdout.readline().strip() == "dropped", "lateapp drops to %d" % NOBODY)
check(os.stat("/proc/%d/stat" % app.pid).st_uid == 0,
      "the dropped target is not dumpable (/proc/PID/stat is root's)")
r = subprocess.run(as_nobody + [MALLOCK, "attach", "-o",
                                os.path.join(TMP, "n.%p.trace"),
                                str(app.pid)], capture_output=True, text=True)
print(r.stdout + r.stderr)
lines = r.stderr.strip().splitlines()
check(r.returncode == 2 and len(lines) == 1 and "not dumpable" in lines[0],
      "uid %d attaching its own non-dumpable process is refused in one "
      "line saying why: %s" % (NOBODY, r.stderr.strip()))
trace = os.path.join(TMP, "d.%d.trace" % app.pid)
r = subprocess.run([MALLOCK, "attach", "-o", trace, str(app.pid)],
                   capture_output=True, text=True)
print(r.stdout + r.stderr)
check(r.returncode == 0, "root attaches to a process that dropped to uid "
      "%d: %s" % (NOBODY, r.stderr.strip()))
check("injected as uid %d (the process's own user) with CAP_SYS_PTRACE"
      % NOBODY in r.stdout, "injected with the target's uid and "
      "CAP_SYS_PTRACE only")
app.stdin.write("work 1000\n")
app.stdin.flush()
check(app.stdout.readline().startswith("done 1000"),
      "the dropped target runs on after the attach")
app.stdin.write("quit\n")
app.stdin.close()
check(app.wait(timeout=30) == 0, "the dropped target exits 0")
check(os.path.exists(trace) and os.stat(trace).st_uid == NOBODY and
      os.path.getsize(trace) > 0, "the trace is written by the target, as "
      "uid %d" % NOBODY)

# 3. Set-user-ID: refused.
sdir = os.path.join(TMP, "suid")
os.makedirs(sdir)
os.chmod(sdir, 0o755)
copy = os.path.join(sdir, "mallock")
shutil.copy(MALLOCK, copy)
os.chown(copy, 0, 0)
os.chmod(copy, 0o4755)
check(os.stat(copy).st_mode & stat.S_ISUID, "a set-user-ID root copy")
marker = os.path.join(TMP, "ran-as-root")
probe = os.path.join(TMP, "probe")
with open(probe, "w") as f:
    f.write("#!/bin/sh\ntouch %s\n" % marker)
os.chmod(probe, 0o755)
for args in (["--help"], ["attach", "--shim", probe, "1"]):
    r = subprocess.run(as_nobody + [copy] + args, capture_output=True,
                       text=True)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and "set-user-ID" in lines[0]
          and not r.stdout, "mallock %s run set-user-ID by uid %d is "
          "refused in one line: %s" % (" ".join(args), NOBODY,
                                      r.stderr.strip()))
check(not os.path.exists(marker), "nothing ran as root")
print("PASS")
