#!/usr/bin/env python3
"""mallock report on synthetic traces from mktrace (see mktrace.c for the
scenarios and their exact timings): exact totals and lock statistics, the
top finding, precision (no alloc_under_lock without allocation under a
contended lock), the merge of out-of-order chunks, the text and folded
outputs, and the filters."""
import json
from common import *

R = 1000
path, _ = mktrace("cascade", "cascade.trace", "--rounds", R)
d = report_json(path)
eq(d["schema"], "mallock.report/1", "schema")
t = d["trace"]
eq(t["pid"], 100, "pid")
eq(t["truncated"], False, "truncated")
eq(t["threads"], 5, "threads")
eq(t["dropped_events"], 0, "dropped")
check(t["duration_ns"] > R * 10000 - 20000, "duration")
tot = d["totals"]
eq(tot["allocations"], 6 * R, "allocations")
eq(tot["frees"], 6 * R, "frees")
eq(tot["allocated_bytes"], R * (3 * 48 + 3 * 32), "bytes")
# chunks are written consumer first: every free precedes its allocation in
# the file, so these hold only if the reader merges by time.
eq(tot["cross_thread_frees"], 3 * R, "cross-thread frees")
eq(tot["unknown_frees"], 0, "unknown frees")
eq(tot["lock_acquisitions"], 6 * R, "acquisitions")
eq(tot["contended_acquisitions"], 5 * R, "contended")
eq(tot["lock_wait_ns"], 4000 * R + 900 * R, "lock wait")

q = lock_by_name(d, "queue")
eq(q["kind"], "mutex", "queue kind")
eq(q["queue_like"], True, "queue_like")
eq(q["acquisitions"], 3 * R, "queue acq")
eq(q["contended"], 2 * R, "queue contended")
eq(q["wait_ns"], 4000 * R, "queue wait")
eq(q["hold_ns"], 3600 * R, "queue hold")
eq(q["allocations_in_holds"], 6 * R, "queue allocator calls in holds")
eq(q["allocs_in_holds"], 3 * R, "queue allocations in holds")
eq(q["allocator_ns_in_holds"], 2340 * R, "queue allocator ns in holds")
eq(q["allocator_lock_wait_ns_in_holds"], 900 * R, "queue allocator lock wait")
eq(q["max_waiters"], 3, "queue max waiters")
eq(q["cond_waits"], R, "queue cond waits")
eq(q["init_site"]["function"], "queue_init", "queue init site")
check(q["init_site"]["file"].endswith("mktrace.c"), "init site file")
check(q["init_site"]["line"] > 0, "init site line")
check(q["init_site"]["address"].startswith("0x"), "address is hex")
eq(q["contention_points"][0]["stack"][0]["function"], "queue_put",
   "contention point")
eq(q["contending_points"][0]["holds"], 2 * R, "contending point holds")
s = lock_by_name(d, "stats")
eq(s["acquisitions"], 3 * R, "stats acq")
eq(s["wait_ns"], 900 * R, "stats wait")
eq(s["hold_ns"], 600 * R, "stats hold")
eq(s["allocations_in_holds"], 0, "stats allocs in holds")

f = d["findings"]
check(len(f) > 0, "has findings")
top = f[0]
eq(top["kind"], "alloc_under_lock", "top finding kind")
eq(top["lock"], q["id"], "top finding lock")
eq(top["site"]["function"], "queue_put", "top finding site")
eq(top["stack"][1]["function"], "producer_main", "top finding stack")
ev = top["evidence"]
eq(ev["calls"], 6 * R, "calls")
eq(ev["lock_wait_ns"], 4000 * R, "W")
near(ev["allocator_share_of_hold"], 2340 / 3600, 1e-9, "A")
# One lock, one finding: a contended lock whose holders spend a
# meaningful share in the allocator is named by alloc_under_lock, scored
# by the whole wait its waiters lost (W), as lock_contention would be.
eq(top["score"], 4000 * R, "score = W")
eq([x["kind"] for x in f if x["lock"] == q["id"]], ["alloc_under_lock"],
   "one finding on the queue lock")
eq(ev["slow_calls"], 300 * R // 1000, "slow calls")
for x in f:
    check(x["kind"] != "alloc_under_lock" or x["lock"] != s["id"],
          "no alloc_under_lock on the stats lock")
# The stats lock is contended and never allocates: lock_contention.
eq([(x["kind"], x["score"]) for x in f if x["lock"] == s["id"]],
   [("lock_contention", 900 * R)], "stats: one lock_contention finding")
scores = [x["score"] for x in f]
eq(scores, sorted(scores, reverse=True), "findings sorted by score")
kinds = {x["kind"] for x in f}
check("cross_thread_free" in kinds, "cross_thread_free found")
check("slow_alloc" in kinds, "slow_alloc found")
roles = {th["tid"]: th["role"] for th in d["threads"]}
eq(roles[100], "main", "main role")
check(roles[104].startswith("consumer"), "consumer role")
names = {th["tid"]: th["name"] for th in d["threads"]}
eq(names[101], "producer", "thread name")

# text: the cascade told, within 100 columns
rc, out, err = run("report", path)
eq(rc, 0, "text exit")
check("The cascade" in out, "cascade told")
check("waiters lost 4.0 ms on lock queue" in out, "cascade W")
check("65.0%" in out, "cascade A")
# The consumer frees the blocks under the lock: 300 of the 2340 ns of
# allocator time per round are frees, which moving the allocation out
# does not remove: 4.0 ms x 65.0% x 87.2% (not 2.6 ms, W x A).
check("give back up to about 2.3 ms (4.0 ms x 65.0% x 87.2% in "
      "allocations)" in " ".join(out.split()), "cascade gives back")
check(max(len(l) for l in out.splitlines()) <= 100, "100 columns")
rc, out, err = run("report", "--top", "1", path)
eq(rc, 0, "--top 1 exit")
eq(out.count("\n#"), 1, "--top 1")

# folded stacks
rc, out, err = run("report", "--format=folded", "--metric=wait", path)
eq(rc, 0, "folded wait exit")
lines = out.strip().splitlines()
check(any(l.startswith("producer_main;queue_put;[wait queue] ") for l in lines),
      "folded wait line")
total_wait = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
eq(total_wait, 4900 * R, "folded wait total")
rc, out, err = run("report", "--format=folded", "--metric=alloc-under-lock", path)
eq(rc, 0, "folded alloc-under-lock exit")
check("producer_main;queue_put;[alloc under queue] %d" % (2340 * R) in out,
      "folded alloc-under-lock")
rc, out, err = run("report", "--format=folded", "--metric=cross-thread", path)
eq(rc, 0, "folded cross-thread exit")
check("producer_main;queue_put;[cross-thread free] %d" % (3 * R) in out,
      "folded cross-thread")
rc, out, err = run("report", "--format=folded", "--metric=hold", path)
check(rc == 0 and "[hold queue]" in out, "folded hold")

# filters
d2 = report_json("--lock=stats", path)
eq([lk["name"] for lk in d2["locks"]], ["stats"], "--lock filter locks")
check(all(x["kind"] != "alloc_under_lock" for x in d2["findings"]),
      "--lock=stats: no alloc_under_lock")
d3 = report_json("--min-severity=high", path)
check(all(x["severity"] == "high" for x in d3["findings"]), "--min-severity")
# all() holds for an empty list: the filter must keep every high finding.
eq(len(d3["findings"]), sum(x["severity"] == "high" for x in d["findings"]),
   "--min-severity=high keeps the high findings")
check(len(d3["findings"]) >= 1, "--min-severity: the cascade has a high finding")
d4 = report_json("--thread=104", path)
eq(d4["totals"]["frees"], 3 * R, "--thread: the consumer's frees")
eq(d4["totals"]["allocations"], 0, "--thread: no allocations")
eq(d4["totals"]["cross_thread_frees"], 3 * R, "--thread: still cross-thread")
d5 = report_json("--thread=producer", path)
eq(d5["totals"]["allocations"], 6 * R, "--thread by name")
d6 = report_json("--no-symbols", path)
eq(d6["findings"][0]["site"]["function"], None, "--no-symbols")

# precision: contended locks, no allocation while held
path, _ = mktrace("precise", "precise.trace", "--rounds", R)
d = report_json(path)
eq([x for x in d["findings"] if x["kind"] == "alloc_under_lock"], [],
   "precision: no alloc_under_lock")
for lk in d["locks"]:
    eq(lk["allocations_in_holds"], 0, "precise: no allocations in holds")
check(d["totals"]["contended_acquisitions"] > 0, "precise: contended")
rc, out, err = run("report", path)
eq(rc, 0, "precise: text exit")
check("The cascade" not in out, "precise: no cascade")

# mixed: nested lock, starvation, churn
path, _ = mktrace("mixed", "mixed.trace", "--rounds", R)
d = report_json("--top", "50", path)
kinds = [x["kind"] for x in d["findings"]]
eq(kinds[0], "alloc_under_lock", "mixed: top finding")
nest = [x for x in d["findings"] if x["kind"] == "nested_lock"]
eq(len(nest), 1, "one nested_lock")
outer = lock_by_name(d, "outer")
inner = lock_by_name(d, "inner")
eq(nest[0]["lock"], outer["id"], "nested outer")
eq(nest[0]["inner_lock"], inner["id"], "nested inner")
eq(nest[0]["evidence"]["inner_wait_ns_while_outer_held"], 200 * R, "nested wait")
check("inner" in nest[0]["advice"] and "outer" in nest[0]["advice"],
      "nested advice names both locks")
# One lock for both only when the inner lock is not taken without the
# outer; taken alone too (half its acquisitions), merging would serialise
# its other users.
check("use one lock for both" in nest[0]["advice"] and
      "(0 of its %d acquisitions)" % R in nest[0]["advice"],
      "inner only under outer: one lock for both: " + nest[0]["advice"])
p2, _ = mktrace("mixed", "mixed-alone.trace", "--rounds", R, "--inner-alone")
n2 = [x for x in report_json("--top", "50", p2)["findings"]
      if x["kind"] == "nested_lock"]
eq(len(n2), 1, "one nested_lock (inner taken alone too)")
check(n2 and "use one lock" not in n2[0]["advice"] and
      "taken without the outer (%d of its %d acquisitions)" % (R, 2 * R)
      in n2[0]["advice"] and "would serialise" in n2[0]["advice"],
      "inner also taken alone: no merge advised: %s"
      % (n2 and n2[0]["advice"]))
# The "starved" lock's two users are two threads of different roles
# (worker-a, worker-b; no whole stack reaches a thread start): starvation
# compares peers of one role only, at least 3.
st = [x for x in d["findings"] if x["kind"] == "starvation"]
eq(st, [], "mixed: no starvation between two threads of different roles")
churn = [x for x in d["findings"] if x["kind"] == "alloc_churn"
         and x["site"]["function"] == "churn_op"]
eq(len(churn), 1, "churn on churn_op")
eq(churn[0]["evidence"]["size"], 16, "churn size")

# dump prints every record
rc, out, err = run("dump", path)
eq(rc, 0, "dump exit")
check("ALLOC ptr=0x" in out and "LOCK_NAME" in out, "dump records")
rc, out2, err = run("dump", "--merged", path)
eq(rc, 0, "merged dump exit")
recs = [l for l in out.splitlines() if not l.startswith("#")]
recs2 = [l for l in out2.splitlines() if not l.startswith("#")]
eq(len(recs), len(recs2), "dump and merged dump: same records")


CALLS = {"ALLOC", "FREE", "REALLOC"}


def stream_keys(dump):
    """Each thread's merge keys, in its stream's order (reader.c): a
    record's time; a FREE's (and a freeing REALLOC's first) is its start,
    tsc - ticks; an ALLOC_LOCK_WAIT's is the start of the allocator call
    after it in its chunk (the thread's previous key when the chunk ends
    first); never before the thread's previous key."""
    chunks = {}  # tid -> list of chunks, each a list of dump lines
    for line in dump.splitlines():
        if line.startswith("# chunk"):
            tid = line.split("tid=")[1].split()[0]
            chunks.setdefault(tid, []).append([])
        elif not line.startswith("#"):
            tid = line.split()[0][4:]
            chunks.setdefault(tid, [[]])[-1].append(line.split())
    keys = {}
    for tid, cs in chunks.items():
        last, out = 0, []
        for c in cs:
            for i, f in enumerate(c):
                tsc = int(f[1][4:])
                key = tsc
                if f[2] == "FREE":
                    key = tsc - int(f[4][len("ticks="):])
                elif f[2] == "ALLOC_LOCK_WAIT":
                    key = 0
                    for g in c[i + 1:]:
                        if g[2] == "ALLOC_LOCK_WAIT" or g[2] in META:
                            continue
                        key = tsc
                        if g[2] in CALLS:
                            t = [x for x in g if x.startswith("ticks=")]
                            key = min(tsc, int(g[1][4:]) -
                                      int(t[0][len("ticks="):]))
                        break
                last = max(key, last)
                out.append(last)
        keys["tid=" + tid] = out
    return keys


META = {"PROCESS", "MODULE", "STACK", "LOCK_NEW", "LOCK_NAME", "THREAD_NAME",
        "END", "NOTE"}
per = stream_keys(out)
at = {}
tscs = []
for line in recs2:
    t = line.split()[0]
    tscs.append(per[t][at.get(t, 0)])
    at[t] = at.get(t, 0) + 1
check(tscs == sorted(tscs), "merged dump in time order")

# starvation: five peers of one role (client_main; four of them known by
# their name stem "client" only) on a queue-like lock, served 1, 1, 1/2, 0,
# 0 times per round: condition wakes are the measure of service.
path, _ = mktrace("starve", "starve.trace", "--rounds", R)
d = report_json(path)
jobs = lock_by_name(d, "jobs")
st = [x for x in d["findings"] if x["kind"] == "starvation"]
eq([x["lock"] for x in st], [jobs["id"]], "starve: starvation on jobs")
e = st[0]["evidence"]
eq(e["threads"], 5, "starve: 5 peers (the server is a role of its own)")
eq(e["service_by_cond_wakes"], 1, "starve: service = cond wakes")
eq(e["threads_with_no_acquisition"], 2, "starve: 2 peers never served")
eq((e["service_min"], e["service_max"], e["service_total"]),
   (0, R, 2.5 * R), "starve: service min/max/total")
check(e["acquisitions_cv"] > 0.8, f"starve: rate CV {e['acquisitions_cv']}")
# Score: the time the peers behind lost at the role's mean rate: two
# clients with none over their whole life (about R x 10 us each), client 2
# at about the mean.
# Both behind came back every round without a wake (all their visits
# unserved): their whole gap counts, but the score is capped at the
# wall-clock time the trace covers for them (never a score above the
# trace's length).
life = R * 10000
check(1.9 * life < e["lost_ns"] < 2.1 * life,
      f"starve: lost_ns {e['lost_ns']} not about 2 x {life}")
eq(st[0]["score"], e["covered_ns"], "starve: score = covered_ns")
check(st[0]["score"] <= d["trace"]["duration_ns"],
      f"starve: score {st[0]['score']} above the trace's duration")
check("client_main" in st[0]["advice"], "starve: advice names the role")
check(f"(condition wakes from 0 to {R}, 2 with none)" in st[0]["advice"],
      f"starve: advice gives the range of service: {st[0]['advice']}")
eq(st[0]["severity"], "high", "starve: severity")
# Without symbols the role is the name stem: the same five peers.
d = report_json("--no-symbols", path)
st = [x for x in d["findings"] if x["kind"] == "starvation"]
eq(len(st), 1, "starve --no-symbols: one starvation")
eq(st[0]["evidence"]["threads"], 5, "starve --no-symbols: 5 peers")
# A role is the entry function past the thread's start: the one client
# with a whole stack still runs client_main when that stack is rooted at
# the program's _start (no libc start code between), or passes through a
# trampoline in a namespace (thread_start::run()) on its way there; the
# other four, known by their stem, take its role.
for root in ("start", "trampoline"):
    path, _ = mktrace("starve", "starve-%s.trace" % root, "--rounds", R,
                      "--client-root", root)
    st = [x for x in report_json(path)["findings"]
          if x["kind"] == "starvation"]
    eq(len(st), 1, "starve, root %s: one starvation" % root)
    if st:
        eq(st[0]["evidence"]["threads"], 5, "starve, root %s: 5 peers" % root)
        check(st[0]["advice"].startswith("The 5 threads running client_main "),
              "starve, root %s: the role is client_main: %s" %
              (root, st[0]["advice"]))

# Two roles with different but even shares of one lock (producers: 10
# acquisitions and a wake every 10 rounds; consumers: a wake per round):
# not starvation (the old grouping, cond waiters together, flagged it).
path, _ = mktrace("roles", "roles.trace", "--rounds", R)
d = report_json(path)
eq([x for x in d["findings"] if x["kind"] == "starvation"], [],
   "roles: no starvation across roles")
eq(lock_by_name(d, "ring")["contended"], 33 * R, "roles: ring contended")

# A free of a pointer no thread allocated, by the consumer (which frees the
# producers' blocks): one unknown free, and the cross-thread count unchanged
# (an unknown free has no allocating thread to differ from).
path, _ = mktrace("cascade", "unknown.trace", "--rounds", R, "--unknown-free")
d = report_json(path)
eq(d["totals"]["unknown_frees"], 1, "unknown free counted")
eq(d["totals"]["cross_thread_frees"], 3 * R, "unknown free is not cross-thread")
eq(d["totals"]["frees"], 6 * R + 1, "unknown free is a free")

# Pools uneven by design: idle workers woken for work
# now and then (every acquisition ends in a wake: waiting for work, not for
# the lock); GC helpers taking a lock unequally with hardly any wait; a
# runtime's threads of one entry (thread_native_entry ->
# thread_main_inner) with different names, each waiting: not peers. No
# starvation above info, and no score above the trace's duration.
path, _ = mktrace("pool", "pool.trace", "--rounds", R)
d = report_json(path)
st = [x for x in d["findings"] if x["kind"] == "starvation"]
eq([x for x in st if x["severity"] != "info"], [],
   "pool: no starvation above info")
for x in st:
    check(x["score"] <= d["trace"]["duration_ns"],
          f"pool: starvation score {x['score']} above the trace's duration")
eq([x for x in st if x["lock"] == lock_by_name(d, "codecache")["id"]], [],
   "pool: the runtime's differently named threads are not peers")
eq(lock_by_name(d, "codecache")["contended"], 14 * R, "pool: codecache waits")
eq(lock_by_name(d, "tasks")["cond_wakes"], 1000 + 250 + 63 + 16,
   "pool: tasks wakes")
# The GC helpers take "heap" unequally and barely wait for it (50 ns once
# in the whole run): nothing held them back on this lock.
heap = [x for x in st if x["lock"] == lock_by_name(d, "heap")["id"]]
eq(heap, [], "pool: GC helpers that hardly waited are not starved")

# An idle pool after an attach (MariaDB's tpool mutex was "starvation
# [high]" 7.05 s): workers asleep on the pool's condition most of the time,
# woken unevenly (LIFO by design), each taking the lock once more per wake
# without a wait; the window closed long before the workers exit.
path, _ = mktrace("tpool", "tpool.trace", "--rounds", R)
d = report_json(path)
tp, ps = lock_by_name(d, "tpool")["id"], lock_by_name(d, "pstats")["id"]
st = [x for x in d["findings"] if x["kind"] == "starvation"]
eq([x for x in st if x["severity"] != "info" and x["lock"] == tp], [],
   "tpool: an idle pool waiting for work is not starved")
# The same workers on "pstats", the ones served less waiting longer each
# time (a larger share of their life than the workers ahead), are
# starvation, counted within
# the recorded window (about 1e5 + R * 1e4 ns), not to the threads' exits
# three times as late.
w = 100000 + R * 10000
ps = [x for x in st if x["lock"] == ps]
check(len(ps) == 1, f"tpool: no starvation on pstats: {st}")
# The trampoline is not a role: the workers' is their next frame.
check(ps and "threads running pool_worker get" in ps[0]["advice"],
      f"tpool: the workers' role is not pool_worker: {ps}")
for x in ps:
    e = x["evidence"]
    check(e["covered_ns"] <= w and x["score"] <= w,
          f"tpool: starvation covers {e['covered_ns']} ns, more than the "
          f"recorded window ({w} ns)")
    check(e["unweighted_lost_ns"] <= e["threads_behind"] * w,
          f"tpool: {e['unweighted_lost_ns']} ns missed by "
          f"{e['threads_behind']} threads behind in a {w} ns window")
# On "pcount" every worker waits 100 ns each time: the ones woken less
# take it less and wait a smaller share of their life than the ones ahead;
# the pool's wakes hold them back, not this lock (a mutex shared by more
# runnable threads than cores looks the same).
pc = lock_by_name(d, "pcount")["id"]
eq([x for x in st if x["lock"] == pc], [],
   "tpool: equal waits on pcount are no starvation")
eq(lock_by_name(d, "tpool")["cond_wakes"], 1000 + 500 + 250 + 125 + 63,
   "tpool: wakes")
# The time recorded is the window (first event to the PAUSE mark, 1000 ns
# after the last round), not the span to the exits; rates and severities
# are per recorded time, and the header says both.
tr = d["trace"]
check(w <= tr["recorded_ns"] <= w + 1000 and tr["duration_ns"] > 2 * w,
      f"tpool: recorded {tr['recorded_ns']} ns of {tr['duration_ns']} ns, "
      f"the window is {w} ns")
rc, out, err = run("report", path)
check(rc == 0 and "recorded in" in out.split("\n\n")[0],
      "tpool: the header gives the recorded time and the span")

# Waiting for work is not lost time: two idle threads
# per round wait 3000 ns for the queue lock, find no work and wait on its
# condition. The alloc_under_lock finding counts only the producers' waits.
def top_aul(*opts):
    p, _ = mktrace("cascade", "idle.trace", "--rounds", R, *opts)
    d = report_json(p)
    return [f for f in d["findings"] if f["kind"] == "alloc_under_lock"][0], d


base, _ = top_aul()
f, d = top_aul("--idle-waiters")
eq(lock_by_name(d, "queue")["wait_ns"], 4000 * R + 6000 * R,
   "idle: the queue's wait includes the idle threads'")
eq(lock_by_name(d, "queue")["idle_wait_ns"], 6000 * R,
   "idle: their waits are waits for work")
eq(f["evidence"]["lock_wait_ns"], 4000 * R,
   "idle: waiters lost only the producers' waits")
check(0.9 * base["score"] <= f["score"] <= base["score"],
      "idle: score %g about the %g without idle waiters" %
      (f["score"], base["score"]))
rc, out, err = run("report", os.path.join(TMP, "idle.trace"))
check("not counting 6.0 ms of waits that found no work" in
      " ".join(out.split()),
      "idle: the cascade says what it left out")

# several traces together, and per process
p1, _ = mktrace("cascade", "a.trace", "--rounds", 100)
p2, _ = mktrace("precise", "b.trace", "--rounds", 100)
d = report_json(p1, p2)
eq(len(d["traces"]), 2, "two traces")
eq(d["totals"]["allocations"], 1200, "totals summed")
ids = [lk["id"] for lk in d["locks"]]
eq(len(ids), len(set(ids)), "lock ids unique across traces")
rc, out, err = run("report", "--per-process", p1, p2)
eq(rc, 0, "--per-process exit")
eq(out.count("mallock report\n"), 2, "--per-process: two reports")
# DROP records (events a thread's buffer lost): summed per thread and in
# all. Thread 2 lost 7 then 3 events, thread 3 lost 5.
path = os.path.join(TMP, "drops.trace")
lk = tracefmt.meta("LOCK_NEW", uv(1) + uv(0x1000) + uv(0) + uv(1))
body = {2: [tracefmt.event("DROP", 10, 7), lock_acq(10, 1), lock_rel(10, 1),
            tracefmt.event("DROP", 10, 3)],
        3: [lock_acq(20, 1), lock_rel(10, 1), tracefmt.event("DROP", 10, 5)]}
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc_record(b"/bin/drops", b"drops") + lk))
    for tid, recs in body.items():
        f.write(chunk(tid, b"".join(recs)))
d = report_json(path)
eq(d["trace"]["dropped_events"], 15, "events dropped in all")
eq({th["tid"]: th["dropped_events"] for th in d["threads"]}, {2: 10, 3: 5},
   "events dropped by each thread")
# A trace whose events all have one time: it spans 0 ns.
path = os.path.join(TMP, "instant.trace")
with open(path, "wb") as f:
    f.write(file_header(1))
    f.write(chunk(0, proc_record(b"/bin/instant", b"instant") + lk))
    f.write(chunk(2, lock_acq(10, 1) + lock_rel(0, 1)))
d = report_json(path)
eq(d["trace"]["duration_ns"], 0, "duration of a trace of one instant")
done("analyzer_report")
