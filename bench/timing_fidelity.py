#!/usr/bin/env python3
"""timing_fidelity.py BINDIR [ROUNDS [N]] - the estimates of the default
timing (one uncontended nest of holds in N and one allocator call outside
holds in N timed, N = 16 by default) against full timing, on one
execution: each ground-truth app's bug variant (the ground-truth tests'
flags, tests/testapps/ground_truth.py) is recorded ROUNDS times (default
5) with MALLOCK_TIME_EVERY=1 (every hold and call timed), and each trace
reported twice: as recorded ("full") and with `--as-sampled=N`
("sampled": the records as the shim's default would have written them,
the figures estimated from the timed ones).

For each app it prints the top finding of each report (kind, lock, site
function) and, for the app's lock, the median [min..max] over the
recordings of each estimated figure under full timing and sampled, and
the median and range of sampled / full - 1 per recording: the
estimator's error, free of the run-to-run spread of two recordings.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
N = int(sys.argv[3]) if len(sys.argv) > 3 else 16

SVCQ = ["--producers=2", "--consumers=2", "--allocs-per-put=4",
        "--duration=1.2"]
# (name, app, args, extra environment, the lock whose figures are shown)
CASES = [
    ("svcqueue tree", "svcqueue", ["--container=tree"] + SVCQ, {},
     "svcqueue.lock"),
    ("svcqueue_cxx tree", "svcqueue_cxx",
     ["--container=tree", "--producers=4", "--consumers=2",
      "--allocs-per-put=4", "--duration=1.2"], {}, "svcqueue.lock"),
    ("cascade (churn 2, transfer 1)", "svcqueue",
     ["--container=tree", "--churn-threads=2"] + SVCQ,
     {"TCMALLOC_TRANSFER_NUM_OBJ": "1"}, "svcqueue.lock"),
    ("batcher chained", "batcher", ["--set=chained", "--duration=1"], {},
     "batcher.lock"),
    ("reportqueue nested", "reportqueue",
     ["--locking=nested", "--duration=1"], {}, "reportqueue.monitor"),
    ("admission lifo", "admission", ["--policy=lifo", "--duration=1.5"], {},
     "admission.queue"),
    ("xthread heap", "xthread", ["--tasks=heap", "--duration=1"], {},
     "xthread.reactor.0"),
]
CONFIGS = [("full", []), ("sampled", ["--as-sampled=%d" % N])]
# (label, lock figure): estimated from the timed holds under the default
ESTIMATED = [("hold ms", lambda l: l["hold_ns"] / 1e6),
             ("alloc share of hold", lambda l: l["allocator_ns_in_holds"] /
              l["hold_ns"] if l["hold_ns"] else 0.0),
             ("slow calls in holds",
              lambda l: l["slow_allocator_calls_in_holds"]),
             ("allocator lock wait in holds ms",
              lambda l: l["allocator_lock_wait_ns_in_holds"] / 1e6)]
EXACT = [("holds (exact)", lambda l: l["holds"]),
         ("contended (exact)", lambda l: l["contended"]),
         ("waited ms (exact)", lambda l: l["wait_ns"] / 1e6)]


def short(site):
    fn = (site or {}).get("function") or (site or {}).get("frame") or "?"
    return fn.split("(")[0].strip()


def record(tmp, app, args, env):
    """The JSON reports of one recording, by configuration."""
    trace = os.path.join(tmp, "t.trace")
    e = dict(os.environ)
    e.pop("MALLOCK_HOLD_EVERY", None)
    e.update(env, MALLOCK_TIME_EVERY="1")
    subprocess.run([os.path.join(BIN, "mallock"), "record", "-o", trace,
                    "--", os.path.join(BIN, app)] + args, env=e,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, timeout=300)
    out = {}
    for cname, opts in CONFIGS:
        r = subprocess.run([os.path.join(BIN, "mallock"), "report",
                            "--format=json"] + opts + [trace],
                           capture_output=True, text=True, check=True,
                           timeout=300)
        out[cname] = json.loads(r.stdout)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    return out


def fmt(xs):
    if not xs:
        return "-"
    m = statistics.median(xs)
    g = "%.3f" if max(abs(x) for x in xs) < 10 else "%.0f"
    return (g + " [" + g + ".." + g + "]") % (m, min(xs), max(xs))


def main():
    tmp = tempfile.mkdtemp(prefix="fidelity.")
    for name, app, args, env, lockname in CASES:
        tops = {c: [] for c, _ in CONFIGS}
        figs = {c: {} for c, _ in CONFIGS}
        devs = {}
        for _ in range(ROUNDS):
            js = record(tmp, app, args, env)
            got = {}
            for cname, _ in CONFIGS:
                j = js[cname]
                f = (j.get("findings") or [None])[0]
                tops[cname].append(
                    "%s %s %s" % (f["kind"], f.get("lock_name") or "-",
                                  short(f.get("site"))) if f else "none")
                lk = [l for l in j["locks"] if l.get("name") == lockname]
                if lk:
                    got[cname] = lk[0]
            if len(got) < len(CONFIGS):
                continue
            for label, get in ESTIMATED + EXACT:
                a, b = get(got["full"]), get(got["sampled"])
                figs["full"].setdefault(label, []).append(a)
                figs["sampled"].setdefault(label, []).append(b)
                if a:
                    devs.setdefault(label, []).append(100 * (b / a - 1))
        print("== %s: %s %s (%d recordings, N %d)" % (
            name, app, " ".join(args), ROUNDS, N))
        for cname, _ in CONFIGS:
            counts = {}
            for t in tops[cname]:
                counts[t] = counts.get(t, 0) + 1
            print("  top finding, %-7s: %s" % (cname, "; ".join(
                "%s (%d of %d)" % (t, n, ROUNDS)
                for t, n in sorted(counts.items(), key=lambda x: -x[1]))))
        print("  %-32s %-28s %-28s %s" % (lockname, "full", "sampled",
                                          "sampled/full - 1, %"))
        for label, _ in ESTIMATED + EXACT:
            d = devs.get(label, [])
            print("  %-32s %-28s %-28s %s" % (
                label, fmt(figs["full"].get(label, [])),
                fmt(figs["sampled"].get(label, [])),
                "%+.1f [%+.1f..%+.1f]" % (statistics.median(d), min(d),
                                          max(d)) if d else "-"))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
