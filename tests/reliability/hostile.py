"""hostile.py BUILD_DIR SCENARIO [ALLOCATOR] - a hostile host (hostile.c) run bare and
under the shim, each under a timeout (a hang fails). Asserted: the same exit
status (or signal), stdout, stderr and files the program wrote, and a
readable trace whose totals are exact: the program's own allocations
(malloc(4242) + free, counted by pointer in `trace_stats -d`) are all there,
or counted as dropped.

ALLOCATOR: tcmalloc or jemalloc (Debian's shared libraries), preloaded
after the shim (and alone in the bare run); exit 77 when it is not
installed. Default: glibc's.

Scenarios (one CTest each): closeall_loop closeall_range closeall_from
dup2err stderr_pipe sigexit signals sigign sigdfl sigwait exec execfail
execfail_mt daemon relcount. See hostile.c for what the program does.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx, wait_for  # noqa: E402

SIZE = "4242"
N = 5000
DEFAULT_SIGS = ["TERM", "INT", "HUP", "QUIT", "PIPE", "XCPU", "XFSZ", "USR1",
                "USR2", "ALRM", "VTALRM", "PROF"]
EXECS = ["execl", "execle", "execlp", "execv", "execve", "execvp", "execvpe",
         "fexecve", "execveat"]

build, scen = sys.argv[1], sys.argv[2]
alloc = sys.argv[3] if len(sys.argv) > 3 else ""
c = Ctx("hostile " + scen + (" " + alloc if alloc else ""), build)
ALLOC_LIBS = {"tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4",
              "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}
alloc_lib = ALLOC_LIBS[alloc] if alloc else None
if alloc_lib and not os.path.exists(alloc_lib):
    print("hostile: %s not installed (%s): skipped" % (alloc, alloc_lib))
    sys.exit(77)
prog = c.bin("hostile")
trace_stats = c.bin("trace_stats")


def preexec():
    os.setpgrp()
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Start from the default action for every signal the test sends (a
    # CI runner may ignore SIGHUP or SIGPIPE).
    for s in DEFAULT_SIGS:
        signal.signal(getattr(signal, "SIG" + s), signal.SIG_DFL)


def env_for(under_shim, out, extra=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("MALLOCK_") or k == "LD_PRELOAD":
            del e[k]
    if under_shim:
        e["LD_PRELOAD"] = c.shim + (":" + alloc_lib if alloc_lib else "")
        e["MALLOCK_OUTPUT"] = out
        e.update(extra or {})
    elif alloc_lib:
        e["LD_PRELOAD"] = alloc_lib
    return e


def start(argv, env, cwd, stderr=subprocess.PIPE):
    return subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=stderr,
                            preexec_fn=preexec)


def finish(p, timeout=30):
    """(status, stdout, stderr); status None when it hung (killed)."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err
    return p.returncode, out, err or b""


def run(args, under_shim, d, extra=None, kill=None, stderr=subprocess.PIPE,
        out=None):
    """Runs hostile ARGS in directory d. kill: a signal sent once the
    program printed "ready"."""
    env = env_for(under_shim, out or os.path.join(d, "t.%p.trace"), extra)
    p = start([prog] + args, env, d, stderr)
    if kill is None:
        return finish(p)
    head = b""
    while not head.endswith(b"ready\n"):
        line = p.stdout.readline()
        head += line
        if not line:
            os.killpg(p.pid, signal.SIGKILL)
            st, o, e = finish(p)
            return st, head + o, e
    os.kill(p.pid, kill)
    st, o, e = finish(p)
    return st, head + o, e


def parse(path):
    """The program's allocations in one trace: allocs, frees (of those
    blocks), DROP sum, END count, END dropped, last END flags, readable."""
    r = subprocess.run([trace_stats, "-d", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    t = dict(allocs=0, frees=0, drops=0, ends=0, end_dropped=0, flags=None,
             ok=r.returncode == 0, notes=[], err=r.stderr.decode()[:300])
    live = {}
    seen = {}  # every pointer malloc(4242) returned, per thread
    t["frees_seen"] = 0
    for ln in r.stdout.decode(errors="replace").splitlines():
        f = ln.split()
        if len(f) < 4:
            continue
        tid, kind = f[0], f[3]
        if kind == "ALLOC" and len(f) > 5 and f[5] == SIZE:
            live.setdefault(tid, set()).add(f[4])
            seen.setdefault(tid, set()).add(f[4])
            t["allocs"] += 1
        elif kind == "FREE" and f[4] in seen.get(tid, ()):
            # (its ALLOC may have been dropped: matched by address)
            t["frees_seen"] += 1
            if f[4] in live.get(tid, ()):
                live[tid].discard(f[4])
                t["frees"] += 1
        elif kind == "DROP":
            t["drops"] += int(f[4])
        elif kind == "END":
            t["ends"] += 1
            t["end_dropped"] += int(f[5])
            t["flags"] = int(f[6])
        elif kind == "NOTE":
            t["notes"].append(ln.split(" ", 5)[-1])
    return t


META = {"PROCESS", "MODULE", "STACK", "LOCK_NEW", "LOCK_NAME", "THREAD_NAME",
        "END", "NOTE"}


def end_counts(path):
    """(the events its END records add up to, its event records): a
    trace's ENDs together count each event once."""
    r = subprocess.run([trace_stats, path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    ends, events = None, 0
    for ln in r.stdout.decode(errors="replace").splitlines():
        f = ln.split()
        if len(f) == 2 and f[0].isupper() and f[0] not in META:
            events += int(f[1])
        elif len(f) >= 3 and f[0] == "end" and f[2] == "events":
            ends = int(f[3])
    return ends, events


def traces(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if ".trace" in f)


def program_trace(d, what):
    """The parsed trace of the run's own process (the one with the
    program's allocations; an exec'd /bin/true leaves another)."""
    ts = [parse(f) for f in traces(d)]
    for t in ts:
        c.check(t["ok"], "%s: unreadable trace: %s" % (what, t["err"]))
    ts = [t for t in ts if t["allocs"]]
    c.check(len(ts) == 1, "%s: %d traces hold the program's allocations" %
            (what, len(ts)))
    return ts[0] if ts else None


def exact(t, rounds, what, lossless=True):
    """rounds malloc+free pairs: every one recorded (lossless), or the
    missing ones counted as dropped."""
    if t is None:
        return
    rec = t["allocs"] + t["frees"]
    lost = t["drops"] + t["end_dropped"]
    if lossless:
        c.check(t["allocs"] == rounds and t["frees"] == rounds and lost == 0,
                "%s: %d allocations, %d frees, %d dropped; the program did "
                "%d of each" % (what, t["allocs"], t["frees"], lost, rounds))
    else:
        c.check(rec <= 2 * rounds and rec + lost >= 2 * rounds,
                "%s: %d recorded + %d dropped for %d events" %
                (what, rec, lost, 2 * rounds))
    c.check(t["ends"] >= 1, "%s: no END record" % what)


def same(bare, shim, what):
    c.check(bare[0] is not None, "%s: hung without the shim" % what)
    c.check(shim[0] is not None, "%s: hung under the shim" % what)
    c.check(bare[0] == shim[0], "%s: exit status %s bare, %s under the shim"
            % (what, bare[0], shim[0]))
    c.check(bare[1] == shim[1], "%s: stdout differs: %r vs %r" %
            (what, bare[1][:200], shim[1][:200]))
    c.check(bare[2] == shim[2], "%s: stderr differs: %r vs %r" %
            (what, bare[2][:200], shim[2][:200]))


def files(d):
    return {f: open(os.path.join(d, f), "rb").read()
            for f in sorted(os.listdir(d)) if ".trace" not in f}


def pair(args, what, extra=None, kill=None, stderr=subprocess.PIPE,
         warning=None):
    """Bare and shim runs in fresh directories; returns the shim's dir.
    warning: the one line the shim is expected to print on stderr."""
    db = c.tmpdir("hostile_%s%s_bare" % (what, alloc))
    ds = c.tmpdir("hostile_%s%s_shim" % (what, alloc))
    bare = run(args, False, db, kill=kill, stderr=stderr)
    shim = run(args, True, ds, extra, kill=kill, stderr=stderr)
    if warning and shim[2] is not None:
        c.check(shim[2].count(warning) == 1, "%s: expected one %r: %r" %
                (what, warning, shim[2][:300]))
        shim = (shim[0], shim[1], shim[2].replace(warning, b"", 1))
    same(bare, shim, what)
    fb, fs = files(db), files(ds)
    c.check(fb == fs, "%s: files differ: bare %s, shim %s" %
            (what, {k: len(v) for k, v in fb.items()},
             {k: len(v) for k, v in fs.items()}))
    return ds, shim


if scen.startswith("closeall_"):
    mode = scen.split("_", 1)[1]
    # Small buffers: many chunks are written after the close.
    for unwind in ("fp", "libunwind"):
        what = "%s unwind=%s" % (scen, unwind)
        d, _ = pair(["closeall", mode], what,
                    {"MALLOCK_BUFFER_KB": "4", "MALLOCK_UNWIND": unwind})
        t = program_trace(d, what)
        exact(t, 2 * N, what)
        # close_range and closefrom (not a loop of close(), which the
        # shim survives by reopening) keep the shim's fds: none was
        # reopened.
        if t and mode != "loop":
            c.check(not any("closed or replaced the trace's fd" in n
                            for n in t["notes"]),
                    "%s: the trace's fd was closed: %s" % (what, t["notes"]))
elif scen == "dup2err":
    # The cap makes the shim warn after the program moved fd 2.
    # (The cap turns recording off for good: later events are not
    # counted, so only "no more than the program did" holds.) Chunks
    # uncompressed, so that the program's events reach the cap.
    d, _ = pair(["dup2err"], scen, {"MALLOCK_MAX_BYTES": "1048576",
                                    "MALLOCK_COMPRESS": "0"})
    t = program_trace(d, scen)
    if t:
        c.check(t["allocs"] < 40 * N + 100 and t["ends"] == 1,
                "dup2err: %d allocations, %d END" % (t["allocs"], t["ends"]))
        c.check(any("MALLOCK_MAX_BYTES" in n for n in t["notes"]),
                "dup2err: the cap was not reached: %s" % t["notes"])
elif scen == "stderr_pipe":
    for what, extra in (("cap", {"MALLOCK_MAX_BYTES": "300000",
                                 "MALLOCK_COMPRESS": "0"}),
                        ("bad setting", {"MALLOCK_STACK_DEPTH": "x",
                                         "MALLOCK_MAX_BYTES": "1048576"})):
        res = []
        for under in (False, True):
            d = c.tmpdir("hostile_pipe%s_%d" % (alloc, under))
            r, w = os.pipe()
            os.close(r)  # the reader is gone: a write raises SIGPIPE
            p = start([prog, "quiet"],
                      env_for(under, os.path.join(d, "t.%p.trace"), extra),
                      d, stderr=w)
            os.close(w)
            res.append(finish(p))
        same(res[0], res[1], "stderr a closed pipe, " + what)
elif scen == "sigexit":
    # exit() from a SIGTERM handler that interrupts the writer: 50 runs,
    # each must exit 0 within its timeout (4 of 12 hung before).
    hung = bad = 0
    for i in range(50):
        d = c.tmpdir("hostile_sigexit" + alloc)
        env = env_for(True, os.path.join(d, "t.%p.trace"),
                      {"MALLOCK_BUFFER_KB": "4"})
        p = start([prog, "sigexit"], env, d)
        if p.stdout.readline() != b"ready\n":
            bad += 1
        time.sleep(0.02 + (i % 7) * 0.01)
        os.kill(p.pid, signal.SIGTERM)
        st, out, err = finish(p, timeout=10)
        if st is None:
            hung += 1
        elif st != 0 or err:
            bad += 1
            print("run %d: status %s, stderr %r" % (i, st, err[:200]))
        for f in traces(d):
            r = subprocess.run([trace_stats, f], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            if r.returncode != 0 or b"\nend 1 " not in r.stdout:
                bad += 1
                print("run %d: trace %s: status %d, %r" %
                      (i, f, r.returncode, r.stderr[:200]))
    c.check(hung == 0, "%d of 50 runs hung after exit() from the handler"
            % hung)
    c.check(bad == 0, "%d of 50 runs misbehaved" % bad)
elif scen == "signals":
    for s in DEFAULT_SIGS:
        sig = getattr(signal, "SIG" + s)
        # SIGUSR2 is the control signal by default (the shim's own
        # handler, documented): tested with another one.
        extra = {"MALLOCK_SIGNAL": "HUP"} if s == "USR2" else None
        d, shim = pair(["signal", s], "SIG" + s, extra, kill=sig)
        c.check(shim[0] == -sig, "SIG%s: died of %s" % (s, shim[0]))
        t = program_trace(d, "SIG" + s)
        exact(t, N, "SIG" + s)
        if t:
            c.check(t["flags"] == 0, "SIG%s: END says clean exit" % s)
            c.check(any("SIG" + s in n for n in t["notes"]),
                    "SIG%s: no note: %s" % (s, t["notes"]))
elif scen == "sigign":
    d, shim = pair(["sigign"], scen)
    c.check(shim[0] == 3, "ignored signals killed the host: %s" % shim[0])
    exact(program_trace(d, scen), N, scen)
elif scen == "sigdfl":
    d, shim = pair(["sigdfl"], scen, kill=signal.SIGTERM)
    c.check(b"SIGTERM was SIG_DFL, SIGPIPE is SIG_DFL" in shim[1],
            "the program saw the shim's handler: %r" % shim[1])
    exact(program_trace(d, scen), N, scen)
elif scen == "sigwait":
    d, shim = pair(["sigwait"], scen, kill=signal.SIGTERM)
    c.check(shim[0] == 4, "sigwait did not get SIGTERM: %s" % shim[0])
    t = program_trace(d, scen)
    exact(t, N, scen)
    c.check(t is not None and t["flags"] == 1, "sigwait: not a clean END")
elif scen == "exec":
    for how in EXECS:
        d, shim = pair(["exec", how], how)
        c.check(shim[0] == 0, "%s: status %s" % (how, shim[0]))
        t = program_trace(d, how)
        exact(t, N, how)
        if t:
            c.check(t["ends"] == 1 and t["flags"] == 0,
                    "%s: %d END, flags %s" % (how, t["ends"], t["flags"]))
            c.check(any("exec of" in n for n in t["notes"]),
                    "%s: no exec note: %s" % (how, t["notes"]))
elif scen == "execfail":
    d, shim = pair(["execfail"], scen)
    t = program_trace(d, scen)
    exact(t, 2 * N, scen)
    if t:
        c.check(t["ends"] == 2 and t["flags"] == 1,
                "%d END records, last flags %s" % (t["ends"], t["flags"]))
        # The exit's END counts the events since the failed exec's END.
        for f in traces(d):
            ends, events = end_counts(f)
            c.check(ends == events, "%s: the END records count %s events, "
                    "the file holds %d" % (os.path.basename(f), ends, events))
elif scen == "execfail_mt":
    # Other threads' buffers at a failed exec: written up to that point;
    # what they add before their next flush cannot be written alone and
    # is counted as dropped. Every round is recorded or counted, within 8
    # events: thread start/exit records dropped with them count too, and a
    # FREE whose ALLOC was dropped is matched by an address seen before
    # (a block at a new address is missed).
    d = c.tmpdir("hostile_execfail_mt" + alloc)
    st, out, err = run(["execfail_mt"], True, d, {"MALLOCK_BUFFER_KB": "4"})
    c.check(st == 0 and not err, "execfail_mt: status %s, %r" % (st, err))
    n = int(out.split()[-1]) if out.startswith(b"rounds") else 0
    t = program_trace(d, scen)
    if t:
        rec = t["allocs"] + t["frees_seen"]
        lost = t["drops"] + t["end_dropped"]
        c.check(t["ends"] == 201 and t["flags"] == 1,
                "execfail_mt: %d END, last flags %s" % (t["ends"], t["flags"]))
        c.check(abs(rec + lost - 2 * n) <= 8 and rec <= 2 * n,
                "execfail_mt: %d recorded + %d dropped for %d events" %
                (rec, lost, 2 * n))
        print("execfail_mt: %d events, %d recorded, %d dropped" %
              (2 * n, rec, lost))
elif scen == "daemon":
    # A relative output pattern: the daemon's trace goes where the process
    # started, not to / (where daemon() changed directory).
    results = []
    for under in (False, True):
        d = c.tmpdir("hostile_daemon%s_%d" % (alloc, under))
        done = os.path.join(d, "done")
        st = run(["daemon", done], under, d, out="t.%p.trace")
        c.check(wait_for(lambda: os.path.exists(done), 30),
                "the daemon did not finish")
        results.append(st)
    same(results[0], results[1], scen)

    def daemon_trace():
        for f in traces(d):
            t = parse(f)
            if t["ends"] and t["allocs"] == N:
                return t
        return None
    c.check(wait_for(lambda: daemon_trace() is not None, 30),
            "no complete trace of the daemon in %s: %s (in /: %s)" %
            (d, traces(d), [f for f in os.listdir("/") if f.startswith("t.")
                            and f.endswith(".trace")]))
    exact(daemon_trace(), N, "daemon")
elif scen == "relcount":
    # Every ACQ and REL of the flood is recorded or counted as dropped,
    # and nothing else is counted: drops == 2 x the locks without an ACQ.
    d, shim = pair(["relcount"], scen, {"MALLOCK_UNWIND": "none"},
                   warning=b"mallock: lock table full; events of further "
                   b"locks are dropped (counted)\n")
    fs = traces(d)
    if c.check(len(fs) == 1, "relcount: %d traces" % len(fs)):
        r = subprocess.run([trace_stats, fs[0]], stdout=subprocess.PIPE,
                           timeout=120)
        st = {}
        for ln in r.stdout.decode().splitlines():
            f = ln.split()
            # uncontended acquisitions are ACQ, ACQ_UNTIMED or ACQ_SAMPLED
            # by whether their hold was timed (format 1.6)
            if f and f[0] in ("ACQ", "ACQ_UNTIMED", "ACQ_SAMPLED"):
                st["ACQ"] = st.get("ACQ", 0) + int(f[1])
            elif f and f[0] in ("REL", "drops"):
                st[f[0]] = int(f[1])
            if f and f[0] == "end":
                st["end_dropped"] = int(f[5])
        acq = st.get("ACQ", 0)
        lost = st.get("drops", 0) + st.get("end_dropped", 0)
        c.check(r.returncode == 0 and 0 < acq < 1100000 and
                st.get("REL", 0) == acq and lost == 2 * (1100000 - acq),
                "relcount: %d ACQ, %d REL, %d dropped; expected %d dropped"
                % (acq, st.get("REL", 0), lost, 2 * (1100000 - acq)))
else:
    print("hostile.py: unknown scenario %s" % scen)
    sys.exit(2)
c.done()
