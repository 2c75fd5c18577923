#!/usr/bin/env python3
"""The mutation audit, kept: realistic one-line breaks of mallock, each
with the test that must fail on it and the words that say why.

  mutants.py --check SRC
      each mutation still applies: its text is in its file exactly once
      (CTest's tooling_mutants runs this, so a change that moves a guarded
      line fails until the catalogue follows it);
  mutants.py --run SRC SCRATCH [--only N,N...]
      copies SRC's tracked files to SCRATCH, builds them there
      (-DMALLOCK_WERROR=ON), runs every guarding test unmutated (each must
      pass), then for each mutation: applies it, rebuilds, runs its tests
      and reverts. A mutation is killed when a test fails and one of its
      output's failure lines says the words of the reason; a failure
      without such a line is a kill for another reason, and counts as a
      miss. Exits 0 when every mutation
      is killed for its reason. SRC is never written; the tests' tools
      must be installed (`make test` installs them).
"""
import os
import sys
import time

from scratch import build, configure, copy_tracked, ctest

# (what breaks, file, text, replacement, ctest regex, words of the reason)
M = [
    ("a futex wake is not recorded", "shim/hooks/futex_hook.c",
     "if (unlikely(r > 0))\n\t\t\t\tfutex_woke(",
     "if (0 && r > 0)\n\t\t\t\tfutex_woke(",
     r"^analyzer_futex$", "woke it"),
    ("a robust trylock's EOWNERDEAD is no acquisition",
     "shim/hooks/lock_hooks.c",
     "if (likely(r == 0) || unlikely(r == EOWNERDEAD)) {",
     "if (likely(r == 0)) {", r"^shim_robust$", "robust_main"),
    ("nothing is flushed before an exec", "shim/control/exec_hooks.c",
     "int page = ctl_exec_begin();\n\tif (!writer_owner() ||",
     "int page = ctl_exec_begin();\n\tif (1 || !writer_owner() ||",
     r"^rel_hostile_exec$", "the program did"),
    ("SIGTERM's default action ends the trace unflushed",
     "shim/control/fatal.c",
     '\tX(SIGTERM, "signal SIGTERM (default action)")'
     '                          \\\n', "",
     r"^rel_hostile_signals$", "SIGTERM"),
    ("a control directory of another user is accepted",
     "format/ctl_page.c", "if (st.st_uid != uid) {",
     "if (0 && st.st_uid != uid) {", r"^server_ctl_refuse$",
     "of another user has no control page"),
    ("any open fd is taken for the trace file", "shim/core/writer.c",
     "if (likely(prim_fid_same(fd, &g_fid)))\n\t\treturn fd;",
     "if (likely(fd >= 0))\n\t\treturn fd;",
     r"^rel_hostile_closeall_loop$", "stderr differs"),
    ("a stack cache hit is not validated", "shim/core/stackcache.h",
     "for (unsigned i = 0, n = e->nx; i < n; i++)",
     "for (unsigned i = 0, n = e->nx; i < n && 0; i++)",
     r"^shim_stackcache$", "bad == 0"),
    ("MALLOCK_SAMPLE_BYTES is ignored", "shim/core/sample.c",
     "double next = -log(u) * (double)g_cfg.sample_bytes;",
     "double next = -log(u) * 524288.0;", r"^server_sample$",
     "expected about"),
    ("a free's thread is compared with the wrong index",
     "analyzer/model/aggregate_alloc.c", "if (b->thread != ti) {",
     "if (b->thread != ti + 1) {", r"^groundtruth\.xthread$",
     "cross_thread_free at task_create"),
    ("an allocation is charged to the innermost held lock only",
     "analyzer/model/aggregate_alloc.c",
     "t->nheld > ALLOC_PAIR_LOCKS ? t->nheld - ALLOC_PAIR_LOCKS : 0;",
     "t->nheld > 1 ? t->nheld - 1 : 0;", r"^groundtruth\.reportqueue$",
     "the outer lock"),
    ("the cascade finding leaves out the allocator's lock wait",
     "analyzer/find/find_locks.c", "\t\ta->lw += p->ns2;\n", "",
     r"^groundtruth\.svcqueue_cascade$", "allocator_lock_wait_ns is 0"),
    ("a slow allocation is 10x slower than it should be",
     "analyzer/find/thresholds.h", "X(SLOW_ALLOC_NS, 1000,",
     "X(SLOW_ALLOC_NS, 10000,", r"^analyzer_sites$", "slow"),
    ("pprof's wait count and delay are swapped",
     "analyzer/output/report_pprof.c",
     "REPLAY_WAIT &&\n\t\t    report_class_matches(p->r, m, "
     "m->lock[e->lock].cls)) {\n\t\t\tpsample_t *s = sample(p, e->stack, "
     "e->lock, e->thread);\n\t\t\ts->v[0]++;\n\t\t\ts->v[1] += e->ns;",
     "REPLAY_WAIT &&\n\t\t    report_class_matches(p->r, m, "
     "m->lock[e->lock].cls)) {\n\t\t\tpsample_t *s = sample(p, e->stack, "
     "e->lock, e->thread);\n\t\t\ts->v[1]++;\n\t\t\ts->v[0] += e->ns;",
     r"^analyzer_pprof$", "contentions total"),
    ("Perfetto tracks hang under a wrong thread",
     "analyzer/output/report_perfetto.c", "parent = p->tr[ti].uuid;",
     "parent = ti;", r"^analyzer_perfetto$", "track"),
    ("the HTML page has no cascade section",
     "analyzer/output/report_json.c",
     'jw_key(w, "cascade");',
     'jw_key(w, "cascade_steps");', r"^analyzer_html$",
     "the cascade in numbers"),
    ("the JSON's missing_symbols[].hint is renamed",
     "analyzer/output/report_json.c", 'jw_kstr(w, "hint", ms[i].hint);',
     'jw_kstr(w, "advice", ms[i].hint);', r"^groundtruth\.stripped$",
     "hint does not say"),
    ("a CRC mismatch is reported past its chunk's start",
     "analyzer/trace/reader.c",
     "CRC mismatch\",\n\t\t\t         mo + 1);\n\t\t\tstop_at(r, off, why);",
     "CRC mismatch\",\n\t\t\t         mo + 1);\n\t\t\t"
     "stop_at(r, off + FMT_CHUNK_HEADER_SIZE, why);",
     r"^analyzer_malformed$", "truncated at byte"),
    ("compression reseals a corrupt chunk", "analyzer/trace/trace_compress.c",
     "if (fmt_chunk_verify(hb, &h, t->pay) < 0)",
     "if (0 && fmt_chunk_verify(hb, &h, t->pay) < 0)",
     r"^format_post_compress$", "bad chunk"),
    ("the text diff's percentages have their sign flipped",
     "analyzer/cmd/diff.c", "100.0 * (b - a) / a", "100.0 * (a - b) / a",
     r"^analyzer_diff$", "text diff"),
    ("a free is merged at its end, not its start", "analyzer/trace/reader.c",
     "back = s->rec.f[FMT_FREE_TICKS];", "back = 0;",
     r"^analyzer_reuse$", "freed again: the free under queue"),
    ("the starvation test's spread bound is 100x too lax",
     "analyzer/find/find_starvation.c", "cv * 100 < TH_STARVE_CV_PCT",
     "cv < TH_STARVE_CV_PCT", r"^groundtruth\.admission$",
     "but no starvation"),
    ("the page still says the wake signal is the shim's after the host "
     "took it", "shim/control/control.c",
     "__atomic_store_n(&g_ctl_page->wake_sig, 0, __ATOMIC_SEQ_CST);", "",
     r"^server_sigdaemon_wake$",
     "refuses each process whose handler is its own"),
    ("_exit ends the process without the trace's tail",
     "shim/control/exit_hooks.c", 'end_by("_exit");', "",
     r"^rel_ending__exit$", "_exit: no END record"),
    ("a contended acquisition leaves its hold untimed",
     "shim/hooks/lock_hooks.c", "\t\tt->hold_clock = HOLD_EXACT;\n", "",
     r"^analyzer_contended_timed$",
     "contended holds whose release was not timed"),
    ("no uncontended nest is left untimed", "shim/hooks/lock_hooks.c",
     "t->hold_clock = HOLD_UNTIMED;", "t->hold_clock = HOLD_EXACT;",
     r"^analyzer_contended_timed$", "untimed holds recorded"),
    ("a sampled hold stands for itself only", "analyzer/model/aggregate.c",
     "? (uint32_t)m->hold_every\n\t\t           : 1;",
     "? 1\n\t\t           : 1;", r"^analyzer_timed_holds$",
     "weighted lock figures"),
    ("a timed call in a sampled nest stands for itself only",
     "analyzer/model/aggregate_alloc.c",
     "return t->hold_w ? t->hold_w : 1;", "return 1;",
     r"^analyzer_timed_holds$", "weighted lock figures"),
    ("a set-apart hold adds nothing to what it would add at its weight",
     "analyzer/model/aggregate.c",
     "m->tot.holds_apart_ns += (hold - mean) * (h.w - 1);",
     "m->tot.holds_apart_ns += 0;", r"^analyzer_timed_holds$",
     "would add at its weight"),
    ("a preempted call in a sampled hold adds nothing to what it would add",
     "analyzer/model/aggregate_alloc.c",
     "m->tot.alloc_apart_ns += ns1 * (tw - 1);",
     "m->tot.alloc_apart_ns += 0;", r"^analyzer_timed_holds$",
     "set-apart call would add"),
    ("read as sampled, an untimed nest keeps its times",
     "analyzer/trace/reader.c",
     "x->type = x->type == FMT_ACQ ? FMT_ACQ_UNTIMED\n"
     "\t\t\t                             : FMT_ACQ_SHARED_UNTIMED;",
     "(void)0;", r"^analyzer_as_sampled$", "sampled nests x N"),
    ("read as sampled, a contended acquisition leaves its nest untimed",
     "analyzer/trace/reader.c", "s->nest = NEST_EXACT;\n\t\ts->depth++;",
     "s->depth++;", r"^analyzer_as_sampled$", "sampled nests x N"),
]


def check(src):
    bad = 0
    for i, (what, f, old, new, _, _) in enumerate(M, 1):
        path = os.path.join(src, f)
        n = open(path).read().count(old) if os.path.exists(path) else -1
        if n != 1 or old == new:
            bad += 1
            where = "no such file" if n < 0 else f"found {n} times"
            print(f"mutants: #{i} ({what}): {f}: the text to break is "
                  f"{where}, not once; follow the code in "
                  f"tests/tooling/mutants.py", file=sys.stderr)
    print(f"mutants: {len(M)} mutations, {bad} no longer apply")
    return 1 if bad else 0


def run(src, dst, only):
    copy_tracked(src, dst)
    cok, clog = configure(dst)
    ok, log = build(dst)
    if not cok or not ok:
        print("mutants: the unmutated build failed:\n" + clog + log)
        return 1
    todo = [(i, m) for i, m in enumerate(M, 1) if not only or i in only]
    regex = "|".join(m[4] for _, m in todo)
    rc, ran, out = ctest(dst, regex)
    if rc or not ran:
        print("mutants: the guarding tests fail unmutated, so no kill "
              "would mean anything:\n" + out[-3000:])
        return 1
    print(f"mutants: unmutated, the {ran.group(2)} guarding tests pass")
    missed = 0
    for i, (what, f, old, new, regex, why) in todo:
        path = os.path.join(dst, f)
        text = open(path).read()
        open(path, "w").write(text.replace(old, new, 1))
        t0 = time.time()
        ok, log = build(dst)
        rc, _, out = ctest(dst, regex) if ok else (1, None, log)
        open(path, "w").write(text)
        lines = [ln.strip() for ln in out.splitlines()
                 if why in ln and "fail" in ln.lower()][:2]
        if not ok:
            verdict = "BUILD FAILED (not a kill: a mutant must build)"
        elif rc == 0:
            verdict = "SURVIVED"
        elif not lines:
            verdict = (f"KILLED FOR ANOTHER REASON (no failure line says "
                       f"'{why}')")
        else:
            verdict = "killed"
        missed += verdict != "killed"
        print(f"#{i} {what} [{f}]: {verdict} by {regex} "
              f"({time.time() - t0:.0f} s)", *lines, sep="\n    ",
              flush=True)
    build(dst)
    print(f"mutants: {len(todo) - missed} of {len(todo)} killed for their "
          f"reason")
    return 1 if missed else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        return check(argv[2])
    if len(argv) in (4, 6) and argv[1] == "--run":
        only = set()
        if len(argv) == 6 and argv[4] == "--only":
            nums = argv[5].split(",")
            only = {int(x) for x in nums if x.isdigit()}
            if len(only) < len(set(nums)) or not only <= set(
                    range(1, len(M) + 1)):
                print(f"mutants: --only {argv[5]}: numbers from 1 to "
                      f"{len(M)}", file=sys.stderr)
                return 2
        elif len(argv) == 6:
            return main([])
        if os.path.exists(argv[3]) and os.listdir(argv[3]):
            print(f"mutants: {argv[3]}: not empty; give a new directory",
                  file=sys.stderr)
            return 2
        return run(os.path.abspath(argv[2]), os.path.abspath(argv[3]), only)
    print("usage: mutants.py --check SRC | --run SRC SCRATCH [--only N,N]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
