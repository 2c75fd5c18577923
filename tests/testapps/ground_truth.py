#!/usr/bin/env python3
"""Ground truth of the bundled test apps.

usage: ground_truth.py BINDIR WORKDIR CASE

BINDIR holds `mallock` and the apps (build/bin); WORKDIR receives the traces
(each deleted once reported, kept on failure). CASE is one of the names in
CASES below. For each app the bug variant and the fixed variant are recorded
with `mallock record`, reported with `mallock report --format=json`, and the
report is checked against the app's ground truth (docs/testapps.md).

Timing. A finding ranked by the time waiters lost needs a lock that is
actually contended, and on 2 cores svcqueue's queue lock runs in one of two
modes: contended (thousands of contended acquisitions per second) or, in
about one run in five, nearly idle (a handful), where the analyzer rightly
finds nothing worth ranking. That is a precondition of the recording, not
the property under test: a recording whose precondition fails is made again
(at most ATTEMPTS times, each one printed) and the case fails if none meets
it. An assertion on a recording that meets its precondition is never retried.

Every case prints one `GT` line per recording with the numbers it asserted
on, so repeated runs can be summarised (docs/testapps.md).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

# The tests' check (tests/lib/pycheck.py), stopping at the first failure:
# main() catches Failed to name the case and keep the traces.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
from pycheck import Failed, check  # noqa: E402

pycheck.setup(stop=True)
# 6: svcqueue_cxx's queue lock ran idle in 6 of 16 recordings at load 4 to
# 6 (2026-12-01), and 3 idle recordings in a row happened (about 5% a
# variant); 6 in a row is about 0.3%.
ATTEMPTS = 6


class Precondition(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Precondition(msg)


class Ctx:
    def __init__(self, bindir, workdir, case):
        self.bin = bindir
        self.work = workdir
        self.case = case
        self.n = 0
        self.keep = []

    def record(self, app, args, env=None, tag=None, exe=None, report=()):
        """Record APP ARGS under the shim (the program exe, or APP in
        BINDIR), return the JSON report (mallock report's extra options
        `report`)."""
        self.n += 1
        tag = tag or app
        trace = os.path.join(self.work,
                             f"{self.case}.{os.getpid()}.{self.n}.{tag}.trace")
        if os.path.exists(trace):
            os.remove(trace)
        e = dict(os.environ)
        e.pop("TCMALLOC_TRANSFER_NUM_OBJ", None)
        e.update(env or {})
        cmd = [os.path.join(self.bin, "mallock"), "record", "-o", trace, "--",
               exe or os.path.join(self.bin, app)] + args
        t0 = time.monotonic()
        p = subprocess.run(cmd, env=e, capture_output=True, text=True,
                           timeout=60)
        if p.returncode != 0:
            raise Failed(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
        r = subprocess.run([os.path.join(self.bin, "mallock"), "report",
                            "--format=json", *report, trace],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise Failed(f"mallock report {trace}: exit {r.returncode}\n"
                       f"{r.stderr}")
        j = json.loads(r.stdout)
        j["_trace"] = trace
        j["_stdout"] = p.stdout
        j["_cmd"] = " ".join(f"{k}={v}" for k, v in (env or {}).items()) + \
            (" " if env else "") + app + " " + " ".join(args)
        j["_secs"] = time.monotonic() - t0
        self.keep.append(trace)
        return j

    def done(self, j):
        """The report passed: delete its trace."""
        t = j["_trace"]
        if os.path.exists(t):
            os.remove(t)
        if t in self.keep:
            self.keep.remove(t)


# ---- helpers over the report --------------------------------------------

def fn(frame):
    return (frame or {}).get("function") or ""


def names(stack):
    return [fn(f) for f in (stack or [])]


def short(fname):
    """`tree_insert((anonymous namespace)::SvcQueue*, ...)` -> tree_insert."""
    return fname.split("(")[0].split("::")[-1].strip()


def stack_names(f):
    """Every function name in a finding's site, stack and stacks."""
    out = [short(fn(f.get("site")))] + [short(n) for n in names(f.get("stack"))]
    for s in f.get("stacks") or []:
        out += [short(n) for n in names(s.get("stack"))]
    return out


def lock_by_name(j, name):
    ls = [l for l in j["locks"] if l.get("name") == name]
    check(ls, f"{j['_cmd']}: no lock named {name!r} in the report "
          f"(locks: {[l.get('name') for l in j['locks']]})")
    return max(ls, key=lambda l: l["acquisitions"])


def lock_ids(j, name):
    return {l["id"] for l in j["locks"] if l.get("name") == name}


def findings(j, kind, lock=None):
    fs = [f for f in j["findings"] if f["kind"] == kind]
    if lock is not None:
        ids = lock_ids(j, lock)
        fs = [f for f in fs if f.get("lock") in ids]
    return fs


def describe(j, n=5):
    lines = []
    for i, f in enumerate(j["findings"][:n]):
        lines.append(f"  #{i + 1} {f['kind']} [{f['severity']}] "
                     f"score={f['score']:.4g} lock={f.get('lock_name')} "
                     f"site={fn(f.get('site'))}")
    return "\n".join(lines) or "  (no findings)"


def no_starvation(j):
    """No starvation finding above info: these apps have at most two
    threads of one role on a lock (or, reportqueue, four producers with
    even shares by design), so the analyzer's starvation, which compares
    peers of one role (at least three), must not rank one. An info one may
    stand: on a loaded 2-core machine the scheduler itself can give the
    four producers uneven shares (23k to 122k acquisitions in one CI run,
    0.9 ms lost), and that is what the run did."""
    st = [f for f in findings(j, "starvation") if f["severity"] != "info"]
    check(not st, f"{j['_cmd']}: starvation found:\n{describe(j, 8)}")


def gt(case, **kw):
    print("GT " + case + " " + " ".join(f"{k}={v}" for k, v in kw.items()),
          flush=True)


def with_precondition(ctx, what, fn_record):
    """Call fn_record() until it does not raise Precondition."""
    last = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return fn_record()
        except Precondition as e:
            last = e
            for t in ctx.keep:  # a recording that did not count
                if os.path.exists(t):
                    os.remove(t)
            ctx.keep.clear()
            print(f"{ctx.case}: {what}: attempt {attempt}/{ATTEMPTS}: "
                  f"precondition not met ({e}); recording again", flush=True)
    raise Failed(f"{what}: precondition never met in {ATTEMPTS} recordings: "
               f"{last}")


# ---- svcqueue: allocation under the queue lock ---------------------------

# The demo's settings (scripts/demo.sh): two producers and two consumers keep
# the queue lock contended on 2 cores; four allocations per put make the
# allocator a visible share of its hold time.
SVCQ = ["--producers=2", "--consumers=2", "--allocs-per-put=4",
        "--duration=1.2"]
# 5000: a lock contended only a thousand times or so (1232 at load 16, on
# the way into or out of the idle mode) loses so little that alloc_churn
# can outrank alloc_under_lock; the contended mode gave 8568 to 140658 in
# every recording we made (2026-12-01), the idle one 4 to 456.
SVCQ_MIN_CONTENDED = 5000
# svcqueue_cxx with 2/2 ran idle (< 1000 contended) in 2 of 5 tree
# recordings at load 7 to 8 (2026-12-01), with 3/3 in none of 5 then but
# below 5000 in 11 of 12 on a quiet machine (load 1.7), and with 4/2 in none
# of 5 at load 7 to 8 and none of 6 quiet (17348 to 109470 contended).
SVCQ_CXX = ["--producers=4", "--consumers=2", "--allocs-per-put=4",
            "--duration=1.2"]


def svcqueue_tree_heap(ctx, app, insert_fns, site=None, flags=SVCQ):
    """The tree variant's top finding is alloc_under_lock on svcqueue.lock
    reached from insert_fns (its site exactly `site` when given); the heap
    variant, recorded while the lock is contended too, allocates in almost
    none of its holds and has no alloc_under_lock."""
    def tree():
        j = ctx.record(app, ["--container=tree"] + flags, tag="tree")
        q = lock_by_name(j, "svcqueue.lock")
        gt(ctx.case, variant="tree", contended=q["contended"],
           wait_ms=round(q["wait_ns"] / 1e6, 1),
           top=j["findings"][0]["kind"] if j["findings"] else None,
           top_site=short(fn(j["findings"][0].get("site")))
           if j["findings"] else None,
           top_score_ms=round(j["findings"][0]["score"] / 1e6, 1)
           if j["findings"] else 0)
        need(q["contended"] >= SVCQ_MIN_CONTENDED,
             f"svcqueue.lock contended {q['contended']} times "
             f"(< {SVCQ_MIN_CONTENDED}): the queue ran in its idle mode")
        return j

    j = with_precondition(ctx, "tree", tree)
    q = lock_by_name(j, "svcqueue.lock")
    check(q["queue_like"] is True,
          f"{j['_cmd']}: svcqueue.lock is not queue_like")
    check(j["findings"], f"{j['_cmd']}: no findings")
    top = j["findings"][0]
    check(top["kind"] == "alloc_under_lock" and top.get("lock") == q["id"],
          f"{j['_cmd']}: the top finding is not alloc_under_lock on "
          f"svcqueue.lock:\n{describe(j)}")
    fl = next(l for l in j["locks"] if l["id"] == top["lock"])
    check(fl["queue_like"] is True, "top finding's lock is not queue_like")
    check(top["evidence"].get("queue_like") == 1,
          f"evidence.queue_like = {top['evidence'].get('queue_like')}")
    sn = stack_names(top)
    check(any(n in insert_fns for n in sn),
          f"{j['_cmd']}: the top alloc_under_lock's site/stack names none "
          f"of {insert_fns}: {sn}")
    if site:
        # The site itself, not a name anywhere in the stack: frames inlined
        # from the C++ standard headers (operator new's allocate, the
        # multiset's node) fold into the function that called them.
        check(short(fn(top.get("site"))) == site,
              f"{j['_cmd']}: the top alloc_under_lock's site is "
              f"{fn(top.get('site'))!r}, not {site}: stack {sn}")
        # Every allocation under the lock is made in tree_insert: in the
        # C++ variant the multiset's node too (std::__new_allocator's
        # allocate, inlined: a site of its own if the fold were lost).
        # One finding per lock: its sites are listed in it.
        other = [(fn(x.get("site")), (x.get("site") or {}).get("file"))
                 for f in findings(j, "alloc_under_lock", "svcqueue.lock")
                 for x in f.get("sites") or [f]
                 if short(fn(x.get("site"))) != site]
        check(not other, f"{j['_cmd']}: alloc_under_lock on svcqueue.lock "
              f"at other sites than {site}: {other}")
    if flags is SVCQ:
        no_starvation(j)
    else:
        # Four producers on 2 cores share a mutex that lets a releasing
        # thread take it again before a woken waiter runs: the producers'
        # unequal shares are a true starvation (2 of 6 tree recordings,
        # below alloc_under_lock); nothing else starves.
        st = [f for f in findings(j, "starvation")
              if f["severity"] != "info"
              and "producer_main" not in f.get("advice", "")]
        check(not st, f"{j['_cmd']}: starvation found on other threads "
              f"than the producers:\n{describe(j, 8)}")
    ctx.done(j)

    def heap():
        h = ctx.record(app, ["--container=heap"] + flags, tag="heap")
        hq = lock_by_name(h, "svcqueue.lock")
        gt(ctx.case, variant="heap", contended=hq["contended"],
           acquisitions=hq["acquisitions"],
           allocs_in_holds=hq["allocations_in_holds"],
           alloc_under_lock=len(findings(h, "alloc_under_lock",
                                         "svcqueue.lock")))
        # An idle lock scores 0 whatever the analyzer does: "no finding"
        # means something only on a contended lock.
        need(hq["contended"] >= SVCQ_MIN_CONTENDED,
             f"svcqueue.lock contended {hq['contended']} times "
             f"(< {SVCQ_MIN_CONTENDED}): the queue ran in its idle mode")
        return h

    h = with_precondition(ctx, "heap", heap)
    hq = lock_by_name(h, "svcqueue.lock")
    aul = findings(h, "alloc_under_lock", "svcqueue.lock")
    # The heap is reserved up front: its holds allocate nothing (a put that
    # grows it is the rare exception).
    check(hq["allocations_in_holds"] <= 0.01 * hq["acquisitions"],
          f"{h['_cmd']}: {hq['allocations_in_holds']} allocations in "
          f"{hq['acquisitions']} holds of svcqueue.lock in the fixed variant")
    check(not aul, f"{h['_cmd']}: alloc_under_lock on svcqueue.lock in the "
          f"fixed variant:\n{describe(h)}")
    no_starvation(h)
    ctx.done(h)


def case_svcqueue(ctx):
    svcqueue_tree_heap(ctx, "svcqueue", {"tree_insert", "svcqueue_put"},
                       site="tree_insert")


def case_svcqueue_cxx(ctx):
    svcqueue_tree_heap(ctx, "svcqueue_cxx", {"tree_insert", "svcqueue_put"},
                       site="tree_insert", flags=SVCQ_CXX)
    # The multiset's nodes are one of the four blocks a put makes at
    # tree_insert: the churn advice names the container from the frames
    # inlined from its header (stl_multiset.h), and their share.
    j = ctx.record("svcqueue_cxx", ["--container=tree"] + SVCQ_CXX,
                   tag="churn")
    ch = [f for f in findings(j, "alloc_churn")
          if short(fn(f.get("site"))) == "tree_insert"]
    check(ch, f"{j['_cmd']}: no alloc_churn at tree_insert:\n{describe(j)}")
    for f in ch:
        m = re.search(r"\((\d+)% of them a std::multiset's nodes",
                      f["advice"])
        check(m and 15 <= int(m.group(1)) <= 35,
              f"{j['_cmd']}: the churn at tree_insert does not name the "
              f"multiset's share: {f['advice']}")
    ctx.done(j)


# ---- svcqueue: the central-free-list cascade ------------------------------

CASCADE = ["--container=tree", "--producers=2", "--consumers=2",
           "--allocs-per-put=4", "--duration=1.2"]
TRANSFER1 = {"TCMALLOC_TRANSFER_NUM_OBJ": "1"}


def cascade_numbers(ctx, app, churn):
    j = ctx.record(app, CASCADE + [f"--churn-threads={churn}"], TRANSFER1,
                   tag=f"{app}-churn{churn}")
    q = lock_by_name(j, "svcqueue.lock")
    calls = q["allocations_in_holds"]
    slow = q["slow_allocator_calls_in_holds"]
    site_slow = sum(f["evidence"].get("slow_calls", 0)
                    for f in findings(j, "alloc_under_lock", "svcqueue.lock"))
    # The cascade as the finding tells it: the wait on the allocator's own
    # lock inside the queue lock's holds, from the finding's evidence (not
    # the lock's figure, which stays when the finding loses the link).
    site_alw = sum(f["evidence"].get("allocator_lock_wait_ns", 0)
                   for f in findings(j, "alloc_under_lock", "svcqueue.lock"))
    n = {"calls": calls, "slow": slow,
         "slow_ppm": round(1e6 * slow / calls, 1) if calls else 0.0,
         "evidence_slow_calls": site_slow,
         "alw_ns": q["allocator_lock_wait_ns_in_holds"],
         "evidence_alw_ns": site_alw,
         "contended": q["contended"],
         "total_alw_waits": j["totals"]["allocator_lock_waits"],
         "aul_sites": sorted({short(fn(f.get("site"))) for f in
                              findings(j, "alloc_under_lock",
                                       "svcqueue.lock")}),
         "unknown_frees": j["totals"]["unknown_frees"],
         "frees": j["totals"]["frees"],
         "dropped": j["totals"]["dropped_events"],
         "truncated": bool(j["trace"].get("truncated")),
         "alloc_locks": sorted((l.get("label") or "", int(l["address"], 16),
                                l.get("allocator_internal_waits", 0),
                                l.get("waiting_call_size_min", 0),
                                l.get("waiting_call_size_max", 0))
                               for l in j["locks"]
                               if l.get("kind") == "allocator-internal")}
    gt(ctx.case, app=app, churn=churn, **n)
    ctx.done(j)
    return n


def case_svcqueue_cascade(ctx):
    ch1 = cascade_numbers(ctx, "svcqueue", 1)
    ch0 = cascade_numbers(ctx, "svcqueue", 0)
    gl1 = cascade_numbers(ctx, "svcqueue_glibc", 1)
    # Allocator-internal lock waits (tcmalloc's SpinLock futex waits) inside
    # the queue lock's holds: with a churn pair on the node's size class they
    # are there in every run (0.9 to 14 ms in 1.2 s; 14 us in one run with
    # two CPU hogs added); without it nothing but the queue lock's holders
    # uses that size class, so its central free list is never contended
    # under the queue lock (0 in every run we made).
    check(ch1["alw_ns"] > 0,
          f"churn 1: allocator_lock_wait_ns_in_holds is 0")
    check(ch1["evidence_alw_ns"] > 0,
          f"churn 1: the alloc_under_lock finding's allocator_lock_wait_ns "
          f"is 0 (the lock's figure: {ch1['alw_ns']} ns)")
    # The churn pair's size class is one of tcmalloc's central free lists
    # (Static::central_cache_, an array by size class; its symbol is not
    # exported): its lock is named by the array and the index, and two
    # elements' addresses are as far apart as their indexes say (one
    # element size for every pair).
    central, sizes = {}, {}
    for label, addr, waits, smin, smax in ch1["alloc_locks"]:
        m = re.fullmatch(r"tcmalloc::Static::central_cache_\[(\d+)\]",
                         label)
        check(m or "central_cache_" not in label,
              f"churn 1: allocator lock label {label!r}")
        if m:
            check(0 < int(m.group(1)) < 256,
                  f"churn 1: size class out of range in {label!r}")
            check(int(m.group(1)) not in central,
                  f"churn 1: two allocator locks labelled {label!r}")
            central[int(m.group(1))] = addr
            sizes[int(m.group(1))] = (smin, smax)
    check(central, f"churn 1: no allocator-internal lock is named "
          f"tcmalloc::Static::central_cache_[N]: {ch1['alloc_locks']}")
    idx = sorted(central)
    steps = {(central[b] - central[a]) / (b - a)
             for a, b in zip(idx, idx[1:])}
    check(len(steps) <= 1 and all(s > 0 and s == int(s) for s in steps),
          f"churn 1: central_cache_ elements at {central} have no one size")
    # Each central free list is waited on by calls of its size class only:
    # the block sizes of its waiters never overlap another list's, and a
    # larger index holds larger blocks.
    known = [(i, sizes[i]) for i in idx if sizes[i][1]]
    check(known, f"churn 1: no central free list knows its waiters' block "
          f"sizes: {sizes}")
    check(all(a[1][1] < b[1][0] for a, b in zip(known, known[1:])),
          f"churn 1: central free lists' waiting call sizes overlap or "
          f"fall with the index: {known}")
    check(ch1["alw_ns"] > 10 * ch0["alw_ns"],
          f"churn 1 vs 0: allocator_lock_wait_ns_in_holds {ch1['alw_ns']} "
          f"not > 10 x {ch0['alw_ns']}")
    # The shim cannot see glibc's internal lock waits (inline futex
    # syscalls): glibc's count is 0 by construction, so this only checks the
    # report does not invent them.
    check(gl1["alw_ns"] == 0,
          f"glibc: allocator_lock_wait_ns_in_holds {gl1['alw_ns']} != 0")
    # Slow (> 1 us) allocator calls in the holds: present with churn (but
    # also without it: preemption on 2 cores makes 0.02% to 0.09% of the
    # in-lock calls slow in every variant, so their share is not compared;
    # with churn it ranged from 0.004% to 9%, bimodal).
    check(ch1["slow"] >= 10 and ch1["evidence_slow_calls"] >= 1,
          f"churn 1: {ch1['slow']} slow calls in holds, "
          f"{ch1['evidence_slow_calls']} in the alloc_under_lock evidence")
    # The churn threads never hold the queue lock. A node the consumer
    # freed under it, taken by the churn thread's malloc before that free
    # returned, was charged to churn_alloc_main ("alloc_under_lock
    # svcqueue.lock @ churn_alloc_main", and "@ -" for the frees it left
    # unmatched); a free is merged at its start, and so is an allocator
    # lock wait inside it (analyzer/trace/reader.c). Under load a free
    # stamped after a flush made in its own hook (shim/core/writer.c,
    # chunk_start) still left up to 1560 of 2.9M frees unknown.
    # The bound is the trace's promise, not a share: the app allocates
    # every block it frees while recording, so a free is unknown only when
    # its block's ALLOC was lost, a dropped event (dropped_events) or a
    # truncation, and each loss leaves at most one.
    for n in (ch1, gl1):
        check(n["aul_sites"] == ["tree_insert"],
              f"alloc_under_lock on svcqueue.lock at {n['aul_sites']}, "
              f"not only tree_insert")
        check(not n["truncated"], "the trace is truncated: its unknown "
              "frees have no bound")
        check(n["unknown_frees"] <= n["dropped"],
              f"{n['unknown_frees']} unknown frees of {n['frees']}: over "
              f"the trace's bound, its {n['dropped']} dropped events "
              f"(every block is allocated while recording: only a lost "
              f"ALLOC leaves its free unknown)")


# ---- xthread: tasks freed on another thread -------------------------------

XTHREAD = ["--duration=1"]


def case_xthread(ctx):
    j = ctx.record("xthread", ["--tasks=heap"] + XTHREAD, tag="heap")
    xf = findings(j, "cross_thread_free")
    at = [f for f in xf if short(fn(f.get("site"))) == "task_create"]
    gt(ctx.case, variant="heap",
       xfree=[(short(fn(f.get("site"))), f["evidence"]["cross_thread_frees"],
               f["evidence"]["share"]) for f in xf])
    check(at, f"{j['_cmd']}: no cross_thread_free at task_create:\n"
          f"{describe(j, 8)}")
    ev = at[0]["evidence"]
    check(ev["share"] >= 0.9,
          f"cross_thread_free at task_create: share {ev['share']} < 0.9")
    # The other side of the cross-thread free: the reactor. The finding
    # carries allocation stacks only, so the free side is checked through
    # the site's freeing threads and the reactor's lock stacks: reactor_main
    # must appear below reactor_finish, which the compiler inlines into it
    # (the symbolizer once lost reactor_main behind that inlined frame).
    site = [s for s in j["alloc_sites"]
            if short(fn(s.get("site"))) == "task_create"]
    check(site, f"{j['_cmd']}: no alloc site at task_create")
    tname = {t["tid"]: t.get("name") or "" for t in j["threads"]}
    top_freer = max(site[0]["freeing_threads"], key=lambda t: t["count"])
    check(tname.get(top_freer["tid"], "").startswith("xthr-reactor"),
          f"task_create's blocks are freed mostly by "
          f"{tname.get(top_freer['tid'])!r}, not the reactor")
    # reactor_finish takes the reactor's lock once per batch, so its holds
    # are in every recording (the contention points vary from run to run).
    r = subprocess.run([os.path.join(ctx.bin, "mallock"), "report",
                        "--format=folded", "--metric=hold", j["_trace"]],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mallock report --format=folded: exit "
          f"{r.returncode}: {r.stderr}")
    check(any(l.startswith("reactor_main;reactor_finish;[hold xthread.reactor.")
              for l in r.stdout.splitlines()),
          f"{j['_cmd']}: no hold stack reactor_main;reactor_finish (the "
          f"inlined frame and the function it is inlined into):\n{r.stdout}")
    # The producer (waits on "not full") and the reactor (waits on "not
    # empty") are two roles: no starvation between them.
    no_starvation(j)
    ctx.done(j)
    i = ctx.record("xthread", ["--tasks=inline"] + XTHREAD, tag="inline")
    xi = findings(i, "cross_thread_free")
    gt(ctx.case, variant="inline", xfree=len(xi),
       cross_thread_frees=i["totals"]["cross_thread_frees"])
    check(not xi, f"{i['_cmd']}: cross_thread_free in the fixed variant:\n"
          f"{describe(i, 8)}")
    # The ring's slots are allocated by nobody on the hot path: the few
    # cross-thread frees left are the set-up's (below 1% of the frees).
    check(i["totals"]["cross_thread_frees"] <= 0.01 * i["totals"]["frees"],
          f"{i['_cmd']}: {i['totals']['cross_thread_frees']} cross-thread "
          f"frees of {i['totals']['frees']} in the fixed variant")
    no_starvation(i)
    ctx.done(i)


# ---- batcher: a node per insert --------------------------------------------

BATCHER = ["--duration=1"]


def at_insert(fs):
    return [f for f in fs if short(fn(f.get("site"))) == "batcher_add_inflight"]


def case_batcher(ctx):
    def chained():
        j = ctx.record("batcher", ["--set=chained"] + BATCHER, tag="chained")
        q = lock_by_name(j, "batcher.lock")
        churn = at_insert(findings(j, "alloc_churn"))
        aul = at_insert(findings(j, "alloc_under_lock", "batcher.lock"))
        gt(ctx.case, variant="chained", contended=q["contended"],
           wait_ns=q["wait_ns"],
           churn_rate=churn[0]["evidence"]["rate_per_s"] if churn else 0,
           aul_score_ms=round(aul[0]["score"] / 1e6, 1) if aul else 0,
           kinds=[f["kind"] for f in j["findings"]])
        # alloc_under_lock ranks by the time waiters lost: a lock never
        # waited on scores 0 by design, so such a recording is made again.
        need(q["wait_ns"] > 0, "batcher.lock was never waited on")
        return j

    j = with_precondition(ctx, "chained", chained)
    q = lock_by_name(j, "batcher.lock")
    churn = at_insert(findings(j, "alloc_churn"))
    aul = at_insert(findings(j, "alloc_under_lock", "batcher.lock"))
    check(churn, f"{j['_cmd']}: no alloc_churn at batcher_add_inflight:\n"
          f"{describe(j)}")
    check(churn[0]["evidence"]["size"] == 64,
          f"alloc_churn size {churn[0]['evidence']['size']} != 64")
    # The set is locked (batcher.lock) and its nodes are made and freed
    # there, but the holds spend only about 5% of their time in the
    # allocator (4.9% to 6.2% in six runs): one finding names the lock,
    # alloc_under_lock at the insert when the allocator's share passes
    # the contention finding's threshold, lock_contention otherwise, and
    # then its evidence still carries the allocator's share.
    top = [f for f in j["findings"]
           if f.get("lock") in lock_ids(j, "batcher.lock")]
    # (How it ranks against alloc_churn depends on the load: on a busy
    # machine the lock is contended less.)
    check(len(top) == 1, f"{j['_cmd']}: batcher.lock waited {q['wait_ns']} "
          f"ns and has {len(top)} findings, not one:\n{describe(j)}")
    f = top[0]
    if f["kind"] == "alloc_under_lock":
        check(aul, f"{j['_cmd']}: alloc_under_lock on batcher.lock is not "
              f"at batcher_add_inflight:\n{describe(j)}")
    else:
        check(f["kind"] == "lock_contention",
              f"{j['_cmd']}: batcher.lock's finding is {f['kind']}")
        share = f["evidence"]["allocator_share_of_hold"]
        check(0.01 < share < 0.2, f"{j['_cmd']}: lock_contention on "
              f"batcher.lock gives the allocator {share:.3f} of the holds")
    check(q["queue_like"] is False, "batcher.lock is queue_like")
    no_starvation(j)
    ctx.done(j)
    o = ctx.record("batcher", ["--set=open"] + BATCHER, tag="open")
    bad = at_insert([f for f in o["findings"]
                     if f["kind"] in ("alloc_churn", "alloc_under_lock")])
    gt(ctx.case, variant="open", at_insert=len(bad),
       kinds=[f["kind"] for f in o["findings"]])
    check(not bad, f"{o['_cmd']}: allocation findings at "
          f"batcher_add_inflight in the fixed variant:\n{describe(o)}")
    no_starvation(o)
    ctx.done(o)


# ---- reportqueue: a monitor around a locked queue --------------------------

REPORTQUEUE = ["--duration=1"]


def case_reportqueue(ctx):
    j = ctx.record("reportqueue", ["--locking=nested"] + REPORTQUEUE,
                   tag="nested")
    mon = lock_ids(j, "reportqueue.monitor")
    inner = lock_ids(j, "reportqueue.inner")
    nl = findings(j, "nested_lock")
    both = [f for f in nl if f.get("lock") in mon and
            f.get("inner_lock") in inner]
    gt(ctx.case, variant="nested",
       nested=[(f.get("lock_name"), f["evidence"]["nested_acquisitions"],
                f["evidence"]["outer_contended"]) for f in nl])
    check(both, f"{j['_cmd']}: no nested_lock with reportqueue.monitor "
          f"outside and reportqueue.inner inside:\n{describe(j)}")
    f = both[0]
    check({"inner_add", "nested_offer"} & set(stack_names(f)),
          f"nested_lock stack names neither inner_add nor nested_offer: "
          f"{stack_names(f)}")
    # The four producers (one role, producer_main) take the monitor about
    # equally often (rate CV below 0.1 in every run we made): no
    # starvation. The monitor's holders hold the inner lock for 4.5% to
    # 10% of their hold (ten runs), around the 5% at which the nesting
    # names the monitor's contention. So the top finding is the monitor's:
    # nested_lock when the share reaches 5%, lock_contention otherwise,
    # with nested_lock right after it and the share in its evidence.
    top = j["findings"][0]
    gt(ctx.case, nested_rank=j["findings"].index(f) + 1, top=top["kind"],
       inner_share=top["evidence"].get("inner_lock_share_of_hold"))
    no_starvation(j)
    if top["kind"] == "lock_contention":
        share = top["evidence"].get("inner_lock_share_of_hold")
        check(top.get("lock") in mon and j["findings"][1] is f and
              share is not None and 0 < share < 0.05,
              f"{j['_cmd']}: lock_contention on the monitor outranks "
              f"nested_lock, but not as the 5% rule says (inner lock "
              f"share {share}):\n{describe(j)}")
    else:
        check(top is f, f"{j['_cmd']}: neither nested_lock nor the "
              f"monitor's lock_contention is the top finding:\n"
              f"{describe(j)}")
        check(top["evidence"].get("inner_lock_share_of_hold", 0) >= 0.05,
              f"{j['_cmd']}: nested_lock names the monitor's contention "
              f"below the 5% rule:\n{describe(j)}")
    ctx.done(j)
    s = ctx.record("reportqueue", ["--locking=single"] + REPORTQUEUE,
                   tag="single")
    sn = findings(s, "nested_lock")
    gt(ctx.case, variant="single", nested=len(sn))
    check(not sn, f"{s['_cmd']}: nested_lock in the fixed variant:\n"
          f"{describe(s)}")
    no_starvation(s)
    ctx.done(s)
    nested_alloc(ctx)


def folded(ctx, j, metric):
    """The folded report of j's trace: {stack;leaf: count}."""
    r = subprocess.run([os.path.join(ctx.bin, "mallock"), "report",
                        "--format=folded", "--metric=" + metric, j["_trace"]],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mallock report --format=folded "
          f"--metric={metric}: exit {r.returncode}: {r.stderr}")
    out = {}
    for line in r.stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(n)
    return out


def nested_alloc(ctx):
    """--inner=list: inner_add allocates a node holding both the monitor
    and the inner lock, so each of those allocations is charged to both:
    the same stacks, with the same allocator time, under each lock."""
    j = ctx.record("reportqueue", ["--locking=nested", "--inner=list"] +
                   REPORTQUEUE, tag="nested-list")
    f = folded(ctx, j, "alloc-under-lock")
    under = {}
    for key, n in f.items():
        stack, _, leaf = key.rpartition(";")
        if "inner_add" not in stack.split(";"):
            continue
        for lock in ("reportqueue.monitor", "reportqueue.inner"):
            if leaf.startswith(f"[alloc under {lock}"):
                under.setdefault(lock, {})[stack] = n
    mon = under.get("reportqueue.monitor", {})
    inner = under.get("reportqueue.inner", {})
    gt(ctx.case, variant="nested-list", inner_stacks=len(inner),
       monitor_stacks=len(mon), inner_ns=sum(inner.values()),
       monitor_ns=sum(mon.values()))
    check(inner, f"{j['_cmd']}: no allocation at inner_add under "
          f"reportqueue.inner: {sorted(f)[:8]}")
    check(mon == inner,
          f"{j['_cmd']}: the allocations at inner_add under "
          f"reportqueue.monitor (the outer lock: {len(mon)} stacks, "
          f"{sum(mon.values())} ns) are not those under reportqueue.inner "
          f"({len(inner)} stacks, {sum(inner.values())} ns)")
    ml = lock_by_name(j, "reportqueue.monitor")
    il = lock_by_name(j, "reportqueue.inner")
    # The monitor's holds contain every inner hold of the producers, and
    # the worker's inner holds allocate nothing.
    check(ml["allocs_in_holds"] >= il["allocs_in_holds"] > 0,
          f"{j['_cmd']}: allocations in holds: monitor "
          f"{ml['allocs_in_holds']}, inner {il['allocs_in_holds']}")
    ctx.done(j)


# ---- admission: unlucky clients --------------------------------------------

# The defaults (8 clients, 2 slots, 1 worker, 10 ms per request). The queue
# lock is hardly ever contended (about 800 acquisitions, 0 or 1 contended):
# starvation needs no lock wait. Its measure of service on this queue-like
# lock is the clients' condition wakes (one per answered request).
ADMISSION = ["--duration=1.5"]


def starvation_numbers(j):
    st = findings(j, "starvation", "admission.queue")
    if not st:
        return None, {"score_ms": 0}
    e = st[0]["evidence"]
    return st[0], {"score_ms": round(st[0]["score"] / 1e6, 1),
                   "peers": e["threads"], "cv": round(e["acquisitions_cv"], 2),
                   "none": e["threads_with_no_acquisition"],
                   "wakes": (e["service_min"], e["service_max"]),
                   "by_wakes": e["service_by_cond_wakes"]}


def app_successes(j):
    for l in j["_stdout"].splitlines():
        if l.startswith("Successes per client:"):
            return [int(x) for x in l.split(":")[1].split()]
    return []


def case_admission(ctx):
    j = ctx.record("admission", ["--policy=lifo"] + ADMISSION, tag="lifo")
    q = lock_by_name(j, "admission.queue")
    st, n = starvation_numbers(j)
    gt(ctx.case, variant="lifo", acq=q["acquisitions"],
       contended=q["contended"], successes=app_successes(j), **n)
    check(st, f"{j['_cmd']}: no starvation on admission.queue:\n"
          f"{describe(j)}")
    e = st["evidence"]
    check(e["threads"] == 8,
          f"starvation compares {e['threads']} peers, not the 8 clients")
    check(e["service_by_cond_wakes"] == 1,
          "starvation on admission.queue does not count condition wakes")
    check(j["findings"][0]["kind"] == "starvation",
          f"{j['_cmd']}: starvation is not the top finding:\n{describe(j)}")
    ctx.done(j)
    e = ctx.record("admission", ["--policy=edf"] + ADMISSION, tag="edf")
    se, ne = starvation_numbers(e)
    gt(ctx.case, variant="edf", successes=app_successes(e), **ne)
    # The ground truth (docs/testapps.md): no starvation at all with edf.
    check(not se, f"{e['_cmd']}: starvation on admission.queue with edf "
          f"(score {se['score'] if se else 0}, lifo's {st['score']}):\n"
          f"{describe(e)}")
    ctx.done(e)
    admission_all_served(ctx)


def app_cv(j):
    for l in j["_stdout"].splitlines():
        if l.startswith("Stddev/mean:"):
            return float(l.split(":")[1])
    return 0.0


def threshold(ctx, name):
    r = subprocess.run([os.path.join(ctx.bin, "mallock"), "report",
                        "--thresholds"], capture_output=True, text=True,
                       timeout=30)
    for l in r.stdout.splitlines():
        f = l.split()
        if f and f[0] == name:
            return float(f[1])
    raise Failed(f"mallock report --thresholds names no {name}:\n{r.stdout}")


# The app's own stddev/mean of the successes per client with --warmup=1 was
# 0.69 to 0.86 in 6 recordings (2026-12-01, load about 10), the analyzer's
# rate CV within 0.02 of it; a recording below this (0.1 above the
# analyzer's 50%) is made again: nearly even shares are not the property
# under test.
ALL_SERVED_MIN_CV = 0.6


def admission_all_served(ctx):
    """lifo with --warmup=1: every client is answered once before they
    compete, so no peer goes without service; the shares are still uneven
    (the app's stddev/mean), and the starvation must be found on the
    coefficient of variation of the rates alone, at or above the
    analyzer's STARVE_CV_PCT."""
    def lifo():
        j = ctx.record("admission", ["--policy=lifo", "--warmup=1"] +
                       ADMISSION, tag="lifo-warmup")
        succ = app_successes(j)
        gt(ctx.case, variant="lifo-warmup", successes=succ,
           app_cv=app_cv(j), **starvation_numbers(j)[1])
        check(succ and min(succ) >= 1,
              f"{j['_cmd']}: a client was never answered: {succ}")
        need(app_cv(j) >= ALL_SERVED_MIN_CV,
             f"the clients' successes {succ} have stddev/mean "
             f"{app_cv(j)} < {ALL_SERVED_MIN_CV}: shares nearly even")
        return j

    j = with_precondition(ctx, "lifo-warmup", lifo)
    st, _ = starvation_numbers(j)
    check(st, f"{j['_cmd']}: successes {app_successes(j)} (stddev/mean "
          f"{app_cv(j)}), but no starvation on admission.queue:\n"
          f"{describe(j)}")
    e = st["evidence"]
    pct = threshold(ctx, "STARVE_CV_PCT")
    check(e["threads_with_no_acquisition"] == 0 and e["service_min"] >= 1,
          f"starvation counts {e['threads_with_no_acquisition']} clients "
          f"without service (least {e['service_min']}): every client was "
          f"answered")
    check(e["threads"] == 8 and e["acquisitions_cv"] * 100 >= pct,
          f"starvation over {e['threads']} peers with CV "
          f"{e['acquisitions_cv']} (threshold {pct}%)")
    ctx.done(j)


# ---- a stripped app: the missing symbols, and how to get them ------------

def case_stripped(ctx):
    """xthread's binary stripped of its symbols and DWARF (strip --strip-all
    keeps the build-id): its frames stay addresses, and the report names
    the module in missing_symbols with a hint; the hint's debug-file path,
    filled with the unstripped build's DWARF (objcopy --only-keep-debug),
    names them again."""
    exe = os.path.join(ctx.work, f"xthread-stripped.{os.getpid()}")
    shutil.copy(os.path.join(ctx.bin, "xthread"), exe)
    subprocess.run(["strip", "--strip-all", exe], check=True, timeout=60)
    j = ctx.record("xthread", ["--tasks=heap"] + XTHREAD, tag="stripped",
                   exe=exe)
    def missing(d):
        return [m for t in d.get("traces", [])
                for m in t.get("missing_symbols", [])]

    ms = [m for m in missing(j) if m.get("module") == exe]
    gt(ctx.case, variant="stripped", missing=[
        (os.path.basename(m["module"]), m.get("frames")) for m in missing(j)])
    check(ms, f"{j['_cmd']}: missing_symbols does not name the stripped "
          f"program {exe}: {missing(j)}")
    m = ms[0]
    check(m.get("frames", 0) > 0 and m.get("package") is None,
          f"missing_symbols entry: {m}")
    bid = m.get("build_id") or ""
    check(len(bid) > 2, f"the stripped program's build_id: {bid!r}")
    elf = subprocess.run(["readelf", "-n", exe], capture_output=True,
                         text=True, timeout=60).stdout
    want = [ln.split("Build ID:")[1].strip() for ln in elf.splitlines()
            if "Build ID:" in ln]
    check(want and bid == want[0], f"the stripped program's build_id "
          f"{bid!r} is not the one readelf -n reads: {want}")
    rel = f".build-id/{bid[:2]}/{bid[2:]}.debug"
    hint = m.get("hint") or ""
    check("--debug-dir" in hint and "DIR/" + rel in hint,
          f"the hint does not say where a debug file goes (DIR/{rel}): "
          f"{hint!r}")
    check(not [f for f in findings(j, "cross_thread_free")
               if short(fn(f.get("site"))) == "task_create"],
          f"{j['_cmd']}: task_create named without symbols")
    # Follow the hint: the debug file where it says, --debug-dir DIR.
    ddir = os.path.join(ctx.work, f"debug.{os.getpid()}")
    os.makedirs(os.path.dirname(os.path.join(ddir, rel)), exist_ok=True)
    subprocess.run(["objcopy", "--only-keep-debug",
                    os.path.join(ctx.bin, "xthread"), os.path.join(ddir, rel)],
                   check=True, timeout=60)
    r = subprocess.run([os.path.join(ctx.bin, "mallock"), "report",
                        "--format=json", "--debug-dir=" + ddir, j["_trace"]],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"mallock report --debug-dir: exit "
          f"{r.returncode}: {r.stderr}")
    d = json.loads(r.stdout)
    left = [m for m in missing(d) if m.get("module") == exe]
    check(not left, f"with --debug-dir {ddir}: still missing: {left}")
    check([f for f in d["findings"] if f["kind"] == "cross_thread_free" and
           short(fn(f.get("site"))) == "task_create"],
          f"with --debug-dir {ddir}: no cross_thread_free at task_create")
    shutil.rmtree(ddir)
    os.remove(exe)
    ctx.done(j)


CASES = {
    "svcqueue": case_svcqueue,
    "svcqueue_cxx": case_svcqueue_cxx,
    "svcqueue_cascade": case_svcqueue_cascade,
    "xthread": case_xthread,
    "batcher": case_batcher,
    "reportqueue": case_reportqueue,
    "admission": case_admission,
    "stripped": case_stripped,
}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        sys.exit(f"usage: {sys.argv[0]} BINDIR WORKDIR "
                 f"{{{'|'.join(CASES)}}}")
    bindir, workdir, case = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    ctx = Ctx(bindir, workdir, case)
    t0 = time.monotonic()
    try:
        CASES[case](ctx)
    except Failed as e:
        print(f"FAIL {case}: {e}", flush=True)
        if ctx.keep:
            print(f"traces kept: {' '.join(ctx.keep)}")
        sys.exit(1)
    print(f"PASS {case} ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
