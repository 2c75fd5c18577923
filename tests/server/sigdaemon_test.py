#!/usr/bin/env python3
"""`mallock ctl` never reaches a handler that is not the shim's
(docs/server.md, "How a request reaches an idle process").

usage: sigdaemon_test.py CASE SHIM MALLOCK SIGDAEMON TMPDIR
CASE:
  idle  sigdaemon (its SIGUSR1/SIGUSR2 handlers mean shutdown; a master,
        two forked workers and a child without the shim, all idle in
        sigsuspend) under the shim with the default settings: `ctl status`,
        `start`, `stop`, with and without --tree, signal nobody (no
        shutdown marker, every process alive), exit 0, say "pending" for an
        idle process, and the requests apply once each process makes a
        hook call (SIGHUP makes it allocate)
  wake  the same daemon with MALLOCK_SIGNAL=USR2, which it then handles
        itself: `ctl start --wake --tree` refuses every process, sends
        nothing; with MALLOCK_SIGNAL=RTMIN+3 (left to the shim) --wake
        refuses too: a signal would interrupt each sigsuspend, a call the
        kernel never restarts
"""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import time
from srvcheck import alive, check, fail

CASE, SHIM, MALLOCK, DAEMON, TMP = sys.argv[1:6]
PENDING = "pending: applied at the process's next allocation or lock call"
STARTED = []  # every daemon pid, killed at exit (a failed check included)


@atexit.register
def cleanup():
    for p in STARTED:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


class Daemon:
    def __init__(self, name, **env):
        self.dir = os.path.join(TMP, name)
        os.makedirs(self.dir)
        ctl = os.path.join(self.dir, "ctl")
        os.mkdir(ctl, 0o700)
        e = dict(os.environ)
        for k in ("MALLOCK_SIGNAL", "XDG_RUNTIME_DIR"):
            e.pop(k, None)
        e.update(LD_PRELOAD=SHIM, MALLOCK_START="paused",
                 MALLOCK_CTL_DIR=ctl,
                 MALLOCK_OUTPUT=os.path.join(self.dir, "t.%p.trace"))
        e.update(env)
        self.p = subprocess.Popen([DAEMON, self.dir, "2"], env=e,
                                  stdout=subprocess.DEVNULL)
        STARTED.append(self.p.pid)
        ready = os.path.join(self.dir, "ready")
        for _ in range(500):
            if os.path.exists(ready):
                break
            time.sleep(0.01)
        else:
            fail("%s: sigdaemon did not start" % name)
        words = open(ready).read().split()
        i = words.index("plain")
        self.shim = [int(w) for w in words[:i]]
        self.plain = int(words[i + 1])
        self.all = self.shim + [self.plain]
        STARTED.extend(self.all)
        # The plain child's exec must be over (its own handlers installed).
        for _ in range(200):
            try:
                if os.readlink("/proc/%d/exe" % self.plain) == \
                        os.path.realpath(DAEMON):
                    with open("/proc/%d/status" % self.plain) as f:
                        cgt = [ln for ln in f if ln.startswith("SigCgt")]
                    if int(cgt[0].split()[1], 16) & (1 << 11):
                        break
            except OSError:
                pass
            time.sleep(0.01)
        time.sleep(0.1)

    def untouched(self, what):
        marks = [f for f in os.listdir(self.dir) if f.startswith("shutdown")]
        check(not marks, "%s: no handler of the daemon ran (%s)"
              % (what, ", ".join(marks) or "no marker"))
        dead = [p for p in self.all if not alive(p)]
        check(not dead, "%s: every process alive (dead: %s)" % (what, dead))

    def woke(self):
        try:
            return open(os.path.join(self.dir, "woke")).read()
        except OSError:
            return ""

    def hup(self):
        """Makes each process of the shim make a hook call."""
        before = self.woke().count("\n")
        for p in self.shim:
            os.kill(p, signal.SIGHUP)
        for _ in range(300):
            if self.woke().count("\n") >= before + len(self.shim):
                return
            time.sleep(0.01)
        fail("the daemon's processes did not wake up on SIGHUP")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            fail("sigdaemon did not end on SIGTERM")
        for p in self.all:
            if alive(p):
                os.kill(p, signal.SIGKILL)


def ctl(*args):
    r = subprocess.run([MALLOCK, "ctl", *args], capture_output=True,
                       text=True, timeout=30)
    print("$ mallock ctl %s -> %d\n%s%s" % (" ".join(args), r.returncode,
                                            r.stdout, r.stderr), end="")
    return r


def blocks(out):
    """pid -> its lines of ctl's stdout."""
    res, cur = {}, None
    for line in out.splitlines():
        if line.startswith("pid "):
            cur = int(line.split()[1].rstrip(":"))
            res[cur] = []
        if cur is not None:
            res[cur].append(line)
    return {k: "\n".join(v) for k, v in res.items()}


def case_idle():
    d = Daemon("idle")
    m, w1 = d.shim[0], d.shim[1]
    r = ctl("status", str(m))
    check(r.returncode == 0 and "paused (MALLOCK_START=paused)" in r.stdout,
          "status of the idle master: paused")
    r = ctl("status", "--tree", str(m))
    b = blocks(r.stdout)
    check(r.returncode == 0 and sorted(b) == sorted(d.shim),
          "status --tree: the master and its two workers, not the child "
          "without the shim")
    check("not created yet" in b[w1],
          "a worker's trace that does not exist yet is said so")
    d.untouched("status, status --tree")
    t0 = time.time()
    r = ctl("start", str(w1))
    check(r.returncode == 0 and PENDING in r.stdout,
          "start of an idle worker: pending, exit 0")
    check(time.time() - t0 < 5, "start returns within its wait")
    r = ctl("status", str(w1))
    check("pending: `mallock ctl start`" in r.stdout,
          "status shows the pending start")
    d.untouched("start")
    r = ctl("start", "--tree", str(m))
    b = blocks(r.stdout)
    check(r.returncode == 0 and sorted(b) == sorted(d.shim) and
          all(PENDING in v for v in b.values()),
          "start --tree: every process pending, exit 0")
    d.untouched("start --tree")
    d.hup()
    time.sleep(0.05)
    r = ctl("status", "--tree", str(m))
    b = blocks(r.stdout)
    check(all("recording (mallock ctl start)" in b.get(p, "")
              for p in d.shim) and "pending" not in r.stdout,
          "after a hook call each process records")
    r = ctl("stop", "--tree", str(m))
    check(r.returncode == 0, "stop --tree exit 0")
    r = ctl("stop", str(m))
    check(r.returncode == 0, "stop exit 0")
    d.untouched("stop, stop --tree")
    d.hup()
    time.sleep(0.05)
    r = ctl("status", "--tree", str(m))
    b = blocks(r.stdout)
    check(all("paused (mallock ctl stop)" in b.get(p, "") for p in d.shim),
          "after a hook call each process is paused")
    r = ctl("status", str(d.plain))
    check(r.returncode == 1 and "does not run under libmallock.so"
          in r.stderr, "the child without the shim is named as such")
    d.untouched("the whole sequence")
    d.stop()


def case_wake():
    d = Daemon("usr2", MALLOCK_SIGNAL="USR2")
    m = d.shim[0]
    r = ctl("start", "--wake", "--tree", str(m))
    refused = [ln for ln in r.stderr.splitlines() if "--wake refused" in ln]
    check(r.returncode == 1 and len(refused) == len(d.shim) and
          all("is not the shim's" in ln for ln in refused),
          "--wake refuses each process whose handler is its own")
    check(PENDING in r.stdout, "and leaves the request pending")
    d.untouched("start --wake --tree, the program's own USR2 handler")
    d.stop()

    d = Daemon("rt", MALLOCK_SIGNAL="RTMIN+3")
    m = d.shim[0]
    r = ctl("start", "--tree", str(m))
    check(r.returncode == 0 and PENDING in r.stdout,
          "without --wake nothing is sent (pending)")
    before = d.woke().count("\n")
    check(before == 0, "no process woke up without --wake")
    r = ctl("stop", "--wake", "--tree", str(m))
    refused = [ln for ln in r.stderr.splitlines() if "--wake refused" in ln]
    check(r.returncode == 1 and len(refused) == len(d.shim) and
          all(": rt_sigsuspend" in ln for ln in refused),
          "--wake with the shim's own handler refuses each process whose "
          "only thread waits in sigsuspend (never restarted)")
    check(PENDING in r.stdout and d.woke().count("\n") == 0,
          "no sigsuspend was interrupted; the requests stay pending")
    d.untouched("--wake, the shim's RTMIN+3")
    r = ctl("status", "--wake", str(m))
    check(r.returncode == 2 and "status never signals" in r.stderr,
          "status --wake is refused")
    d.stop()


if os.path.isdir(TMP):
    shutil.rmtree(TMP)
os.makedirs(TMP)
{"idle": case_idle, "wake": case_wake}[CASE]()
print("PASS")
