#!/usr/bin/env python3
"""Figures scaled from timed calls (MALLOCK_TIME_EVERY) are estimates that
never exceed what was counted, say so and from how many samples, and a
finding resting on fewer than 30 timed samples ranks at most low. Forged
traces (format 1.4, PROCESS time_every = 16, 1 tick = 1 ns), one thread,
no lock:

1. "16 of 7": 7 mallocs at one site, the first timed and slow (5 us), the
   others untimed. Scaling the one slow call by 16 made slow_alloc say
   "16 of 7 allocator calls (228.6%)". The estimate is 7 of 7 at most, below
   the 10 slow calls slow_alloc needs: no finding, and nowhere a share over
   100%.

2. A finding on 2 samples: 64 mallocs spaced 100 us apart, one in 16 timed
   (4), two of those slow (50 us), so about 32 of 64 slow. Scaled, its score
   (1.6 ms of a 6.4 ms trace) is high; it rests on 2 timed slow calls, so it
   is low, ranked at the low band's top (1% of the recording), and its
   sentence says "about 32 of 64", "estimated from 2 slow of 4 timed calls"
   and why it is ranked low. Its allocator-lock wait is the site's own,
   measured for every call (untimed calls included), never scaled.

3. Cross-thread frees on few samples: 128 blocks allocated on one thread
   and freed on another, one call in 16 timed (16 timed calls): the time is
   "about ..., estimated from 16 timed calls", ranked at most low."""
import re
from common import *

EVERY = 16


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def process():
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/forged") + s(b"forged") + s(b"h") + s(b"test")
    body += uv(0) + uv(0) + uv(EVERY)  # sample_bytes, max_bytes, time_every
    proc = meta(0x80, body)
    for sid in (100, 101, 102):
        proc += meta(0x82, uv(sid) + uv(1) + uv(0x1000 * sid))
    proc += meta(0x83, uv(9) + uv(0x9900) + uv(5) + uv(0))  # an allocator lock
    return proc


def write(path, streams):
    with open(path, "wb") as f:
        f.write(file_header(4))
        f.write(chunk(0, process()))
        for tid, w in streams.items():
            f.write(chunk(tid, b"".join(w.rec)))


class Stream:
    def __init__(self):
        self.rec, self.last, self.lastp = [], 1000, 0

    def at(self, tsc, code, fields):
        self.rec.append(bytes([code]) + uv(tsc - self.last) + fields)
        self.last = tsc

    def alloc(self, tsc, p, ticks, stack, size=64):
        self.at(tsc, 0x01, uv(zz(p - self.lastp)) + uv(size) + uv(stack) +
                uv(ticks) + b"\x00")
        self.lastp = p

    def free(self, tsc, p, ticks):
        self.at(tsc, 0x02, uv(zz(p - self.lastp)) + uv(ticks))
        self.lastp = p


def text_of(path):
    rc, out, err = run("report", "--no-symbols", "--top", "50", path)
    eq(rc, 0, "text report exit status (%s)" % err)
    return " ".join(out.split())


def no_share_over_100(text, what):
    for m in re.finditer(r"\((\d+(?:\.\d+)?)%\)", text):
        check(float(m.group(1)) <= 100, "%s: a share of %s%%" % (
            what, m.group(1)))


# ---- 1: one slow timed call among 7 ----
w = Stream()
t = 2000
for i in range(7):
    t += 10000
    w.alloc(t, 0x100000 + 64 * i, 5000 if i == 0 else 0, 100)
path = os.path.join(TMP, "seven.trace")
write(path, {7: w})
d = report_json("--no-symbols", path)
eq(d["totals"]["untimed_allocator_calls"], 6, "1: untimed calls")
slow = [f for f in d["findings"] if f["kind"] == "slow_alloc"]
for f in slow:
    ev = f["evidence"]
    check(ev["slow_calls"] <= ev["calls"], "1: slow_alloc says %r of %r "
          "calls" % (ev["slow_calls"], ev["calls"]))
    check(ev["slow_share"] <= 1, "1: slow share %r" % ev["slow_share"])
eq(len(slow), 0, "1: no slow_alloc from about 7 slow calls (fewer than 10)")
text = text_of(path)
check("16 of 7" not in text, "1: no '16 of 7' in the text")
no_share_over_100(text, "1")
site_rows = [a for a in d.get("alloc_sites", [])]
for a in site_rows:
    check(a["slow_calls"] <= a["allocations"] + a["frees"],
          "1: alloc_sites slow_calls %r within its calls" % a["slow_calls"])

# ---- 2: two timed slow calls of 4 timed among 64 ----
w = Stream()
t = 2000
timed = 0
for i in range(64):
    t += 100000
    tick = 0
    if i % EVERY == 0:
        timed += 1
        tick = 50000 if timed <= 2 else 50
    if i == 40:  # an untimed call that waited on the allocator's lock
        w.at(t - 10, 0x0e, uv(9) + uv(3000))
    w.alloc(t, 0x200000 + 64 * i, tick, 101)
path = os.path.join(TMP, "two.trace")
write(path, {7: w})
d = report_json("--no-symbols", path)
slow = [f for f in d["findings"] if f["kind"] == "slow_alloc"]
eq(len(slow), 1, "2: one slow_alloc finding")
for f in slow[:1]:
    ev = f["evidence"]
    eq(ev["calls"], 64, "2: calls counted")
    eq(ev["timed_calls"], 4, "2: timed calls")
    eq(ev["timed_slow_calls"], 2, "2: timed slow calls")
    eq(ev["slow_calls"], 32, "2: slow calls estimated as 2 x 64 / 4")
    eq(ev["estimated"], 1, "2: marked an estimate")
    eq(ev["slow_share"], 0.5, "2: share of the timed calls")
    eq(ev["mean_slow_ns"], 50000, "2: mean of the timed slow calls")
    eq(ev["allocator_lock_wait_ns"], 3000,
       "2: allocator-lock wait measured, not scaled")
    eq(ev["timed_samples"], 2, "2: samples")
    eq(f["severity"], "low", "2: severity capped at low")
    check(ev["uncapped_score_ns"] > f["score"],
          "2: the score is capped (%r, uncapped %r)" % (
              f["score"], ev["uncapped_score_ns"]))
    near(f["share_of_recorded_time"], 0.01, 0.02,
         "2: score at the low band's top")
text = text_of(path)
check("about 32 of 64 allocator calls (50.0%)" in text,
      "2: the estimate says so")
check("estimated from 2 slow of 4 timed calls" in text,
      "2: and from how many samples")
check("Ranked at most low: it rests on 2 timed slow calls, fewer than 30"
      in text, "2: and why it ranks low")
check("slow_alloc [low]" in text, "2: [low] in the text")
no_share_over_100(text, "2")

# ---- 3: cross-thread frees, 16 timed calls of 256 ----
a, b = Stream(), Stream()
t = 2000
n = 0
for i in range(128):
    t += 20000
    a.alloc(t, 0x300000 + 64 * i, 4000 if n % EVERY == 0 else 0, 102)
    n += 1
    b.free(t + 10000, 0x300000 + 64 * i, 4000 if n % EVERY == 0 else 0)
    n += 1
path = os.path.join(TMP, "xfree.trace")
write(path, {7: a, 8: b})
d = report_json("--no-symbols", path)
xf = [f for f in d["findings"] if f["kind"] == "cross_thread_free"]
eq(len(xf), 1, "3: one cross_thread_free finding")
for f in xf[:1]:
    ev = f["evidence"]
    eq(ev["cross_thread_frees"], 128, "3: frees counted")
    eq(ev["timed_samples"], 16, "3: timed calls among them")
    eq(ev["allocator_ns_estimated"], 1, "3: the time is an estimate")
    check(f["severity"] in ("low", "info"), "3: severity %s, at most low" %
          f["severity"])
text = text_of(path)
check(re.search(r"about [0-9.]+ [mu]?s spent in the allocator on them "
                r"\(their allocations and frees\), estimated from 16 "
                r"timed of their 256 calls", " ".join(text.split()))
      is not None, "3: the estimate says so, from how many of how many "
      "calls (an allocation and a free a block)")
check("Ranked at most low: it rests on 16 timed calls" in text,
      "3: and why it ranks low")
no_share_over_100(text, "3")
done("analyzer_estimates")
