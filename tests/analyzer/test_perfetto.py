#!/usr/bin/env python3
"""--format=perfetto decoded with protoc against Perfetto's field numbers,
and its structure checked.

usage: test_perfetto.py MALLOCK MKTRACE SRCDIR

Records a short svcqueue run, writes its timeline for the queue lock and
decodes it with `protoc --decode=perfetto.protos.Trace` (Debian
protobuf-compiler, installed when missing; exit 77 only when that install
fails) against perfetto/trace_subset.proto, after inflating its
compressed_packets (each under 512 KiB, as Perfetto wants): no field may be
unknown. The decoder then does what trace_processor does: the sequence's
clock snapshot ties the incremental clock 64 to CLOCK_MONOTONIC, each
timestamp adds to the last, event names, categories, annotation names and
callstacks are looked up in the interned data sent before. Then:
timestamps sorted; on every track the slices nest (each end closes the
innermost open slice of its track); a named track per thread that waited;
the wait slices and the hold slices add up to the JSON report's waits and
holds of the lock; every allocator call in a hold is a slice nested in a
hold; every flow has one start (a contended release) and one end (a hold of
the same lock on another thread, later); the waiter counter never goes
below 0 and ends at 0; waits, holds and allocator calls carry their
callstacks; --from/--to keep only their window; with neither, the whole
trace when it fits (said on stderr), else the window with the most wait
that fits (MALLOCK_PERFETTO_MAX_SLICES lowers the limit); the file takes
under 12 bytes a slice."""
import os
import re
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MALLOCK, SRCDIR, TMP, check, done, eq, run  # noqa: E402
from common import pb_varint as varint  # noqa: E402
from recorded import ensure_tool, record_svcqueue  # noqa: E402

protoc = ensure_tool("protoc", "protobuf-compiler")
if not protoc:
    print("SKIP: protoc (protobuf-compiler) not installable here")
    sys.exit(77)



def ld_fields(b):
    """(field, bytes) of a message made only of length-delimited fields."""
    i, out = 0, []
    while i < len(b):
        k, i = varint(b, i)
        if k & 7 != 2:
            raise SystemExit("wire type %d where bytes were expected" % (k & 7))
        n, i = varint(b, i)
        out.append((k >> 3, b[i:i + n]))
        i += n
    return out


LAST = {}


def decode(*args, env=None):
    path = os.path.join(TMP, "t.pftrace")
    cmd = [MALLOCK, "report", "--format=perfetto", "-o", path] + list(args) \
        + [trace]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    if r.returncode != 0:
        raise SystemExit("mallock report --format=perfetto: %s" % r.stderr)
    LAST["stderr"] = r.stderr
    LAST["size"] = os.path.getsize(path)
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    inner = bytearray()
    for field, pk in ld_fields(data):
        eq(field, 1, "a Trace holds packets")
        sub = ld_fields(pk)
        check(len(sub) == 1 and sub[0][0] == 50, "every packet is "
              "compressed_packets")
        check(len(pk) < 512 * 1024, "a compressed packet under 512 KiB: %d"
              % len(pk))
        inner += zlib.decompress(sub[0][1])
    r = subprocess.run([protoc, "--proto_path=" + os.path.join(
        SRCDIR, "perfetto"), "--decode=perfetto.protos.Trace",
        "trace_subset.proto"], input=bytes(inner), capture_output=True,
        timeout=300)
    check(r.returncode == 0, "protoc --decode: %s" % r.stderr[:500])
    return r.stdout.decode()


def parse(text):
    """Packets as dicts: 'ts', 'track' (descriptor) or 'ev' (event)."""
    unknown = re.findall(r"^\s*\d+[:{ ]", text, re.M)
    eq(unknown[:3], [], "fields protoc does not know")
    packets, stack = [], []
    for line in text.splitlines():
        s = line.strip()
        if s.endswith("{"):
            name = s[:-1].strip()
            node = {}
            if name == "packet":
                packets.append(node)
            else:
                parent = stack[-1]
                if name in ("debug_annotations", "clocks", "event_names",
                            "event_categories", "debug_annotation_names",
                            "function_names", "frames", "callstacks",
                            "source_paths"):
                    parent.setdefault(name, []).append(node)
                else:
                    parent[name] = node
            stack.append(node)
        elif s == "}":
            stack.pop()
        elif s:
            k, v = s.split(": ", 1)
            v = v.strip('"') if v.startswith('"') else v
            if k in ("flow_ids", "terminating_flow_ids", "frame_ids",
                     "category_iids"):
                stack[-1].setdefault(k, []).append(v)
            else:
                stack[-1][k] = v
    return packets


def structure(packets, what):
    """What trace_processor reads: absolute times on the incremental clock
    (0 at the trace's first event), names and callstacks resolved."""
    tracks, events, last_ts = {}, [], -1
    st = None
    for p in packets:
        eq(p.get("trusted_packet_sequence_id"), "1", "%s: sequence" % what)
        if int(p.get("sequence_flags", 0)) & 1:
            st = {"ts": 0, "clock": None, "names": {}, "cats": {},
                  "anames": {}, "fn": {}, "frames": {}, "cs": {}}
        check(st is not None, "%s: a packet before the incremental state "
              "was cleared" % what)
        if "trace_packet_defaults" in p:
            st["clock"] = p["trace_packet_defaults"]["timestamp_clock_id"]
        if "clock_snapshot" in p:
            cl = {c["clock_id"]: c for c in p["clock_snapshot"]["clocks"]}
            check("64" in cl and cl["64"].get("is_incremental") == "true"
                  and "3" in cl, "%s: clock 64 incremental, tied to "
                  "CLOCK_MONOTONIC: %r" % (what, cl))
            st["snapshot"] = cl
        for k, v in p.get("interned_data", {}).items():
            key = {"event_names": "names", "event_categories": "cats",
                   "debug_annotation_names": "anames",
                   "function_names": "fn", "frames": "frames",
                   "callstacks": "cs", "source_paths": "paths"}[k]
            for it in v:
                check(it["iid"] not in st.setdefault(key, {}),
                      "%s: %s iid %s sent twice" % (what, k, it["iid"]))
                st[key][it["iid"]] = it
        if "track_descriptor" in p:
            d = p["track_descriptor"]
            tracks[d["uuid"]] = d
        elif "track_event" in p:
            eq(st["clock"], "64", "%s: the incremental clock" % what)
            st["ts"] += int(p["timestamp"])
            ts = st["ts"]
            check(ts >= last_ts, "%s: time goes back at %d" % (what, ts))
            last_ts = ts
            e = p["track_event"]
            e["ts"] = ts
            if "name_iid" in e:
                e["name"] = st["names"][e["name_iid"]]["name"]
                e["cats"] = [st["cats"][c]["name"]
                             for c in e.get("category_iids", [])]
            for a in e.get("debug_annotations", []):
                a["name"] = st["anames"][a["name_iid"]]["name"]
            if "callstack_iid" in e:
                cs = st["cs"][e["callstack_iid"]]
                e["stack"] = [st["fn"][st["frames"][f]["function_name_id"]]
                              ["str"] for f in cs["frame_ids"]]
            events.append(e)
    # nesting per track; slices as (track, name, t0, t1, depth, ev)
    open_, slices = {}, []
    for e in events:
        tr = e["track_uuid"]
        check(tr in tracks, "%s: event on an undeclared track" % what)
        if e["type"] == "TYPE_SLICE_BEGIN":
            st = open_.setdefault(tr, [])
            st.append(e)
            e["depth"] = len(st)
            e["parent"] = st[-2] if len(st) > 1 else None
        elif e["type"] == "TYPE_SLICE_END":
            st = open_.get(tr)
            if not st:
                check(False, "%s: an end without a begin" % what)
                continue
            b = st.pop()
            b["t1"] = e["ts"]
            slices.append(b)
    check(all(not v for v in open_.values()), "%s: unclosed slices" % what)
    return tracks, events, slices


def ann(e, k):
    for a in e.get("debug_annotations", []):
        if a["name"] == k:
            return int(a["uint_value"]) if "uint_value" in a else a[
                "string_value"]
    return None


# ---- the whole trace, the queue lock -------------------------------------
# Short (the timeline of every hold is big), with more threads than cores
# so that the queue lock is contended even in a short run; recorded again
# (at most 5 times) until some release woke a waiter, so that there are
# flows to check.
for attempt in range(5):
    trace, j = record_svcqueue(MALLOCK, TMP, duration="0.08",
                               min_contended=3,
                               extra=["--allocs-per-put=2", "--producers=4",
                                      "--consumers=4"],
                               # every hold timed: each one is a slice
                               # (an untimed hold has no times to draw)
                               env_extra={"MALLOCK_HOLD_EVERY": "1"})
    q = next(l for l in j["locks"] if l["name"] == "svcqueue.lock")
    tracks, events, slices = structure(parse(decode("--lock=svcqueue.lock")),
                                       "whole")
    nflows = sum(len(s.get("flow_ids", [])) for s in slices)
    if nflows or os.environ.get("MALLOCK_TEST_TRACE"):
        break
    print("no release woke a waiter in this recording: recording again")
threads = {d["uuid"]: d["thread"] for d in tracks.values() if "thread" in d}
for t in j["threads"]:
    if t["contended_acquisitions"] and t["name"]:
        check(any(th["thread_name"] == t["name"] for th in threads.values()),
              "a track for thread %s" % t["name"])
waits = [s for s in slices if s["name"] == "wait svcqueue.lock"]
eq(len(waits), q["contended"], "wait slices")
eq(sum(s["t1"] - s["ts"] for s in waits), q["wait_ns"], "wait slice spans")
check(all(s["cats"] == ["wait"] for s in waits), "waits: category wait")
check(all(ann(s, "waiters") >= 1 for s in waits), "waits: waiters >= 1")
# The waiter's innermost own frame: a producer's or consumer's svcqueue_*
# function, or main (which takes the queue lock too: under load a few of
# the waits, 1 of 3 to 5 in a recording with little contention, are main's).
check(all(s.get("stack") for s in waits) and
      sum(1 for s in waits if s["stack"][-1].startswith("svcqueue_") or
          s["stack"][-1] == "main") >=
      0.9 * len(waits), "waits carry the waiter's callstack, root first: "
      "%r" % [s.get("stack") for s in waits[:3]])
check(all(tracks[s["track_uuid"]].get("name") == "waits" and
          tracks[s["track_uuid"]]["parent_uuid"] in threads for s in waits),
      "wait slices on a thread's waits track")
holds = [s for s in slices if s["name"] == "svcqueue.lock"]
eq(len(holds), q["holds"], "hold slices")
# a span is the difference of two rounded times: within 1 ns of the hold
span = sum(s["t1"] - s["ts"] for s in holds)
check(abs(span - q["hold_ns"]) <= len(holds), "hold spans %d vs hold_ns %d"
      % (span, q["hold_ns"]))
check(sum(1 for s in holds if s.get("stack")) >= len(holds) // 2,
      "holds carry their acquisition site's callstack")
eq(sum(1 for s in holds if ann(s, "contended")), q["contended_holds"],
   "contended holds")
check(all(s["depth"] == 1 and tracks[s["track_uuid"]]["parent_uuid"]
          in threads for s in holds), "holds at the top of a thread's "
      "lock track")
allocs = [s for s in slices if s["name"].startswith(("alloc ", "free"))]
eq(len(allocs), q["allocations_in_holds"], "allocator slices in holds")
check(all(s["parent"] is not None and s["parent"]["name"] == "svcqueue.lock"
          and s["parent"]["ts"] <= s["ts"] and s["t1"] <= s["parent"]["t1"]
          for s in allocs), "every allocator slice nested in its hold")
check(any("tree_insert" in s.get("stack", []) for s in allocs),
      "allocator slices carry their allocation callstack")
check(all(s["cats"] == ["allocator"] for s in allocs),
      "allocator slices: category allocator")
check("the whole trace" in LAST["stderr"] and
      "%d slices" % len(slices) in LAST["stderr"], "no --from/--to: the "
      "whole trace, said on stderr: %r" % LAST["stderr"])
check(LAST["size"] < 12 * len(slices), "%d bytes for %d slices"
      % (LAST["size"], len(slices)))
sizes = {int(s["name"].split()[1]) for s in allocs
         if s["name"].startswith("alloc")}
check(64 in sizes, "allocations of 64 B (--node-size): %r" % sorted(sizes)[:5])
outs, ins = {}, {}
for s in holds:
    for f in s.get("flow_ids", []):
        check(f not in outs, "flow %s starts twice" % f)
        outs[f] = s
    for f in s.get("terminating_flow_ids", []):
        check(f not in ins, "flow %s ends twice" % f)
        ins[f] = s
eq(set(outs), set(ins), "flows pair")
check(0 < len(outs) <= q["contended_holds"],
      "%d flows for %d contended releases" % (len(outs), q["contended_holds"]))
for f, a in outs.items():
    b = ins.get(f)
    if b is None:
        continue
    check(ann(a, "contended") == 1, "flow %s starts at a contended hold" % f)
    check(a["t1"] <= b["ts"], "flow %s: the release precedes the wake" % f)
    check(tracks[a["track_uuid"]]["parent_uuid"] !=
          tracks[b["track_uuid"]]["parent_uuid"], "flow %s: other thread" % f)
counters = [u for u, d in tracks.items() if "counter" in d]
eq([tracks[u]["name"] for u in counters], ["waiters svcqueue.lock"],
   "counter tracks")
vals = [int(e["counter_value"]) for e in events
        if e["type"] == "TYPE_COUNTER"]
check(vals and min(vals) >= 0 and max(vals) >= 1 and vals[-1] == 0,
      "waiter counter: min %s max %s last %s" % (
          min(vals) if vals else None, max(vals) if vals else None,
          vals[-1] if vals else None))
check(max(vals) <= q["max_waiters"] + 1 if vals else False,
      "waiter counter max %s vs max_waiters %s" % (
          max(vals) if vals else None, q["max_waiters"]))

# ---- a window of every lock ----------------------------------------------
packets = parse(decode("--from=20ms", "--to=0.04"))
tr2, ev2, sl2 = structure(packets, "window")
check(ev2 and all(20_000_000 <= e["ts"] <= 40_000_000 for e in ev2),
      "--from=20ms --to=0.04: events inside the window")
check(0 < len(sl2) < len(slices) * 2, "window keeps some slices")
o2 = [f for s in sl2 for f in s.get("flow_ids", [])]
i2 = [f for s in sl2 for f in s.get("terminating_flow_ids", [])]
eq(sorted(o2), sorted(i2), "flows pair inside the window")

# ---- a window that cuts a flow: its start kept, its end left out --------
cut = [(a, ins[f]) for f, a in outs.items() if f in ins and
       a["t1"] < ins[f]["ts"]]
check(cut, "a flow whose release precedes its wake")
if cut:
    a, b = cut[0]
    tr3, ev3, sl3 = structure(parse(decode(
        "--lock=svcqueue.lock", "--from=%dns" % a["ts"],
        "--to=%dns" % (b["ts"] - 1))), "cut")
    check(any(s["ts"] == a["ts"] and s["name"] == "svcqueue.lock"
              for s in sl3), "the cut window keeps the releasing hold")
    o3 = [f for s in sl3 for f in s.get("flow_ids", [])]
    i3 = [f for s in sl3 for f in s.get("terminating_flow_ids", [])]
    eq(sorted(o3), sorted(i3), "flows pair in a window that cuts one")

# ---- too many slices: the window with the most wait that fits ----------
cap = max(50, len(slices) // 4)
tr4, ev4, sl4 = structure(parse(decode("--lock=svcqueue.lock", env={
    "MALLOCK_PERFETTO_MAX_SLICES": str(cap)})), "default window")
m = re.search(r"wrote ([\d.]+) to ([\d.]+) s, the window with the most "
              r"wait", LAST["stderr"])
check(m, "the default window said on stderr: %r" % LAST["stderr"])
check(0 < len(sl4) <= cap, "%d slices in the default window (cap %d)"
      % (len(sl4), cap))
if m:
    w0, w1 = float(m.group(1)) * 1e9, float(m.group(2)) * 1e9
    check(all(w0 - 1e6 <= s["ts"] and s["t1"] <= w1 + 1e6 for s in sl4),
          "its slices inside %.0f..%.0f ns" % (w0, w1))

    def wait_in(a, b):
        return sum(s["t1"] - s["ts"] for s in waits if a <= s["ts"] < b)
    import bisect
    # stderr gives the window's edges to the ms (%.3f s): the chosen
    # window's wait is counted over its edges widened by that rounding
    width, best = w1 - w0, wait_in(w0 - 0.5e6, w1 + 0.5e6)
    starts = sorted(s["ts"] for s in slices)
    # no window as wide that fits (with a margin for the bins' edges,
    # 1/20000 of the trace) waited much more
    others = [wait_in(t, t + width) for t in sorted({s["ts"] for s in waits})
              if bisect.bisect_left(starts, t + width) -
              bisect.bisect_left(starts, t) <= 0.9 * cap]
    check(not others or best >= 0.95 * max(others), "the chosen window "
          "waited %d, another that fits %d" % (best, max(others or [0])))

# ---- bad option -----------------------------------------------------------
rc, out, err = run("report", "--format=perfetto", "--from=soon", "-o",
                   os.path.join(TMP, "x"), trace)
check(rc == 2 and "not a time" in err, "--from=soon: %d %s" % (rc, err))
rc, out, err = run("report", "--format=perfetto", "--from=2ms", "--to=1ms",
                   "-o", os.path.join(TMP, "x"), trace)
check(rc == 2 and "before --to" in err, "--from after --to: %d %s"
      % (rc, err))
if not os.environ.get("MALLOCK_TEST_TRACE"):
    os.unlink(trace)
done("analyzer_perfetto")
