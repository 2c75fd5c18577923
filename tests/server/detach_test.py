#!/usr/bin/env python3
"""`mallock detach PID`, and libraries dlopen'ed after `mallock attach`
(docs/server.md, "Attach to a running process").

usage: detach_test.py MALLOCK LATEAPP LATELIB LATELIB_NOW TMPDIR

lateapp runs without the shim and answers commands on stdin (lateapp.c).
The same commands are sent to a bare run (the reference) and to a run that
is attached after the first `work`: it then dlopens LATELIB (lazy binding)
and LATELIB_NOW (-z now: its slots are in read-only memory), calls their
late_work (malloc(777) under their own mutex), and is detached. Checks:
every answer equals the bare run's, the process exits 0; the trace holds
exactly the late_work allocations made between the attach and the detach
(3000 + 2000 of size 777), NOTEs name both libraries as loaded after the
attach and say `detached`, the trace ends cleanly at the detach and does not
grow after it while the process allocates on; `ctl status` says detached.
Then the same process is attached, detached, attached and detached again
(the mapped copy of the shim starts a new trace each time; no second copy
is loaded): each of the three traces is read by `mallock report`, ends
with one clean END that counts no more events than it holds, holds its
own window's late_work allocations (5000, 1500, 2500 of size 777: none of
another window's) and the work loop's,
from both threads, and defines every stack and lock id its events use
(no id of an earlier trace); after each attach the process holds its new
trace open and no earlier one; `ctl status` says recording and detached in
turn; the pid, the thread count, every answer on stdout and the empty
stderr are as in the bare run; a detach after the last detach is refused.
Each attach and detach answers within STEP_S (a hang fails the test).

Exits 77 when gdb is missing or ptrace is blocked here.
"""
import os
import re
import shutil
import subprocess
import sys
import time
from srvcheck import SKIP, check, fail  # noqa: F401

MALLOCK, APP, LIB, LIB_NOW, TMP = sys.argv[1:6]
# An attach or a detach answers in under 0.1 s here; one that hangs (a lock
# the shim left held, the process blocked inside the attach's call) fails the
# test after STEP_S, the process killed, well within CTest's timeout.
STEP_S = 30


GOT_NAMES = ("malloc", "free", "pthread_mutex_lock", "pthread_mutex_unlock")
GOT_PY = """
for n in %r:
    a = int(gdb.parse_and_eval("(long)&'%%s@got.plt'" %% n))
    v = int(gdb.parse_and_eval('*(long*)%%d' %% a))
    print('GOT', n, gdb.solib_name(v))
""" % (GOT_NAMES,)


def got_owners(pid):
    """The library each of the executable's GOT_NAMES slots points into
    (gdb reads them; nothing is written)."""
    r = subprocess.run(["gdb", "-q", "-batch", "-nx", "-p", str(pid), "-ex",
                        "python" + GOT_PY], capture_output=True, text=True)
    return dict(l.split()[1:3] for l in r.stdout.splitlines()
                if l.startswith("GOT "))


class App:
    def __init__(self, env):
        self.p = subprocess.Popen([APP], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.ready = self.p.stdout.readline().strip()

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        self.err = self.p.stderr.read()
        return rc


def step(*args):
    """`mallock ARGS` on the attached process, which must answer within
    STEP_S."""
    t0 = time.time()
    try:
        r = subprocess.run([MALLOCK] + list(args), capture_output=True,
                           text=True, timeout=STEP_S)
    except subprocess.TimeoutExpired:
        app.p.kill()
        fail("mallock %s did not answer in %d s: the process hangs"
             % (" ".join(args), STEP_S))
    print("mallock %s: %.2f s" % (args[0], time.time() - t0))
    return r


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
if not shutil.which("gdb"):
    print("SKIP: gdb is not installed (this test reads the GOT with it)")
    sys.exit(SKIP)

env = {k: v for k, v in os.environ.items()
       if k != "LD_PRELOAD" and not k.startswith("MALLOCK_")}
env["MALLOCK_CTL_DIR"] = os.path.join(TMP, "ctl")
env["MALLOCK_FLUSH_MS"] = "20"  # the background thread flushes often
SCRIPT = ["work 20000", "ATTACH", "work 20000", "dlopen " + LIB, "WAIT",
          "late 3000", "dlopen " + LIB_NOW, "WAIT", "late 2000", "DETACH",
          "work 20000", "late 4000",
          # Attached again twice: LATE names each window's late_work count.
          "REATTACHB", "work 3000", "late 1500", "REDETACH", "work 2000",
          "late 700", "REATTACHC", "late 2500", "work 3000", "REDETACH",
          "late 900", "work 1000"]
LATE = {"b": 1500, "c": 2500}

bare = App(env)
ref = [bare.ask(c) for c in SCRIPT if c.isalpha() is False or " " in c]
check(bare.quit() == 0, "the bare run exits 0: %s" % ref)

def sigcgt(pid):
    with open("/proc/%d/status" % pid) as f:
        return [ln.split()[1] for ln in f if ln.startswith("SigCgt:")][0]


def threads(pid):
    with open("/proc/%d/status" % pid) as f:
        return [ln.split()[1] for ln in f if ln.startswith("Threads:")][0]


def status(pid):
    r = subprocess.run([MALLOCK, "ctl", "status", str(pid)],
                       capture_output=True, text=True)
    return r.stdout + r.stderr


def trace_fds(pid):
    """The trace files pid holds open."""
    d = "/proc/%d/fd" % pid
    out = []
    for fd in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        if target.endswith(".trace"):
            out.append(target)
    return sorted(out)


def shim_maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return sorted(l.split()[-1] for l in f if "libmallock" in l)


app = App(env)
check(app.ready.startswith("lateapp: ready"), "lateapp started")
cgt_before = sigcgt(app.p.pid)
threads_before = threads(app.p.pid)
again = {}  # window name -> its trace
trace = os.path.join(TMP, "a.%p.trace")
path = trace.replace("%p", str(app.p.pid))
answers = []
for c in SCRIPT:
    if c == "ATTACH":
        r = step("attach", "-o", trace, str(app.p.pid))
        print("attach: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        if r.returncode == 2 or "Operation not permitted" in r.stderr:
            app.quit()
            print("SKIP: ptrace is blocked here: " + r.stderr.strip())
            sys.exit(SKIP)
        check(r.returncode == 0, "mallock attach answers recording")
        attached = int(re.search(r"(\d+) call slots", r.stdout).group(1))
        got = got_owners(app.p.pid)
        check(len(got) == len(GOT_NAMES) and
              all("libmallock" in v for v in got.values()),
              "attached: the executable's slots point into the shim: %s"
              % got)
    elif c.startswith("REATTACH"):
        name = c[-1].lower()
        maps_before = shim_maps(app.p.pid)
        out = os.path.join(TMP, name + ".%p.trace")
        r = step("attach", "-o", out, str(app.p.pid))
        print("attach again: exit %d\n%s%s" % (r.returncode, r.stdout,
                                               r.stderr))
        again[name] = out.replace("%p", str(app.p.pid))
        check(r.returncode == 0 and "recording" in r.stdout and
              again[name] in r.stdout,
              "attached again (%s): recording to its own trace" % name)
        check(shim_maps(app.p.pid) == maps_before,
              "the attach used the mapped copy: no second one loaded")
        st = status(app.p.pid)
        check("recording" in st, "ctl status says recording: " + st.strip())
        fds = trace_fds(app.p.pid)
        check(fds == [again[name]],
              "the process holds its new trace open, no earlier one: %s"
              % fds)
    elif c == "REDETACH":
        r = step("detach", str(app.p.pid))
        print("detach again: exit %d\n%s%s" % (r.returncode, r.stdout,
                                               r.stderr))
        check(r.returncode == 0 and "detached:" in r.stdout,
              "detached again")
        st = status(app.p.pid)
        check("detach" in st and "exited" not in st,
              "ctl status says detached: " + st.strip())
    elif c == "WAIT":
        time.sleep(1.0)  # a flush (every 20 ms here) redirects the library
    elif c == "DETACH":
        r = step("detach", str(app.p.pid))
        print("detach: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        m = re.search(r"detached: (\d+) call slots restored", r.stdout)
        check(r.returncode == 0 and m, "mallock detach answers detached")
        check(int(m.group(1)) > attached,
              "restored %s slots: the attach's %d and the libraries'"
              % (m.group(1), attached))
        size = os.path.getsize(path)
        got = got_owners(app.p.pid)
        check(len(got) == len(GOT_NAMES) and
              all("libc.so" in v for v in got.values()),
              "detached: the executable's slots point into libc again: %s"
              % got)
    else:
        answers.append(app.ask(c))
time.sleep(0.3)
check(answers == ref, "every answer equals the bare run's")
check(os.path.getsize(path) == size,
      "the trace does not grow after the detach (%d bytes)" % size)
with open("/proc/%d/maps" % app.p.pid) as f:
    check("libmallock" in f.read(), "the library stays mapped")
check(sigcgt(app.p.pid) == cgt_before,
      "after the detach the caught signals are those before the attach "
      "(SigCgt %s, %s before)" % (sigcgt(app.p.pid), cgt_before))
st = subprocess.run([MALLOCK, "ctl", "status", str(app.p.pid)],
                    capture_output=True, text=True)
check("detach" in st.stderr and "exited" not in st.stderr,
      "ctl status of the detached process says detached: "
      + st.stderr.strip())
check(threads(app.p.pid) == threads_before,
      "the process has its %s threads still" % threads_before)
twice = step("detach", str(app.p.pid))
check(twice.returncode == 1 and "already detached" in twice.stderr,
      "a detach after the detach is refused: " + twice.stderr.strip())
check(app.quit() == 0, "the process exits 0 after the detach")
check(app.err == "", "nothing on the process's stderr: %r" % app.err[:300])

dump = subprocess.run([MALLOCK, "dump", path], capture_output=True,
                      text=True)
check(dump.returncode == 0, "mallock dump reads the trace " + dump.stderr)
late = sum(1 for l in dump.stdout.splitlines()
           if " ALLOC " in l and " size=777 " in l)
check(late == 5000, "late_work's allocations between attach and detach: "
      "%d (want 5000)" % late)
notes = [l for l in dump.stdout.splitlines() if " NOTE " in l]
for lib in (LIB, LIB_NOW):
    check(any(lib in n and "loaded after the attach" in n for n in notes),
          "a NOTE names %s as loaded after the attach" % os.path.basename(lib))
check(any("detached:" in n for n in notes), "a NOTE says detached")
check(" END " in dump.stdout.splitlines()[-1] or
      any(" END " in l for l in dump.stdout.splitlines()[-3:]),
      "the trace ends with END")
rep = subprocess.run([MALLOCK, "report", path], capture_output=True,
                     text=True)
check(rep.returncode == 0 and "loaded after the attach" in rep.stdout,
      "mallock report prints the NOTE")


def window(name, tpath, late_want):
    """One trace of the process: read, ended once, its own window's work
    only, every id it uses defined in it."""
    d = subprocess.run([MALLOCK, "dump", tpath], capture_output=True,
                       text=True)
    check(d.returncode == 0, "%s: mallock dump reads it %s"
          % (name, d.stderr.strip()))
    lines = d.stdout.splitlines()
    recs = [l for l in lines if not l.startswith("#")]
    ends = [l for l in recs if " END " in l]
    check(len(ends) == 1 and recs[-1] in ends and "flags=1" in ends[0],
          "%s: one clean END, last: %s" % (name, ends))
    # END's count is of this trace's events (not an earlier trace's too):
    # no more than the records read.
    ev = [int(m) for e in ends for m in re.findall(r" events=(\d+)", e)]
    check(len(ev) == 1 and 0 < ev[0] <= len(recs),
          "%s: END counts this trace's events: %s of %d records"
          % (name, ev, len(recs)))
    late_n = sum(1 for l in recs if " ALLOC " in l and " size=777 " in l)
    check(late_n == late_want, "%s: late_work's allocations of its window: "
          "%d (want %d)" % (name, late_n, late_want))
    allocs = [l for l in recs if " ALLOC " in l]
    tids = {l.split()[0] for l in allocs}
    check(len(allocs) >= 3000 + late_want and len(tids) == 2,
          "%s: %d allocations, from %d threads (want >= %d, 2)"
          % (name, len(allocs), len(tids), 3000 + late_want))
    stacks = {m for l in recs if " STACK " in l
              for m in re.findall(r" id=(\d+)", l)}
    locks = {m for l in recs if " LOCK_NEW " in l
             for m in re.findall(r" id=(\d+)", l)}
    used_s = {m for l in recs if " STACK " not in l
              for m in re.findall(r" (?:stack|site)=(\d+)", l)} - {"0"}
    used_l = {m for l in recs for m in re.findall(r" lock=(\d+)", l)}
    check(used_s and used_s <= stacks,
          "%s: every stack id used is defined in it (%d used, %d undefined)"
          % (name, len(used_s), len(used_s - stacks)))
    check(used_l and used_l <= locks,
          "%s: every lock id used is defined in it (%d used, %d undefined)"
          % (name, len(used_l), len(used_l - locks)))
    rep = subprocess.run([MALLOCK, "report", tpath], capture_output=True,
                         text=True)
    check(rep.returncode == 0, "%s: mallock report reads it %s"
          % (name, rep.stderr.strip()[:300]))


window("first trace", path, 5000)
for name, want in sorted(LATE.items()):
    window("trace " + name, again[name], want)
print("PASS")
