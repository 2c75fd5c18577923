#!/usr/bin/env python3
"""Folding destroyed per-object locks (analyzer/model/lockfold.c): a server
that makes a mutex inside every message destroys millions of them, and a
record each made the analyzer's memory grow with the window (rsyslogd: 2.1
GB for 8 s). A destroyed lock nobody holds is summed into its tuple and
its record dropped; every figure of the report must stay the same.

A trace written here, 1 tick = 1 ns: N messages, message k in the time
slot [k*1000, k*1000 + 1000). Thread 7 + k % 3 mallocs the message's block
at one of 40 addresses (malloc reuses them), makes its mutex at +0x18
(LOCK_NEW, LOCK_INIT at one of three init stacks: two share their site
frame, one class), takes it (some waited, with waits that tie; those of
the third stack's class all shorter than the 64 longest others), hands it
to the next
thread, which takes it, destroys it and frees the block. Some messages
are not foldable: one in 1000 is taken 120 times (a starvation candidate).
One in 97 is taken inside the global lock G, and one in 89 holds a second
mutex of its class, at +0x40 of its block, made, waited for and destroyed
inside its hold: their nests fold with them.

Beside the messages, across the compactions: four threads named
client-N take lock L (never destroyed), the fourth only twice, each
after a long wait (a starvation finding, which counts each thread's
acquisitions of L once, before and after a compaction renumbers L); and
thread 24 takes lock S inside lock R ten times, the last from the start
to the end, so a compaction finds that nest open.

Checks: the JSON, text and folded reports are byte-identical with and
without --no-fold; the class totals equal the sums computed here from the
trace; and --stats shows the lock table stayed small while nearly every
message's lock was folded. A second trace of 4098 mutexes made and
destroyed one after another checks when a compaction runs: --stats' peak
of lock records and its count of compactions."""
import re
from common import *

N = 30000
G = 1  # the global lock's id


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
body += s(b"/bin/fold") + s(b"fold") + s(b"h") + s(b"test")
proc = meta(0x80, body)
stacks = {100: [0x1100, 0x7000], 101: [0x1100, 0x7100], 102: [0x1200, 0x7200],
          103: [0x1300], 200: [0x3000, 0x7700], 300: [0x4000], 301: [0x4100],
          302: [0x4200, 0x7000], 310: [0x5000], 311: [0x5100],
          312: [0x5200], 313: [0x5300]}
for sid, fr in stacks.items():
    b = uv(sid) + uv(len(fr)) + uv(fr[0])
    for i in range(1, len(fr)):
        b += uv(zz(fr[i] - fr[i - 1]))
    proc += meta(0x82, b)
proc += meta(0x83, uv(G) + uv(0x9100) + uv(0) + uv(1))
L, Q, R, S = 6, 7, 8, 9  # the clients' lock, their life span's, a nest
for lk in (L, Q, R, S):
    proc += meta(0x83, uv(lk) + uv(0x9300 + 0x40 * (lk - L)) + uv(0) +
                 uv(1))

# Per thread: its records and the tsc of its last one.
# (the clients' chunks first, client-1 from tick 1000 as thread 7)
TIDS = (20, 21, 22, 23, 24, 7, 8, 9, 10)
recs = {t: [] for t in TIDS}
last = {t: 1000 for t in TIDS}
lastp = {t: 0 for t in TIDS}


def ev(tid, tsc, code, fields):
    assert tsc >= last[tid]
    recs[tid].append(bytes([code]) + uv(tsc - last[tid]) +
                     b"".join(fields))
    last[tid] = tsc


def mt(tid, code, body_):
    recs[tid].append(meta(code, body_))


def ptr(tid, p):
    d = p - lastp[tid]
    lastp[tid] = p
    return uv(zz(d))


# Expected sums, by init stack (the class's site) and in all.
exp = {"instances": 0, "acq": 0, "contended": 0, "wait": 0, "holds": 0,
       "hold": 0}
by_init = {}


def add(init, what, v):
    exp[what] += v
    by_init.setdefault(init, {"instances": 0, "acq": 0, "contended": 0,
                              "wait": 0, "holds": 0, "hold": 0})
    by_init[init][what] += v


for k in range(N):
    t0 = 1000 + k * 1000
    a, b = 7 + k % 3, 7 + (k + 1) % 3
    p = 0x100000 + (k % 40) * 0x100
    lid = 10 + k
    init = (100, 101, 102)[(k // 7) % 3]
    ev(a, t0, 0x01, [ptr(a, p), uv(96), uv(200), uv(10), b"\x00"])
    mt(a, 0x83, uv(lid) + uv(p + 0x18) + uv(0) + uv(1))
    ev(a, t0 + 10, 0x12, [uv(lid), uv(init)])
    add(init, "instances", 1)
    n = 120 if k % 1000 == 0 else 1
    t = t0 + 20
    for i in range(n):
        ev(a, t, 0x04, [uv(lid), uv(300)])
        ev(a, t + 1, 0x09, [uv(lid)])
        t += 2
        add(init, "acq", 1)
        add(init, "holds", 1)
        add(init, "hold", 1)
    t = t0 + 500
    nested = k % 97 == 0
    if nested:
        ev(b, t, 0x04, [uv(G), uv(300)])
    if k % 10 == 0:  # a contended acquisition, waits that tie
        w = 100 * (k % 37) if init != 102 else k % 37
        ev(b, t + 10, 0x06, [uv(lid), uv(301), uv(w), uv(2)])
        ev(b, t + 30, 0x0a, [uv(lid), uv(302)])
        add(init, "contended", 1)
        add(init, "wait", w)
    else:
        ev(b, t + 10, 0x04, [uv(lid), uv(300)])
        ev(b, t + 30, 0x09, [uv(lid)])
    add(init, "acq", 1)
    add(init, "holds", 1)
    add(init, "hold", 20)
    if nested:
        ev(b, t + 40, 0x09, [uv(G)])
    if k % 89 == 0:  # a second mutex of the class, at +0x40, inside it
        sib = 10 + N + k
        mt(b, 0x83, uv(sib) + uv(p + 0x40) + uv(0) + uv(1))
        ev(b, t + 50, 0x12, [uv(sib), uv(init)])
        ev(b, t + 55, 0x04, [uv(lid), uv(300)])
        ev(b, t + 60, 0x06, [uv(sib), uv(301), uv(50), uv(2)])
        ev(b, t + 65, 0x09, [uv(sib)])
        ev(b, t + 70, 0x09, [uv(lid)])
        ev(b, t + 75, 0x13, [uv(sib)])
        add(init, "instances", 1)
        add(init, "acq", 2)
        add(init, "contended", 1)
        add(init, "wait", 50)
        add(init, "holds", 2)
        add(init, "hold", 5 + 15)
    ev(b, t + 100, 0x13, [uv(lid)])
    ev(b, t + 110, 0x02, [ptr(b, p), uv(5)])
# A live lock at the end, never destroyed: thread 10.
mt(10, 0x83, uv(5) + uv(0x9200) + uv(0) + uv(1))
ev(10, 2000, 0x12, [uv(5), uv(103)])
ev(10, 2001, 0x04, [uv(5), uv(300)])
ev(10, 2002, 0x09, [uv(5)])

# The clients, 20 to 23, over the whole trace: each takes Q at its first
# and last tick; 20-22 take L 50 times each from tick 5000 (their entries
# for L made after those of messages that fold, so a compaction moves
# them), 23 twice, each after a wait of 10% of its life.
T = 1000 + N * 1000
for k, tid in enumerate((20, 21, 22, 23)):
    mt(tid, 0x85, uv(tid) + s(b"client-%d" % (k + 1)))
    ev(tid, 1000 + k, 0x04, [uv(Q), uv(311)])
    ev(tid, 1010 + k, 0x09, [uv(Q)])
    if tid != 23:
        for i in range(50):
            t = 5000 + i * (T // 50) + k * 300
            ev(tid, t, 0x04, [uv(L), uv(310)])
            ev(tid, t + 10, 0x09, [uv(L)])
    else:
        for t in (T * 3 // 10, T * 9 // 10):
            ev(tid, t, 0x06, [uv(L), uv(310), uv(T // 10), uv(2)])
            ev(tid, t + 10, 0x09, [uv(L)])
    ev(tid, T + 1500 + k, 0x04, [uv(Q), uv(311)])
    ev(tid, T + 1510 + k, 0x09, [uv(Q)])
# The open nest: thread 24 takes S inside R ten times (NEST_MIN), each
# waited for; the nine first for 10 ns, the last from the start to the end.
for i in range(10):
    t = 3000 + 100 * i
    ev(24, t, 0x06, [uv(R), uv(312), uv(500), uv(2)])
    ev(24, t + 10, 0x06, [uv(S), uv(313), uv(500), uv(2)])
    ev(24, t + 20 if i < 9 else T + 1000, 0x09, [uv(S)])
    ev(24, t + 30 if i < 9 else T + 1010, 0x09, [uv(R)])

path = os.path.join(TMP, "fold.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc))
    for tid in TIDS:
        f.write(chunk(tid, b"".join(recs[tid])))


def report(*args):
    rc, out, err = run("report", "--no-symbols", *args, path)
    eq(rc, 0, "report %s: %s" % (" ".join(args), err[-300:]))
    return out, err


for fmt in ("json", "text", "folded"):
    folded, _ = report("--format=" + fmt)
    whole, _ = report("--format=" + fmt, "--no-fold")
    check(folded == whole,
          "%s report identical with and without --no-fold" % fmt)
    if folded != whole:
        a, b = folded.splitlines(), whole.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print("  first difference, line %d:\n  fold:    %s\n"
                      "  no-fold: %s" % (i + 1, x[:200], y[:200]))
                break

d = json.loads(report("--format=json")[0])
# The global lock G (id 1, no init), the live lock (id 5) and the clients'
# and the nest's locks apart.
cls = [c for c in d["lock_classes"] if c["lock"] not in (G, 5, L, Q, R, S)]
eq(sum(c["instances"] for c in cls), exp["instances"], "instances")
eq(sum(c["acquisitions"] for c in cls), exp["acq"], "acquisitions")
eq(sum(c["contended"] for c in cls), exp["contended"], "contended")
eq(sum(c["wait_ns"] for c in cls), exp["wait"], "wait_ns")
eq(sum(c["holds"] for c in cls), exp["holds"], "holds")
eq(sum(c["hold_ns"] for c in cls), exp["hold"], "hold_ns")
check(d["locks_not_listed"]["locks"] + len(d["locks"]) >= N,
      "every instance listed or counted as not listed: %d + %d" %
      (d["locks_not_listed"]["locks"], len(d["locks"])))
# Per init site (the site frame of the class): 0x1100 is two init stacks.
site_of = {100: "0x1100", 101: "0x1100", 102: "0x1200"}
for site in ("0x1100", "0x1200"):
    want = sum(v["instances"] for i, v in by_init.items()
               if site_of[i] == site)
    got = sum(c["instances"] for c in cls
              if c["site"] and site in json.dumps(c["site"]))
    eq(got, want, "instances of the classes at %s" % site)

# The clients: one starvation finding on L, over the four threads, each
# counted once though a compaction renumbered L between their takes.
st = [f for f in d["findings"] if f["kind"] == "starvation"]
eq([f["evidence"].get("lock_id") for f in st], [L],
   "starvation findings (on the clients' lock)")
if st:
    eq(st[0]["evidence"].get("threads"), 4, "clients of L")
    eq(st[0]["evidence"].get("threads_behind"), 1, "clients behind on L")
# The nest open across the compactions: S's whole hold inside R counted
# in the nest of R and S.
ns = [f for f in d["findings"] if f["kind"] == "nested_lock" and
      f["lock"] == R]
eq([f["inner_lock"] for f in ns], [S], "nested_lock findings on R")
if ns:
    ev_ = ns[0]["evidence"]
    eq(ev_.get("nested_acquisitions"), 10, "S taken inside R")
    eq(ev_.get("inner_hold_ns_while_outer_held"), 9 * 10 + T + 1000 - 3910,
       "S's hold inside R, from before the compactions to after")

_, err = report("--format=json", "--stats")
m = re.search(r"lock records: (\d+) kept, (\d+) at most; (\d+) destroyed "
              r"locks folded", err)
check(m is not None, "--stats line: %r" % err)
if m:
    kept, peak, nfold = (int(x) for x in m.groups())
    # Not folded: the starvation candidates, the nested ones, a site
    # group's first instance, G and the live lock, and those kept whole
    # (FOLD_KEEP_TOP, two per tuple).
    check(nfold >= N - N // 97 - N // 1000 - 64 - 20,
          "nearly every message's lock folded: %d of %d" % (nfold, N))
    check(peak <= 3 * 4096, "the lock table stayed small: %d records at "
          "most for %d instances" % (peak, N))
    check(kept <= N // 97 + N // 1000 + 200, "records kept: %d" % kept)
_, err = report("--format=json", "--stats", "--no-fold")
check("0 destroyed locks folded" in err, "--no-fold folds none: %r" % err)

# When compaction runs (lockfold.c): once 4096 records (FOLD_COMPACT_MIN),
# and as many as the live ones, are retired, and once more at the end.
# Thread 7 makes 4098 mutexes one after another at one init stack, takes
# each once and destroys it: the first is its site group's first instance
# (never retired), the 4096 after it are retired, and the 4096th
# retirement compacts the table before the last mutex is made. --stats:
# two compactions, and the table held at most the 4096 retired records
# and the first instance.
M = 4098
proc2 = meta(0x80, body)
for sid in (100, 300):
    fr = stacks[sid]
    b = uv(sid) + uv(len(fr)) + uv(fr[0])
    for i in range(1, len(fr)):
        b += uv(zz(fr[i] - fr[i - 1]))
    proc2 += meta(0x82, b)
recs2, last2 = [], 1000
for k in range(M):
    lid, t = 10 + k, 1000 + k * 100
    recs2.append(meta(0x83, uv(lid) + uv(0x100000 + 64 * k) + uv(0) + uv(1)))
    for dt, code, f in ((0, 0x12, [uv(lid), uv(100)]),
                        (10, 0x04, [uv(lid), uv(300)]),
                        (20, 0x09, [uv(lid)]), (30, 0x13, [uv(lid)])):
        recs2.append(bytes([code]) + uv(t + dt - last2) + b"".join(f))
        last2 = t + dt
path = os.path.join(TMP, "compact.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc2))
    f.write(chunk(7, b"".join(recs2)))
_, err = report("--format=json", "--stats")
m = re.search(r"lock records: \d+ kept, (\d+) at most; \d+ destroyed "
              r"locks folded into \d+ tuples \((\d+) compactions\)", err)
check(m is not None, "--stats line: %r" % err)
if m:
    peak, ncomp = (int(x) for x in m.groups())
    eq(peak, 4097, "lock records at most: 4096 retired and the first")
    eq(ncomp, 2, "compactions: at 4096 retired records, at the end")
done("test_fold")
