#!/usr/bin/env python3
"""Calibration's arithmetic, on forged traces with known allocator shares:
the form of analyzer_calibration that no load can disturb (that test runs
calib under the shim and checks the share only in a quiet run, so a busy
machine skips it).

Each trace is written here, 1 tick = 1 ns: two threads take one mutex in
turn, SECTIONS times in all, every acquisition contended (ACQ_WAIT, 1 us
waited); each hold lasts HOLD ns and makes CALLS mallocs and CALLS frees
inside it, each call ALLOC_NS long. The report must give exactly:
acquisitions, allocator calls in holds, allocator ns in holds, hold ns,
and the alloc_under_lock finding's allocator_share_of_hold, the known
share (the shares of analyzer_calibration's two configurations, 40% and
23%)."""
from common import *

SECTIONS = 2000


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


def forged(path, hold, calls, call_ns):
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(b"/bin/calib") + s(b"calib") + s(b"h") + s(b"test")
    proc = meta(0x80, body)
    # STACK 100 (the section's allocation site), 200 (its lock site);
    # lock 1, a mutex named "calib.lock".
    proc += meta(0x82, uv(100) + uv(1) + uv(0x1100))
    proc += meta(0x82, uv(200) + uv(1) + uv(0x2200))
    proc += meta(0x83, uv(1) + uv(0x9100) + uv(0) + uv(0))
    proc += meta(0x84, uv(1) + uv(0) + s(b"calib.lock"))
    gap = 50  # between one thread's release and the other's acquisition
    streams = {7: [], 8: []}
    last = {7: 1000, 8: 1000}  # each chunk's tsc_base
    lastp = {7: 0, 8: 0}
    t = 2000
    for k in range(SECTIONS):
        tid = 7 + k % 2
        ptr = 0x100000 * tid + 64 * (k % 16)
        rec = []

        def at(tsc, code, fields):
            rec.append(bytes([code]) + uv(tsc - last[tid]) + fields)
            last[tid] = tsc

        at(t, 0x06, uv(1) + uv(200) + uv(1000) + uv(1))  # ACQ_WAIT
        c = t + 10
        for i in range(calls):
            p = ptr + 8 * i
            c += call_ns
            at(c, 0x01, uv(zz(p - lastp[tid])) + uv(64) + uv(100) +
               uv(call_ns) + b"\x00")  # ALLOC, fn malloc
            lastp[tid] = p
            c += 1
        for i in range(calls):
            p = ptr + 8 * i
            c += call_ns
            at(c, 0x02, uv(zz(p - lastp[tid])) + uv(call_ns))  # FREE
            lastp[tid] = p
            c += 1
        assert c < t + hold
        at(t + hold, 0x09, uv(1))  # REL
        streams[tid] += rec
        t += hold + gap
    with open(path, "wb") as f:
        f.write(file_header(1))
        f.write(chunk(0, proc))
        for tid, rec in streams.items():
            f.write(chunk(tid, b"".join(rec)))


# (hold ns, calls of each kind, ns per call): the known shares 40% and 23%.
for hold, calls, call_ns in ((45000, 4, 2250), (30000, 3, 1150)):
    what = "hold %d ns, %d mallocs + %d frees of %d ns" % (hold, calls, calls,
                                                           call_ns)
    known = 2 * calls * call_ns / hold
    path = os.path.join(TMP, "forged-%d.trace" % hold)
    forged(path, hold, calls, call_ns)
    d = report_json("--no-symbols", path)
    lk = lock_by_name(d, "calib.lock")
    eq(lk["acquisitions"], SECTIONS, what + ": acquisitions")
    eq(lk["contended"], SECTIONS, what + ": contended acquisitions")
    eq(lk["allocations_in_holds"], SECTIONS * 2 * calls,
       what + ": allocator calls in holds")
    eq(lk["allocator_ns_in_holds"], SECTIONS * 2 * calls * call_ns,
       what + ": allocator ns in holds")
    eq(lk["hold_ns"], SECTIONS * hold, what + ": hold ns")
    share = lk["allocator_ns_in_holds"] / lk["hold_ns"]
    eq(round(share, 6), round(known, 6), what + ": the lock's share")
    aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock" and
           f["lock"] == lk["id"]]
    check(len(aul) >= 1, what + ": an alloc_under_lock finding")
    for f in aul[:1]:
        eq(round(f["evidence"]["allocator_share_of_hold"], 6),
           round(known, 6), what + ": the finding's share")
    print("%s: known share %.4f, report %.4f" % (what, known, share))
done("analyzer_calibration_forged")
