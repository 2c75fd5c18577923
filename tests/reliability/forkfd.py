"""forkfd.py BUILD_DIR - fork while other threads run, fork near the
address-space limit, and a host that closes its fds (forkfd.c). Every run has a timeout.

- forkmt: 60 workers forked while one thread allocates and one loops in
  dl_iterate_phdr; MALLOCK_BUFFER_KB=4 (frequent flushes). Every worker must
  exit (before the fix a worker's first allocation unwound through
  dl_iterate_phdr on the loader's lock the parent thread held at fork, and
  waited forever), and every worker's trace is readable with its modules.
- forkas: under RLIMIT_AS the worker must exit 0 (it died of SIGSEGV: the
  lock tables were NULL after lockmap_reset could not map new ones).
- fdreuse: the host's three files hold exactly its records and every write
  succeeded (libunwind's validation pipe took the host's reused fds: it
  read them, closed them, and wrote into them). With libunwind (cache on
  and off) and fp.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx  # noqa: E402

c = Ctx("forkfd", sys.argv[1])
prog = c.bin("forkfd")

# forkmt
N = 60
st, out, err = c.run([prog, "forkmt", str(N)], timeout=120)
c.check(st == 0 and out == b"forks %d hung 0\n" % N, "bare forkmt: %s %r" %
        (st, out))
for mode, extra in (("libunwind", {}), ("fp", {"MALLOCK_UNWIND": "fp"})):
    d = c.tmpdir("forkmt_" + mode)
    env = c.shim_env(os.path.join(d, "t.%p.trace"),
                     dict(extra, MALLOCK_BUFFER_KB="4"))
    st, out, err = c.run([prog, "forkmt", str(N)], env=env, timeout=120)
    if c.check(st == 0 and out == b"forks %d hung 0\n" % N,
               "forkmt %s: status %s, %r %r" % (mode, st, out, err[-300:])):
        reps = c.check_readable(d, N + 1)
        parents = {r["trace"]["ppid"] for r in reps}
        for r in reps:
            if r["trace"]["pid"] in parents:
                continue  # forkfd itself, which ends with _exit
            c.check(r["trace"]["clean_exit"] and r["trace"]["events"] > 0,
                    "forkmt %s: trace %s" % (mode, r["trace"]))
        # A worker's trace names the modules (the parent's list). The
        # parent's own trace is not one: it ends with _exit while its
        # threads write, so its last chunk may be cut (the analyzer reads
        # up to it; trace_stats refuses it).
        workers = [f for f in c.traces(d) if not any(
            os.path.basename(f) == "t.%d.trace" % p for p in parents)]
        for f in workers[:5]:
            s = subprocess.run([c.bin("trace_stats"), f],
                               stdout=subprocess.PIPE).stdout.decode()
            c.check("\nMODULE " in s, "forkmt %s: %s has no MODULE" %
                    (mode, f))
        print("forkfd: forkmt %s: %d traces" % (mode, len(reps)))

# forkas
st, out, err = c.run([prog, "forkas"], timeout=30)
c.check(st == 0 and out == b"worker exited 0\n", "bare forkas: %r" % out)
d = c.tmpdir("forkas")
st, out, err = c.run([prog, "forkas"], env=c.shim_env(
    os.path.join(d, "t.%p.trace")), timeout=30)
c.check(st == 0 and out == b"worker exited 0\n", "forkas: status %s, %r %r" %
        (st, out, err[-300:]))

# fdreuse
want = b"a.db 28\nb.db 28\nc.db 28\nwrites ok\n"
d = c.tmpdir("fdreuse_bare")
st, out, err = c.run([prog, "fdreuse"], cwd=d, timeout=30)
c.check(st == 0 and out == want, "bare fdreuse: %r" % out)
for mode, extra in (("libunwind", {}), ("nocache", {"MALLOCK_STACK_CACHE":
                    "0"}), ("fp", {"MALLOCK_UNWIND": "fp"})):
    d = c.tmpdir("fdreuse_" + mode)
    env = c.shim_env(os.path.join(d, "t.trace"), extra)
    st, out, err = c.run([prog, "fdreuse"], env=env, cwd=d, timeout=30)
    c.check(st == 0 and out == want, "fdreuse %s: status %s, %r %r" %
            (mode, st, out, err[-300:]))
    for f in ("a.db", "b.db", "c.db"):
        with open(os.path.join(d, f), "rb") as fh:
            data = fh.read()
        c.check(data == b"RECORD\n" * 4, "fdreuse %s: %s holds %d bytes %r" %
                (mode, f, len(data), data[:40]))
    c.check_readable(d)
c.done()
