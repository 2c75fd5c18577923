#!/usr/bin/env python3
"""Control pages and traces are where they belong, and none is left behind
(docs/server.md, "Where pages and traces live"):

usage: pages_test.py CASE SHIM MALLOCK PAGESRV TMPDIR
CASE:
  race     50 runs: 4 forked workers drop to the same fresh uid at the same
           moment; every page is in that user's directory, the directory
           is the user's (0700), and no page is left after the workers end
  exec     an exec that fails gives the program a page again (ctl works);
           a forked child that execs a program without the shim leaves no
           page while that program runs, nor after; a crash leaves none
  lazy     a paused server's children that never record leave no trace,
           the one `mallock ctl start` recorded leaves its trace (its
           window, an END); a daemonizing launcher that ran paused leaves
           no empty trace; processes that recorded keep theirs
  ends     a paused forked child that recorded nothing and ends by _exit,
           _Exit, quick_exit or syscall(SYS_exit_group) leaves no page
           and no trace
  drop     a root process that becomes another user and closes every fd
           keeps recording: after setuid and close() of each fd its trace
           is reopened as that user; after seteuid and closefrom,
           close_range or syscall(SYS_close_range) the shim's fds were never
           closed (the program's own were); when the reopen cannot work,
           `mallock ctl status` says why, and the page still goes at exit

Needs root (to drop privileges): exit 77 otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from srvcheck import check, fail

CASE, SHIM, MALLOCK, SRV, TMP = sys.argv[1:6]
NOBODY = 65534

if os.geteuid() != 0:
    print("SKIP: needs root")
    sys.exit(77)


def env(paused=True, **kw):
    e = dict(os.environ)
    for k in ("MALLOCK_CTL_DIR", "XDG_RUNTIME_DIR", "MALLOCK_START"):
        e.pop(k, None)
    e.update(LD_PRELOAD=SHIM, MALLOCK_OUTPUT=os.path.join(OUT, "t.%p.trace"))
    if paused:
        e["MALLOCK_START"] = "paused"
    e.update({k: str(v) for k, v in kw.items()})
    return e


def ctl(*args):
    r = subprocess.run([MALLOCK, "ctl", *args], capture_output=True,
                       text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def report(path):
    r = subprocess.run([MALLOCK, "report", "--format=json", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("report %s: %s" % (path, r.stderr))
    return json.loads(r.stdout)


def traces():
    return sorted(f for f in os.listdir(OUT) if ".trace" in f)


def gone(pid, timeout=30):
    """Waits for pid (not our child) to end."""
    end = time.time() + timeout
    while os.path.exists("/proc/%d" % pid) and time.time() < end:
        time.sleep(0.05)
    return not os.path.exists("/proc/%d" % pid)


def pages_of(pid):
    """Every control page named for pid in any /tmp/mallock-* directory."""
    out = []
    for d in os.listdir("/tmp"):
        p = os.path.join("/tmp", d, "%d.page" % pid)
        if d.startswith("mallock-") and os.path.lexists(p):
            out.append(p)
    return out


shutil.rmtree(TMP, ignore_errors=True)
OUT = os.path.join(TMP, "out")
os.makedirs(OUT)
os.chmod(TMP, 0o755)
os.chmod(OUT, 0o1777)

if CASE == "race":
    base = 52000 + (os.getpid() % 500) * 20
    wrong, left = [], []
    for run in range(50):
        uid = base + run % 20
        udir = "/tmp/mallock-%d" % uid
        shutil.rmtree(udir, ignore_errors=True)  # fresh: no directory yet
        how = "_exit" if run % 2 else "exit"
        r = subprocess.run([SRV, "race", str(uid), "4", how], env=env(),
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "run %d: workers exit 0 (%s)"
              % (run, r.stderr.strip()[-300:]))
        if "mallock:" in r.stderr:
            wrong.append("run %d: %s" % (run, r.stderr.strip()
                                          .splitlines()[-1][:200]))
        lines = r.stdout.splitlines()
        pages = [l.split() for l in lines if l.startswith("page ")]
        check(len(pages) == 4, "run %d: 4 workers reported: %s"
              % (run, r.stdout))
        for _, pid, where in pages:
            if where != udir:
                wrong.append("run %d: worker %s's page: %s"
                             % (run, pid, where))
        st = os.lstat(udir)
        if st.st_uid != uid or (st.st_mode & 0o7777) != 0o700:
            wrong.append("run %d: %s is not uid %d's with mode 0700 (uid "
                         "%d, %o)" % (run, udir, uid, st.st_uid,
                                      st.st_mode & 0o7777))
        # exit() and _exit() alike: the shim removes the page.
        left += ["run %d: %s" % (run, l) for l in lines
                 if l.startswith("left ")]
        for _, pid, where in pages:
            left += ["run %d: %s" % (run, p) for p in pages_of(int(pid))
                     if p.startswith("/tmp/mallock-0/")]
        shutil.rmtree(udir, ignore_errors=True)
        for f in traces():
            os.unlink(os.path.join(OUT, f))
    check(not wrong, "every page in its user's directory, 50 runs "
          "(%d wrong; the first: %s)" % (len(wrong), wrong[:4]))
    check(not left, "no page left after exit() or _exit(), none ever in root's "
          "directory (%d left; the first: %s)" % (len(left), left[:4]))

elif CASE == "exec":
    p = subprocess.Popen([SRV, "exec", "3"], env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    check(line.startswith("failed "), "the first exec failed: " + line)
    pid = int(line.split()[1])
    time.sleep(0.3)
    check(pages_of(pid) == ["/tmp/mallock-0/%d.page" % pid],
          "after the failed exec the program has a page: %s"
          % pages_of(pid))
    rc, out = ctl("status", str(pid))
    check(rc == 0 and "paused" in out,
          "ctl status after the failed exec: " + out.strip())
    line = p.stdout.readline()
    check(line.startswith("child "), "the child forked: " + line)
    child = int(line.split()[1])
    time.sleep(0.8)  # sleep(1) runs in the child, without the shim
    with open("/proc/%d/cmdline" % child, "rb") as f:
        check(f.read().startswith(b"sleep"), "the child runs sleep")
    check(pages_of(child) == [],
          "no page of the exec'd child while sleep runs: %s"
          % pages_of(child))
    rc, out = ctl("status", str(child))
    check(rc != 0, "ctl finds no page for it: " + out.strip())
    p.communicate(timeout=30)
    check(p.returncode == 0, "exits 0")
    check(pages_of(pid) == [] and pages_of(child) == [],
          "no page left: %s %s" % (pages_of(pid), pages_of(child)))
    # A fatal signal: the shim's flush removes the page too.
    r = subprocess.run([SRV, "abort"], env=env(), capture_output=True,
                       text=True, timeout=30)
    pid = int(r.stdout.split()[1])
    check(r.returncode == -6, "died of SIGABRT (%d)" % r.returncode)
    check(pages_of(pid) == [], "no page left by a crash: %s" % pages_of(pid))

elif CASE == "lazy":
    # 1. A paused server forks 6 children; one gets a window.
    p = subprocess.Popen([SRV, "forks", "6", "3"], env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    check(p.stdout.readline().startswith("ready"), "server started")
    kids = [int(p.stdout.readline().split()[1]) for _ in range(6)]
    time.sleep(0.3)
    rc, out = ctl("start", str(kids[2]))
    check(rc == 0 and "recording" in out, "start one child: " + out.strip())
    time.sleep(0.5)
    rc, out = ctl("stop", str(kids[2]))
    check(rc == 0 and "paused" in out, "stop it: " + out.strip())
    _, err = p.communicate(timeout=60)
    check(p.returncode == 0, "server exits 0: " + err.strip()[-300:])
    got = traces()
    check(got == ["t.%d.trace" % kids[2]],
          "only the recorded child left a trace (not the paused server "
          "nor its 5 other children): %s" % got)
    rep = report(os.path.join(OUT, got[0]))
    tot = rep["totals"]
    check(tot["recording_resumes"] == 1 and tot["recording_pauses"] == 1,
          "its trace holds the window")
    mtx = [l for l in rep["locks"] if l["kind"] == "mutex"]
    check(mtx and max(l["holds"] for l in mtx) >= 50,
          "the window has its holds")
    for k in kids + [p.pid]:
        check(not pages_of(k), "no page of %d left" % k)
    for f in got:
        os.unlink(os.path.join(OUT, f))
    # 2. A daemonizing launcher, paused: neither it nor the (never
    # started) server leaves a trace.
    r = subprocess.run([SRV, "daemon", "1"], env=env(), capture_output=True,
                       text=True, timeout=30)
    child = int(r.stdout.split()[1])
    check(gone(child), "the daemon ended")
    check(traces() == [], "a paused launcher and daemon that never "
          "recorded leave no trace: %s" % traces())
    check(not pages_of(r.returncode) and not pages_of(child), "no page left")
    # 3. The same, recording from the start: both traces stay, with
    # events; so does a paused launcher's trace once it had a window.
    r = subprocess.run([SRV, "daemon", "1"], env=env(paused=False),
                       capture_output=True, text=True, timeout=30)
    child = int(r.stdout.split()[1])
    check(gone(child), "the daemon ended")
    got = traces()
    check(len(got) == 2 and "t.%d.trace" % child in got,
          "launcher and daemon recording from the start keep their "
          "traces: %s" % got)
    for f in got:
        rep = report(os.path.join(OUT, f))
        check(rep["totals"]["allocations"] > 0 or f != "t.%d.trace" % child,
              "the daemon's trace has its allocations")
        os.unlink(os.path.join(OUT, f))
    p = subprocess.Popen([SRV, "forks", "2", "1.5"], env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    check(p.stdout.readline().startswith("ready"), "server started")
    rc, out = ctl("start", str(p.pid))
    check(rc == 0 or "pending" in out or "not answered" in out,
          "start the server itself: " + out.strip())
    p.communicate(timeout=60)
    got = traces()
    check("t.%d.trace" % p.pid in got,
          "a paused server that got a window keeps its trace: %s" % got)

elif CASE == "drop":
    # 1. The trace is reopened (as the new user: the file is now its)
    # after the drop and a sweep of close() calls.
    p = subprocess.Popen([SRV, "drop", str(NOBODY), "1.5", "setuid", "loop"],
                         env=env(paused=False), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    check(p.stdout.readline().startswith("dropped"), "dropped")
    time.sleep(0.3)
    rc, out = ctl("status", str(p.pid))
    check(rc == 0 and "recording" in out,
          "status after the drop and closefrom: " + out.strip())
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "exits 0: " + err.strip()[-300:])
    calls = int(out.split("calls ")[1].split()[0])
    check("cannot be reopened" not in err and "failed" not in err,
          "no lost trace: " + err.strip()[-300:])
    got = traces()
    check(len(got) == 1, "one trace: %s" % got)
    rep = report(os.path.join(OUT, got[0]))
    check(rep["totals"]["allocations"] >= calls,
          "the trace has the %d mallocs made after the drop (%d)"
          % (calls, rep["totals"]["allocations"]))
    check(not pages_of(p.pid), "no page left")
    os.unlink(os.path.join(OUT, got[0]))
    # 2. A temporary switch (seteuid, as varnish's manager): the file
    # stays root's, so only the shim's fds surviving the close-all keep the
    # trace; the host's own fds are all closed.
    for close in ("closefrom", "close_range", "syscall"):
        p = subprocess.Popen([SRV, "drop", str(NOBODY), "1", "seteuid",
                              close], env=env(paused=False),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        line = p.stdout.readline()
        check(line.startswith("dropped") and ", 0 of its own" in line,
              "%s: the program's own fds are closed: %s" % (close, line))
        out, err = p.communicate(timeout=60)
        check(p.returncode == 0, "%s: exits 0: %s" % (close, err[-300:]))
        calls = int(out.split("calls ")[1].split()[0])
        check("failed" not in err, "%s: no lost trace: %s"
              % (close, err.strip()[-300:]))
        got = traces()
        check(len(got) == 1, "one trace: %s" % got)
        rep = report(os.path.join(OUT, got[0]))
        check(rep["totals"]["allocations"] >= calls,
              "%s after seteuid: the trace has the %d mallocs made after "
              "it (%d)" % (close, calls, rep["totals"]["allocations"]))
        os.unlink(os.path.join(OUT, got[0]))
    # 3. An output directory the new user cannot reach: the reopen fails,
    # and the status names the lost trace, not the last request.
    priv = os.path.join(TMP, "priv")
    os.makedirs(priv, mode=0o700)
    p = subprocess.Popen([SRV, "drop", str(NOBODY), "1.5", "setuid", "loop"],
                         env=env(paused=False,
                                 MALLOCK_OUTPUT=os.path.join(priv, "t.trace")),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    check(p.stdout.readline().startswith("dropped"), "dropped")
    time.sleep(0.5)
    rc, out = ctl("status", str(p.pid))
    check("stopped" in out and "trace lost" in out and
          "Permission denied" in out,
          "status says the trace was lost and why: " + out.strip())
    out, err = p.communicate(timeout=60)
    check(p.returncode == 0, "exits 0")
    check("Permission denied" in err, "the warning says why: " + err.strip())
    check(not pages_of(p.pid), "a stopped shim's page goes at exit too: %s"
          % pages_of(p.pid))
elif CASE == "ends":
    for how in ("_exit", "_Exit", "quick_exit", "exit_group"):
        r = subprocess.run([SRV, "ends", how], env=env(),
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "%s: the child ended with status 7 (%s)"
              % (how, r.stderr.strip()[-300:]))
        child = int(r.stdout.split()[1])
        check(not pages_of(child), "%s: the paused child left no page: %s"
              % (how, pages_of(child)))
        check(not traces(), "%s: nor a trace: %s" % (how, traces()))
else:
    fail("unknown case " + CASE)
print("PASS", CASE)
