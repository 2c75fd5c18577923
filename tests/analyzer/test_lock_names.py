#!/usr/bin/env python3
"""Locks nobody named get names a reader can place: a
global by its ELF data symbol, a lock inside a heap block by the block's
allocation site and offset, else by the function that initialised it or
first took it; mallock_lock_name still wins. Locks made through an init
wrapper are classed by the wrapper's caller (item 2)."""
from common import *


def labels(*opts, scenario="cascade"):
    p, _ = mktrace(scenario, "names.trace", "--rounds", 100, *opts)
    d = report_json(p)
    return d, {l["id"]: l["label"] for l in d["locks"]}


# Unnamed: queue (initialised in queue_init) and stats (a static
# initializer, taken in stats_update).
d, lab = labels("--unnamed")
check(lab[1].startswith("mutex initialised in queue_init (mktrace.c:"),
      "init site: " + lab[1])
check(lab[2].startswith("mutex taken in stats_update (mktrace.c:"),
      "first acquisition: " + lab[2])
eq([l["name"] for l in d["locks"] if l["id"] in (1, 2)], [None, None],
   "name stays the user's (none)")
# A lock initialised in a routine the runtime called (libc's pthread_once
# running an init routine, libc's start code calling main) is named by its
# own site, not by the runtime's frame above it: memcached's locks made in
# main were "mutex initialised in __libc_start_call_main".
d, lab = labels("--unnamed", "--init-via-runtime", "--module",
                "/lib/x86_64-linux-gnu/libc.so.6")
check(lab[1].startswith("mutex initialised in queue_init (mktrace.c:"),
      "init called by the runtime: " + lab[1])
cl = [c for c in d["lock_classes"] if c["lock"] == 1]
eq([c["owner"] for c in cl], [None], "no owner in the runtime")

# A global: the data symbol, with the offset inside it; a lock inside a
# heap block: the block's allocation site and the offset.
d, lab = labels("--unnamed", "--global-stats", "--heap-queue")
eq(lab[2], "mktrace_stats_lock+0x8", "global: data symbol + offset")
check(lab[1].startswith("mutex at +0x28 in a block from registry_create "
                        "(mktrace.c:"), "heap block: " + lab[1])
top = [f for f in d["findings"] if f["kind"] == "alloc_under_lock"][0]
eq(top["lock_name"], lab[1], "findings name the lock by its label")
rc, out, err = run("report", os.path.join(TMP, "names.trace"))
check("mktrace_stats_lock+0x8" in out and "in a block from registry_create"
      in out, "the text report uses the labels")

# Past the end of a data symbol (the nearest one below, 8 bytes long): not
# named by it, but by the function that first took it.
d, lab = labels("--unnamed", "--global-past")
check(lab[2].startswith("mutex taken in stats_update (mktrace.c:"),
      "past a symbol's end: not its name: " + lab[2])

# mallock_lock_name wins over every other name.
d, lab = labels("--global-stats", "--heap-queue")
eq((lab[1], lab[2]), ("queue", "stats"), "user names win")

# Without symbols no symbol is invented: the first frame as an address.
p, _ = mktrace("cascade", "names.trace", "--rounds", 100, "--unnamed",
               "--global-stats")
d = report_json("--no-symbols", p)
lab = {l["id"]: l["label"] for l in d["locks"]}
check("mktrace_stats_lock" not in lab[2] and "+0x" in lab[2],
      "--no-symbols: an address: " + lab[2])
# Lock classes through an init wrapper: 2000 mutexes
# made by apr_thread_mutex_create for conn_setup and for cache_setup are
# two classes, each owned by its caller; without a wrapper one class.
p, _ = mktrace("locks", "wrapped.trace", "--locks", 2000, "--wrapped")
d = report_json(p)
cl = sorted(d["lock_classes"], key=lambda c: c["owner"]["function"]
            if c.get("owner") else "")
eq(len(cl), 2, "wrapper-made locks: a class per owner")
eq([c.get("owner", {}) and c["owner"]["function"] for c in cl],
   ["cache_setup", "conn_setup"], "the owners")
eq([c["instances"] for c in cl], [1000, 1000], "instances per owner")
eq({c["site"]["function"] for c in cl}, {"apr_thread_mutex_create"},
   "the site stays the wrapper")
check(all(c["label"].startswith("mutex initialised in " +
                                c["owner"]["function"]) for c in cl),
      "labels name the owner: %s" % [c["label"] for c in cl])
rc, out, err = run("report", p)
check("mutex initialised in conn_setup (mktrace.c:" in out and
      "mutex initialised in cache_setup (mktrace.c:" in out,
      "text: the two classes by owner")
p, _ = mktrace("locks", "unwrapped.trace", "--locks", 2000)
d = report_json(p)
eq(len(d["lock_classes"]), 1, "locks made at one site: one class")
eq(d["lock_classes"][0]["owner"], None, "no owner without a wrapper")
done("analyzer_lock_names")
