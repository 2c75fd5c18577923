#!/usr/bin/env python3
"""Two readings of forged traces that no load can disturb (1 tick = 1 ns).

1. Frees without a stack in holds. Two threads take one mutex in turn,
   every acquisition contended; each hold makes CALLS mallocs (stack 100)
   and CALLS frees of blocks the trace never allocated (unsampled, or
   allocated before recording), CALL_NS each. The frees have no stack: the
   report must give the lock one alloc_under_lock finding, at the mallocs'
   site, that counts the frees apart (calls_without_stack and their ns),
   and scores the lock's whole allocator share, not a second finding
   "(no stack recorded)".

2. Calls outside locks timed one in N (trace format 1.4, PROCESS
   time_every = 4). One thread makes PAIRS malloc+free pairs outside any
   lock, one call in four timed (OUT_NS ticks), the others untimed (0
   ticks), then one hold with two timed calls. The report must count every
   call, count the untimed ones, weigh each timed call outside by 4 and
   each call inside by 1."""
from common import *

SECTIONS, CALLS, CALL_NS, HOLD = 400, 3, 1000, 20000
PAIRS, EVERY, OUT_NS, IN_NS = 1000, 4, 300, 700


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def process(extra=b""):
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/forged") + s(b"forged") + s(b"h") + s(b"test") + extra
    proc = meta(0x80, body)
    proc += meta(0x82, uv(100) + uv(1) + uv(0x1100))  # allocation site
    proc += meta(0x82, uv(200) + uv(1) + uv(0x2200))  # lock site
    proc += meta(0x83, uv(1) + uv(0x9100) + uv(0) + uv(0))
    proc += meta(0x84, uv(1) + uv(0) + s(b"forged.lock"))
    return proc


def write(path, minor, proc, streams):
    with open(path, "wb") as f:
        f.write(file_header(minor))
        f.write(chunk(0, proc))
        for tid, rec in streams.items():
            f.write(chunk(tid, b"".join(rec)))


class Stream:
    def __init__(self):
        self.rec, self.last, self.lastp = [], 1000, 0

    def at(self, tsc, code, fields):
        self.rec.append(bytes([code]) + uv(tsc - self.last) + fields)
        self.last = tsc

    def alloc(self, tsc, p, ticks):
        self.at(tsc, 0x01, uv(zz(p - self.lastp)) + uv(64) + uv(100) +
                uv(ticks) + b"\x00")
        self.lastp = p

    def free(self, tsc, p, ticks):
        self.at(tsc, 0x02, uv(zz(p - self.lastp)) + uv(ticks))
        self.lastp = p


# ---- 1: frees without a stack in holds ----
streams = {7: Stream(), 8: Stream()}
t = 2000
for k in range(SECTIONS):
    tid = 7 + k % 2
    w = streams[tid]
    w.at(t, 0x06, uv(1) + uv(200) + uv(1000) + uv(1))  # ACQ_WAIT
    c = t + 10
    for i in range(CALLS):
        c += CALL_NS
        w.alloc(c, 0x100000 * tid + 64 * (k % 16) + 8 * i, CALL_NS)
        c += 1
    for i in range(CALLS):
        c += CALL_NS
        # Never allocated in the trace: no stack.
        w.free(c, 0x70000000 + 0x1000 * k + 8 * i, CALL_NS)
        c += 1
    w.at(t + HOLD, 0x09, uv(1))  # REL
    t += HOLD + 50
path = os.path.join(TMP, "nostack.trace")
write(path, 1, process(), {tid: w.rec for tid, w in streams.items()})
d = report_json("--no-symbols", path)
lk = lock_by_name(d, "forged.lock")
eq(lk["allocations_in_holds"], SECTIONS * 2 * CALLS, "calls in holds")
eq(lk["allocator_ns_in_holds"], SECTIONS * 2 * CALLS * CALL_NS,
   "allocator ns in holds")
aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"]
eq(len(aul), 1, "one alloc_under_lock finding (%s)" % [
    f.get("site") for f in aul])
for f in aul[:1]:
    ev = f["evidence"]
    eq(ev["calls"], SECTIONS * CALLS, "the site's calls (the mallocs)")
    eq(ev["calls_without_stack"], SECTIONS * CALLS,
       "the frees without a stack, counted apart")
    eq(ev["allocator_ns_without_stack"], SECTIONS * CALLS * CALL_NS,
       "their allocator ns")
    eq(round(ev["site_share_of_hold"], 6),
       round(CALLS * CALL_NS / HOLD, 6), "the site's own share")
    eq(round(ev["allocator_share_of_hold"], 6),
       round(2 * CALLS * CALL_NS / HOLD, 6), "the lock's share")
    check(f.get("stack") is not None or f.get("site") is not None,
          "the finding names the mallocs' site")
rc, out, err = run("report", "--no-symbols", path)
eq(rc, 0, "text report exit status")
text = " ".join(out.split())
check("frees of blocks whose allocation is not in the trace" in text,
      "the text says what the frees without a stack are")
check("(no stack recorded)" not in text,
      "no finding without a stack in the text")

# ---- 2: calls outside locks timed one in EVERY ----
w = Stream()
t = 2000
timed_out = untimed = 0
for k in range(PAIRS):
    for j, kind in enumerate((w.alloc, w.free)):
        n = 2 * k + j
        ticks = OUT_NS if n % EVERY == 0 else 0
        timed_out += ticks != 0
        untimed += ticks == 0
        t += 1000
        kind(t, 0x200000 + 64 * (k % 8), ticks)
t += 1000
w.at(t, 0x04, uv(1) + uv(200))  # ACQ
w.alloc(t + IN_NS + 10, 0x300000, IN_NS)
w.free(t + 2 * IN_NS + 20, 0x300000, IN_NS)
w.at(t + 5000, 0x09, uv(1))  # REL
path = os.path.join(TMP, "every.trace")
write(path, 4, process(uv(0) + uv(0) + uv(EVERY)), {7: w.rec})
d = report_json("--no-symbols", path)
tot = d["totals"]
eq(tot["allocations"], PAIRS + 1, "every allocation counted")
eq(tot["frees"], PAIRS + 1, "every free counted")
eq(tot["untimed_allocator_calls"], untimed, "untimed calls")
eq(tot["allocator_ns"], timed_out * OUT_NS * EVERY + 2 * IN_NS,
   "allocator ns: timed calls outside x %d, inside x 1" % EVERY)
lk = lock_by_name(d, "forged.lock")
eq(lk["allocator_ns_in_holds"], 2 * IN_NS, "allocator ns in the hold")
notes = [x["text"] for x in d["trace"]["notes"]
         if "MALLOCK_TIME_EVERY" in x["text"]]
eq(len(notes), 1, "the timing note")
check(notes and ("one in %d" % EVERY) in notes[0] and
      ("%d not timed" % untimed) in notes[0], "the note's figures: %r" % notes)
done("analyzer_forged_weights")
