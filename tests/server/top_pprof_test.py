#!/usr/bin/env python3
"""`mallock top --pprof-dir DIR` (docs/mallock-top.md) on svcqueue.

usage: top_pprof_test.py MALLOCK SVCQUEUE TMPDIR

- top --batch --count 5 --pprof-dir D -- svcqueue (2.5 s): the program ends
  before the fifth interval, so top's last look reads the whole trace.
  One profile per block, named mallock-PID-MS.pb.gz in time order, nothing
  else left in D; each read back by `go tool pprof -raw` (Debian golang-go,
  installed when missing; exit 77 only when that install fails), with the
  sample types of `mallock report --format=pprof` of the kept trace. The
  profiles hold intervals: their values summed, per lock and thread too,
  are the report's (cumulative profiles would sum to more: two of them
  hold waits); each holds its block's interval (the contentions of
  svcqueue.lock, as the block counts them) and starts where the previous
  one ended.
- a DIR that is a file: one line, exit 1, the program never started.
- D renamed away after the first profile: one line saying no more profiles
  are written, top goes on to its last block and exits 0.
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
from pycheck import check  # noqa: E402

pycheck.setup(stop=True, echo=True)
MALLOCK, SVC, TMP = sys.argv[1:4]
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


def find_go():
    for g in (shutil.which("go"), "/usr/lib/go/bin/go"):
        if g and os.path.exists(g):
            return g
    print("go missing: apt-get install -y golang-go")
    try:
        subprocess.run(["apt-get", "install", "-y", "golang-go"],
                       capture_output=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        print("apt-get: %s" % e)
    return shutil.which("go")


GO = find_go()
if not GO:
    print("SKIP: go (golang-go) not installable here")
    sys.exit(77)
GOENV = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"),
             GOFLAGS="", GOTOOLCHAIN="local")


def raw(path):
    """`pprof -raw` of path: (sample types, [(values, labels)], Time in
    ns since the epoch)."""
    with open(path, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", path + ": gzip magic")
    r = subprocess.run([GO, "tool", "pprof", "-raw", path], env=GOENV,
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "pprof -raw %s: %s" % (path, r.stderr[-300:]))
    lines = r.stdout.splitlines()
    i = lines.index("Samples:")
    types = [t.replace("[dflt]", "") for t in lines[i + 1].split()]
    samples = []
    for line in lines[i + 2:]:
        if line.startswith("Locations"):
            break
        m = re.match(r"\s+([\d\s]+):", line)
        if m:
            samples.append(([int(x) for x in m.group(1).split()], {}))
        else:
            samples[-1][1].update(re.findall(r"(\w+):\[([^\]]*)\]", line))
    t = re.search(r"^Time: (\S+ \S+)", r.stdout, re.M)
    ns = None
    if t:
        day, clock = t.group(1).split()
        whole, _, frac = clock.partition(".")
        ns = int(time.mktime(time.strptime(day + " " + whole,
                                           "%Y-%m-%d %H:%M:%S"))
                 - time.timezone) * 10**9 + int((frac + "0" * 9)[:9])
    return types, samples, ns


def sums(samples, key=None):
    """Values summed, per key(labels) when key is given."""
    out = {}
    for v, lab in samples:
        k = key(lab) if key else None
        acc = out.setdefault(k, [0] * len(v))
        for i, x in enumerate(v):
            acc[i] += x
    return out if key else out.get(None, [])


def run_top(d, kept, duration, count):
    with open(os.path.join(TMP, "out"), "w+") as o, \
            open(os.path.join(TMP, "err"), "w+") as e:
        r = subprocess.run([MALLOCK, "top", "--batch", "--count", str(count),
                            "--pprof-dir", d, "-o", kept, "--", SVC,
                            "--producers=2", "--consumers=2",
                            "--duration=%s" % duration], stdout=o, stderr=e,
                           cwd=TMP, timeout=120)
        o.seek(0)
        e.seek(0)
        return r.returncode, o.read(), e.read()


# ---- the profiles of a run -------------------------------------------------
D = os.path.join(TMP, "profiles")
kept = os.path.join(TMP, "kept.trace")
rc, out, err = run_top(D, kept, 2.5, 5)
check(rc == 0, "top --pprof-dir: exit %d %r" % (rc, err[-400:]))
blocks = out.split("mallock top - ")[1:]
pid = int(blocks[0].split("(pid ")[1].split(")")[0])
names = sorted(os.listdir(D))
check(len(blocks) >= 2 and len(names) == len(blocks),
      "one profile per block: %d blocks, files %r" % (len(blocks), names))
ends = []
for n in names:
    m = re.fullmatch(r"mallock-(\d+)-(\d{13})\.pb\.gz", n)
    check(m and int(m.group(1)) == pid, "the name %r: mallock-%d-MS.pb.gz"
          % (n, pid))
    ends.append(int(m.group(2)))
check(ends == sorted(set(ends)), "the names sort by time: %r" % ends)

rp = os.path.join(TMP, "report.pb.gz")
r = subprocess.run([MALLOCK, "report", "--format=pprof", "-o", rp, kept],
                   capture_output=True, text=True)
check(r.returncode == 0, "report --format=pprof: " + r.stderr[-300:])
rtypes, rsamples, _ = raw(rp)
check(rtypes == ["contentions/count", "delay/nanoseconds"],
      "the report's types %r" % rtypes)
profs = [raw(os.path.join(D, n)) for n in names]
for n, (types, samples, _) in zip(names, profs):
    check(types == rtypes, "%s: sample types %r, the report's %r"
          % (n, types, rtypes))
    check(all(any(v) for v, _ in samples), n + ": no sample of zeros")

# Each profile's values are its interval's: summed, they are the window's,
# which the last look read whole. Cumulative profiles sum to more as soon
# as two hold waits.
tot = [sums(s) for _, s, _ in profs]
check(sum(1 for t in tot if t and t[0]) >= 2,
      "two profiles hold waits: %r" % tot)
whole = [sum(t[i] for t in tot if t) for i in range(2)]


def same(a, b):
    """Counts equal; nanoseconds within a millionth (and 1 ns a sample):
    top's running model converts ticks to ns with the clock pairs of its
    first look, the report with all of them (docs/mallock-top.md)."""
    return a[0] == b[0] and abs(a[1] - b[1]) <= max(a[1] * 1e-6, 1) + a[0]


check(same(whole, sums(rsamples)),
      "the intervals sum to the window: %r, the report %r (per profile %r)"
      % (whole, sums(rsamples), tot))


def by_lock_thread(lab):
    return (lab.get("lock"), re.sub(r".*\(|\)", "", lab.get("thread", "")))


per = {}
for _, s, _ in profs:
    for k, v in sums(s, by_lock_thread).items():
        acc = per.setdefault(k, [0, 0])
        acc[0] += v[0]
        acc[1] += v[1]
rper = sums(rsamples, by_lock_thread)
check(per.keys() == rper.keys() and
      all(same(per[k], rper[k]) for k in per),
      "per lock and thread, the intervals sum to the report's: %r vs %r"
      % (per, sums(rsamples, by_lock_thread)))
# Each profile is its block's interval: the contentions of svcqueue.lock
# are the block's (its first "cont" column, the last interval's; human
# counts keep a tenth of k or M).
for i, (b, (_, s, _)) in enumerate(zip(blocks, profs)):
    m = re.search(r"^\s+\*?svcqueue\.lock\s+[\d.]+ \w+\s+([\d.]+)([kMG]?)\s",
                  b, re.M)
    check(m, "block %d has a row for svcqueue.lock" % (i + 1))
    unit = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    got = sums(s, lambda lab: lab.get("lock")).get("svcqueue.lock", [0])[0]
    check(abs(got - float(m.group(1)) * unit) <= 0.05 * unit,
          "profile %d: %d contentions of svcqueue.lock, the block's "
          "interval %s%s" % (i + 1, got, m.group(1), m.group(2)))
# A profile starts (time_nanos) where the previous one ended (its name).
for i in range(1, len(profs)):
    start = profs[i][2]
    check(start is not None and abs(start / 1e6 - ends[i - 1]) < 20,
          "profile %d starts at %s ms, the previous ends at %d"
          % (i + 1, start and start // 10**6, ends[i - 1]))

# ---- a DIR that cannot be written: before the program starts --------------
afile = os.path.join(TMP, "afile")
open(afile, "w").close()
kept2 = os.path.join(TMP, "never.trace")
rc, out, err = run_top(afile, kept2, 2, 2)
check(rc == 1 and out == "" and len(err.splitlines()) == 1
      and err.startswith("mallock top: --pprof-dir " + afile),
      "a file as DIR: one line, exit 1: %d %r" % (rc, err))
check(not os.path.exists(kept2), "the program was not started")

# ---- a write failing mid-run: said once, top goes on ----------------------
D3 = os.path.join(TMP, "moved")
p = subprocess.Popen([MALLOCK, "top", "--batch", "--count", "3",
                      "--pprof-dir", D3, "-o", os.path.join(TMP, "m.trace"),
                      "--", SVC, "--producers=2", "--consumers=2",
                      "--duration=8"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True, cwd=TMP)
for _ in range(600):
    if os.path.isdir(D3) and any(n.endswith(".pb.gz")
                                 for n in os.listdir(D3)):
        break
    time.sleep(0.01)
os.rename(D3, D3 + ".gone")
out, err = p.communicate(timeout=120)
bad = [line for line in err.splitlines() if "cannot write" in line]
check(p.returncode == 0 and out.count("mallock top - ") == 3,
      "top goes on: exit %d, %d blocks" % (p.returncode,
                                           out.count("mallock top - ")))
check(len(bad) == 1 and "no more profiles" in bad[0],
      "one line says the profiles stop: %r" % err)
check(not os.path.exists(D3), "nothing written after the failure")
pycheck.done("top_pprof")
