"""libcholds.py BUILD_DIR - the guard for the class "a hook calls a locking
libc function" (shim/hooks/hook.h): libcholds runs every kind of hook from inside
libc functions that hold an internal lock (pthread_getattr_np on a new
thread and on the main thread, a dl_iterate_phdr callback, stdio stream
callbacks, qsort, pthread_once), under each unwind mode (libunwind with the
stack cache on and off, frame pointers) and with glibc and libtcmalloc
underneath. Every run has a timeout: a hang is a failure. Asserted: exit 0,
the same output as bare, a readable trace with no drops.

Before the fix (8141b96) getattr_thread, getattr_main and getattr_early hung (libunwind
with the stack cache, and fp): the first stack-cache use, or the fp walk's
set-up, called pthread_getattr_np from inside the host's own call of it.
dl_cross hung with libunwind: its FDE lookup for a new pc waited for the
loader's lock, held by a thread that waited for main.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx  # noqa: E402

c = Ctx("libcholds", sys.argv[1])
SCEN = ["getattr_thread", "getattr_main", "getattr_early", "dl_iterate", "stdio", "qsort",
        "once", "dl_cross", "all"]
MODES = {"libunwind": {}, "nocache": {"MALLOCK_STACK_CACHE": "0"},
         "fp": {"MALLOCK_UNWIND": "fp"}}
TCM = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
allocs = {"glibc": None}
if os.path.exists(TCM):
    allocs["tcmalloc"] = TCM
else:
    print("libcholds: %s missing: tcmalloc runs skipped" % TCM)
for s in SCEN:
    st, out, err = c.run([c.bin("libcholds"), s], timeout=20)
    if not c.check(st == 0 and out == (s + " ok\n").encode(),
                   "bare %s: status %s %r %r" % (s, st, out, err)):
        continue
    for an, lib in allocs.items():
        for mn, extra in MODES.items():
            d = c.tmpdir("libcholds")
            env = c.shim_env(os.path.join(d, "t.trace"), extra,
                             preload_after=lib)
            st2, out2, err2 = c.run([c.bin("libcholds"), s], env=env,
                                    timeout=20)
            what = "%s %s %s" % (s, an, mn)
            if not c.check(st2 == 0 and out2 == out,
                           "%s: status %s (None: hung), out %r, err %r" %
                           (what, st2, out2, err2[-300:])):
                continue
            reps = c.check_readable(d)
            for r in reps:
                c.check(r["trace"]["dropped_events"] == 0 and
                        r["trace"]["clean_exit"] and r["trace"]["events"] > 0,
                        "%s: trace %s" % (what, r["trace"]))
c.done()
