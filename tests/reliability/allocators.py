"""allocators.py BUILD_DIR - the allocator underneath the shim: glibc,
Debian's libtcmalloc (shared) and jemalloc (libjemalloc2), each preloaded
after the shim (LD_PRELOAD=libmallock.so:ALLOCATOR). allocmt's 4 worker
threads make known numbers of calls; the trace must hold exactly those
(per thread named "worker": ALLOC = malloc + calloc, REALLOC, FREE; on the
program's mutex, as the report names it by address: acquisitions), with no
drop, and the host's output unchanged.

jemalloc's own bin mutexes, taken by its thread-exit cache flush (a TSD
destructor, outside any malloc call), are recorded as ordinary locks of
libjemalloc.so.2: they are not counted against the program's mutex.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx  # noqa: E402

c = Ctx("allocators", sys.argv[1])
THREADS, ITERS = 4, 20000
LIBDIR = "/usr/lib/x86_64-linux-gnu"
allocators = {
    "glibc": None,
    "tcmalloc": os.path.join(LIBDIR, "libtcmalloc.so.4"),
    "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
}
# Install what is missing (root; Debian packages), as real_programs.sh does.
pkgs = {"tcmalloc": "libgoogle-perftools4", "jemalloc": "libjemalloc2"}
missing = [pkgs[n] for n, lib in allocators.items()
           if lib and not os.path.exists(lib)]
if missing and os.geteuid() == 0:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run("apt-get update -qq && apt-get install -y -qq " +
                   " ".join(missing), shell=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
bare = c.run([c.bin("allocmt"), str(THREADS), str(ITERS)])
c.check(bare[0] == 0, "bare allocmt: status %s" % bare[0])
for name, lib in allocators.items():
    if lib and not os.path.exists(lib):
        c.skip("%s missing (%s) and not installable here" % (name, lib))
        continue
    d = c.tmpdir("alloc_" + name)
    env = c.shim_env(os.path.join(d, "t.trace"), preload_after=lib)
    st, out, err = c.run([c.bin("allocmt"), str(THREADS), str(ITERS)], env=env)
    c.check(st == 0 and out == bare[1], "%s: status %s, out %r" %
            (name, st, out))
    c.check(not err.decode().replace(re.search(r"mutex 0x[0-9a-f]+\n",
            err.decode()).group(0), ""), "%s: stderr %r" % (name, err))
    addr = re.search(r"mutex (0x[0-9a-f]+)", err.decode()).group(1)
    trace = os.path.join(d, "t.trace")
    stats = subprocess.run([c.bin("trace_stats"), trace],
                           stdout=subprocess.PIPE).stdout.decode()
    per = {"ALLOC": 0, "FREE": 0, "REALLOC": 0}
    for line in stats.splitlines():
        f = line.split()
        if len(f) > 2 and f[0] == "thread" and f[2] == "worker":
            for kv in f[3:]:
                k, v = kv.split("=")
                if k in per:
                    per[k] += int(v)
    n = THREADS * ITERS
    c.check(per == {"ALLOC": 2 * n, "FREE": 2 * n, "REALLOC": n},
            "%s: worker counts %s, expected ALLOC %d FREE %d REALLOC %d" %
            (name, per, 2 * n, 2 * n, n))
    rst, rep, rerr = c.report(trace)
    if not c.check(rst == 0, "%s: report failed: %s" % (name, rerr)):
        continue
    mine = [lk for lk in rep["locks"] if int(lk["address"], 16) ==
            int(addr, 16)]
    c.check(len(mine) == 1 and mine[0]["acquisitions"] == n,
            "%s: acquisitions of the program's mutex %s, expected %d" %
            (name, [m["acquisitions"] for m in mine], n))
    c.check(rep["trace"]["dropped_events"] == 0 and
            rep["trace"]["clean_exit"], "%s: drops or unclean" % name)
    print("allocators: %s: %d events, exact" % (name, rep["trace"]["events"]))
c.done()
