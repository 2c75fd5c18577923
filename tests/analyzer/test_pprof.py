#!/usr/bin/env python3
"""--format=pprof read back by the real pprof.

usage: test_pprof.py MALLOCK MKTRACE SRCDIR

Records svcqueue (the demo's cascade), writes one profile per metric and
reads each with `go tool pprof -raw` (Debian golang-go, installed when
missing; exit 77 only when that install fails). Each metric's totals must
equal what the JSON report and the folded stacks say of the same trace, the
holder stacks of the queue lock must be the JSON report's contending points,
and the samples, mappings, functions and labels must be what pprof needs
(build-ids, file:line, lock and thread labels, -tagfocus).

The formats agree on the trace's totals: pprof, folded, JSON and text count
the same waits, the same holds (those re-taken after a condition wait too,
under the site of the hold the wait ended), and put the same allocator time
under the same stacks (a free under the stack that allocated its block, not
under a pseudo frame); function names carry no ELF symbol version, and
functions their first line."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MALLOCK, TMP, check, done, eq, run  # noqa: E402
from recorded import ensure_tool, record_svcqueue  # noqa: E402

go = ensure_tool("go", "golang-go")
if not go:
    print("SKIP: go (golang-go) not installable here")
    sys.exit(77)
ENV = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"),
           GOFLAGS="", GOTOOLCHAIN="local")

trace, j = record_svcqueue(MALLOCK, TMP)


def pprof(*args):
    r = subprocess.run([go, "tool", "pprof"] + list(args), env=ENV,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit("go tool pprof %s: %s" % (args, r.stderr))
    return r.stdout


def raw(path):
    """Parses `pprof -raw`: sample types, samples (values, location ids,
    labels), locations and mappings."""
    out = pprof("-raw", path)
    lines = out.splitlines()
    i = lines.index("Samples:")
    types = [t.replace("[dflt]", "") for t in lines[i + 1].split()]
    samples, k = [], i + 2
    while not lines[k].startswith("Locations"):
        m = re.match(r"\s+([\d\s]+):\s*([\d\s]*)$", lines[k])
        if m:
            samples.append({"v": [int(x) for x in m.group(1).split()],
                            "locs": tuple(m.group(2).split()),
                            "labels": {}})
        else:
            for key, val in re.findall(r"(\w+):\[([^\]]*)\]", lines[k]):
                samples[-1]["labels"][key] = val
        k += 1
    locs = {}
    k += 1
    while not lines[k].startswith("Mappings"):
        m = re.match(r"\s+(\d+): (.*)$", lines[k])
        if m:
            locs[m.group(1)] = [m.group(2)]
        else:
            locs[list(locs)[-1]].append(lines[k].strip())
        k += 1
    maps = lines[k + 1:]
    return types, samples, locs, maps, out


def folded_sum(metric):
    rc, out, err = run("report", "--format=folded", "--metric=" + metric,
                       trace)
    check(rc == 0, "folded %s: %s" % (metric, err))
    return sum(int(l.rsplit(" ", 1)[1]) for l in out.splitlines() if l)


def profile(metric, *extra):
    path = os.path.join(TMP, metric + ".pb.gz")
    rc, out, err = run("report", "--format=pprof", "--metric=" + metric,
                       "-o", path, *extra, trace)
    if rc != 0:
        raise SystemExit("mallock report --format=pprof: %s" % err)
    with open(path, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", metric + ": not gzip")
    return path


def totals(samples, n):
    return [sum(s["v"][i] for s in samples) for i in range(n)]


locks = j["locks"]
q = next(l for l in locks if l["name"] == "svcqueue.lock")

# ---- wait: Go's block profile -------------------------------------------
types, samples, locs, maps, out = raw(profile("wait"))
eq(types, ["contentions/count", "delay/nanoseconds"], "wait sample types")
cont, delay = totals(samples, 2)
eq(cont, j["totals"]["contended_acquisitions"], "wait: contentions total")
eq(delay, j["totals"]["lock_wait_ns"], "wait: delay total")
eq(delay, folded_sum("wait"), "wait: delay total vs folded")
qs = [s for s in samples if s["labels"].get("lock") == "svcqueue.lock"]
eq(totals(qs, 2), [q["contended"], q["wait_ns"]], "wait: svcqueue.lock")
check(all("thread" in s["labels"] for s in samples), "wait: thread labels")
tids = {t["tid"] for t in j["threads"] if t["contended_acquisitions"]}
seen = {int(re.search(r"\((\d+)\)|^(\d+)$", s["labels"]["thread"]).group(
    1) or 0) for s in samples}
eq(seen, tids, "wait: threads that waited")
for t in j["threads"]:
    ts = [s for s in samples if s["labels"]["thread"].endswith(
        "(%d)" % t["tid"]) or s["labels"]["thread"] == str(t["tid"])]
    eq(totals(ts, 2), [t["contended_acquisitions"], t["lock_wait_ns"]],
       "wait: thread %d" % t["tid"])
# mappings: the executable first, with its build-id, symbolized
check(maps and "/svcqueue " in maps[0] and "[FN][FL][LN][IN]" in maps[0],
      "first mapping is svcqueue, symbolized: %r" % maps[:1])
check(re.search(r" [0-9a-f]{40} ", maps[0]), "build-id in %r" % maps[:1])
check(any(re.search(r"svcqueue_put .*svcqueue\.c:\d+", l[0])
          for l in locs.values()), "svcqueue_put with file:line")
# -tagfocus narrows to one lock; -top agrees with -raw
top = pprof("-top", "-sample_index=contentions", "-tagfocus=lock=svcqueue",
            profile("wait"))
m = re.search(r"Total samples = (\d+)", top) or re.search(
    r"of (\d+) total", top)
check(m and int(m.group(1)) == q["contended"],
      "-tagfocus=lock=svcqueue -top: %s" % top[:400])

# ---- caused: Go's mutex profile -----------------------------------------
types, samples, locs, maps, out = raw(profile("caused"))
eq(types, ["contentions/count", "delay/nanoseconds", "hold/nanoseconds"],
   "caused sample types")
cont, delay, hold = totals(samples, 3)
eq(cont, sum(l["contended_holds"] for l in locks), "caused: contended holds")
eq(delay, folded_sum("caused"), "caused: delay vs folded")
check(0 < delay <= j["totals"]["lock_wait_ns"], "caused: delay <= wait")
by_stack = {}
for s in samples:
    if s["labels"].get("lock") == "svcqueue.lock":
        v = by_stack.setdefault(s["locs"], [0, 0, 0])
        for i in range(3):
            v[i] += s["v"][i]
have = {tuple(v) for v in by_stack.values()}
for p in q["contending_points"]:
    want = (p["holds"], p["wait_caused_ns"], p["hold_ns"])
    check(want in have, "caused: JSON contending point %r not in pprof %r"
          % (want, sorted(have)[:8]))
check(q["contending_points"], "svcqueue.lock has contending points")

# ---- hold ---------------------------------------------------------------
types, samples, locs, maps, out = raw(profile("hold"))
eq(types, ["holds/count", "hold/nanoseconds"], "hold sample types")
eq(totals(samples, 2)[1], folded_sum("hold"), "hold: ns vs folded")
check(q["cond_waits"] > 0, "svcqueue.lock had condition waits (%d)"
      % q["cond_waits"])
qs = [s for s in samples if s["labels"].get("lock") == "svcqueue.lock"]
eq(totals(qs, 2), [q["holds"], q["hold_ns"]], "hold: svcqueue.lock's holds "
   "and hold_ns, re-taken holds included, as JSON counts them")
rc, fo, err = run("report", "--format=folded", "--metric=hold", trace)
eq(sum(int(l.rsplit(" ", 1)[1]) for l in fo.splitlines()
       if l.endswith("]" + l[l.rfind(" "):]) and "[hold svcqueue.lock]" in l),
   q["hold_ns"], "hold: folded svcqueue.lock = JSON hold_ns")

# ---- alloc-under-lock ---------------------------------------------------
types, samples, locs, maps, out = raw(profile("alloc-under-lock"))
eq(types, ["alloc_objects/count", "alloc_space/bytes", "allocator_calls/count",
           "allocator_time/nanoseconds"], "alloc-under-lock sample types")
objs, space, calls, ns = totals(samples, 4)
eq(objs, sum(l["allocs_in_holds"] for l in locks), "alloc_objects")
eq(calls, sum(l["allocations_in_holds"] for l in locks), "allocator_calls")
eq(ns, sum(l["allocator_ns_in_holds"] for l in locks), "allocator_time")
eq(ns, folded_sum("alloc-under-lock"), "allocator_time vs folded")
check(q["allocs_in_holds"] > 0 and space >= 16 * q["allocs_in_holds"] // 2,
      "alloc_space %d for %d allocations" % (space, q["allocs_in_holds"]))
check(not any("[free" in l[0] for l in locs.values()),
      "alloc-under-lock: no pseudo frame for frees: %r" % [
          l for l in locs.values() if "[free" in l[0]][:2])


def fn_of(line):
    m = re.match(r"(?:0x[0-9a-f]+ )?(?:M=\d+ )?(\S+)", line)
    return m.group(1)


# the same allocator time under the same function paths as folded
pp = {}
for smp in samples:
    path = []
    for lid in smp["locs"]:
        # callee first, inlined too; a call without a stack (a free of a
        # block allocated before recording) is one location "[no stack]"
        # in pprof and no frame at all in folded
        path += [fn_of(x) for x in locs[lid] if "[no stack]" not in x]
    key = (";".join(reversed(path)), smp["labels"].get("lock"))
    pp[key] = pp.get(key, 0) + smp["v"][3]
rc, fo, err = run("report", "--format=folded", "--metric=alloc-under-lock",
                  trace)
fd = {}
for l in fo.splitlines():
    st, n = l.rsplit(" ", 1)
    fr = st.split(";")
    lock = re.match(r"\[alloc under (.*)\]$", fr[-1]).group(1)
    key = (";".join(fr[:-1]), lock)
    fd[key] = fd.get(key, 0) + int(n)
eq(pp, fd, "alloc-under-lock: pprof and folded, stack by stack")
top = pprof("-top", "-sample_index=alloc_objects", "-tagfocus=lock=svcqueue",
            profile("alloc-under-lock"))
check("tree_insert" in top or "svcqueue_put" in top,
      "alloc-under-lock -top names the insert: %s" % top[:600])

# ---- names: no ELF symbol version; functions' first lines ----------------
types, samples, locs, maps, out = raw(profile("wait"))
check("@@" not in out and not re.search(r"\w@GLIBC", out),
      "no symbol version in pprof names: %r" % re.findall(r"\S*@\S*", out)[:3])
rc, fo, err = run("report", "--format=folded", "--metric=wait", trace)
check("@" not in fo, "no symbol version in folded names")
starts = re.findall(r"svcqueue_put \S+svcqueue\.c:(\d+) s=(\d+)", out)
check(starts and all(0 < int(b) <= int(a) for a, b in starts),
      "svcqueue_put's start line before its lines: %r" % starts[:3])
offs = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/(0x[0-9a-f]+) ", "\n".join(maps),
                  re.M)
check(offs, "mappings with a file offset: %r" % maps[:2])

# ---- text agrees with JSON and pprof on the totals -------------------------
rc, text, err = run("report", "--top=1", trace)
m = re.search(r"([\d.]+[kM]?) lock acquisitions, ([\d.]+[kM]?) contended "
              r"\([^)]*\), ([\d.]+) (ns|us|ms|s) waited", text)
check(m, "text totals line: %r" % text[:600])
if m:
    def num(v):
        k = {"k": 1e3, "M": 1e6}.get(v[-1], 1)
        return float(v.rstrip("kM")) * k
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(4)]
    types, samples, locs, maps, out = raw(profile("wait"))
    cont, delay = totals(samples, 2)
    check(abs(num(m.group(2)) - cont) <= 0.001 * cont + 50,
          "text contended %s vs pprof %d" % (m.group(2), cont))
    check(abs(float(m.group(3)) * unit - delay) <= 0.001 * delay + 0.05 * unit,
          "text waited %s %s vs pprof %d" % (m.group(3), m.group(4), delay))
    check(abs(num(m.group(1)) - j["totals"]["lock_acquisitions"]) <=
          0.001 * j["totals"]["lock_acquisitions"] + 50,
          "text acquisitions %s vs JSON %d" % (m.group(1),
                                               j["totals"]["lock_acquisitions"]))

# ---- cross-thread -------------------------------------------------------
types, samples, locs, maps, out = raw(profile("cross-thread"))
eq(types, ["cross_thread_frees/count", "cross_thread_bytes/bytes"],
   "cross-thread sample types")
eq(totals(samples, 1)[0], j["totals"]["cross_thread_frees"],
   "cross-thread frees")
eq(totals(samples, 1)[0], folded_sum("cross-thread"), "cross-thread folded")

# ---- an inlined frame: two lines of one location, the callee first --------
INLINELOCK = sys.argv[4] if len(sys.argv) > 4 else None
check(INLINELOCK and os.path.exists(INLINELOCK), "inlinelock built")
if INLINELOCK:
    inl = os.path.join(TMP, "inl.trace")
    for attempt in range(3):
        r = subprocess.run([MALLOCK, "record", "-o", inl, "--", INLINELOCK],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "record inlinelock: %s" % r.stderr)
        path = os.path.join(TMP, "inl.pb.gz")
        rc, out, err = run("report", "--format=pprof", "-o", path, inl)
        types, samples, locs, maps, out = raw(path)
        if samples:
            break
        print("inlinelock: no contended acquisition, recording again")
    lines = [l for l in locs.values() if len(l) > 1]
    check(any(re.search(r"M=\d+ locked_add .*inlinelock\.c:\d+", l[0]) and
              re.match(r"worker .*inlinelock\.c:\d+", l[1]) for l in lines),
          "locked_add inlined into worker, one location: %r" % locs)
    os.unlink(inl)

# ---- errors ---------------------------------------------------------------
rc, out, err = run("report", "--format=pprof", "-o", "/nonexistent/x.pb.gz",
                   trace)
check(rc == 1 and "cannot write" in err, "unwritable -o: %d %s" % (rc, err))
if not os.environ.get("MALLOCK_TEST_TRACE"):
    os.unlink(trace)
done("analyzer_pprof")
