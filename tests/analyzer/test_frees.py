#!/usr/bin/env python3
"""Frees under a lock are called frees, and one lock is one
alloc_under_lock finding (forged traces, 1 tick = 1 ns).

Two threads take one mutex in turn, every acquisition contended (ACQ_WAIT,
1000 ns), SECTIONS holds of HOLD ns taken at the holding code (stack 300,
0x3300). Blocks are allocated at sites A (stack 100, 0x1100), B (101,
0x1200) and C (102, 0x1300). Four traces:

  frees   each hold frees a block made at A before the lock was taken
          (rsyslog's DeleteProcessedBatch under its queue mutex): frees
          counted, advice to free after unlocking naming A and the
          holding code, the cascade's step 4 says so;
  allocs  each hold allocates at A, the block is freed after the release:
          today's advice (move the allocation out);
  mixed   each hold allocates at A (600 ns) and frees a block made at B
          outside it (400 ns): both parts, 60% and 40%;
  three   each hold frees one block from each of A, B and C: ONE finding,
          its three sites in the evidence with their frees.

HOLD is short enough that the holders spend over 5% of their hold in the
allocator: past lock_contention's minimums, the lock's one finding is
then alloc_under_lock (docs/mallock-report.md, "Lock contention")."""
from common import *

SECTIONS, HOLD = 400, 5000
SITE = {"A": (100, 0x1100), "B": (101, 0x1200), "C": (102, 0x1300)}
HOLDER = (300, 0x3300)


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def process():
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/frees") + s(b"frees") + s(b"h") + s(b"test")
    proc = meta(0x80, body)
    # The code's module (not on disk: unnamed frames are module+offset).
    proc += meta(0x81, uv(0) + uv(0x1000) + uv(0x4000) + s(b"/bin/frees") +
                 s(b""))
    for sid, pc in list(SITE.values()) + [HOLDER]:
        proc += meta(0x82, uv(sid) + uv(1) + uv(pc))  # STACK
    proc += meta(0x83, uv(1) + uv(0x9100) + uv(0) + uv(0))  # LOCK_NEW
    proc += meta(0x84, uv(1) + uv(0) + s(b"batch.lock"))  # LOCK_NAME
    return proc


class Stream:
    def __init__(self):
        self.rec, self.last, self.lastp = [], 1000, 0

    def at(self, tsc, code, fields):
        self.rec.append(bytes([code]) + uv(tsc - self.last) + fields)
        self.last = tsc

    def alloc(self, tsc, p, site, ticks):
        self.at(tsc, 0x01, uv(zz(p - self.lastp)) + uv(64) +
                uv(SITE[site][0]) + uv(ticks) + b"\x00")
        self.lastp = p

    def free(self, tsc, p, ticks):
        self.at(tsc, 0x02, uv(zz(p - self.lastp)) + uv(ticks))
        self.lastp = p


def trace(name, before, inside, after, cond=False):
    """Each hold k: before(w, t, k) outside (returns the next tsc), the
    ACQ_WAIT, inside(w, t, k) in the hold, the REL at t + HOLD, after(w,
    t, k) outside. cond: every other hold waits on a condition first
    (COND_WAIT, COND_WAKE) and frees in the hold the wake began, as a
    consumer does: its site is the one of the hold the wait ended."""
    streams = {7: Stream(), 8: Stream()}
    t = 2000
    for k in range(SECTIONS):
        w = streams[7 + k % 2]
        t = before(w, t, k)
        w.at(t, 0x06, uv(1) + uv(HOLDER[0]) + uv(1000) + uv(2))  # ACQ_WAIT
        if cond and k % 2:
            w.at(t + 2, 0x0b, uv(2) + uv(1))  # COND_WAIT
            w.at(t + 6, 0x0c, uv(2) + uv(1) + uv(0))  # COND_WAKE
        inside(w, t + 10, k)
        w.at(t + HOLD, 0x09, uv(1))  # REL
        after(w, t + HOLD + 10, k)
        t += HOLD + 100
    path = os.path.join(TMP, name + ".trace")
    with open(path, "wb") as f:
        f.write(file_header(1))
        f.write(chunk(0, process()))
        for tid, w in streams.items():
            f.write(chunk(tid, b"".join(w.rec)))
    return path


def ptr(site, k):
    return 0x100000 * (1 + "ABC".index(site)) + 64 * k


def nothing(w, t, k):
    return t


def make(sites, ns):
    def before(w, t, k):
        for s in sites:
            t += 200
            w.alloc(t, ptr(s, k), s, ns)
        return t + 200
    return before


def frees_of(sites, ns):
    def inside(w, t, k):
        for s in sites:
            t += ns + 10
            w.free(t, ptr(s, k), ns)
    return inside


def report(path):
    d = report_json("--no-symbols", path)
    aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"]
    rc, out, err = run("report", "--no-symbols", path)
    eq(rc, 0, path + ": text report")
    return aul, " ".join(out.split())


def cascade(text):
    i = text.find("The cascade (finding")
    return text[i:text.find("Locks (classes", i)] if i >= 0 else ""


# ---- frees only ----
aul, text = report(trace("frees", make("A", 100), frees_of("A", 500), nothing,
                         cond=True))
eq(len(aul), 1, "frees: one alloc_under_lock finding")
for f in aul[:1]:
    ev = f["evidence"]
    eq((ev["calls"], ev["allocs"], ev["frees"]), (SECTIONS, 0, SECTIONS),
       "frees: the calls are frees")
    eq(ev.get("free_share"), 1, "frees: free_share")
    eq(ev.get("free_ns_in_holds"), SECTIONS * 500, "frees: their allocator time")
    eq(ev.get("free_ns_at_hold_site"), SECTIONS * 500,
       "frees: all at the holding code, those after a condition wake too")
    eq(ev.get("free_hold_sites"), 1, "frees: one holding code")
    eq(ev.get("sites"), 1, "frees: one allocation site")
    a = f["advice"]
    check("after unlocking" in a, "frees: advice to free after unlocking: " + a)
    check("made at frees+0x1100" in a, "frees: advice names the blocks' site: " + a)
    check("holds taken at frees+0x3300" in a,
          "frees: advice names the holding code: " + a)
    check("Move the allocation" not in a,
          "frees: no advice to move an allocation: " + a)
    eq(f.get("free_hold_site", {}).get("address"), "0x3300",
       "frees: free_hold_site")
    eq([(x["allocs"], x["frees"]) for x in f.get("sites", [])],
       [(0, SECTIONS)], "frees: the site's allocs and frees")
c = cascade(text)
check("freeing the blocks after unlocking" in c and "moving" not in c and
      "waits that found no work" in c,
      "frees: cascade step 4: " + c)
check("(0 allocations, %d frees)" % SECTIONS in c, "frees: step 3: " + c)
check("frees take 100.0% of the allocator time in these holds" in c and
      "holds taken at frees+0x3300" in c, "frees: step 3 says where: " + c)

# ---- allocations only ----
def alloc_in(w, t, k):
    w.alloc(t + 500, ptr("A", k), "A", 500)


def free_after(w, t, k):
    w.free(t + 100, ptr("A", k), 100)


aul, text = report(trace("allocs", nothing, alloc_in, free_after))
eq(len(aul), 1, "allocs: one alloc_under_lock finding")
for f in aul[:1]:
    ev = f["evidence"]
    eq((ev["calls"], ev["allocs"], ev["frees"]), (SECTIONS, SECTIONS, 0),
       "allocs: the calls are allocations")
    eq(ev.get("free_share"), 0, "allocs: free_share")
    a = f["advice"]
    check(a.startswith("Move the allocation at frees+0x1100 out of the critical "
                       "section") and "pre-allocate" in a,
          "allocs: today's advice: " + a)
    check("after unlocking" not in a, "allocs: no free advice: " + a)
c = cascade(text)
check("moving the allocation out of the critical section" in c and
      "freeing" not in c, "allocs: cascade step 4: " + c)

# ---- mixed: 60% allocations, 40% frees ----
def mixed_in(w, t, k):
    w.alloc(t + 600, ptr("A", k), "A", 600)
    w.free(t + 1100, ptr("B", k), 400)


aul, text = report(trace("mixed", make("B", 100), mixed_in, free_after))
eq(len(aul), 1, "mixed: one alloc_under_lock finding")
for f in aul[:1]:
    ev = f["evidence"]
    eq((ev["allocs"], ev["frees"], ev.get("sites")), (SECTIONS, SECTIONS, 2),
       "mixed: allocations, frees, two sites")
    near(ev.get("free_share", 0), 0.4, 1e-9, "mixed: free_share")
    a = f["advice"]
    check("Move the allocation at frees+0x1100" in a and
          "allocations take 60.0%" in a, "mixed: the allocation part: " + a)
    check("made at frees+0x1200" in a and "after unlocking" in a and
          "frees take 40.0%" in a, "mixed: the free part: " + a)
c = cascade(text)
check("moving the allocation" in c and "freeing the blocks after unlocking"
      in c and "60.0% in allocations" in c and "40.0% in frees" in c,
      "mixed: cascade step 4 says both: " + c)

# ---- three sites freed under one lock: one finding ----
aul, text = report(trace("three", make("ABC", 100), frees_of("ABC", 300),
                         nothing))
eq(len(aul), 1, "three sites: ONE alloc_under_lock finding (%s)" %
   [f.get("site") for f in aul])
for f in aul[:1]:
    ev = f["evidence"]
    eq((ev["calls"], ev["allocs"], ev["frees"]), (3 * SECTIONS, 0,
                                                 3 * SECTIONS),
       "three sites: every free counted")
    eq(ev.get("sites"), 3, "three sites: evidence sites")
    eq(f.get("sites_total"), 3, "three sites: sites_total")
    eq(sorted(x["site"]["address"] for x in f.get("sites", [])),
       ["0x1100", "0x1200", "0x1300"], "three sites: listed")
    eq([x["frees"] for x in f.get("sites", [])], [SECTIONS] * 3,
       "three sites: each one's frees")
    check("and 2 other sites" in f["advice"] and
          "after unlocking" in f["advice"], "three sites: advice: " +
          f["advice"])
check("3 allocation sites of the blocks" in text, "three sites: text lists them")

# ---- the advice names the heaviest site, not the most frequent ----
# A and B are freed in every hold (100 ns each), C in all but the first
# (900 ns each): C has one free fewer and nine times the time.


def frees_heavy_c(w, t, k):
    for s, ns in (("A", 100), ("B", 100), ("C", 900)):
        t += ns + 10
        if s != "C" or k:
            w.free(t, ptr(s, k), ns)


aul, text = report(trace("heavy", make("ABC", 100), frees_heavy_c, nothing))
eq(len(aul), 1, "heavy: one alloc_under_lock finding")
for f in aul[:1]:
    check("made at frees+0x1300 and 2 other sites" in f["advice"],
          "heavy: advice names C, whose frees took the most time: " +
          f["advice"])
done("analyzer_frees")
