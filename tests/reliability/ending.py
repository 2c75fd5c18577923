"""ending.py BUILD_DIR WAY - a process that ends without exit() while idle
threads hold buffered events (ending.c), run bare and under the shim
(timeout 60 s each: a hang fails); the exit status and stdout must be the
same.

  quick_exit _exit _Exit exit_group sigterm
      hookable: the trace has exactly the allocations of the same program
      ending by exit() (3 x 20000 and libc's own), and an END record.
  raw_exit_group
      not hookable (exit_group by the system call instruction, as Go's
      runtime does): no END, the loss bounded by the flush deadline
      (MALLOCK_FLUSH_MS, default 200 ms): every allocation made before
      the program's last 1.5 s of ticks is in the trace, and the report
      says that the process ended without exit() (text and JSON).
  wake
      the workers' buffers are written by main's hooks while they idle
      (the flush deadline), then they allocate again and the program
      exits: exactly exit()'s allocations and main's ticks, no event
      dropped, no free of an unknown block (the records a worker added
      after the sweep were encoded again, not lost or misread).
      And flicker (ending.c) with MALLOCK_FLUSH_MS=3, 5 runs: sweeps that
      meet the workers' own writes lose nothing either.
  paused
      recording stopped (mallock_recording(0)) while the workers idle,
      then a raw exit_group: the workers' tails were written by main's
      calls after the stop, so the trace has exactly exit()'s allocations.
  children
      a vfork child that _exits touches nothing of its parent's (the
      parent's trace is clean, 2000 allocations and libc's), a forked child
      that recorded 500 allocations and _exits leaves a clean trace of
      exactly those, one that recorded nothing leaves none.
  sigexit
      exit() from a SIGTERM handler while main loops malloc(200)/free and a
      second thread allocates under a mutex: 60 runs, each must exit 0
      within 10 s with a complete trace.
  sigexit_writer
      the same exit() once, from a handler that interrupted the writer
      itself (gdb stops main in a sweep, the registry lock held, and
      delivers SIGTERM there): no buffer can be written, but the trace
      still ends with a clean END (skipped, 77, without gdb or ptrace).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx, note_texts  # noqa: E402

build, way = sys.argv[1], sys.argv[2]
c = Ctx("ending " + way, build)
prog = c.bin("ending")
MADE = 60000


def allocations(rep):
    return rep["totals"].get("allocations", 0)


def one(way_, d, env_extra=None):
    env = c.shim_env(os.path.join(d, "t.%p.trace"), env_extra)
    st, out, err = c.run([prog, way_], env=env, timeout=60)
    reps = c.check_readable(d)
    return st, out, err, reps


def sigexit():
    hung = bad = 0
    runs = 60
    for i in range(runs):
        d = c.tmpdir("ending_sigexit")
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("MALLOCK_") or k == "LD_PRELOAD":
                del env[k]
        env.update(c.shim_env(os.path.join(d, "t.%p.trace"),
                              {"MALLOCK_BUFFER_KB": "4"}))
        p = subprocess.Popen([prog, "sigexit"], env=env, cwd=d,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL,
                             preexec_fn=os.setpgrp)
        if p.stdout.readline() != b"ready\n":
            bad += 1
        time.sleep(0.01 + (i % 9) * 0.007)
        os.kill(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            hung += 1
            continue
        if p.returncode != 0 or err:
            bad += 1
            print("run %d: status %s, stderr %r" % (i, p.returncode,
                                                   err[:200]))
            continue
        for f in c.traces(d):
            st, rep, e = c.report(f)
            if st != 0 or not rep["trace"]["clean_exit"]:
                bad += 1
                print("run %d: trace %s: status %s, %r" % (i, f, st,
                                                           e[:200]))
    print("sigexit: %d of %d runs hung, %d bad" % (hung, runs, bad))
    c.check(hung == 0, "%d of %d runs hung after exit() from the SIGTERM "
            "handler" % (hung, runs))
    c.check(bad == 0, "%d of %d runs failed otherwise" % (bad, runs))




def sigexit_writer():
    """exit() from a SIGTERM handler that interrupted the writer: gdb stops
    main in its sweep of the other thread's buffer (the registry lock
    held) and the signal is delivered there as gdb lets go."""
    if not shutil.which("gdb"):
        c.skip("gdb is not installed")
        return
    d = c.tmpdir("ending_sigexit_writer")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOCK_") and k != "LD_PRELOAD"}
    env.update(c.shim_env(os.path.join(d, "t.trace"),
                          {"MALLOCK_FLUSH_MS": "20"}))
    p = subprocess.Popen([prog, "sigexit", "1000"], env=env, cwd=d,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, preexec_fn=os.setpgrp)
    try:
        c.check(p.stdout.readline() == b"ready\n", "ready")
        g = subprocess.run(
            ["gdb", "-q", "-batch", "-nx", "-iex",
             "set debuginfod enabled off", "-p", str(p.pid),
             "-ex", "break sweep_one", "-ex", "continue", "-ex", "delete",
             "-ex", "queue-signal SIGTERM", "-ex", "detach"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=60)
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        c.check(False, "gdb or the host hung")
        return
    if "ptrace: Operation not permitted" in g.stdout:
        c.skip("ptrace is blocked here: gdb cannot attach")
        return
    if "Breakpoint 1, sweep_one" not in g.stdout:
        with open(c.shim, "rb") as f:
            if b".debug_info" not in f.read():
                c.skip("the shim has no debug info: gdb cannot stop in it")
                return
        c.check(False, "gdb did not stop in sweep_one: %s" % g.stdout[-300:])
        return
    c.check(p.returncode == 0 and not err,
            "status %s, stderr %r" % (p.returncode, err))
    st, rep, e = c.report(os.path.join(d, "t.trace"))
    if c.check(st == 0, "report failed: %s" % e):
        notes = note_texts(rep)
        c.check(rep["trace"]["clean_exit"], "no clean END")
        c.check(any("interrupted the writer" in n for n in notes),
                "no note says why no buffer was written: %s" % notes)
        print("sigexit_writer: END clean %s, notes %s" %
              (rep["trace"]["clean_exit"], notes))


if way == "sigexit":
    sigexit()
    c.done()
if way == "sigexit_writer":
    sigexit_writer()
    c.done()

if way == "children":
    d = c.tmpdir("ending_children")
    st, out, err, reps = one("children", d)
    c.check(st == 0, "status %s, stderr %r" % (st, err[:300]))
    got = sorted((allocations(r), r["trace"]["clean_exit"],
                  r["trace"]["dropped_events"]) for r in reps)
    print("children: traces (allocations, END, dropped): %s" % got)
    c.check(len(got) == 2 and got[0] == (500, True, 0) and
            2000 <= got[1][0] <= 2010 and got[1][1:] == (True, 0),
            "children: traces %s, expected the child's (500, END) and "
            "the parent's (2000 and libc's, END)" % got)
    c.done()


def flicker(extra):
    for i in range(5):
        d = c.tmpdir("ending_flicker")
        st, out, err, reps = one("flicker", d, {"MALLOCK_FLUSH_MS": "3"})
        m = re.search(rb"made (\d+)", out)
        made = int(m.group(1)) if m else -1
        if not c.check(st == 0 and len(reps) == 1, "flicker run %d: "
                       "status %s, %d traces" % (i, st, len(reps))):
            continue
        r = reps[0]
        n = allocations(r)
        print("flicker run %d: %d allocations recorded, %d made (+%d by "
              "libc)" % (i, n, made, extra))
        c.check(n == made + extra and r["trace"]["dropped_events"] == 0 and
                r["totals"].get("unknown_frees", 0) == 0,
                "flicker run %d: %d allocations recorded, %d made (+%d), "
                "%d dropped, %d unknown frees" %
                (i, n, made, extra, r["trace"]["dropped_events"],
                 r["totals"].get("unknown_frees", 0)))

bare = c.run([prog, way], timeout=60)
c.check(bare[0] is not None, "hung without the shim")
ref_st, ref_out, _, ref = one("exit", c.tmpdir("ending_ref_" + way))
ref_n = allocations(ref[0]) if ref else 0
c.check(ref_n >= MADE, "exit(): %d allocations, made %d" % (ref_n, MADE))
d = c.tmpdir("ending_" + way)
st, out, err, reps = one(way, d)
c.check(st is not None, "hung under the shim")
c.check(st == bare[0], "exit status %s bare, %s under the shim" %
        (bare[0], st))
c.check(out == bare[1], "stdout differs: %r vs %r" % (bare[1], out))
c.check(len(reps) == 1, "%d traces, expected 1" % len(reps))
if reps:
    r = reps[0]
    n = allocations(r)
    print("%s: %d allocations recorded, %d by exit(); END %s" %
          (way, n, ref_n, r["trace"]["clean_exit"]))
    if way == "paused":
        c.check(n == ref_n, "paused: %d allocations recorded, %d by exit()"
                % (n, ref_n))
    elif way == "raw_exit_group":
        ticks = int(re.search(rb"ticks (\d+)", out).group(1)) if \
            re.search(rb"ticks (\d+)", out) else -1
        c.check(n >= ref_n and n <= ref_n + ticks,
                "raw exit_group: %d allocations, expected %d (all made "
                "before the last ticks) to %d" % (n, ref_n, ref_n + ticks))
        c.check(not r["trace"]["clean_exit"], "an END without exit()?")
        ended = r["trace"].get("ended_without_exit")
        c.check(ended is not None and ended.get("after_ns", 0) > 0,
                "JSON trace.ended_without_exit: %r" % (ended,))
        tst, text, terr = c.report(c.traces(d)[0], fmt="text")
        text = text.decode(errors="replace")
        c.check("no END record: the process ended without exit()" in text
                and "may be missing" in text,
                "the text report does not say the process ended without "
                "exit(): %s" % text[:600])
        c.check("none of the calls it hooks was made" not in text,
                "the report says no call was made")
    else:
        # exit_group: exit()'s count and the ticks made after "made".
        m = re.search(rb"ticks (\d+)", out)
        want = ref_n + (int(m.group(1)) if m else 0)
        c.check(n == want, "%s: %d allocations recorded, %d by exit() and "
                "the ticks" % (way, n, want))
        c.check(r["trace"]["clean_exit"] or way == "sigterm",
                "%s: no END record" % way)
        if way == "wake":
            flicker(ref_n - MADE)
            t = r["totals"]
            c.check(r["trace"]["dropped_events"] == 0 and
                    t.get("unknown_frees", 0) == 0,
                    "wake: %d dropped, %d unknown frees" %
                    (r["trace"]["dropped_events"], t.get("unknown_frees", 0)))
        if way == "sigterm":
            c.check(st == -signal.SIGTERM, "died of %s, not SIGTERM" % st)
c.done()
