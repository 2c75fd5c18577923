#!/usr/bin/env python3
"""run_all.py - mallock's benchmark suite: the observer effect,
measured beside heaptrack. Run it through bench/run_all.sh:

    bench/run_all.sh BUILD_DIR [--quick] [--only SECTIONS] [--out FILE]

Sections (all in one invocation; contenders alternate A B A B ... within
every repetition, figures are medians with [min..max] over repetitions):

  1 per-event cost, single thread (shim_bench, new_bench, valgrind drd)
  2 throughput kept by the test apps under mallock and heaptrack
  3 fidelity: each app's fixed/bug ratio bare and under mallock
  4 scaling: mallock's added CPU per event at 1, 2, 4, 8 threads
  5 trace size: bytes per event, mallock and heaptrack, same program
  6 analyzer: mallock report vs heaptrack_print on those traces
  7 db_bench fillrandom/readrandom (optional: rocksdb-tools)
  8 compression in the shim (MALLOCK_COMPRESS=1), off (MALLOCK_COMPRESS=0)
    and after the run (`mallock record`'s default): kept, bytes per event,
    trace bytes/s, post-run time, shim_bench cost; svcqueue, batcher,
    pool_bench; every run pinned to one CPU (--pin, default the last CPU)
    so that ratios compare across runs; CPU kept (CPU per unit of work) is
    the steady ratio (`--quick --only 8`: under 2 minutes)

Writes docs/performance.md (or --out) and prints the same tables.
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- helpers


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Run:
    """One finished child: its output, wall time and rusage (wait4: the
    child and every descendant it waited for, as /usr/bin/time reports)."""

    def __init__(self, out, err, rc, wall, user, sys_, maxrss_kb):
        self.out, self.err, self.rc = out, err, rc
        self.wall, self.user, self.sys, self.maxrss_kb = wall, user, sys_, maxrss_kb

    @property
    def cpu(self):
        return self.user + self.sys


# --env NAME=VALUE settings, given to every run (e.g. MALLOCK_SPIN_NS=0 for
# an A/B against a default).
EXTRA_ENV = {}


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOCK_") and k not in ("LD_PRELOAD", "HEAPTRACK_OUTPUT")}
    env.update(EXTRA_ENV)
    env.update(extra or {})
    return env


def run(cmd, env=None, cwd=None, timeout=600, check=True):
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, env=clean_env(env), cwd=cwd)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode(errors="replace")
        err = fe.read().decode(errors="replace")
    r = Run(out, err, p.returncode, wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss)
    if check and r.rc != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (r.rc, " ".join(cmd), out[-2000:], err[-2000:]))
    return r


def stats(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def fmt_num(x, prec=None):
    if x is None:
        return "n/a"
    if prec is not None:
        return "%.*f" % (prec, x)
    ax = abs(x)
    if ax >= 1e6:
        return "%.3gM" % (x / 1e6) if ax < 1e7 else "%.1fM" % (x / 1e6)
    if ax >= 1000:
        return "%.0f" % x
    if ax >= 100:
        return "%.0f" % x
    if ax >= 10:
        return "%.1f" % x
    return "%.2f" % x


def fmt_stat(s, prec=None, suffix=""):
    if s is None:
        return "n/a"
    m, lo, hi = s
    return "%s%s [%s..%s]" % (fmt_num(m, prec), suffix, fmt_num(lo, prec), fmt_num(hi, prec))


def fmt_pct(s):
    if s is None:
        return "n/a"
    m, lo, hi = s
    return "%.0f%% [%.0f..%.0f]" % (100 * m, 100 * lo, 100 * hi)


def metric(text, label):
    """The number after 'LABEL:' on a line of an app's output."""
    for line in text.splitlines():
        if line.split(":", 1)[0].strip() == label:
            m = re.search(r"[-+0-9.eE]+", line.split(":", 1)[1])
            if m:
                return float(m.group(0))
    return None


def pairs(text):
    """'name value' lines (shim_bench, new_bench) -> dict."""
    d = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2:
            try:
                d[f[0]] = float(f[1])
            except ValueError:
                pass
    return d


class Table:
    def __init__(self, title, header, note=""):
        self.title, self.header, self.rows, self.note = title, header, [], note

    def add(self, *cells):
        self.rows.append([str(c) for c in cells])

    def markdown(self):
        out = ["| " + " | ".join(self.header) + " |",
               "|" + "|".join("---" for _ in self.header) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(out)

    def text(self):
        w = [len(h) for h in self.header]
        for r in self.rows:
            w = [max(a, len(b)) for a, b in zip(w, r)]
        line = lambda cells: "  ".join(c.ljust(x) for c, x in zip(cells, w)).rstrip()
        return "\n".join([line(self.header), line(["-" * x for x in w])] + [line(r) for r in self.rows])


def sh_quote(cmd):
    import shlex
    return " ".join(shlex.quote(c) for c in cmd)


def rel(path):
    """A path as the doc shows it: relative to the repository when inside."""
    p = os.path.abspath(path)
    if p.startswith(REPO + os.sep):
        return os.path.relpath(p, REPO)
    return path


# ---------------------------------------------------------------- the suite


class Suite:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build)
        self.bin = os.path.join(self.build, "bin")
        self.shim = os.path.join(self.build, "lib", "libmallock.so")
        self.mallock = os.path.join(self.bin, "mallock")
        self.tmp = tempfile.mkdtemp(prefix="mallock-bench.")
        q = args.quick
        self.reps = args.reps or (3 if q else 5)
        self.iters = 100000 if q else 200000          # shim_bench / new_bench
        self.duration = 0.5 if q else 1.0             # test apps
        self.sections = []                            # (title, [text|Table])
        self.commands = []                            # (section, command)
        self.notes = []
        self.heaptrack = shutil.which("heaptrack")
        self.heaptrack_print = shutil.which("heaptrack_print")
        self.valgrind = shutil.which("valgrind")
        self.taskset = shutil.which("taskset")
        # "last": the highest CPU this process may run on (1 on the 2-core VM)
        self.pin = "" if args.pin in ("", "none") else \
            str(max(os.sched_getaffinity(0))) if args.pin == "last" else args.pin

    def cmd_note(self, section, cmd, env=None):
        s = sh_quote([rel(c) if os.path.isabs(c) and c.startswith(REPO) else c for c in cmd])
        if env:
            s = " ".join("%s=%s" % (k, rel(v) if v.startswith(REPO) else v) for k, v in env.items()) + " " + s
        s = s.replace(self.tmp, "$TMP").replace(self.build + "/", "$BUILD/")
        if (section, s) not in self.commands:
            self.commands.append((section, s))

    def pinned(self, cmd, section):
        """cmd under `taskset -c CPUS` when --pin applies to the section
        (stability: bare and traced runs on the same CPU
        set, so that the VM's cross-core wake-up state cannot differ
        between them)."""
        if self.pin and str(section) in self.args.pin_sections and self.taskset:
            return [self.taskset, "-c", self.pin] + cmd
        return cmd

    def out_path(self, name):
        return os.path.join(self.tmp, name)

    def rm_traces(self):
        for f in os.listdir(self.tmp):
            p = os.path.join(self.tmp, f)
            if f.startswith("t.") and os.path.isfile(p):
                os.unlink(p)

    # A "tool" wraps a command: bare, mallock record, heaptrack, valgrind drd.
    def wrap(self, tool, cmd, trace=None, post=False):
        """post: let `mallock record` compress the trace after the run (its
        default); the other sections measure the recording alone, so that
        their CPU and byte counts stay comparable with earlier runs."""
        if tool == "bare":
            return cmd
        if tool.startswith("mallock"):
            # mallock, mallock:libunwind:16, mallock:fp:16, mallock:none
            f = tool.split(":")
            unwind = f[1] if len(f) > 1 else "libunwind"
            depth = f[2] if len(f) > 2 else "16"
            w = [self.mallock, "record", "-o", trace or self.out_path("t.trace"),
                 "--shim", self.shim, "--unwind", unwind] + ([] if post else ["--no-compress"])
            if unwind != "none":
                w += ["--depth", depth]
            return w + ["--"] + cmd
        if tool == "heaptrack":
            return [self.heaptrack, "-o", trace or self.out_path("t.ht")] + cmd
        if tool == "drd":
            return [self.valgrind, "--tool=drd", "-q"] + cmd
        raise ValueError(tool)

    def section(self, title, items):
        self.sections.append((title, items))
        print("\n## " + title + "\n")
        for it in items:
            print(it.text() if isinstance(it, Table) else it)
            print()
        sys.stdout.flush()

    # ------------------------------------------------------------ 1
    def per_event(self):
        sb = os.path.join(self.bin, "shim_bench")
        nb = os.path.join(self.bin, "new_bench")
        tools = ["bare", "mallock:libunwind:8", "mallock:libunwind:16", "mallock:libunwind:32",
                 "mallock:fp:16", "mallock:none"]
        if self.heaptrack:
            tools.append("heaptrack")
        names = ["malloc_free_16", "malloc_free_64", "malloc_free_512", "malloc_free_4096", "lock_unlock"]
        vals = {t: [] for t in tools}     # per rep: dict name -> ns
        cpu = {t: [] for t in tools}
        nvals = {t: [] for t in tools}
        have_nb = os.access(nb, os.X_OK)
        drd = []
        drd_iters = 20000
        for rep in range(self.reps):
            log("  per-event: repetition %d/%d" % (rep + 1, self.reps))
            for t in tools:
                cmd = self.wrap(t, [sb, str(self.iters)])
                r = run(cmd)
                self.cmd_note(1, cmd)
                vals[t].append(pairs(r.out))
                cpu[t].append((r.wall, r.cpu))
                if have_nb:
                    cmd = self.wrap(t, [nb, str(self.iters)])
                    r = run(cmd)
                    self.cmd_note(1, cmd)
                    nvals[t].append(pairs(r.out))
                self.rm_traces()
            if self.valgrind and rep < (2 if self.args.quick else 3):
                cmd = self.wrap("drd", [sb, str(drd_iters), "lock"])
                r = run(cmd, check=False)
                self.cmd_note(1, cmd)
                d = pairs(r.out)
                if r.rc == 0 and "lock_unlock" in d:
                    # paired with this repetition's bare lock figure
                    drd.append(d["lock_unlock"] - vals["bare"][rep]["lock_unlock"])
        label = {"bare": "bare (ns per pair)", "heaptrack": "heaptrack 1.4 (its own unwinder)"}

        def lab(t):
            if t in label:
                return label[t]
            f = t.split(":")
            return "mallock %s" % (f[1] if f[1] == "none" else "%s %s" % (f[1], f[2]))

        hdr = ["config"] + ["+ns " + n.replace("malloc_free_", "malloc+free ").replace("lock_unlock", "lock+unlock")
                            for n in names] + ["wall s / CPU s per run"]
        tab = Table("per-event", hdr)
        for t in tools:
            cells = [lab(t)]
            for n in names:
                if t == "bare":
                    cells.append(fmt_stat(stats([v.get(n) for v in vals[t]])))
                else:
                    cells.append(fmt_stat(stats([v[n] - b[n] for v, b in zip(vals[t], vals["bare"])
                                                 if n in v and n in b])))
            w = stats([c[0] for c in cpu[t]])
            c = stats([c[1] for c in cpu[t]])
            cells.append("%.2f / %.2f" % (w[0], c[0]))
            tab.add(*cells)
        if drd:
            cells = ["valgrind --tool=drd (lock pair only, %d pairs)" % drd_iters] + ["-"] * 4 + \
                [fmt_stat(stats(drd)), "-"]
            tab.add(*cells)
        items = [
            "ns added per pair over the bare run of the same repetition (paired), median "
            "[min..max] over %d repetitions; the bare row is absolute ns. Each figure is "
            "shim_bench's own in-loop timing (best of 5 loops of %d pairs at a 16-frame call "
            "depth), so heaptrack's start-up and its interpreter's exit do not count; the last "
            "column is the whole run (median wall and user+sys CPU of the process tree, from "
            "wait4), which does count them. Targets: <= 120 ns per malloc+free with libunwind "
            "depth 16, <= 60 ns with fp, <= 30 ns per lock+unlock." % (self.reps, self.iters),
            tab]
        if have_nb:
            nn = ["new_delete_16", "new_delete_64", "new_delete_512", "new_delete_4096"]
            t2 = Table("new/delete", ["config"] + ["+ns new+delete %s" % n.split("_")[-1] for n in nn])
            for t in tools:
                cells = [lab(t)]
                for n in nn:
                    if t == "bare":
                        cells.append(fmt_stat(stats([v.get(n) for v in nvals[t]])))
                    else:
                        cells.append(fmt_stat(stats([v[n] - b[n] for v, b in zip(nvals[t], nvals["bare"])
                                                     if n in v and n in b])))
                t2.add(*cells)
            items += ["operator new + sized operator delete, new_bench linked with Debian's "
                      "libtcmalloc (same method). heaptrack 1.4 hooks only the malloc family, "
                      "and tcmalloc's operator new does not go through malloc: heaptrack adds "
                      "nothing here because it records nothing.", t2]
        else:
            items.append("(new_bench not built: operator new/delete not measured)")
        self.section("1. Per-event cost, single thread", items)

    # ------------------------------------------------------------ 2 + 3
    APPS = [
        # name, exe, bug args, fixed args, metric label, higher is better, heaptrack too
        ("svcqueue", "svcqueue", ["--container=tree"], ["--container=heap"], "Reqs/sec", True, True),
        ("xthread", "xthread", ["--tasks=heap"], ["--tasks=inline"], "Reqs/sec", True, True),
        ("batcher", "batcher", ["--set=chained"], ["--set=open"], "Rows/sec", True, True),
        ("reportqueue", "reportqueue", ["--locking=nested"], ["--locking=single"], "Reports/ms", True, False),
        ("admission", "admission", ["--policy=lifo"], ["--policy=edf"], "Stddev/mean", False, False),
    ]

    # Issue 15: fidelity within +-10% for svcqueue, xthread and batcher; for
    # these two, docs/performance.md says what the tool changes and why.
    FIDELITY_EXPLAINED = ("reportqueue", "admission")

    def apps(self):
        res = {}   # (app, variant, tool) -> list per rep of (value, cpu_s, wall_s)
        runs = []
        for app, exe, bug, fix, lab_, hi, ht in self.APPS:
            x = os.path.join(self.bin, exe)
            if not os.access(x, os.X_OK):
                self.notes.append("%s not built: skipped" % exe)
                continue
            tools = ["bare", "mallock", "mallock:fp:16"] + (["heaptrack"] if ht and self.heaptrack else [])
            runs.append((app, x, bug, fix, lab_, hi, tools))
        for rep in range(self.reps):
            log("  apps: repetition %d/%d" % (rep + 1, self.reps))
            for app, x, bug, fix, lab_, hi, tools in runs:
                dur = self.duration * (2 if app == "admission" else 1)
                # Tools innermost: a tool's run and the bare run it is
                # divided by are neighbours in time (this VM drifts between
                # a fast and a slow state that lasts seconds).
                for variant, args in (("bug", bug), ("fix", fix)):
                    for t in tools:
                        cmd = self.pinned(self.wrap(t, [x] + args + ["--duration=%g" % dur]), 2)
                        r = run(cmd)
                        self.cmd_note(2, cmd)
                        v = metric(r.out, lab_)
                        res.setdefault((app, variant, t), []).append((v, r.cpu, r.wall, dur))
                        self.rm_traces()

        # Section 2: throughput kept (svcqueue, xthread, batcher).
        tab = Table("kept", ["app variant", "metric", "bare", "mallock kept", "mallock fp kept",
                             "heaptrack kept", "CPU us/unit bare", "mallock", "mallock fp",
                             "heaptrack", "target (mallock)"])
        targets = {("svcqueue", "fix"): 0.80, ("svcqueue", "bug"): 0.85}
        for app, x, bug, fix, lab_, hi, tools in runs:
            if "heaptrack" not in tools and app not in ("svcqueue", "xthread", "batcher"):
                continue
            for variant, args in (("bug", bug), ("fix", fix)):
                b = res[(app, variant, "bare")]

                def kept(t):
                    if (app, variant, t) not in res:
                        return None
                    return stats([m[0] / bb[0] for m, bb in zip(res[(app, variant, t)], b)
                                  if m[0] and bb[0]])

                def cpu_per(t):
                    if (app, variant, t) not in res:
                        return None
                    return stats([m[1] / (m[0] * m[3]) * 1e6 for m in res[(app, variant, t)] if m[0]])

                km = kept("mallock")
                tg = targets.get((app, variant))
                tgs = "-"
                if tg:
                    tgs = ">= %d%%: %s" % (tg * 100, "met" if km and km[0] >= tg else "MISSED")
                tab.add("%s %s" % (app, " ".join(args)), lab_, fmt_stat(stats([m[0] for m in b])),
                        fmt_pct(km), fmt_pct(kept("mallock:fp:16")), fmt_pct(kept("heaptrack")),
                        fmt_stat(cpu_per("bare")), fmt_stat(cpu_per("mallock")),
                        fmt_stat(cpu_per("mallock:fp:16")), fmt_stat(cpu_per("heaptrack")), tgs)
        self.section("2. Throughput kept", [
            "Each app at its documented defaults (tcmalloc-linked build, P/C 1/1 for svcqueue), "
            "--duration=%gs, %d repetitions; bare, `mallock record` (libunwind, depth 16: full "
            "recording; the target applies to it), `mallock record --unwind fp` (depth 16) and "
            "heaptrack alternate within each repetition, one variant at a time, so that each "
            "tool's run follows its bare run. kept = the app's own "
            "rate under the tool / the bare rate of the same repetition, median [min..max]. "
            "CPU us/unit = user+sys CPU of the whole process tree (wait4; heaptrack's "
            "interpreter and start-up included) / (rate x duration)." % (self.duration, self.reps),
            tab])

        # Section 3: fidelity.
        tab = Table("fidelity", ["app", "metric", "fixed/bug bare", "fixed/bug under mallock",
                                 "deviation (median)", "target +-10%", "under mallock fp",
                                 "deviation fp"])
        for app, x, bug, fix, lab_, hi, tools in runs:
            def ratio(t):
                out = []
                for bv, fv in zip(res[(app, "bug", t)], res[(app, "fix", t)]):
                    if bv[0] and fv[0]:
                        out.append(fv[0] / bv[0] if hi else bv[0] / fv[0])
                return stats(out)
            rb, rm, rf = ratio("bare"), ratio("mallock"), ratio("mallock:fp:16")
            dev = (rm[0] / rb[0] - 1) if rb and rm else None
            devf = (rf[0] / rb[0] - 1) if rb and rf else None
            tab.add("%s (%s vs %s)" % (app, " ".join(fix), " ".join(bug)),
                    lab_ + (" (higher better)" if hi else " (lower better)"),
                    fmt_stat(rb, 2, "x"), fmt_stat(rm, 2, "x"),
                    "n/a" if dev is None else "%+.0f%%" % (100 * dev),
                    "n/a" if dev is None else "- (explained)" if app in self.FIDELITY_EXPLAINED else
                    ("met" if abs(dev) <= 0.10 else "MISSED"),
                    fmt_stat(rf, 2, "x"), "n/a" if devf is None else "%+.0f%%" % (100 * devf))
        self.section("3. Fidelity", [
            "The gain of each app's fix (fixed/bug for higher-is-better metrics, bug/fixed "
            "for lower-is-better), bare and under `mallock record` (libunwind 16, the target; "
            "fp 16 beside it), from the runs of section 2 "
            "(admission runs for %gs). Ratios are formed within one repetition, then "
            "median [min..max]. Target: within +-10%% for svcqueue, xthread and "
            "batcher; for reportqueue and admission the notes below (\"Fidelity of reportqueue "
            "and admission\") say what the tool changes, with measurements." % (2 * self.duration),
            tab])

    # ------------------------------------------------------------ 4
    def scaling(self):
        sb = os.path.join(self.bin, "shim_bench")
        counts = [1, 2, 4, 8]
        tools = ["bare", "mallock:libunwind:16", "mallock:fp:16"]
        res = {}
        it = self.iters
        for rep in range(self.reps):
            log("  scaling: repetition %d/%d" % (rep + 1, self.reps))
            for n in counts:
                for t in tools:
                    cmd = self.wrap(t, [sb, str(it), "threads", str(n)])
                    r = run(cmd)
                    self.cmd_note(4, cmd)
                    res.setdefault((n, t), []).append(pairs(r.out))
                    self.rm_traces()
        tab = Table("scaling", ["threads", "bare CPU ns malloc+free 64", "+ns libunwind 16", "+ns fp 16",
                                "bare CPU ns lock+unlock", "+ns libunwind 16", "+ns fp 16"])
        med = {}
        for n in counts:
            cells = [str(n)]
            for op in ("malloc_free_64", "lock_unlock"):
                key = "threads_%d_%s" % (n, op)
                b = res[(n, "bare")]
                cells.append(fmt_stat(stats([v.get(key) for v in b])))
                for t in tools[1:]:
                    s = stats([v[key] - bb[key] for v, bb in zip(res[(n, t)], b) if key in v and key in bb])
                    med[(n, t, op)] = s[0] if s else None
                    cells.append(fmt_stat(s))
            tab.add(*cells)
        flat = []
        for t in tools[1:]:
            for op in ("malloc_free_64", "lock_unlock"):
                v = [med[(n, t, op)] for n in counts if med.get((n, t, op)) is not None]
                if v and v[0] > 0:
                    worst = max(abs(x / v[0] - 1) for x in v)
                    flat.append("%s %s: largest change from 1 thread %+.0f%% (%s)" % (
                        t.replace("mallock:", "").replace(":", " "), op.replace("_", " "),
                        100 * max(v, key=lambda x: abs(x / v[0] - 1)) / v[0] - 100,
                        "flat, target +-20% met" if worst <= 0.2 else "NOT flat: target +-20% missed"))
        bare_med = {}
        for op in ("malloc_free_64", "lock_unlock"):
            v = [stats([x.get("threads_%d_%s" % (n, op)) for x in res[(n, "bare")]]) for n in counts]
            v = [x[0] for x in v if x]
            if v and v[0] > 0:
                worst = max(v, key=lambda x: abs(x / v[0] - 1)) / v[0] - 1
                if abs(worst) > 0.2:
                    flat.append("bare %s itself changed by %+.0f%% from 1 thread: the machine "
                                "(shared caches, SMT siblings under the VM, or other load), not the "
                                "shim, moves this row; compare the added cost with it" % (
                                    op.replace("_", " "), 100 * worst))
        self.section("4. Scaling", [
            "shim_bench threads mode: every thread, at a 16-frame depth, does %d malloc(64)+free "
            "pairs then %d lock+unlock pairs on its own mutex, 3 times; the figure is the CPU time "
            "of the threads (CLOCK_THREAD_CPUTIME_ID) per pair, best of the 3. This machine has "
            "%d cores: 4 and 8 threads are oversubscribed (CPU time per pair does not count time "
            "spent waiting for a core; a shared lock's spinning or futex calls would count). "
            "+ns = added over bare in the same repetition, median [min..max] of %d." % (
                it, it, os.cpu_count(), self.reps),
            tab, "\n".join("- " + f for f in flat)])

    # ------------------------------------------------------------ 5 + 6
    TRACE_RUNS = [
        # name, exe, args, metric label
        ("svcqueue-tree", "svcqueue", ["--container=tree"], "Reqs/sec"),
        ("batcher-chained", "batcher", ["--set=chained"], "Rows/sec"),
    ]

    def trace_and_analyzer(self):
        import json
        dur = 1.0 if self.args.quick else 2.0
        rows = []       # (name, tool, file, bytes, events, units)
        for name, exe, args, lab_ in self.TRACE_RUNS:
            x = os.path.join(self.bin, exe)
            if not os.access(x, os.X_OK):
                continue
            log("  trace size: %s" % name)
            for t in ["mallock"] + (["heaptrack"] if self.heaptrack else []):
                trace = self.out_path("%s.%s" % (name, "trace" if t == "mallock" else "ht"))
                cmd = self.wrap(t, [x] + args + ["--duration=%g" % dur], trace)
                r = run(cmd)
                self.cmd_note(5, cmd)
                units = (metric(r.out, lab_) or 0) * dur
                if t == "mallock":
                    rr = run([self.mallock, "report", "--format=json", "--no-symbols", trace])
                    events = json.loads(rr.out)["trace"]["events"]
                    f = trace
                else:
                    f = None
                    for ext in (".zst", ".gz", ""):
                        if os.path.exists(trace + ext):
                            f = trace + ext
                            break
                    if not f:
                        continue
                    dec = "zstdcat" if f.endswith(".zst") else "zcat" if f.endswith(".gz") else "cat"
                    p = subprocess.run("%s %s | grep -c '^[+-] '" % (dec, f), shell=True,
                                       capture_output=True, text=True)
                    events = int(p.stdout.strip() or 0)
                z = None
                if t == "mallock" and shutil.which("zstd"):
                    p = subprocess.run("zstd -q -1 -c %s | wc -c" % f, shell=True,
                                       capture_output=True, text=True)
                    z = int(p.stdout.strip() or 0) or None
                rows.append((name, t, f, os.path.getsize(f), events, units, z))
        tab = Table("size", ["program", "tool", "trace file", "bytes", "events recorded",
                             "bytes/event", "requests or rows", "bytes/request", "target <= 8 B/event",
                             "zstd -1 of it: B/event"])
        for name, t, f, nbytes, events, units, z in rows:
            bpe = nbytes / max(events, 1)
            tab.add(name, "mallock (libunwind 16)" if t == "mallock" else "heaptrack 1.4",
                    os.path.basename(f), nbytes, events, "%.2f" % bpe, "%.0f" % units,
                    "%.1f" % (nbytes / units) if units else "n/a",
                    ("met" if bpe <= 8 else "MISSED") if t == "mallock" else "-",
                    "%.2f" % (z / max(events, 1)) if z else "-")
        self.section("5. Trace size", [
            "One run per tool and program (%gs each, libunwind 16 for mallock), traces as each "
            "tool writes them while the program runs (mallock: its chunked binary file, "
            "`mallock record --no-compress`; heaptrack: its zstd file). "
            "mallock's events are every record the report counts (allocations, frees, lock "
            "acquires and releases, ...); heaptrack's are its '+' (allocation) and '-' (free) "
            "lines. The last column compresses mallock's file with `zstd -1` for comparison "
            "(`mallock record` compresses each chunk with zstd level 3 after the run by default: "
            "section 8). The two tools record different amounts of work in the same time (each "
            "slows the program differently), hence bytes per event and per request." % dur, tab])

        # 6: analyzer
        reps = 2 if self.args.quick else 3
        timef = self.out_path("time")
        res = {}
        jobs = []
        for name, t, f, nbytes, events, units, z in rows:
            if t == "mallock":
                jobs.append((name, "mallock report", [self.mallock, "report", f], events))
            elif self.heaptrack_print:
                jobs.append((name, "heaptrack_print", [self.heaptrack_print, f], events))
        have_time = os.access("/usr/bin/time", os.X_OK)
        for rep in range(reps):
            log("  analyzer: repetition %d/%d" % (rep + 1, reps))
            for job in jobs:
                name, an, cmd, ev = job
                if have_time:
                    full = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", timef] + cmd
                    run(full, timeout=1200)
                    with open(timef) as fh:
                        e, u, s_, kb = fh.read().split()[-4:]
                    wall, cpu, kb = float(e), float(u) + float(s_), int(kb)
                    self.cmd_note(6, ["/usr/bin/time", "-v"] + cmd)
                else:
                    r = run(cmd, timeout=1200)
                    wall, cpu, kb = r.wall, r.cpu, r.maxrss_kb
                    self.cmd_note(6, cmd)
                res.setdefault((name, an), []).append((ev / max(wall, 1e-3), wall, cpu, kb / 1024))
        tab = Table("analyzer", ["trace of", "analyzer", "events in trace", "events/s", "wall s",
                                 "CPU s", "peak RSS MB"])
        for name, an, cmd, ev in jobs:
            v = res[(name, an)]
            tab.add(name, an, ev, fmt_stat(stats([x[0] for x in v])),
                    fmt_stat(stats([x[1] for x in v]), 2), fmt_stat(stats([x[2] for x in v]), 2),
                    fmt_stat(stats([x[3] for x in v]), 1))
        self.section("6. Analyzer", [
            "Each analyzer on its own tool's traces of section 5, default output (text, with "
            "symbolization), %d alternated repetitions; wall, CPU and peak RSS from /usr/bin/time "
            "(the kernel's rusage, as `/usr/bin/time -v` prints it). events/s = the events "
            "counted in section 5 / wall time. Wall times under 0.2 s are mostly start-up." % reps,
            tab])

    # ------------------------------------------------------------ 7
    def db_bench(self):
        db = shutil.which("db_bench")
        if not db and not self.args.no_install:
            log("  db_bench: not installed, trying apt-get install rocksdb-tools")
            p = subprocess.run("(apt-get install -y rocksdb-tools || (apt-get update && "
                               "apt-get install -y rocksdb-tools)) >/dev/null 2>&1",
                               shell=True)
            db = shutil.which("db_bench")
        if not db:
            self.section("7. db_bench (optional)", [
                "skipped: db_bench (Debian's rocksdb-tools) is not installed and could not be "
                "installed."])
            return
        num = 50000 if self.args.quick else 200000
        reps = 2 if self.args.quick else 3
        tools = ["bare", "mallock"] + (["heaptrack"] if self.heaptrack and not self.args.quick else [])
        res = {}
        for rep in range(reps):
            log("  db_bench: repetition %d/%d" % (rep + 1, reps))
            for t in tools:
                dbdir = self.out_path("db")
                shutil.rmtree(dbdir, ignore_errors=True)
                cmd = self.wrap(t, [db, "--benchmarks=fillrandom,readrandom", "--threads=4",
                                    "--num=%d" % num, "--db=" + dbdir])
                r = run(cmd, timeout=900)
                self.cmd_note(7, cmd)
                for bm in ("fillrandom", "readrandom"):
                    mm = re.search(r"^%s\s*:\s*([0-9.]+) micros/op\s+([0-9.]+) ops/sec" % bm, r.out, re.M)
                    res.setdefault((t, bm), []).append(float(mm.group(2)) if mm else None)
                res.setdefault((t, "cpu"), []).append(r.cpu)
                res.setdefault((t, "wall"), []).append(r.wall)
                shutil.rmtree(dbdir, ignore_errors=True)
                self.rm_traces()
        tab = Table("db_bench", ["benchmark", "bare ops/s", "mallock kept", "heaptrack kept",
                                 "target (mallock) >= 75%"])
        for bm in ("fillrandom", "readrandom"):
            b = res[("bare", bm)]

            def kept(t):
                if (t, bm) not in res:
                    return None
                return stats([x / y for x, y in zip(res[(t, bm)], b) if x and y])
            k = kept("mallock")
            tab.add(bm, fmt_stat(stats(b)), fmt_pct(k), fmt_pct(kept("heaptrack")),
                    "n/a" if not k else ("met" if k[0] >= 0.75 else "MISSED"))
        tab.add("whole run: wall s / CPU s", "%.1f / %.1f" % (stats(res[("bare", "wall")])[0], stats(res[("bare", "cpu")])[0]),
                *["%.1f / %.1f" % (stats(res[(t, "wall")])[0], stats(res[(t, "cpu")])[0])
                  if (t, "wall") in res else "n/a" for t in ("mallock", "heaptrack")], "-")
        self.section("7. db_bench (rocksdb-tools)", [
            "`db_bench --benchmarks=fillrandom,readrandom --threads=4 --num=%d` on a fresh "
            "database in $TMP each run, %d alternated repetitions; kept = ops/s under the tool "
            "/ bare ops/s of the same repetition. mallock: full recording (libunwind, depth 16)." % (num, reps),
            tab])

    # ------------------------------------------------------------ 8
    COMP_APPS = [
        # name, exe, args, metric label, heaptrack beside it
        ("svcqueue tree", "svcqueue", ["--container=tree"], "Reqs/sec", False),
        ("batcher chained", "batcher", ["--set=chained"], "Rows/sec", False),
        ("pool_bench (2 workers)", "pool_bench", None, "Tasks/sec", True),
    ]

    def calibrate(self):
        """A bare calibration: shim_bench's uncontended lock+unlock loop (best
        of 5 loops, no allocation, no I/O), in ns per pair. It moves with the
        VM's fast/slow state and with other load on the cores."""
        cmd = self.pinned([os.path.join(self.bin, "shim_bench"), "300000", "lock"], 8)
        r = run(cmd)
        self.cmd_note(8, cmd)
        return pairs(r.out).get("lock_unlock")

    def compression(self):
        import json
        alts = self.args.reps or (7 if self.args.quick else 9)
        load_start = open("/proc/loadavg").read().split()[0]
        dur = self.duration
        sb = os.path.join(self.bin, "shim_bench")
        apps = []
        for name, exe, args, lab_, ht in self.COMP_APPS:
            x = os.path.join(self.bin, exe)
            if not os.access(x, os.X_OK):
                self.notes.append("%s not built: skipped in section 8" % exe)
                continue
            cmd = [x] + (args + ["--duration=%g" % dur] if args is not None else ["%g" % dur])
            tools = ["bare", "on", "off", "post"] + (["heaptrack"] if ht and self.heaptrack else [])
            apps.append((name, cmd, lab_, tools))
        res = {}        # key -> list over kept alternations
        cals = []       # (workload, before, after, kept?)
        units = [(name, cmd, lab_, tools) for name, cmd, lab_, tools in apps] + \
            [("shim_bench", [sb, str(self.iters)], None, ["bare", "on", "off"])]
        for a in range(alts):
            log("  compression: alternation %d/%d" % (a + 1, alts))
            modes = ["on", "off", "post"]
            order = modes[a % 3:] + modes[:a % 3]
            c0 = self.calibrate()
            for name, cmd, lab_, tools in units:
                # One workload's runs between two calibrations; traces are
                # counted after the second, outside the calibrated window.
                one, traces = {}, {}
                for t in ["bare"] + order + [t for t in tools if t == "heaptrack"]:
                    if t not in tools:
                        continue
                    trace = self.out_path("t.%s.trace" % t)
                    # on: the shim compresses (and record does not again);
                    # off: nothing compresses; post: the shim writes raw
                    # chunks and record compresses them after the exit.
                    env = {"on": {"MALLOCK_COMPRESS": "1"},
                           "off": {"MALLOCK_COMPRESS": "0"}}.get(t, {})
                    w = self.wrap("heaptrack" if t == "heaptrack" else
                                  "bare" if t == "bare" else "mallock", cmd, trace,
                                  post=(t == "post"))
                    w = self.pinned(w, 8)
                    r = run(w, env=env)
                    self.cmd_note(8, w, env)
                    if lab_ is None:
                        one[(name, t)] = pairs(r.out)
                    else:
                        v = metric(r.out, lab_)
                        one[(name, t, "rate")] = v
                        # CPU per unit of work (wait4: the whole process tree):
                        # time spent waiting for a core does not count.
                        one[(name, t, "cpu")] = r.cpu / (v * dur) if v else None
                        if t in ("on", "off"):
                            traces[t] = trace
                        if t == "post":
                            # record's last line: "trace compressed A -> B
                            # (X B/event) in S s"
                            m = re.search(r"compressed .*\(([0-9.]+) B/event\) in ([0-9.]+) s",
                                          r.err)
                            if m:
                                one[(name, t, "bpe")] = float(m.group(1))
                                one[(name, t, "ztime")] = float(m.group(2))
                                one[(name, t, "Bps")] = os.path.getsize(trace) / dur
                c1 = self.calibrate()
                ok = bool(c0 and c1) and (not self.args.cal_limit or
                                          abs(c1 / c0 - 1) <= self.args.cal_limit / 100)
                cals.append((name, c0, c1, ok))
                for t, trace in traces.items():
                    nbytes = os.path.getsize(trace)
                    rr = run([self.mallock, "report", "--format=json", "--no-symbols", trace])
                    ev = json.loads(rr.out)["trace"]["events"]
                    one[(name, t, "bpe")] = nbytes / max(ev, 1)
                    one[(name, t, "Bps")] = nbytes / dur
                self.rm_traces()
                if ok:
                    for k, v in one.items():
                        res.setdefault(k, []).append(v)
                c0 = c1
        nkept = sum(1 for c in cals if c[3])
        if self.pin and "8" in self.args.pin_sections and self.taskset:
            pin_text = ("Pinned (stability): every run of this section, bare and "
                        "traced, runs under `taskset -c %s`, all the workload's threads on the same "
                        "CPU set, so that the VM's cross-core state cannot differ between a bare run "
                        "and the traced run it is divided by." % self.pin)
        else:
            pin_text = "Not pinned (--pin none)."
        kept_by = {n: sum(1 for c in cals if c[0] == n and c[3]) for n, *_ in units}
        tab = Table("compression", ["workload", "bare rate", "kept on", "kept off",
                                    "kept post", "kept on - off (points)", "B/event on",
                                    "B/event off", "B/event post", "post-run s",
                                    "trace MB/s on", "trace MB/s off", "trace MB/s post",
                                    "off/on bytes", "off/post bytes",
                                    "heaptrack kept", "CPU kept on", "CPU kept off"])

        def ratio(name, t):
            return stats([o / b for o, b in zip(res.get((name, t, "rate"), []),
                                                res.get((name, "bare", "rate"), [])) if o and b])

        def cpu_kept(name, t):
            return stats([b / o for o, b in zip(res.get((name, t, "cpu"), []),
                                                res.get((name, "bare", "cpu"), [])) if o and b])

        def val(name, t, k, f=1.0):
            return stats([v * f for v in res.get((name, t, k), [])])
        for name, cmd, lab_, tools in apps:
            on, off = ratio(name, "on"), ratio(name, "off")
            diff = stats([100 * (o - f) / b for o, f, b in zip(res.get((name, "on", "rate"), []),
                                                               res.get((name, "off", "rate"), []),
                                                               res.get((name, "bare", "rate"), []))
                          if o and f and b])
            shrink = stats([f / o for o, f in zip(res.get((name, "on", "bpe"), []),
                                                  res.get((name, "off", "bpe"), [])) if o])
            # Bytes per event of different runs: off/post compares the
            # encodings, as off/on does.
            shrink_post = stats([f / o for o, f in zip(res.get((name, "post", "bpe"), []),
                                                       res.get((name, "off", "bpe"), [])) if o])
            tab.add(name, fmt_stat(val(name, "bare", "rate")), fmt_pct(on), fmt_pct(off),
                    fmt_pct(ratio(name, "post")),
                    fmt_stat(diff, 1), fmt_stat(val(name, "on", "bpe"), 2),
                    fmt_stat(val(name, "off", "bpe"), 2), fmt_stat(val(name, "post", "bpe"), 2),
                    fmt_stat(val(name, "post", "ztime"), 2),
                    fmt_stat(val(name, "on", "Bps", 1e-6), 1),
                    fmt_stat(val(name, "off", "Bps", 1e-6), 1),
                    fmt_stat(val(name, "post", "Bps", 1e-6), 1), fmt_stat(shrink, 2, "x"),
                    fmt_stat(shrink_post, 2, "x"),
                    fmt_pct(ratio(name, "heaptrack")) if "heaptrack" in tools else "-",
                    fmt_pct(cpu_kept(name, "on")), fmt_pct(cpu_kept(name, "off")))
        t2 = Table("shim_bench", ["shim_bench pair", "bare ns", "+ns on", "+ns off", "on - off ns"])
        sbr = {t: res.get(("shim_bench", t), []) for t in ("bare", "on", "off")}
        for n in ("malloc_free_16", "malloc_free_64", "malloc_free_4096", "lock_unlock"):
            add = lambda t: stats([v[n] - b[n] for v, b in zip(sbr[t], sbr["bare"]) if n in v and n in b])
            tab_d = stats([v[n] - f[n] for v, f in zip(sbr["on"], sbr["off"]) if n in v and n in f])
            t2.add(n.replace("_", " "), fmt_stat(stats([b.get(n) for b in sbr["bare"]])),
                   fmt_stat(add("on")), fmt_stat(add("off")), fmt_stat(tab_d))
        calt = ", ".join("%.1f->%.1f%s" % (c1 or 0, c2 or 0, "" if ok else " x")
                         for n, c1, c2, ok in cals)
        keptt = ", ".join("%s %d" % (n, k) for n, k in kept_by.items())
        self.section("8. Compression: in the shim, off, after the run", [
            "mallock record (libunwind 16) with zstd chunk compression in the shim "
            "(MALLOCK_COMPRESS=1 --no-compress, on), with MALLOCK_COMPRESS=0 (off: no compression "
            "at all) and with record's default (post: the shim writes raw chunks, record "
            "compresses the trace at zstd level 3 after the program exited; post-run s = the time "
            "it took, from record's last line), beside the bare run, %d alternations (on, off and "
            "post rotate their order each time), apps for %gs each (pool_bench: bench/pool_bench.c, an "
            "allocation-heavy thread pool: per task 10 small blocks, half freed on another "
            "thread). kept = rate / bare rate of the same alternation; B/event = trace bytes / "
            "events `mallock report` counts; trace MB/s = trace bytes / run duration; CPU kept = bare CPU per unit of "
            "work / CPU per unit under the tool (user+sys of the process tree from wait4: "
            "time spent waiting for a core does not count, so it moves less with other load). "
            "%s Calibrations (shim_bench lock+unlock loop, ns per pair, 0.1 s, bare, %s) "
            "before and after each workload's runs, in order%s: %s. Load average %s at the "
            "section's start, %s at its end." % (
                alts, dur, pin_text, "pinned the same way" if pin_text.startswith("Pinned") else "not pinned",
                "" if not self.args.cal_limit else
                " (x = left out: they differ by more than %g%%; %d of %d workload runs kept: %s)" % (
                    self.args.cal_limit, nkept, len(cals), keptt),
                calt, load_start, open("/proc/loadavg").read().split()[0]),
            tab,
            "shim_bench (%d pairs, best of 5 loops) in the same alternations: ns added over "
            "the bare run, compression on and off, and their difference (paired)." % self.iters,
            t2,
            "Targets: <= 2.5 B/event on svcqueue and batcher; pool trace per second "
            "<= 1/2.5 of uncompressed (off/on or off/post bytes >= 2.5x); svcqueue kept on within "
            "3 points of off (post: the run is the off run, its kept ratio should equal off's); "
            "shim_bench on within 5 ns of off; pool kept >= 80%."])

    # ------------------------------------------------------------ output
    def machine(self):
        def first(cmd):
            try:
                return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip().splitlines()[0]
            except Exception:
                return "?"
        model = "?"
        try:
            for line in open("/proc/cpuinfo"):
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        return [
            ("date", datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")),
            ("nproc", str(os.cpu_count())),
            ("CPU", model),
            ("kernel", platform.release()),
            ("OS", first("grep PRETTY_NAME /etc/os-release | cut -d= -f2 | tr -d '\"'")),
            ("mallock", first("git -C %s describe --always --dirty 2>/dev/null" % REPO)),
            ("heaptrack", first("heaptrack --version 2>&1") if self.heaptrack else "not installed"),
            ("valgrind", first("valgrind --version") if self.valgrind else "not installed"),
            ("libtcmalloc", first("dpkg-query -W -f '${Version}' libgoogle-perftools4 2>/dev/null")),
            ("rocksdb-tools", first("dpkg-query -W -f '${Version}' rocksdb-tools 2>/dev/null") or "not installed"),
        ]

    def write(self, started, load0):
        load1 = open("/proc/loadavg").read().split()[0]
        mode = "--quick" if self.args.quick else "full"
        L = ["# Performance: the observer effect, measured beside heaptrack", "",
             "Written by `bench/run_all.sh %s%s` (`make bench` runs it on `build/`); do not "
             "edit by hand, rerun it. Issue 5 sets the targets; the tables say met or MISSED." % (
                 rel(self.build), " --quick" if self.args.quick else ""), "",
             "## Machine and run", ""] + ([
                 "**Taken on a loaded machine** (load average %s when the run started, on %d "
                 "cores): other processes competed for the cores, so every figure is noisy; "
                 "rerun on a quiet machine before quoting it." % (load0, os.cpu_count()), ""]
                 if float(load0) > 0.7 else []) + [
             "| | |", "|---|---|"]
        for k, v in self.machine():
            L.append("| %s | %s |" % (k, v))
        L.append("| run | %s, %d repetitions, %.1f minutes; load average %s before, %s after |" % (
            mode, self.reps, (time.monotonic() - started) / 60, load0, load1))
        L.append("| paths | $BUILD = %s, $TMP = the suite's scratch directory |" % rel(self.build))
        L.append("")
        if self.args.preface:
            L += [self.args.preface, ""]
        for title, items in self.sections:
            L += ["## " + title, ""]
            for it in items:
                L += [it.markdown() if isinstance(it, Table) else it, ""]
        if self.notes:
            L += ["## Notes", ""] + ["- " + n for n in self.notes] + [""]
        L += ["## Commands", "",
              "Every command the suite ran, in the order first run ($BUILD is the build "
              "directory, $TMP the suite's scratch directory; traces are deleted after each "
              "run except those of section 5, which section 6 reads):", ""]
        for sec in sorted(set(s for s, _ in self.commands)):
            L.append("Section %d:" % sec)
            L.append("")
            L.append("```")
            L += [c for s, c in self.commands if s == sec]
            L.append("```")
            L.append("")
        if self.args.appendix and os.path.exists(self.args.appendix):
            L += [open(self.args.appendix).read().rstrip(), ""]
        out = self.args.out
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            f.write("\n".join(L))
        log("run_all: wrote %s" % out)


def main():
    ap = argparse.ArgumentParser(description="mallock benchmark suite")
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, shorter runs (<= 3 min)")
    ap.add_argument("--only", default="12345678", help="sections to run, e.g. 14 (default all)")
    ap.add_argument("--reps", type=int, default=0, help="repetitions (default 5, --quick 2)")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "performance.md"))
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment setting for every run (repeatable)")
    ap.add_argument("--pin", default="last", metavar="CPUS",
                    help="taskset -c CPUS for every run of the sections in --pin-sections "
                         "(default 'last': the highest CPU allowed, 1 on 2 cores; 'none' "
                         "turns it off)")
    ap.add_argument("--pin-sections", default="8", metavar="SECTIONS",
                    help="sections whose runs are pinned (default 8; 2 pins sections 2-3 too)")
    ap.add_argument("--cal-limit", type=float, default=0, metavar="PCT",
                    help="section 8: leave out a workload's runs when the bare calibrations "
                         "around them differ by more than PCT%% (default 0: keep all)")
    ap.add_argument("--no-install", action="store_true", help="do not apt-get install rocksdb-tools")
    ap.add_argument("--preface", default="", help=argparse.SUPPRESS)
    ap.add_argument("--appendix", default=os.path.join(REPO, "bench", "performance-notes.md"),
                    help="markdown appended to the document (default bench/performance-notes.md)")
    args = ap.parse_args()
    for kv in args.env:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            ap.error("--env wants NAME=VALUE, not %r" % kv)
        EXTRA_ENV[k] = v
    s = Suite(args)
    if EXTRA_ENV:
        s.notes.append("every run had the environment setting(s) " +
                       " ".join("%s=%s" % kv for kv in sorted(EXTRA_ENV.items())))
    for f in (s.shim, s.mallock, os.path.join(s.bin, "shim_bench")):
        if not os.path.exists(f):
            sys.exit("run_all: %s not built (make build, or cmake --build %s)" % (f, args.build))
    if not s.heaptrack:
        s.notes.append("heaptrack is not installed: its columns are empty (apt-get install heaptrack)")
    if not s.valgrind:
        s.notes.append("valgrind is not installed: no drd row")
    load0 = open("/proc/loadavg").read().split()[0]
    if float(load0) > 0.7:
        log("run_all: warning: load average %s before the run: other work is running, "
            "expect noisy numbers" % load0)
    started = time.monotonic()
    failed = []
    try:
        steps = [("1", s.per_event), ("2", s.apps), ("4", s.scaling), ("5", s.trace_and_analyzer),
                 ("7", s.db_bench), ("8", s.compression)]
        for key, fn in steps:
            if key in args.only or (key == "2" and "3" in args.only) or (key == "5" and "6" in args.only):
                t0 = time.monotonic()
                log("run_all: section %s ..." % key)
                try:
                    fn()
                except Exception as e:  # one broken section does not lose the others
                    failed.append(key)
                    msg = str(e).strip().splitlines()
                    s.notes.append("section %s failed: %s" % (key, " / ".join(msg[:4])))
                    log("run_all: section %s FAILED: %s" % (key, e))
                log("run_all: section %s took %.0f s" % (key, time.monotonic() - t0))
        s.write(started, load0)
    finally:
        shutil.rmtree(s.tmp, ignore_errors=True)
    if failed:
        sys.exit("run_all: section(s) %s failed (see the Notes of %s)" % (", ".join(failed), args.out))


if __name__ == "__main__":
    main()
