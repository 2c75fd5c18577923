#!/usr/bin/env python3
"""One phenomenon, one finding: a lock hierarchy of stripes (mktrace
striped: 64 item locks of one class over 8 static LRU locks, each its own
class by its first acquisition, memcached's shape) is one nested_lock
finding listing its inner locks, and its advice is not to merge them.
With the item locks in one calloc'd 8 KiB array (--in-array), every one of
them is found in that block, past the look back from a lock to its block's
start, and the array is one class, named by the range of its offsets (not
by the offset of the stripe that waited most): one finding still; and
so it is when 32 large blocks allocated after the array (--ring-full)
have pushed it out of the ring of large blocks the lookup tries first.

usage: test_striped.py MALLOCK MKTRACE SRCDIR"""
import common
from common import check, eq

path, _ = common.mktrace("striped", "striped.trace", "--rounds", 400)
d = common.report_json(path)
nested = [f for f in d["findings"] if f["kind"] == "nested_lock"]
eq(len(nested), 1, "nested_lock findings of one hierarchy")
if nested:
    f = nested[0]
    eq(f.get("members_total"), 8, "inner locks listed in it")
    eq(f.get("members_unit"), "score_ns",
       "what a member's value counts (docs/report-json.md)")
    eq(len(f.get("members", [])), 4, "the worst inner locks shown")
    check(all(m["lock"] >= 8100 for m in f.get("members", [])),
          "members are the LRU locks")
    eq(f["evidence"].get("nested_acquisitions"), 1600,
       "nestings of the whole hierarchy")
    eq(f["evidence"].get("inner_wait_ns_while_outer_held"), 360000,
       "inner wait of the whole hierarchy")
    check("use one lock" not in f["advice"] and "hierarchy" in f["advice"],
          "advice for a hierarchy: " + f["advice"])

# --ring-full: 32 large blocks allocated after the array push it out of
# the ring of large blocks; finding its first lock brings it back.
for extra in ([], ["--ring-full"]):
    what = " (" + extra[0] + ")" if extra else ""
    path, _ = common.mktrace("striped", "striped_array.trace", "--rounds",
                             400, "--in-array", *extra)
    d = common.report_json("--all", path)
    cls = {lk["id"]: lk["class"] for lk in d["locks"]}
    items = {cls.get(8000 + i) for i in range(64)}
    eq(len(items), 1, "classes of the 64 item locks of one array" + what)
    byc = {c["class"]: c for c in d["lock_classes"]}
    c = byc.get(next(iter(items)), {})
    eq(c.get("instances"), 64, "instances of the array's class" + what)
    check((c.get("label") or "").startswith(
          "mutex at +0x0..+0x1f80 in a block from queue_init"),
          "the array's class is named by its block and offsets%s: %s"
          % (what, c.get("label")))
    nested = [f for f in d["findings"] if f["kind"] == "nested_lock"]
    eq(len(nested), 1, "nested_lock findings of the array's hierarchy" +
       what)
common.done("test_striped")
