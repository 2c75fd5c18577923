#!/usr/bin/env python3
"""Futex words read from a synthetic trace (mktrace futex, format
1.3), every number exact: a lock word whose waiters wake it
(its waits are lost time) and an event word only another thread wakes (a
signal word: waiting for work), each with its waiters' and wakers'
stacks, and neither claiming acquisitions or holds; a futex_lock finding
for the lock word only, scored by its lost wait (capped at the trace's
span), above its two thresholds."""
from common import *

R = 100
p, _ = mktrace("futex", "futex.trace", "--rounds", R)
d = report_json(p)
t = d["totals"]
eq((t["futex_waits"], t["futex_wait_ns"], t["futex_lock_wait_ns"],
    t["futex_wakes"]), (6 * R, 3600 * R, 600 * R, 4 * R), "totals")
eq((t["lock_acquisitions"], t["lock_wait_ns"]), (0, 0),
   "no pthread acquisitions or waits are made up")
eq(d["trace"]["blind_spot"], None, "futex words are locks seen")

locks = {l["label"]: l for l in d["locks"]}
w = locks.get("mktrace_fx_word", {})
eq(w.get("kind"), "futex", "the lock word, named by its data symbol")
eq((w.get("futex_waits"), w.get("wait_ns"), w.get("wait_max_ns"),
    w.get("idle_wait_ns")), (3 * R, 200 * 3 * R, 200, 0), "its waits: lost")
eq((w.get("futex_wakes"), w.get("futex_woken")), (3 * R, 3 * R), "its wakes")
eq((w.get("acquisitions"), w.get("contended"), w.get("hold_ns"),
    w.get("holds")), (0, 0, 0, 0), "no acquisitions or holds claimed")
eq(w.get("futex_lock_word"), True, "a lock word")
eq(w.get("contending_points"), [], "no holders' holds")
cp = w.get("contention_points", [{}])[0]
eq((cp.get("waits"), cp.get("wait_ns"),
    [f["function"] for f in cp.get("stack", [])][:2]),
   (3 * R, 600 * R, ["fx_lock", "fx_worker"]), "the waiters' stack")
wk = w.get("wakers", [{}])
eq((len(wk), wk[0].get("wakes"),
    [f["function"] for f in wk[0].get("stack", [])][:2]),
   (1, 3 * R, ["fx_unlock", "fx_worker"]), "the wakers' stack")

ev = [l for l in d["locks"] if l["label"].startswith(
    "futex word first waited on in fx_event_wait")]
check(len(ev) == 1, "the event word, named by the function that first "
      "waited on it: %r" % list(locks))
e = ev[0] if ev else {}
eq((e.get("futex_waits"), e.get("wait_ns"), e.get("idle_wait_ns")),
   (3 * R, 3000 * R, 3000 * R), "its waits were waiting for work")
eq((e.get("futex_wakes"), e.get("futex_woken"), e.get("futex_lock_word")),
   (R, 3 * R, False), "a signal word: one waker, three woken each time")
eq([f["function"] for f in e.get("wakers", [{}])[0].get("stack", [])][:2],
   ["fx_event_post", "fx_poster"], "its waker's stack")

cls = [c for c in d["lock_classes"] if c["kind"] == "futex"]
eq(sorted((c["instances"], c["futex_lock_word"], c["wait_ns"]) for c in cls),
   [(1, False, 3000 * R), (1, True, 600 * R)], "one class per word")

thr = {x["name"]: x for x in d["threads"]}
for n in ("fx-0", "fx-1", "fx-2"):
    x = thr.get(n, {})
    eq((x.get("role"), x.get("lock_wait_ns"), x.get("cond_sleep_ns")),
       ("worker (waits on futex words)", 200 * R, 1000 * R),
       n + ": lock-word waits are lock waits, signal-word waits sleeps")

# The wait profiles keep to lock waits (folded and pprof alike, equal to
# JSON's lock_wait_ns): a futex word is in neither.
for metric in ("wait", "caused"):
    rc, fo, err = run("report", "--format=folded", "--metric=" + metric, p)
    check(rc == 0 and "mktrace_fx" not in fo and "futex word" not in fo,
          "folded %s: no futex word: %r" % (metric, fo[:300]))

rc, out, err = run("report", p)
eq(rc, 0, "text report")
check("600 futex waits through syscall() (360.0 us waited, 60.0 us of it "
      "on lock words), 400 wakes" in out, "the totals line")
row = [l for l in out.splitlines() if l.strip().startswith("mktrace_fx_word")]
check(row and row[0].split()[1:3] == ["-", "-"] and
      row[0].split()[-3:] == ["-", "-", "-"],
      "the lock table shows - for what is not seen: %r" % row)
tab = out[out.find("Locks (classes"):out.find("Contention in the top")]
rows = [l.strip() for l in tab.splitlines()[2:] if l.startswith("  ") and
        not l.startswith("  (") and not l.startswith("   ")]
check(len(rows) == 2 and rows[0].startswith("mktrace_fx_word") and
      rows[1].startswith("~futex word first waited on in"),
      "the lock table ranks the signal word, marked ~, after the lock "
      "word, though it waited more: %r" % rows)
sec = out[out.find("Contention in the top locks"):]
check(0 <= sec.find("mktrace_fx_word (futex word, a lock word") <
      sec.find("a signal word: waiting for work"),
      "the lock word comes first in the contention shown, though it "
      "waited less")
check("wakers" in sec and "fx_unlock" in sec and "fx_event_post" in sec,
      "the wakers are shown as the holder's side")
# The futex_lock finding: the lock word's lost time (never the signal
# word's, which waited five times as long), with its waiters' and wakers'
# code, and what a futex word cannot show.
dur = d["trace"]["duration_ns"]
eq(dur, 10000 * R + 95280, "the trace's span (mktrace's futex timeline)")
fl = [f for f in d["findings"] if f["kind"] == "futex_lock"]
eq([f.get("lock_name") for f in fl], ["mktrace_fx_word"],
   "one futex_lock finding, for the lock word only")
f = fl[0] if fl else {}
eq((f.get("score"), f.get("severity"), f.get("lock")),
   (600 * R, "medium", w.get("id")),
   "scored by the lock word's lost wait (5.5% of the trace: medium)")
eq(f.get("evidence"), {
    "lock_words": 1, "futex_waits": 3 * R, "lock_wait_ns": 600 * R,
    "wait_max_ns": 200, "mean_wait_ns": 200, "futex_wakes": 3 * R,
    "futex_woken": 3 * R, "waiting_threads": 3, "waking_threads": 3,
    "waiter_stacks": 1, "waker_stacks": 1, "covered_ns": dur},
   "its evidence")
eq(([x["function"] for x in f.get("stack", [])][:2],
    [x["function"] for x in f.get("waker_stack") or []][:2],
    (f.get("site") or {}).get("function")),
   (["fx_lock", "fx_worker"], ["fx_unlock", "fx_worker"], "fx_lock"),
   "the waiters' code and the wakers' (the holders' side)")
check("in fx_lock (mktrace.c:" in f.get("advice", "") and
      "releases it in fx_unlock (mktrace.c:" in f.get("advice", "") and
      "no hold times" in f.get("advice", ""),
      "the advice names who waits and who releases: %r" % f.get("advice"))
check("Only waits that reached the kernel are seen" in f.get("summary", ""),
      "the summary says what a futex word cannot show: %r" %
      f.get("summary"))
fsec = out[out.find("futex_lock [medium]"):out.find("Locks (classes")]
check("futex_lock [medium] score 60.0 us" in out and
      "lock   mktrace_fx_word" in fsec and "wakers" in fsec and
      "fx_unlock" in fsec and "fx_event" not in fsec,
      "the text report shows it with its waiters and wakers: %r" % fsec)


def futex_findings(name, *opts):
    d = report_json(mktrace("futex", name, *opts)[0])
    return d, [(f["lock_name"], f["score"], f["severity"])
               for f in d["findings"] if f["kind"] == "futex_lock"]


# Thresholds: at least FUTEX_MIN_WAITS (10) waits, and lost time at least
# FUTEX_MIN_LOST_PPM (1000 ppm) of the trace (1095280 ns at 100 rounds).
eq(futex_findings("r3.trace", "--rounds", 3)[1], [],
   "9 waits: below FUTEX_MIN_WAITS")
eq(futex_findings("r4.trace", "--rounds", 4)[1],
   [("mktrace_fx_word", 2400, "medium")], "12 waits: reported")
eq(futex_findings("w3.trace", "--fx-wait", 3, "--rounds", R)[1], [],
   "900 ns lost in 1.1 ms: below FUTEX_MIN_LOST_PPM")
eq(futex_findings("w4.trace", "--fx-wait", 4, "--rounds", R)[1],
   [("mktrace_fx_word", 1200, "low")], "1200 ns lost: reported, low")
# Waits that add up to more than the trace covers (overlapping waiters):
# the score is capped at the trace's span.
d4, f4 = futex_findings("long.trace", "--fx-wait", 100000, "--rounds", 4)
eq((d4["trace"]["duration_ns"], f4),
   (135280, [("mktrace_fx_word", 135280, "high")]),
   "1.2 ms of waits in a 135 us trace score 135 us")
eq([f["evidence"]["lock_wait_ns"] for f in d4["findings"]
    if f["kind"] == "futex_lock"], [1200000], "the evidence keeps the sum")

# Uneven sides (--fx-uneven): fx-2 waits 600 ns in fx_lock < fx_flush
# (R waits, 600R ns: the heavier waiter stack though the rarer), the others
# 200 ns in fx_lock < fx_worker (2R, 400R ns); fx-post wakes fx-1 and fx-2
# in fx_unlock < fx_poster (2R wakes), fx-1 wakes fx-0 (R).
du, fu = futex_findings("uneven.trace", "--fx-uneven", "--rounds", R)
fu = [f for f in du["findings"] if f["kind"] == "futex_lock"]
eq(len(fu), 1, "one futex_lock finding")
f = fu[0] if fu else {"evidence": {}}
eq(f.get("score"), 1000 * R, "scored by both stacks' waits")
ev = dict(f["evidence"])
near(ev.pop("mean_wait_ns", 0), 1000 / 3, 1e-5, "mean wait")
eq(ev, {"lock_words": 1, "futex_waits": 3 * R, "lock_wait_ns": 1000 * R,
        "wait_max_ns": 600, "futex_wakes": 3 * R, "futex_woken": 3 * R,
        "waiting_threads": 3, "waking_threads": 2, "waiter_stacks": 2,
        "waker_stacks": 2, "covered_ns": 10000 * R + 95280},
   "three threads wait, two wake, two stacks each")
eq(([x["function"] for x in f.get("stack", [])][:2],
    [x["function"] for x in f.get("waker_stack") or []][:2]),
   (["fx_lock", "fx_flush"], ["fx_unlock", "fx_poster"]),
   "the waiters' stack with most wait, the wakers' with most wakes")

# One class of three words in blocks from one site (--fx-heap): two lock
# words (fx-0 and fx-1 wait 100 ns, on the other 50 ns, each per round and
# wake each other, at the same stacks) and a signal word (fx-2 waits
# 500 ns, only fx-post wakes it). Its lock words wait in fx_lock and are
# woken in fx_unlock, as mktrace_fx_word: one family, one finding, its
# classes listed inside, the heavier first; each class counts its lock
# words alone and is named by its heavier lock word, not the class's
# heaviest word (the signal one); the finding shows lock words' stacks
# only.
dh = report_json(mktrace("futex", "heap.trace", "--fx-heap", "--rounds",
                         R)[0])
hl = {l["id"]: l for l in dh["locks"]}
fh = [f for f in dh["findings"] if f["kind"] == "futex_lock"]
eq(len(fh), 1, "one finding for the family of lock words")
f = fh[0] if fh else {"evidence": {}}
eq((f.get("score"), f.get("lock_name"), f.get("members_total")),
   (900 * R, "mktrace_fx_word", 2), "the family's waits, its heaviest word")
mem = f.get("members") or [{}, {}]
eq([m.get("value") for m in mem], [600 * R, 300 * R],
   "each class's lock words' waits, heaviest first")
hw = hl.get(mem[-1].get("lock"), {})
eq((hw.get("futex_lock_word"), hw.get("wait_ns")), (True, 200 * R),
   "the heap class is named by its heavier lock word")
check(mem[-1].get("lock_name", "").startswith(
    "futex word at +0x8 in a block from fx_table_new"),
    "named by the block: %r" % mem[-1].get("lock_name"))
eq({k: f["evidence"].get(k) for k in ("lock_words", "futex_waits",
                                      "wait_max_ns", "waiting_threads",
                                      "waking_threads", "waiter_stacks",
                                      "waker_stacks", "lock_word_classes")},
   {"lock_words": 3, "futex_waits": 7 * R, "wait_max_ns": 200,
    "waiting_threads": 3, "waking_threads": 3, "waiter_stacks": 2,
    "waker_stacks": 2, "lock_word_classes": 2},
   "no evidence from the signal word")
eq(([x["function"] for x in f.get("stack", [])][:1],
    [x["function"] for x in f.get("waker_stack") or []][:1]),
   (["fx_lock"], ["fx_unlock"]), "the lock words' stacks")
check(f.get("summary", "").startswith("waiters lost 90.0 us on these 3 "
                                      "futex lock words: 700 waits"),
      "the summary counts the family's lock words: %r" % f.get("summary"))
rc, hout, err = run("report", os.path.join(TMP, "heap.trace"))
hsec = hout[hout.find("#1 futex_lock"):hout.find("Locks (classes")]
check("fx_lock" in hsec and "fx_event" not in hsec and
      "words  2 word classes in this finding" in hsec and "fx_table_new" in hsec,
      "the text finding shows the lock words' waiters and wakers only, "
      "and its classes: %r" % hsec)

# Two futex_lock findings on words with one label (--fx-twins: both
# "first waited on in fx_lock", woken in fx_unlock and in fx_event_post:
# two families) are told apart by the first frame where their waiters'
# stacks part (fx_worker, fx_flush).
dt = report_json(mktrace("futex", "twins.trace", "--fx-twins", "--rounds",
                         R)[0])
names = sorted(f["lock_name"] for f in dt["findings"]
               if f["kind"] == "futex_lock" and
               f["lock_name"].startswith("futex word first waited on"))
eq(len(names), 2, "two findings on unnamed words: %r" % names)
check(len(set(names)) == 2 and any("waited on in fx_worker" in n
                                   for n in names) and
      any("waited on in fx_flush" in n for n in names),
      "their labels part at the first frame that differs: %r" % names)
# Two more words of the first family (0x7100, 0x7140) have one label and
# the same stacks: the text's words list tells them apart by address.
rc, tout, err = run("report", os.path.join(TMP, "twins.trace"))
wl = tout[tout.find("word classes in this finding"):]
wl = wl[:wl.find("   what ")]
check("at 0x7100: futex word first waited on in fx_lock" in wl and
      "at 0x7140: futex word first waited on in fx_lock" in wl,
      "words of one label listed by address: %r" % wl)
check("at 0x" not in wl.replace("at 0x7100:", "").replace("at 0x7140:", ""),
      "words with labels of their own listed without one: %r" % wl)

# The same trace with only its process-level chunks (PROCESS, MODULE...):
# the shim ran and no hook was called. The header says what that means.
data = open(p, "rb").read()
keep, off = bytearray(data[:FMT.FILE_HEADER_SIZE]), FMT.FILE_HEADER_SIZE
while off + FMT.CHUNK_HEADER_SIZE <= len(data):
    h = tracefmt.header_fields(data, off)
    plen, tid = h["payload_len"], h["tid"]
    if tid == 0:
        keep += data[off:off + FMT.CHUNK_HEADER_SIZE + plen]
    off += FMT.CHUNK_HEADER_SIZE + plen
empty = os.path.join(TMP, "noevents.trace")
open(empty, "wb").write(bytes(keep))
d = report_json(empty)
eq(d["trace"]["events"], 0, "no events")
bl = d["trace"]["blind_spot"] or ""
check("no allocation and no lock" in bl and "not no contention" in bl,
      "a trace without events says so: %r" % bl)
# The allocator's own lock waited on outside a hooked call: tcmalloc gives a
# thread's cache back to its central lists at thread exit, from a key
# destructor, and its SpinLock sleeps with syscall(SYS_futex), so the
# futex hook records a FUTEX_WAIT on the word the trace knows from
# ALLOC_LOCK_WAITs. It is a wait on the allocator's lock: the wait profiles
# (folded, pprof, the HTML flame graph) summed it with the lock waits while
# the totals did not (an HTML "wait" total 416 us over JSON's lock_wait_ns
# in one CI run). A trace written here, 1 tick = 1 ns:
#   thread 7: 1100 ALLOC_LOCK_WAIT word 6 (100 ns); 1200 ALLOC (150 ns);
#             1600 FUTEX_WAIT word 6 (300 ns, stack 500); 1700 FUTEX_WAKE


def meta(code, body):
    return bytes([code]) + uv(len(body)) + body


body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
body += s(b"/bin/exit") + s(b"exit") + s(b"h") + s(b"test")
proc = meta(0x80, body) + meta(0x82, uv(100) + uv(1) + uv(0x1100))
proc += meta(0x82, uv(500) + uv(1) + uv(0x5500))
t7 = b"\x0e" + uv(100) + uv(6) + uv(100)                     # 1100 ALW
t7 += (b"\x01" + uv(100) + uv(zz(0x5000)) + uv(64) + uv(100) + uv(150) +
       b"\x00")                                               # 1200 ALLOC
t7 += b"\x15" + uv(400) + uv(6) + uv(500) + uv(300)          # 1600 WAIT
t7 += b"\x16" + uv(100) + uv(6) + uv(500) + uv(1)            # 1700 WAKE
path = os.path.join(TMP, "exitwait.trace")
with open(path, "wb") as f:
    f.write(file_header(3))
    f.write(chunk(0, proc) + chunk(7, t7))
d = report_json("--no-symbols", "--all", path)
t = d["totals"]
eq((t["allocator_lock_waits"], t["allocator_lock_wait_ns"],
    t["futex_waits"], t["futex_wakes"], t["lock_wait_ns"]),
   (2, 400, 0, 0, 0), "exit wait: (allocator lock waits, their ns, futex "
   "waits, futex wakes, lock wait ns)")
w6 = [l for l in d["locks"] if l.get("kind") == "allocator-internal"]
eq([(l.get("allocator_internal_waits"), l.get("wait_ns")) for l in w6],
   [(2, 400)], "exit wait: the allocator's lock, its waits")
for metric in ("wait", "caused"):
    rc, out, err = run("report", "--no-symbols", "--format=folded",
                       "--metric=" + metric, path)
    eq((rc, out.strip()), (0, ""),
       f"exit wait: the {metric} profile has no lock wait, as the totals")
# The lock table: the allocator's lock is known by its waits alone, so its
# row says "-" for acquisitions, cont%, hold, max hold and alloc% (as a
# futex word's), not "0  0.0%" beside a wait.
rc, out, err = run("report", "--no-symbols", path)
eq(rc, 0, "exit wait: text report (%s)" % err)
table = out.split("\nLocks (")[1].split("\n\n")[0].splitlines()
rows = []
for l in table[2:]:
    if l.lstrip().startswith("("):
        break  # the notes under the table
    rows.append(l.split())
eq([r[-9:] for r in rows], [["-", "-", "400", "ns", "300", "ns", "-", "-",
                             "-"]],
   "exit wait: the allocator's lock's row:\n%s" % "\n".join(table))
done("test_futex_words")
