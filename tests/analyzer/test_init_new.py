#!/usr/bin/env python3
"""A lock's definition folded into its init (trace format 1.9), recorded:
initnew makes many per-object locks, each initialised in a fresh block,
taken, destroyed and freed (tests/analyzer/initnew.c). Each init of a
lock first seen there must be stored as one LOCK_INIT_NEW (trace_stats'
"stored" lines) and read back as a LOCK_NEW (the id, the lock's address
in its block, its kind, flags "first seen at init") and a LOCK_INIT of
that id: every init's id is new and defined once, every destroy names
an initialised id, the threads' counts of inits, destroys, acquisitions
and releases are exact, END counts every event, and the report's lock
classes (by init site) have the exact instances and acquisitions. With
MALLOCK_FLUSH_MS=3, other threads write the idle initnew_flick thread's
buffer and its own flush encodes the rest again (shim/core/wbuf.c
write_range), LOCK_INIT_NEW included.

usage: test_init_new.py MALLOCK MKTRACE SRCDIR INITNEW TRACE_STATS"""
import subprocess
from common import *

APP, TRACE_STATS = sys.argv[4], sys.argv[5]
MSGS, HOLDS, RW_EVERY, FLICK, STATIC = 6000, 3, 10, 2000, 100
NRW = 2 * (MSGS // RW_EVERY)
INITS = 2 * MSGS + NRW + FLICK
META = {"PROCESS", "MODULE", "STACK", "LOCK_NEW", "LOCK_NAME", "THREAD_NAME",
        "END", "NOTE"}

trace = os.path.join(TMP, "initnew.trace")
env = dict(os.environ, MALLOCK_FLUSH_MS="3")
r = subprocess.run([MALLOCK, "record", "--no-compress", "-o", trace, "--",
                    APP], env=env, capture_output=True, text=True,
                   timeout=300)
eq(r.returncode, 0, "initnew ran (stderr %r)" % r.stderr)

st = subprocess.run([TRACE_STATS, trace], capture_output=True, text=True,
                    timeout=120)
eq(st.returncode, 0, "trace_stats (stderr %r)" % st.stderr)
stored, per, events, end, names = {}, {}, 0, None, {}
for ln in st.stdout.splitlines():
    f = ln.split()
    if len(f) == 3 and f[0] == "stored":
        stored[f[1]] = int(f[2])
    elif len(f) == 2 and f[0].isupper() and f[0] not in META:
        events += int(f[1])
    elif len(f) >= 4 and f[0] == "end" and f[2] == "events":
        end = int(f[3])
    elif len(f) > 2 and f[0] == "thread":
        names[f[1]] = f[2]
        if f[2].startswith("initnew"):
            for kv in f[3:]:
                k, v = kv.split("=")
                per[k] = per.get(k, 0) + int(v)
print("stored forms: %s" % sorted(stored.items()))
print("initnew's records: %s" % sorted(per.items()))
eq(stored.get("LOCK_INIT_NEW", 0), INITS, "inits stored as LOCK_INIT_NEW")
eq(per.get("LOCK_INIT", 0), INITS, "initnew's LOCK_INIT")
eq(per.get("LOCK_DESTROY", 0), INITS, "initnew's LOCK_DESTROY")
acqs = 2 * MSGS * HOLDS + NRW + FLICK + STATIC
eq(sum(per.get(k, 0) for k in per if k.startswith("ACQ")), acqs,
   "initnew's acquisitions")
eq(sum(per.get(k, 0) for k in ("REL", "REL_CONTENDED")), acqs,
   "initnew's releases")
eq(end, events, "END's events and the event records read")

# Every record, in order: each init's id defined once, as first seen at
# init, at an address 24 (8 for initnew_flick) past a block its thread
# allocated; each destroy of an initialised id.
dump = subprocess.run([TRACE_STATS, "-d", trace], capture_output=True,
                      text=True, timeout=300)
eq(dump.returncode, 0, "trace_stats -d")
new, inits, destroys, blocks = {}, [], [], set()
for ln in dump.stdout.splitlines():
    f = ln.split()
    tid, typ = f[0][4:], f[3]
    if typ not in ("LOCK_NEW", "LOCK_INIT", "LOCK_DESTROY", "ALLOC"):
        continue
    v = [int(x) for x in f[4:]]
    if typ == "LOCK_NEW":
        check(v[0] not in new, "lock id %d defined once" % v[0])
        new[v[0]] = (tid, v[1], v[2], v[3])
    elif typ == "LOCK_INIT":
        inits.append((tid, v[0]))
    elif typ == "LOCK_DESTROY":
        destroys.append(v[0])
    elif typ == "ALLOC":
        blocks.add((tid, v[0]))
eq(len(set(i for _, i in inits)), INITS, "every init a new id")
bad = [i for t, i in inits if i not in new or new[i][0] != t or
       new[i][3] != 1 or new[i][2] not in (0, 1)]
eq(bad[:5], [], "each init's LOCK_NEW: same thread, flags init, its kind")
off = {n: 8 if names.get(t) == "initnew_flick" else 24
       for t, n in inits}
far = [i for t, i in inits if (t, new[i][1] - off[i]) not in blocks]
eq(far[:5], [], "each init's address in a block its thread allocated")
eq(sorted(destroys), sorted(i for _, i in inits), "destroys of the inits")
eq(sum(1 for _, i in inits if new[i][2] == 1), NRW, "rwlocks (kind 1)")
# malloc's blocks are 16-aligned: a pointer decoded against the wrong
# previous pointer (a lock's address taken for one) is not
eq(sorted(p for _, p in blocks if p % 16)[:5], [], "blocks 16-aligned")
statics = [k for k, n in new.items() if n[3] == 2]
eq(len(statics), 1, "one lock first seen at an acquisition")

# The report: the classes by init site, exact.
d = report_json(trace, "--all")


def cls(fn):
    """The classes whose init site is in fn, summed (a compiler that
    peels a loop's first call makes two sites of one)."""
    cs = [c for c in d["lock_classes"]
          if (c.get("site") or {}).get("function") == fn]
    check(len(cs) >= 1, "a lock class made by %s" % fn)
    eq([c.get("site_kind") for c in cs], ["init"] * len(cs),
       "%s: classes by init site" % fn)
    return {k: sum(c.get(k, 0) for c in cs)
            for k in ("instances", "acquisitions", "holds",
                      "shared_acquisitions")}


for fn, inst, acq in (("make_msg", 2 * MSGS, 2 * MSGS * HOLDS),
                      ("make_rw", NRW, NRW), ("make_flick", FLICK, FLICK)):
    c = cls(fn)
    eq(c["instances"], inst, "%s: instances" % fn)
    eq(c["acquisitions"], acq, "%s: acquisitions" % fn)
    eq(c["holds"], acq, "%s: holds" % fn)
eq(cls("make_rw")["shared_acquisitions"], NRW,
   "make_rw: shared acquisitions")
done("analyzer_init_new")
