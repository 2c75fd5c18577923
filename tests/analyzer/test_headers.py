#!/usr/bin/env python3
"""What the report says about the recording and the program must be true:
a window closed by `mallock ctl` or an attached process
is not "did not exit cleanly", an attach is not "recording started with the
program", the cascade never refers to a finding that was not printed, the
slow-path advice names the allocator in use, and only node-sized churn is
suspected of being a node-based container; one function allocating at two
lines under one lock is one finding listing both lines."""
import re
from common import *


def text(*args):
    rc, out, err = run("report", *args)
    if rc != 0:
        raise SystemExit("mallock report failed (%d): %s" % (rc, err))
    return " ".join(out.split())  # unwrapped


# A window closed by ctl in an attached process that still runs.
path, _ = mktrace("cascade", "win.trace", "--rounds", 100, "--attached",
                  "--window-closed")
t = text(path)
check("did not exit cleanly" not in t, "window: not 'did not exit cleanly'")
check("window closed by ctl at 2023-11-14 22:13:20 UTC (+1.1 ms)" in t,
      "window: when it was closed, wall clock and offset")
check("attached at 2023-11-14 22:13:20 UTC (+0 ns)" in t, "window: attached at")
check("started with the program" not in t and
      "recording started at the attach" in t,
      "window: the recording started at the attach")
d = report_json(path)
tr = d["trace"]
eq((tr.get("attached"), tr.get("window_closed"), tr["clean_exit"]),
   (True, True, False), "window: JSON attached, window_closed, clean_exit")
check(tr.get("recording", "").startswith("attached at "), "window: JSON recording")

# An attached process that recorded no event: the attach's time, from its
# PROCESS record (not the clock pair's zero, the boot time).
path, _ = mktrace("empty", "empty.trace", "--attached")
t = text(path)
check("attached at 2023-11-14 22:13:20 UTC (+0 ns)" in t,
      "no event: attached at the attach's time")

# No END and no window: still running, or not a clean exit; a clean exit
# says nothing.
path, _ = mktrace("cascade", "noend.trace", "--rounds", 100, "--no-end")
t = text(path)
check("no END record: the process ended without exit() or is still "
      "running; events after " in t and " may be missing" in t,
      "no END: both possibilities, and the time after which events may be "
      "missing")
tr = report_json(path)["trace"]
check(tr.get("ended_without_exit") is not None and
      tr["ended_without_exit"]["after_ns"] > 0,
      "no END: JSON ended_without_exit.after_ns")
path, _ = mktrace("cascade", "clean.trace", "--rounds", 100)
t = text(path)
check("END record" not in t and "attached" not in t, "clean: no remark")
eq(report_json(path)["trace"].get("recording"), "", "clean: JSON recording")
eq(report_json(path)["trace"].get("ended_without_exit", 0), None,
   "clean: JSON ended_without_exit")

# The cascade is told for the first alloc_under_lock; with --top 0 it was
# not printed, so the text may not call it "finding #1".
t = text("--top", 0, path)
check("The cascade (finding #1)" not in t and
      "not listed above: --top 1 lists it" in t,
      "cascade: no reference to a finding not printed")
t = text(path)
check("The cascade (finding #1):" in t, "cascade: #1 when printed")

# Slow allocator calls outside any lock: the advice fits the allocator.
def slow_advice(*opts):
    p, _ = mktrace("cascade", "slow.trace", "--rounds", 1000,
                   "--slow-outside", *opts)
    d = report_json(p)
    adv = [f["advice"] for f in d["findings"]
           if f["kind"] == "slow_alloc" and f["evidence"]["lock_held"] == 0]
    eq(len(adv), 1, "slow_alloc outside locks %s" % (opts,))
    return adv[0]


a = slow_advice()
check("central free list" not in a and "glibc" in a,
      "glibc program: glibc's slow path, not tcmalloc's: " + a)
a = slow_advice("--module", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4")
check("tcmalloc's central free list" in a, "tcmalloc program: " + a)
a = slow_advice("--static-tcmalloc")
check("tcmalloc's central free list" in a,
      "tcmalloc linked in (the shim records through MallocHook): " + a)
check("for worker_main" in a and "MallocHook" not in a,
      "the site is the caller, not tcmalloc's hook machinery: " + a)
a = slow_advice("--module", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
check("jemalloc" in a and "central free list" not in a, "jemalloc: " + a)

# The advice follows the evidence: block size against where the allocator
# stops caching per thread, reallocs, the number of allocating threads;
# "often" only for a large share of slow calls (5% here).
TCM = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
JEM = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
check("often" not in a and "in 5.0% of the calls" in a,
      "a small share is stated, not called often: " + a)
a = slow_advice("--module", TCM, "--slow-size", 2 << 20)
check("2 MiB" in a and "256 KiB" in a and "page heap" in a and
      "larger thread caches do not help" in a and
      "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES" not in a,
      "tcmalloc, 2 MiB blocks no thread cache holds: " + a)
# Sizes on both sides of the limit: the slow calls' own sizes decide.
# Slow calls of 2 MiB among fast ones of 32 bytes: the large blocks.
a = slow_advice("--module", TCM, "--slow-call-size", 2 << 20)
check("32 bytes to 2 MiB" in a and
      re.search(r"(\d+) of the \1 slow ones were above tcmalloc's largest "
                r"size class \(256 KiB\)", a) and
      "larger thread caches do not help" in a and
      "the trace does not tell" not in a,
      "tcmalloc, the slow calls are the 2 MiB ones: " + a)
# Slow calls of 64 bytes among fast ones of 2 MiB: the small blocks'
# advice, not the page heap's.
a = slow_advice("--module", TCM, "--slow-size", 2 << 20,
                "--slow-call-size", 64)
check("page heap" not in a.split("(")[0] and "pageheap_lock" not in a and
      "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES" in a,
      "tcmalloc, the slow calls are the 64-byte ones: " + a)
a = slow_advice("--slow-size", 256 << 10)
check("mmap threshold" in a and "arena_max" not in a,
      "glibc, 256 KiB blocks: the mmap threshold: " + a)
a = slow_advice("--module", JEM, "--slow-size", 64 << 10)
check("tcache_max" in a and "narenas" not in a,
      "jemalloc, 64 KiB blocks: beyond its thread cache: " + a)
a = slow_advice("--module", JEM, "--slow-realloc", "--slow-one-thread")
check("realloc" in a and "doubling" in a and "arenas" not in a,
      "jemalloc, one thread growing blocks with realloc: " + a)
# A JVM (libjvm.so loaded): the header says which locks mallock sees (the
# VM's pthread locks) and which it cannot (Java monitors), in one line.
p, _ = mktrace("cascade", "jvm.trace", "--module",
               "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
bs = report_json(p)["trace"]["blind_spot"] or ""
check("pthread locks" in bs and "Java monitors" in bs,
      "a JVM's header names the locks seen and not seen: %r" % bs)
p, _ = mktrace("cascade", "nojvm.trace")
eq(report_json(p)["trace"]["blind_spot"], None, "no JVM, no such line")

a = slow_advice("--slow-one-thread")
check("one thread" in a and "arena_max" not in a,
      "glibc, one allocating thread: no arena advice: " + a)


# Churn: the container a frame names decides; with none, the size says
# only what to check (node's 24-byte std::vector buffers were "a
# node-based container?").
def churn_advice(size, *opts):
    p, _ = mktrace("mixed", "churn.trace", "--rounds", 1000, "--churn-size",
                   size, *opts)
    d = report_json(p)
    adv = [f["advice"] for f in d["findings"] if f["kind"] == "alloc_churn"
           and f["evidence"]["size"] == size]
    eq(len(adv), 1, "churn finding for %d-byte blocks" % size)
    return adv[0]


a = churn_advice(16)
check("no frame names a container" in a and "node-based container?" not in a,
      "16-byte churn, no container in the stack: no guess: " + a)
a = churn_advice(16, "--churn-container", "vector")
check("std::vector's buffer" in a and "open addressing" not in a,
      "16-byte churn in std::vector's code: its buffer, not nodes: " + a)
a = churn_advice(16, "--churn-container", "tree")
check("the nodes of a std::map or std::set" in a and "open addressing" in a,
      "16-byte churn in std::_Rb_tree's code: its nodes: " + a)
a = churn_advice(32768)
check("node" not in a and "buffer" in a,
      "32 KiB churn: a buffer, not a node: " + a)

# One lock and one function allocating at two lines (tree_insert): one finding that lists both lines, not two.
p, _ = mktrace("cascade", "lines.trace", "--rounds", 1000, "--two-lines")
d = report_json(p)
aul = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"]
eq(len(aul), 1, "two lines of one function under one lock: one finding")
if aul:
    f = aul[0]
    eq(f["site"]["function"], "tree_insert", "the finding's function")
    check(len(f.get("lines", [])) == 2 and
          f["lines"][0] == f["site"]["line"] and
          f["lines"][1] > f["lines"][0], "both lines listed: %s" %
          f.get("lines"))
    ln = f.get("lines", [0, 0])
    check("tree_insert (mktrace.c:%d, %d)" % tuple(ln) in f["advice"],
          "the advice names both lines: " + f["advice"])
    eq(f["evidence"]["calls"], 3 * 1000 * 2,
       "the finding counts both lines' allocator calls")
t = text(p)
check("code tree_insert (mktrace.c:%d, %d)" % tuple(ln) in t,
      "the text's code line lists both lines")
done("analyzer_headers")
