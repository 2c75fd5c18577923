#!/usr/bin/env python3
"""`mallock top` (docs/mallock-top.md) on the bundled svcqueue.

usage: top_test.py CASE MALLOCK SHIM SVCQUEUE TMPDIR
CASE:
  batch  `-- CMD`: --batch --count 3 gives 3 blocks naming svcqueue.lock and
         tree_insert; every lock and site top names is named so by
         `mallock report` of the kept trace; the program runs on to its end
  json   PID, started paused: --format=json --count 2 gives 2 JSON lines
         naming the lock and the site; the process is paused again
         afterwards, runs to its end, leaves no page, and the trace is the
         one window; a process that was recording is left recording;
         while top reads, the page asks for a 100 ms flush deadline and
         the shim has it in force (ctl status says so), and both are as
         before once top ends; a top killed by SIGKILL leaves them, and
         `mallock ctl stop` restores them
  bad    a gone PID, a terminal under 80x24, a process of another user
         (top run as nobody, when the test runs as root), a process ending
         mid-view: one line "mallock top: ..." each and exit 1; the
         processes of the small terminal and of the other user were not
         touched (still paused, never started)
  attach svcqueue started without the shim: --attach PID --count 2 gives 2
         blocks, detaches (the shim's hooks out: its page gone), and the
         process runs on to a clean end (77 where ptrace is refused)
  cost   the shim's cost, as the shim measures it (nothing forged): svcqueue
         started paused, top --format=json --count 3 PID: the page's cost
         counters (format/ctl_page.h cost_*) grew over the window; each
         interval's shim_cost is an estimate with 0 < share_of_cpu < 1
         (or, on a busy machine, says the estimate exceeds the process's
         CPU time; at least one is an estimate),
         one call in about 1024 sampled: the page's calls per sampled call
         within 900..1150 (the mean gap of uniform 1..2047 over thousands
         of samples), and the window's trace's events per sampled call
         within 512..2048 (the events the shim did not sample from:
         condition waits, thread records); `-- CMD` --batch --count 3:
         the text header says "shim cost: - (...)" in the first block (the
         page is read from the second look) and "shim ~N% of the
         process's CPU (est., ..." in one of the next two at least
  memcached  Debian's memcached (4 threads) started paused under the shim,
         loaded by 4 client threads (set/get): --batch --count 3 PID gives
         3 blocks whose locks report names so; the server keeps its pid,
         is paused again, serves on, and ends cleanly on SIGTERM with
         nothing on stderr (77 when memcached is not installed)
"""
import json
import os
import pty
import shutil
import subprocess
import sys
import socket
import termios
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
import tracefmt  # noqa: E402
from srvcheck import alive  # noqa: E402
from pycheck import check  # noqa: E402

pycheck.setup(echo=True)
CASE, MALLOCK, SHIM, SVC, TMP = sys.argv[1:6]


def env(**kw):
    e = dict(os.environ)
    e.pop("MALLOCK_CTL_DIR", None)
    e.pop("MALLOCK_START", None)
    e.update(LD_PRELOAD=SHIM, MALLOCK_OUTPUT=os.path.join(TMP, "t.%p.trace"))
    e.update({k: str(v) for k, v in kw.items()})
    return e


def svcqueue(duration, **kw):
    return subprocess.Popen([SVC, "--producers=2", "--consumers=2",
                             "--duration=%s" % duration],
                            env=env(**kw), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def top(*args, **kw):
    return subprocess.run([MALLOCK, "top", *args], capture_output=True,
                          text=True, timeout=120, **kw)


def ctl_status(pid):
    return subprocess.run([MALLOCK, "ctl", "status", str(pid)],
                          capture_output=True, text=True).stdout


def report_names(trace):
    """The lock class names and site functions `mallock report` gives."""
    r = subprocess.run([MALLOCK, "report", "--format=json", trace],
                       capture_output=True, text=True)
    check(r.returncode == 0, "report of the kept trace: " + r.stderr[-300:])
    d = json.loads(r.stdout)
    locks = {c.get("name") or c.get("label") for c in d["lock_classes"]}
    sites = {s["site"]["function"] for s in d["alloc_sites"]
             if s.get("site")}
    for f in d["findings"]:
        for s in [f.get("site")] + [x.get("site") for x in f.get("sites",
                                                                  [])]:
            if s and s.get("function"):
                sites.add(s["function"])
    return locks, sites


def same_name(col, names):
    """Whether the text column col (a name, or its head and tail joined by
    "..." when cut) is one of names."""
    if "..." in col:
        head, tail = col.split("...", 1)
        return any(n and len(n) > len(col) - 3 and n.startswith(head)
                   and n.endswith(tail) for n in names)
    return col in names


def page_of(pid):
    return os.path.join("/tmp/mallock-%d" % os.geteuid(), "%d.page" % pid)


def page_flush(pid):
    """The page's flush_req and flush_ms (format/ctl_page.h)."""
    F = tracefmt.find(os.path.dirname(os.path.dirname(
        os.path.abspath(MALLOCK))))
    with open(page_of(pid), "rb") as f:
        b = f.read()
    return {k: tracefmt.get(b, F.CTL_PAGE, k) for k in ("flush_req",
                                                          "flush_ms")}


def top_flush(pid, *args):
    """top ARGS PID, run to its end, with the page's flush fields read
    before and while it reads: top asks for a 100 ms flush deadline (its
    flush_req) and the shim has it in force (flush_ms), which `ctl
    status` says."""
    before = page_flush(pid)
    tp = subprocess.Popen([MALLOCK, "top", *args, str(pid)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    flush = before
    for _ in range(100):
        flush = page_flush(pid)
        if flush["flush_ms"] != before["flush_ms"] or tp.poll() is not None:
            break
        time.sleep(0.05)
    status = ctl_status(pid)
    out, err = tp.communicate(timeout=120)
    print("page's flush fields before top %r, while it reads %r"
          % (before, flush))
    check(before == {"flush_req": 0, "flush_ms": 200},
          "no request before top, the default deadline in force")
    check(flush == {"flush_req": 100, "flush_ms": 100},
          "top's 100 ms deadline in force while it reads")
    check("flush deadline 100 ms: a reader of the trace asks for 100 ms"
          in status, "ctl status says so: %r" % status)
    return subprocess.CompletedProcess(tp.args, tp.returncode, out, err)


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

if CASE == "batch":
    kept = os.path.join(TMP, "kept.trace")
    # Files, not pipes: the program keeps its stdout after top ends.
    with open(os.path.join(TMP, "out"), "w+") as o, \
            open(os.path.join(TMP, "err"), "w+") as e:
        r = subprocess.run([MALLOCK, "top", "--batch", "--count", "3", "-o",
                            kept, "--", SVC, "--producers=2",
                            "--consumers=2", "--duration=12"], stdout=o,
                           stderr=e, cwd=TMP, timeout=120)
        o.seek(0)
        e.seek(0)
        r.stdout, r.stderr = o.read(), e.read()
    check(r.returncode == 0, "top -- svcqueue: exit %d %r"
          % (r.returncode, r.stderr[-400:]))
    blocks = [b for b in r.stdout.split("mallock top - ")[1:]]
    check(len(blocks) == 3, "3 blocks: %d" % len(blocks))
    check(all("svcqueue.lock" in b for b in blocks),
          "each block names svcqueue.lock")
    check("tree_insert" in blocks[-1], "the last block names tree_insert")
    check(r.stderr.strip().endswith("the window's trace: " + kept),
          "the kept trace is named: %r" % r.stderr[-200:])
    pid = int(blocks[0].split("(pid ")[1].split(")")[0])
    check(alive(pid), "the program runs on after top")
    for _ in range(400):
        if not alive(pid):
            break
        time.sleep(0.05)
    check(not alive(pid), "the program ended by itself")
    locks, sites = report_names(kept)
    # The rows of the last block's tables: lock names and site functions.
    last = blocks[-1]
    sec = last.split("Lock classes by")[1].split("\n\n")[0].splitlines()[2:]
    named = [l[2:30].strip().lstrip("*") for l in sec]
    check(named and all(same_name(n, locks) for n in named),
          "top's locks %r are report's %r" % (named, sorted(locks)))
    sec = last.split("Code that allocates")[1].split("\n\n")[0]
    funcs = [l.split()[1] for l in sec.splitlines()[2:]]
    check(funcs and all(f in sites for f in funcs),
          "top's sites %r are report's" % funcs)

elif CASE == "json":
    # Long enough for two looks under load (each reads the window
    # again: seconds when two cores are shared with the rest of a suite).
    p = svcqueue(12, MALLOCK_START="paused")
    time.sleep(0.5)
    kept = os.path.join(TMP, "copy.trace")
    r = top_flush(p.pid, "--format=json", "--count", "2", "-o", kept)
    check(r.returncode == 0, "top --format=json PID: exit %d %r"
          % (r.returncode, r.stderr))
    check(page_flush(p.pid) == {"flush_req": 0, "flush_ms": 200},
          "the page's flush fields restored by the stop")
    lines = r.stdout.splitlines()
    check(len(lines) == 2, "2 JSON lines: %d" % len(lines))
    objs = [json.loads(l) for l in lines]
    check([o["interval"] for o in objs] == [1, 2], "intervals 1, 2")
    check(all(o["pid"] == p.pid for o in objs), "the pid")
    check(objs[-1]["locks"][0]["name"] == "svcqueue.lock",
          "the top lock is svcqueue.lock: %r" % objs[-1]["locks"][:1])
    check(any(s["site"].startswith("tree_insert") for s in objs[-1]["sites"]),
          "a site is tree_insert")
    w = objs[-1]["locks"][0]["window"]
    check(0 <= w["alloc_share_of_hold"] <= 1 and w["contended"] <=
          w["acquisitions"], "a share within 0..1, contended <= acquired")
    st = ctl_status(p.pid)
    check("paused" in st and "flush" not in st,
          "paused again after top, no flush request: %r" % st)
    check(alive(p.pid), "the process runs on")
    err = p.communicate(timeout=60)[1]
    check(p.returncode == 0, "the process ended well: %d" % p.returncode)
    check(not os.path.exists(page_of(p.pid)), "no page left")
    check(os.path.getsize(kept) > 0, "the copy -o names is kept")
    locks, sites = report_names(os.path.join(TMP, "t.%d.trace" % p.pid))
    check(objs[-1]["locks"][0]["name"] in locks, "report names the lock")
    check("tree_insert" in sites, "report names tree_insert")
    # A process that records already is left recording.
    p = svcqueue(4)
    time.sleep(0.5)
    r = top_flush(p.pid, "--batch", "--count", "1")
    check(r.returncode == 0, "top on a recording process: %r" % r.stderr)
    st = ctl_status(p.pid)
    check("recording" in st, "still recording after top: %r" % st)
    # No request is served there: the shim's next control poll (10 ms
    # while it records) withdraws the deadline.
    for _ in range(100):
        if page_flush(p.pid)["flush_ms"] == 200:
            break
        time.sleep(0.05)
    check(page_flush(p.pid) == {"flush_req": 0, "flush_ms": 200},
          "the recording process's deadline restored: %r" % page_flush(p.pid))
    p.communicate(timeout=60)
    # A top killed by SIGKILL cannot withdraw its request: `mallock ctl
    # stop` does.
    p = svcqueue(8, MALLOCK_START="paused")
    time.sleep(0.5)
    tp = subprocess.Popen([MALLOCK, "top", "--batch", str(p.pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if page_flush(p.pid)["flush_ms"] == 100:
            break
        time.sleep(0.05)
    tp.kill()
    tp.wait()
    check(page_flush(p.pid) == {"flush_req": 100, "flush_ms": 100},
          "a killed top's request stays: %r" % page_flush(p.pid))
    r = subprocess.run([MALLOCK, "ctl", "stop", str(p.pid)],
                       capture_output=True, text=True)
    check(r.returncode == 0 and page_flush(p.pid) == {"flush_req": 0,
                                                      "flush_ms": 200},
          "ctl stop withdraws it: %d %r %r" % (r.returncode, r.stderr,
                                               page_flush(p.pid)))
    p.communicate(timeout=60)

elif CASE == "cost":
    F = tracefmt.find(os.path.dirname(os.path.dirname(
        os.path.abspath(MALLOCK))))
    COST = ("cost_every", "cost_calls", "cost_sampled", "cost_ns",
            "cost_over")

    def cost(pid):
        with open(page_of(pid), "rb") as f:
            b = f.read()
        return {k: tracefmt.get(b, F.CTL_PAGE, k) for k in COST}

    p = svcqueue(20, MALLOCK_START="paused")
    for _ in range(100):
        if os.path.exists(page_of(p.pid)):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    before = cost(p.pid)
    r = top("--format=json", "--count", "3", str(p.pid))
    check(r.returncode == 0, "top --format=json PID: exit %d %r"
          % (r.returncode, r.stderr[-300:]))
    after = cost(p.pid)
    print("page before the window %r, after %r" % (before, after))
    check(after["cost_every"] == 1024, "cost_every 1024")
    check(all(after[k] > before[k] for k in COST[1:4]),
          "the cost counters grew over the window")
    objs = [json.loads(l) for l in r.stdout.splitlines()]
    check(len(objs) == 3, "3 JSON lines: %d" % len(objs))
    sc = [o["shim_cost"] for o in objs]
    for c in sc:
        print("interval shim_cost %r" % c)
    est = [c for c in sc if c["estimated"]]
    # An estimate over the process's CPU time (samples descheduled on a
    # busy machine) is not shown as one: said so instead.
    over = [c for c in sc if not c["estimated"] and
            "more than the process's CPU time" in c.get("why_not", "")]
    check(est and len(est) + len(over) == 3,
          "each interval has an estimate, or says it is over the CPU "
          "time: %r" % sc)
    check(all(0 < c["share_of_cpu"] < 1 for c in est),
          "0 < share_of_cpu < 1: %r" % [c.get("share_of_cpu") for c in sc])
    check(all(c["sampled_calls"] >= 10 and c["calls"] > c["sampled_calls"]
              for c in est), "calls and sampled calls counted")
    sampled = after["cost_sampled"] + after["cost_over"] - (
        before["cost_sampled"] + before["cost_over"])
    per = (after["cost_calls"] - before["cost_calls"]) / max(1, sampled)
    check(900 <= per <= 1150, "calls per sampled call %.0f in 900..1150"
          % per)
    # The window closed: the counters hold all its samples, the trace all
    # its events (the shim counts nothing while paused).
    p.communicate(timeout=60)
    trace = os.path.join(TMP, "t.%d.trace" % p.pid)
    rr = subprocess.run([MALLOCK, "report", "--format=json", trace],
                        capture_output=True, text=True)
    check(rr.returncode == 0, "report of the trace: %r" % rr.stderr[-300:])
    events = json.loads(rr.stdout)["trace"]["events"]
    per_ev = events / max(1, sampled)
    print("the window's events %d, sampled calls %d: %.0f events per "
          "sampled call" % (events, sampled, per_ev))
    check(512 <= per_ev <= 2048, "events per sampled call %.0f in "
          "512..2048" % per_ev)
    # The text header of `-- CMD`: its page is read from the second look.
    with open(os.path.join(TMP, "out"), "w+") as o:
        r = subprocess.run([MALLOCK, "top", "--batch", "--count", "3", "--",
                            SVC, "--producers=2", "--consumers=2",
                            "--duration=12"], stdout=o,
                           stderr=subprocess.PIPE, text=True, cwd=TMP,
                           timeout=120)
        o.seek(0)
        head = [l for l in o.read().splitlines() if l.startswith("shim ")]
    print("text header lines: %r" % head)
    # A block per look; on a loaded machine the looks may outlast
    # svcqueue's run: top then ends with it, and a look that found it
    # ended says "-" (no CPU time).
    check(r.returncode == 0 and len(head) >= 2 and
          head[0].startswith("shim cost: - (") and
          any("% of the process's CPU (est., " in l for l in head[1:]),
          "the text header's shim share: %r (stderr %r)" %
          (head, r.stderr[-600:]))

elif CASE == "bad":
    # A gone PID.
    q = subprocess.Popen(["true"])
    q.wait()
    r = top("--batch", str(q.pid))
    check(r.returncode == 1 and r.stderr == "mallock top: no process %d\n"
          % q.pid, "a gone pid: %d %r" % (r.returncode, r.stderr))
    # A terminal too small: refused before the process is touched.
    p = svcqueue(4, MALLOCK_START="paused")
    time.sleep(0.3)
    before = ctl_status(p.pid)
    m, s = pty.openpty()
    termios.tcsetwinsize(s, (10, 40))
    r = subprocess.run([MALLOCK, "top", str(p.pid)], stdout=s,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    os.close(s)
    os.close(m)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and
          "the terminal is 40x10" in r.stderr,
          "a small terminal: %d %r" % (r.returncode, r.stderr))
    check(ctl_status(p.pid) == before and "paused" in before,
          "the process untouched: %r" % before)
    p.communicate(timeout=60)
    # A process of another user: top run as nobody against root's.
    if os.geteuid() == 0 and shutil.which("setpriv"):
        p = svcqueue(4, MALLOCK_START="paused")
        time.sleep(0.3)
        before = ctl_status(p.pid)
        mine = os.path.join(TMP, "mallock-nobody")
        shutil.copy(MALLOCK, mine)
        os.chmod(TMP, 0o755)
        os.chmod(mine, 0o755)
        r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                            "--clear-groups", mine, "top", "--batch",
                            str(p.pid)], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and
              r.stderr.startswith("mallock top: process %d (svcqueue) runs "
                                  "as uid 0, not as you" % p.pid),
              "another user's process: %d %r" % (r.returncode, r.stderr))
        check(ctl_status(p.pid) == before and "paused" in before,
              "the process untouched: %r" % before)
        p.communicate(timeout=60)
    else:
        print("not run: a process of another user (needs root to switch "
              "users)")
    # A process ending mid-view.
    p = svcqueue(1.5, MALLOCK_START="paused")
    time.sleep(0.3)
    r = top("--batch", "--count", "20", str(p.pid))
    errs = [l for l in r.stderr.splitlines() if "ended after" in l]
    check(r.returncode == 1 and len(errs) == 1,
          "ended mid-view: %d %r" % (r.returncode, r.stderr))
    p.communicate(timeout=60)
    check(p.returncode == 0, "the process ended well")
elif CASE == "attach":
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    p = subprocess.Popen([SVC, "--producers=2", "--consumers=2",
                          "--duration=12"], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    time.sleep(0.5)
    kept = os.path.join(TMP, "att.%p.trace")
    r = top("--batch", "--count", "2", "--attach", str(p.pid), "-o", kept)
    if "ptrace" in r.stderr and r.returncode:
        p.kill()
        print("SKIP: ptrace refused: " + r.stderr)
        sys.exit(77)
    check(r.returncode == 0, "top --attach: %d %r" % (r.returncode,
                                                      r.stderr))
    blocks = r.stdout.split("mallock top - ")[1:]
    check(len(blocks) == 2 and all("svcqueue (pid %d)" % p.pid in b
                                   for b in blocks), "2 blocks of svcqueue")
    check("detached" in r.stderr, "detached at the end: %r" % r.stderr)
    check(alive(p.pid) and not os.path.exists(page_of(p.pid)),
          "the process runs on, its page gone")
    err = p.communicate(timeout=60)[1]
    check(p.returncode == 0, "svcqueue ended well: %d %r"
          % (p.returncode, err[-300:]))
    check(os.path.getsize(kept.replace("%p", str(p.pid))) > 0,
          "the trace is kept")
elif CASE == "memcached":
    mc = shutil.which("memcached")
    if not mc:
        print("SKIP: memcached is not installed (apt-get install memcached)")
        sys.exit(77)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([mc, "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                          "-t", "4", "-u", "nobody"],
                         env=env(MALLOCK_START="paused",
                                 MALLOCK_OUTPUT=os.path.join(TMP,
                                                             "mc.%p.trace")),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    os.chmod(TMP, 0o777)
    stop = threading.Event()

    def load(n):
        for _ in range(50):
            try:
                c = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.1)
        c.settimeout(10)
        f = c.makefile("rwb")
        i = 0
        while not stop.is_set():
            k = b"k%d_%d" % (n, i % 500)
            v = b"x" * (64 + i % 900)
            f.write(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (k, len(v), v,
                                                               k))
            f.flush()
            f.readline()  # STORED
            while f.readline() not in (b"END\r\n", b""):
                pass
            i += 1
        c.close()

    ts = [threading.Thread(target=load, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    time.sleep(1)
    r = top("--batch", "--count", "3", str(p.pid))
    check(r.returncode == 0, "top on memcached: %d %r" % (r.returncode,
                                                          r.stderr))
    blocks = r.stdout.split("mallock top - ")[1:]
    check(len(blocks) == 3, "3 blocks: %d" % len(blocks))
    check(all("memcached (pid %d)" % p.pid in b for b in blocks),
          "each block names memcached and its pid")
    check("paused" in ctl_status(p.pid), "paused again after top")
    check(alive(p.pid), "memcached runs on, same pid")
    time.sleep(0.5)
    stop.set()
    for t in ts:
        t.join()
    trace = os.path.join(TMP, "mc.%d.trace" % p.pid)
    p.terminate()
    err = p.communicate(timeout=30)[1]
    check(p.returncode == 0 and not err.strip(),
          "memcached ended cleanly: %d %r" % (p.returncode, err[-300:]))
    check(not os.path.exists(page_of(p.pid)), "no page left")
    locks, _ = report_names(trace)
    last = blocks[-1]
    sec = last.split("Lock classes by")[1].split("\n\n")[0].splitlines()[2:]
    named = [l[2:30].strip().lstrip("*") for l in sec]
    check(named and all(same_name(n, locks) for n in named),
          "top's locks %r are report's %r" % (named, sorted(locks)))
    check(len(set(named)) == len(named),
          "each lock row names its own class: %r" % named)
    print(last)
else:
    sys.exit("unknown case " + CASE)

pycheck.done("top_" + CASE)
