#!/usr/bin/env python3
"""Server-mode tests (docs/server.md): recording windows, the toggle's
consistency, MALLOCK_DURATION, MALLOCK_MAX_BYTES and sampling.

usage: server_test.py CASE SHIM MALLOCK SRVAPP TMPDIR
CASE: window | toggle | duration | cap | sample
Each case runs srvapp (or svcqueue-like loops) under the shim, then checks
the trace with `mallock report --format=json` and `mallock dump`.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from srvcheck import SKIP, check, fail  # noqa: F401

CASE, SHIM, MALLOCK, APP, TMP = sys.argv[1:6]
CTL = os.path.join(TMP, "ctl")


def env(**kw):
    e = dict(os.environ)
    e.update(LD_PRELOAD=SHIM, MALLOCK_OUTPUT=os.path.join(TMP, "t.%p.trace"),
             MALLOCK_CTL_DIR=CTL)
    e.update({k: str(v) for k, v in kw.items()})
    return e


def traces():
    return sorted(os.path.join(TMP, f) for f in os.listdir(TMP)
                  if f.endswith(".trace"))


def report(*paths):
    out = subprocess.run([MALLOCK, "report", "--format=json", *paths],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail("report failed: " + out.stderr)
    return json.loads(out.stdout)


def ctl(*args):
    return subprocess.run([MALLOCK, "ctl", *args], capture_output=True,
                          text=True)


def notes(rep):
    return " | ".join(n["text"] for t in rep["traces"] for n in t["notes"])


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

if CASE == "window":
    # Paused start, switched on and off by ctl and by a plain signal (the
    # toggle is off unless MALLOCK_SIGNAL names one).
    p = subprocess.Popen([APP, "loop", "4"], env=env(MALLOCK_START="paused",
                                                     MALLOCK_SIGNAL="USR2"))
    time.sleep(0.4)
    st = ctl("status", str(p.pid))
    check(st.returncode == 0 and "paused" in st.stdout,
          "ctl status says paused at start: " + st.stdout.strip())
    size0 = os.path.getsize(traces()[0])
    r = ctl("start", str(p.pid))
    check(r.returncode == 0 and "recording" in r.stdout,
          "ctl start answers recording: " + (r.stdout + r.stderr).strip())
    time.sleep(0.5)
    r = ctl("stop", str(p.pid))
    check(r.returncode == 0 and "paused" in r.stdout,
          "ctl stop answers paused")
    time.sleep(0.2)
    size1 = os.path.getsize(traces()[0])
    check(size1 > size0 + 10000,
          "the window was written while the program runs (%d -> %d bytes)"
          % (size0, size1))
    time.sleep(0.3)
    check(os.path.getsize(traces()[0]) == size1,
          "nothing is written while paused")
    os.kill(p.pid, signal.SIGUSR2)  # plain signal: toggle on
    time.sleep(0.4)
    st = ctl("status", str(p.pid))
    check("recording (signal)" in st.stdout, "kill -USR2 toggles on")
    os.kill(p.pid, signal.SIGUSR2)
    time.sleep(0.2)
    check("paused (signal)" in ctl("status", str(p.pid)).stdout,
          "kill -USR2 toggles off")
    check(p.wait(timeout=20) == 0, "program exits 0")
    check(not os.listdir(CTL), "status and control files removed at exit")
    rep = report(traces()[0])
    tot = rep["totals"]
    check(tot["recording_resumes"] == 2 and tot["recording_pauses"] == 2,
          "two windows in the trace (MARK records): %d/%d"
          % (tot["recording_resumes"], tot["recording_pauses"]))
    # (That no event falls inside a pause is shown above by the file not
    # growing while paused; the windows' events are not lost either.)
    check(rep["trace"]["dropped_events"] == 0,
          "no event dropped: %d" % rep["trace"]["dropped_events"])
    check("started paused" in notes(rep), "the report says it started paused")
    # A signal the program already handles is refused.
    out = subprocess.run(["sh", "-c", "trap '' USR2; exec " + APP + " loop 0.1"],
                         env=env(MALLOCK_START="paused",
                                 MALLOCK_SIGNAL="USR2"), capture_output=True,
                         text=True)
    check("already handled" in out.stderr,
          "a handled signal is refused with a warning")

elif CASE == "toggle":
    out = subprocess.run([APP, "toggle"], env=env(MALLOCK_START="paused",
                                                  MALLOCK_SIGNAL="USR2"),
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "toggle scenario ran")
    rep = report(traces()[0])
    mutexes = sorted((l for l in rep["locks"] if l["kind"] == "mutex"),
                     key=lambda l: l["holds"])
    check(len(mutexes) == 2, "two mutexes seen")
    b, a = mutexes
    check(a["holds"] == 100, "lock a: 100 holds, none invented (%d)" % a["holds"])
    # The release of lock a whose acquisition was not recorded (taken
    # while paused) is in the trace, and made no hold of its own:
    rels = [l for l in subprocess.run([MALLOCK, "dump", traces()[0]],
                                      capture_output=True, text=True
                                      ).stdout.splitlines() if "REL" in l]
    check(len(rels) >= 151, "the releases are in the trace (%d)" % len(rels))
    check(b["holds"] == 50, "lock b: 50 holds (%d)" % b["holds"])
    check(a["allocations_in_holds"] == 200 and b["allocations_in_holds"] == 100,
          "no phantom holder: allocator calls charged only inside holds "
          "(%d, %d)" % (a["allocations_in_holds"], b["allocations_in_holds"]))
    check(b["hold_max_ns"] < 15_000_000 and a["hold_max_ns"] < 15_000_000,
          "no hold spans a pause (max %d / %d ns)"
          % (a["hold_max_ns"], b["hold_max_ns"]))
    check(rep["totals"]["holds_cut_by_pause"] >= 1, "held-across-mark counted")

elif CASE == "duration":
    t0 = time.time()
    p = subprocess.Popen([APP, "loop", "3"], env=env(MALLOCK_DURATION=1))
    time.sleep(1.8)
    st = ctl("status", str(p.pid))
    check("paused (MALLOCK_DURATION)" in st.stdout,
          "stopped by itself after 1 s: " + st.stdout.strip())
    check(p.wait(timeout=20) == 0, "program exits 0")
    rep = report(traces()[0])
    d = rep["trace"]["duration_ns"]
    check(0.9e9 <= d <= 1.4e9, "events span about 1 s (%.2f s)" % (d / 1e9))
    check(rep["totals"]["recording_pauses"] == 1, "one PAUSE mark")

elif CASE == "cap":
    cap = 1 << 20
    out = subprocess.run([APP, "loop", "2"], env=env(MALLOCK_MAX_BYTES=cap),
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "program exits 0")
    check(out.stderr.count("MALLOCK_MAX_BYTES") == 1,
          "one line on stderr: " + out.stderr.strip())
    size = os.path.getsize(traces()[0])
    check(cap - (256 << 10) < size <= cap, "trace size %d within the cap %d"
          % (size, cap))
    rep = report(traces()[0])
    check("MALLOCK_MAX_BYTES" in notes(rep), "the report shows the cap")
    check(rep["trace"]["clean_exit"] and not rep["trace"]["truncated"],
          "the capped trace is complete and ends cleanly")
    # A cap under 1 MiB is raised to 1 MiB, with a warning: the trace
    # fills the same window as above.
    os.remove(traces()[0])
    out = subprocess.run([APP, "loop", "2"], env=env(MALLOCK_MAX_BYTES=300000),
                         capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "program exits 0 (cap 300000)")
    check("MALLOCK_MAX_BYTES=300000: less than 1 MiB; using 1 MiB"
          in out.stderr, "the small cap is told: " + out.stderr.strip())
    size = os.path.getsize(traces()[0])
    check(cap - (256 << 10) < size <= cap,
          "cap 300000: trace size %d within the 1 MiB it is raised to" % size)

elif CASE == "sample":
    n, N = 1_000_000, 32768
    out = subprocess.run([APP, "sample", str(n)],
                         env=env(MALLOCK_SAMPLE_BYTES=N), capture_output=True,
                         text=True, timeout=60)
    check(out.returncode == 0, "program exits 0")
    rep = report(traces()[0])
    tot = rep["totals"]
    expect_samples = n * 128 / N  # ~3906, sd ~63
    # +-6%: about 4 standard deviations (a sampler biased by 10% fails).
    check(0.94 * expect_samples < tot["sampled_allocations"]
          < 1.06 * expect_samples,
          "sampled %d allocations (expected about %d)"
          % (tot["sampled_allocations"], expect_samples))
    # 1.01M allocations in all; 10%% is > 6 standard deviations of the
    # estimate, and unscaled counts (~4000) are far outside.
    allocs = tot["allocations"]
    check(abs(allocs - 1_010_000) < 0.10 * 1_010_000,
          "scaled allocations %d within 10%% of 1010000" % allocs)
    check(abs(tot["cross_thread_frees"] - n) < 0.10 * n,
          "scaled cross-thread frees %d within 10%% of %d"
          % (tot["cross_thread_frees"], n))
    mtx = [l for l in rep["locks"] if l["kind"] == "mutex"
           and l["holds"] == 10000]
    check(len(mtx) == 1 and mtx[0]["allocations_in_holds"] == 10000,
          "every allocator call under the lock recorded (%s)"
          % [l["allocations_in_holds"] for l in mtx])
    check("sampled" in notes(rep) and "scaled" in notes(rep),
          "the report says counts are scaled")
else:
    fail("unknown case " + CASE)
print("PASS", CASE)
