#!/usr/bin/env python3
"""Lock classes of locks one constructor makes (mktrace factory): locks
made in one loop stay one class; locks defined one by one, or made by a
make function for different callers, are classes of their own (HotSpot
makes every Mutex with `new Mutex(...)`: os::malloc, then the
constructor). A class nested inside itself is reported as instances of
one class, with their address order, not as two locks to merge.

usage: test_classes.py MALLOCK MKTRACE SRCDIR"""
import common
from common import check, eq

path, _ = common.mktrace("factory", "factory.trace", "--rounds", 200)
d = common.report_json("--all", path)
cls = {lk["id"]: lk["class"] for lk in d["locks"]}
byc = {c["class"]: c for c in d["lock_classes"]}

buckets = {cls.get(5000 + k) for k in range(1000)}
eq(len(buckets), 1, "the 1000 locks made in one loop: classes")
b = buckets.pop()
eq(byc[b]["instances"] if b in byc else None, 1000,
   "instances of the loop's class")
defs = [cls.get(6000 + j) for j in range(3)]
eq(len(set(defs)), 3, "three locks defined one by one: classes")
check(b not in defs, "the defined locks are not the loop's class")
mk = [cls.get(6100 + j) for j in range(4)]
eq(mk[0], mk[1], "make_lock from site_a: one class")
eq(mk[2], mk[3], "make_lock from site_b: one class")
check(mk[0] != mk[2], "make_lock from site_a and site_b: two classes")
for j in range(3):
    c = byc.get(defs[j], {})
    own = (c.get("owner") or {}).get("function")
    eq(own, "vm_mutex_init", "defined lock %d: its owner" % j)
for j, site in ((0, "site_a"), (2, "site_b")):
    own = (byc.get(mk[j], {}).get("owner") or {}).get("function")
    eq(own, site, "make_lock's lock %d: its owner" % j)

nested = [f for f in d["findings"] if f["kind"] == "nested_lock"]
pair = [f for f in nested if f["lock"] == 6000]
eq(len(pair), 1, "nested_lock findings on the defined locks")
if pair:
    eq(pair[0]["inner_lock"], 6001, "its inner lock")
    check("vm_mutex_init" in pair[0]["lock_name"], "its lock names the maker")
selfn = [f for f in nested if f["lock"] == f.get("inner_lock") or
         (cls.get(f["lock"]) == b and cls.get(f.get("inner_lock")) == b)]
eq(len(selfn), 1, "nested_lock findings of the loop's class in itself")
if selfn:
    a = selfn[0]["advice"]
    check("use one lock" not in a, "self-nesting advice: no merge: " + a)
    check("instances of" in a and "one address order" in a,
          "self-nesting advice says what it is: " + a)
    eq(selfn[0]["evidence"].get("nested_ascending_address"), 200,
       "nestings in ascending address order")
    eq(selfn[0]["evidence"].get("nested_descending_address"), 0,
       "nestings in descending address order")
common.done("test_classes")
