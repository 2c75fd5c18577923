#!/usr/bin/env python3
"""`mallock ctl --wake` never interrupts a call its host may not survive
being interrupted in (docs/server.md, "How a request reaches an idle
process"): pollwait waits in poll() and exits 3 on EINTR, preloaded paused
with MALLOCK_SIGNAL=RTMIN+5 (the shim's handler, SA_RESTART).

usage: wake_test.py CASE SHIM MALLOCK POLLWAIT TMPDIR
CASE:
  poll  its only thread is in poll(): `ctl start --wake` refuses in one
        line naming the thread and its call, sends nothing, exits 1, the
        request stays pending, and pollwait lives on
  cond  a second thread waits in pthread_cond_wait (a futex wait the
        kernel restarts): the wake goes to that thread alone, ctl says so
        and that the process is there after it, exits 0; the poll thread
        was not interrupted (pollwait lives on)
"""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import time
from srvcheck import check, fail

CASE, SHIM, MALLOCK, PROG, TMP = sys.argv[1:6]
KIDS = []


@atexit.register
def cleanup():
    for p in KIDS:
        if p.poll() is None:
            p.kill()


def ctl(*args):
    r = subprocess.run([MALLOCK, "ctl", *args], capture_output=True,
                       text=True, timeout=30)
    print("$ mallock ctl %s -> %d\n%s%s" % (" ".join(args), r.returncode,
                                            r.stdout, r.stderr), end="")
    return r


def start(mode):
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    ctld = os.path.join(TMP, "ctl")
    os.mkdir(ctld, 0o700)
    e = dict(os.environ)
    e.pop("XDG_RUNTIME_DIR", None)
    e.update(LD_PRELOAD=SHIM, MALLOCK_START="paused",
             MALLOCK_SIGNAL="RTMIN+5", MALLOCK_CTL_DIR=ctld,
             MALLOCK_OUTPUT=os.path.join(TMP, "t.%p.trace"))
    p = subprocess.Popen([PROG, TMP] + ([mode] if mode else []), env=e)
    KIDS.append(p)
    ready = os.path.join(TMP, "ready")
    for _ in range(500):
        if os.path.exists(ready) or p.poll() is not None:
            break
        time.sleep(0.01)
    else:
        fail("pollwait did not start")
    check(p.poll() is None, "pollwait runs")
    tids = [int(w) for w in open(ready).read().split()]
    # Until the main thread sleeps in poll (syscall 7 on x86-64; any
    # number: the name is checked through ctl's words below).
    for _ in range(300):
        with open("/proc/%d/task/%d/stat" % (p.pid, tids[0])) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                break
        time.sleep(0.01)
    time.sleep(0.1)
    return p, tids


def case_poll():
    p, tids = start(None)
    r = ctl("start", "--wake", str(p.pid))
    time.sleep(0.5)
    check(p.poll() is None, "pollwait lives on (exit status %s; 3: its "
          "poll failed with EINTR)" % p.returncode)
    check(r.returncode == 1, "--wake with no safe thread: exit 1")
    check("--wake refused: no thread may be interrupted safely" in r.stderr
          and "%d: poll" % tids[0] in r.stderr,
          "the refusal names the thread and its call")
    check("pending" in r.stdout, "the request stays pending")
    r = ctl("status", str(p.pid))
    check("pending: `mallock ctl start`" in r.stdout,
          "status shows the start pending")
    p.kill()


def case_cond():
    p, tids = start("cond")
    main, cond = tids
    r = ctl("start", "--wake", str(p.pid))
    check(r.returncode == 0, "--wake with a thread in a futex wait: exit 0")
    check("woken: thread %d (in futex)" % cond in r.stdout,
          "the wake went to the thread in pthread_cond_wait")
    check("the process and that thread are there" in r.stdout,
          "ctl saw the process after the wake")
    time.sleep(0.5)
    check(p.poll() is None, "the poll thread was not interrupted "
          "(pollwait exit status %s)" % p.returncode)
    with open("/proc/%d/task/%d/syscall" % (p.pid, main)) as f:
        nr = f.read().split()[0]
    check(nr != "running", "the main thread still waits (syscall %s)" % nr)
    p.kill()


{"poll": case_poll, "cond": case_cond}[CASE]()
print("PASS")
