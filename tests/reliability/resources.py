"""resources.py BUILD_DIR - out of resources. In every case the host runs
on unharmed (status and stdout as without the shim), the shim says once on
stderr what it stopped doing, and what was written is readable:

  unwritable   the output directory is a read-only tmpfs (root) or mode
               0555 (not root): "cannot create trace file", no trace
  fsize0       RLIMIT_FSIZE 0: the file header cannot be written; the host
               must not die of SIGXFSZ, nor keep an fd on the file
  fsize        RLIMIT_FSIZE 256 KiB: a write fails mid-run; the trace is
               read up to its last complete chunk
  fsizectl     the same in a process that runs on: `mallock ctl status`
               says recording stopped, and why
  enospc       a 512 KiB tmpfs fills up (root only; skipped otherwise)
  flood        4 KiB per-thread buffers under a flood of events from 4
               threads: every event is kept (no drop), counts exact
  locktable    more distinct locks than the lock table holds: one warning,
               the lost events counted as drops in the report, those of a
               thread blocked at exit in a DROP that main's exit writes,
               and the END's count equal to the event records
"""
import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx  # noqa: E402

c = Ctx("resources", sys.argv[1])
ALLOCMT = [c.bin("allocmt"), "4", "30000"]
bare = c.run(ALLOCMT)
c.check(bare[0] == 0, "bare allocmt: status %s" % bare[0])
mutex_line = re.compile(rb"mutex 0x[0-9a-f]+\n")


def shim_lines(err):
    """The shim's lines on stderr (allocmt's own "mutex" line removed)."""
    return [ln for ln in mutex_line.sub(b"", err).decode().splitlines() if ln]


def mount_tmpfs(d, opts):
    """Mounts a tmpfs on d: None, or why it could not (not root, or mount's
    own words)."""
    if os.geteuid() != 0:
        return "not root (euid %d)" % os.geteuid()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", d],
                       stderr=subprocess.PIPE)
    return None if r.returncode == 0 else r.stderr.decode().strip()


def umount(d):
    subprocess.run(["umount", d], stderr=subprocess.DEVNULL)


def host_ok(what, res):
    st, out, err = res
    c.check(st == bare[0] and out == bare[1],
            "%s: status %s (bare %s), stdout %r" % (what, st, bare[0], out))


def one_warning(what, res, pattern):
    lines = shim_lines(res[2])
    c.check(len(lines) == 1 and re.match(pattern, lines[0]),
            "%s: expected one line matching %r on stderr, got %r" %
            (what, pattern, lines))


# -- unwritable directory
d = c.tmpdir("res_unwritable")
ro = os.path.join(d, "ro")
os.makedirs(ro)
mounted = mount_tmpfs(ro, "ro,size=64k") is None
if not mounted:  # as a user, mode 0555 does it (root writes through it)
    os.chmod(ro, 0o555)
res = c.run(ALLOCMT, env=c.shim_env(os.path.join(ro, "t.trace")))
host_ok("unwritable", res)
one_warning("unwritable", res, r"^mallock: cannot create trace file .*; "
            r"recording off$")
c.check(not os.listdir(ro), "unwritable: something was written")
if mounted:
    umount(ro)

# -- RLIMIT_FSIZE 0 and 256 KiB


def fsize(n):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))


d = c.tmpdir("res_fsize0")
res = c.run(ALLOCMT, env=c.shim_env(os.path.join(d, "t.trace")),
            preexec=fsize(0))
host_ok("fsize0", res)
one_warning("fsize0", res, r"^mallock: cannot create trace file .*File too "
            r"large; recording off$")
# The shim gave up on the file: the host holds no fd open on it.
res = c.run(["ls", "-l", "/proc/self/fd"],
            env=c.shim_env(os.path.join(d, "fds.trace")), preexec=fsize(0))
fds = res[1].decode()
c.check(res[0] == 0 and re.search(r" 2 -> ", fds) and "fds.trace" not in fds,
        "fsize0: the host's fds after the shim gave up: %s %r" %
        (res[0], fds))

for what, limit in (("fsize", 256 << 10), ("enospc", None)):
    d = c.tmpdir("res_" + what)
    pre = None
    if limit:
        pre = fsize(limit)
    else:
        why = mount_tmpfs(d, "size=512k")
        if why:
            c.skip("enospc: cannot mount a 512 KiB tmpfs: " + why)
            continue
    try:
        res = c.run(ALLOCMT, env=c.shim_env(os.path.join(d, "t.trace"),
                                            {"MALLOCK_BUFFER_KB": "16"}),
                    preexec=pre)
        host_ok(what, res)
        one_warning(what, res, r"^mallock: writing the trace failed: .*; "
                    r"recording stopped$")
        st, rep, err = c.report(os.path.join(d, "t.trace"))
        if c.check(st == 0, "%s: report failed: %s" % (what, err)):
            tr = rep["trace"]
            c.check(tr["events"] > 1000 and not tr["clean_exit"],
                    "%s: events %d clean %s" % (what, tr["events"],
                                                 tr["clean_exit"]))
            print("resources: %s: %d events read, truncated %s (%s)" %
                  (what, tr["events"], tr["truncated"],
                   tr.get("truncation", "ends at a chunk boundary")))
    finally:
        if not limit:
            umount(d)

# -- fsizectl: a write fails in a process that runs on: its control page
# says recording stopped and why (`mallock ctl status`), not recording.
d = c.tmpdir("res_fsizectl")
env = {k: v for k, v in os.environ.items()
       if not k.startswith("MALLOCK_") and k != "LD_PRELOAD"}
env.update(c.shim_env(os.path.join(d, "t.trace"), {"MALLOCK_BUFFER_KB": "16"}))
p = subprocess.Popen([c.bin("hostile"), "sigexit"], env=env,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     stdin=subprocess.DEVNULL, preexec_fn=fsize(256 << 10))
try:
    c.check(p.stdout.readline() == b"ready\n", "fsizectl: hostile started")
    st = ""
    for _ in range(100):  # the 256 KiB are written in well under 10 s
        st = subprocess.run([c.mallock, "ctl", "status", str(p.pid)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=30).stdout
        if "stopped" in st:
            break
        time.sleep(0.1)
    c.check("stopped (writing the trace failed" in st,
            "fsizectl: ctl status after the failed write: %r" % st)
finally:
    p.terminate()
    p.communicate(timeout=60)

# -- flood: 4 KiB buffers
d = c.tmpdir("res_flood")
res = c.run(ALLOCMT, env=c.shim_env(os.path.join(d, "t.trace"),
                                    {"MALLOCK_BUFFER_KB": "4"}))
host_ok("flood", res)
c.check(shim_lines(res[2]) == [], "flood: stderr %r" % res[2])
st, rep, err = c.report(os.path.join(d, "t.trace"))
if c.check(st == 0, "flood: report failed"):
    tr = rep["trace"]
    # 4 threads x 30000 x (ACQ REL ALLOC ALLOC REALLOC FREE FREE) + more
    c.check(tr["dropped_events"] == 0 and tr["clean_exit"] and
            tr["events"] >= 4 * 30000 * 7,
            "flood: dropped %d events %d" % (tr["dropped_events"],
                                             tr["events"]))
    print("resources: flood: %d events in %d chunks, 0 dropped" %
          (tr["events"], tr["chunks_read"]))

# -- lock table overflow
d = c.tmpdir("res_locktable")
FL = [c.bin("floodlocks"), "1300000"]
fb = c.run(FL, timeout=120)
res = c.run(FL, env=c.shim_env(os.path.join(d, "t.trace"),
                               {"MALLOCK_UNWIND": "none"}), timeout=120)
c.check(res[0] == fb[0] == 0 and res[1] == fb[1],
        "locktable: host changed: %s %r" % (res[0], res[1]))
one_warning("locktable", res, r"^mallock: lock table full")
st, rep, err = c.report(os.path.join(d, "t.trace"))
if c.check(st == 0, "locktable: report failed: %s" % err):
    tr = rep["trace"]
    # Every ACQ and REL is either recorded or counted as dropped.
    n = 1300000
    c.check(tr["dropped_events"] >= 2 * (n - (1 << 20)) and
            tr["events"] + tr["dropped_events"] >= 2 * n and
            tr["clean_exit"], "locktable: events %d dropped %d (%d lock "
            "operations)" % (tr["events"], tr["dropped_events"], 2 * n))
    print("resources: locktable: %d events, %d dropped" %
          (tr["events"], tr["dropped_events"]))
# The thread still blocked at exit lost its two events (a contended
# acquisition and its release, of a lock the full table has no room for):
# one DROP of 2, which main's exit wrote for it. The END record counts
# each event record once, that DROP included.
dump = subprocess.run([c.bin("trace_stats"), "-d", os.path.join(d, "t.trace")],
                      stdout=subprocess.PIPE, text=True, timeout=60).stdout
summ = subprocess.run([c.bin("trace_stats"), os.path.join(d, "t.trace")],
                      stdout=subprocess.PIPE, text=True, timeout=60).stdout
pid = re.search(r"^pid (\d+)$", summ, re.M)
drops = {}
for m in re.finditer(r"^tid=(\d+) .* DROP (\d+)$", dump, re.M):
    drops[m.group(1)] = drops.get(m.group(1), 0) + int(m.group(2))
other = {t: n for t, n in drops.items() if pid and t != pid.group(1)}
c.check(list(other.values()) == [2], "locktable: the blocked thread's "
        "drops %s (pid %s), expected one thread with 2" %
        (other, pid and pid.group(1)))
META = {"PROCESS", "MODULE", "STACK", "LOCK_NEW", "LOCK_NAME", "THREAD_NAME",
        "END", "NOTE"}
records = sum(int(f[1]) for f in (ln.split() for ln in summ.splitlines())
              if len(f) == 2 and f[0].isupper() and f[0] not in META)
end = re.search(r"^end 1 events (\d+) ", summ, re.M)
c.check(end and int(end.group(1)) == records, "locktable: the END counts "
        "%s events, the trace holds %d" % (end and end.group(1), records))
c.done()
