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
grow after it while the process allocates on; `ctl status` says detached;
a new attach is refused (exit 2, one line: the shim cannot start a second
trace, a second copy does not fit in glibc's static TLS) and loads
nothing; a second detach is refused.

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
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.ready = self.p.stdout.readline().strip()

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def quit(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.close()
        return self.p.wait(timeout=30)


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
          "work 20000", "late 4000"]

bare = App(env)
ref = [bare.ask(c) for c in SCRIPT if c.isalpha() is False or " " in c]
check(bare.quit() == 0, "the bare run exits 0: %s" % ref)

def sigcgt(pid):
    with open("/proc/%d/status" % pid) as f:
        return [ln.split()[1] for ln in f if ln.startswith("SigCgt:")][0]


app = App(env)
check(app.ready.startswith("lateapp: ready"), "lateapp started")
cgt_before = sigcgt(app.p.pid)
trace = os.path.join(TMP, "a.%p.trace")
path = trace.replace("%p", str(app.p.pid))
answers = []
for c in SCRIPT:
    if c == "ATTACH":
        r = subprocess.run([MALLOCK, "attach", "-o", trace, str(app.p.pid)],
                           capture_output=True, text=True)
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
    elif c == "WAIT":
        time.sleep(1.0)  # a flush (every 20 ms here) redirects the library
    elif c == "DETACH":
        r = subprocess.run([MALLOCK, "detach", str(app.p.pid)],
                           capture_output=True, text=True)
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
def shim_maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return sorted(l.split()[-1] for l in f if "libmallock" in l)


maps_before = shim_maps(app.p.pid)
re_at = subprocess.run([MALLOCK, "attach", str(app.p.pid)],
                       capture_output=True, text=True)
err = re_at.stderr.strip()
check(re_at.returncode == 2 and len(err.splitlines()) == 1 and
      err.startswith("mallock attach: refused: ") and
      "detached before" in err and "static TLS" in err and
      "mallock ctl" not in err,
      "a new attach is refused (exit 2, %d) in one line naming why, "
      "without advising ctl: %s" % (re_at.returncode, err))
check(shim_maps(app.p.pid) == maps_before,
      "the refused attach loaded nothing into the process")
alive = app.ask("work 1000")
check(alive.startswith("done 1000 "),
      "the process answers after the refused attach: " + alive)
again = subprocess.run([MALLOCK, "detach", str(app.p.pid)],
                       capture_output=True, text=True)
check(again.returncode == 1 and "already detached" in again.stderr,
      "a second detach is refused: " + again.stderr.strip())
check(app.quit() == 0, "the process exits 0 after the detach")

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
print("PASS")
