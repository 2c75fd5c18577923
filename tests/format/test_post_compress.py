#!/usr/bin/env python3
"""Compression after the run (`mallock compress`, the end of `mallock record`).

usage: test_post_compress.py MALLOCK SVCQUEUE TMPDIR

- `mallock record` leaves a compressed trace by default (most chunks flagged
  zstd, format 1.2) and a raw one with --no-compress or MALLOCK_COMPRESS=0;
  it says what it did in one line.
- `mallock compress` of a raw trace: the JSON report (findings, counts,
  threads, locks) is the same before and after, and the file is smaller.
- A trace cut inside a chunk, and one with a corrupt chunk in the middle:
  the chunks before the bad one are compressed, the bytes from the bad one
  on are copied as they were (docs/trace-format.md, "Compressing a trace
  after the run"), the report is the same, and one line says so.
- A trace a process still has open for writing is left as it is (non-zero
  exit); `-o OUT` writes a compressed copy beside it.
- A file that is not a trace, an empty file and a missing one: one line on
  stderr, non-zero exit, the file untouched.
"""
import json
import os
import shutil
import subprocess
import sys

from chunkfile import F, check, chunks, done, tracefmt
import time

MALLOCK, SVCQUEUE, TMP = sys.argv[1:4]


def report(path):
    r = subprocess.run([MALLOCK, "report", "--format=json", "--no-symbols", path],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(r.stderr)
        return None
    d = json.loads(r.stdout)
    # What depends on the file's bytes, not on its events.
    for t in [d["trace"]] + d.get("traces", []):
        for k in ("path", "truncated_at", "truncation", "file_size"):
            t.pop(k, None)
    return d


def compress(*args):
    return subprocess.run([MALLOCK, "compress", *args], capture_output=True,
                          text=True, timeout=120)


def record(name, *opts, env_extra=None):
    path = os.path.join(TMP, name)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("MALLOCK_COMPRESS", None)
    env.update(env_extra or {})
    r = subprocess.run([MALLOCK, "record", *opts, "-o", path, "--", SVCQUEUE,
                        "--container=tree", "--duration=0.3"],
                       capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0 and os.path.exists(path),
          f"record {name} {' '.join(opts)} (exit {r.returncode})")
    if not os.path.exists(path):
        print(r.stderr)
        sys.exit(1)
    return path, r.stderr


def headers(path, n=None):
    """Each chunk's header fields but the length, CRC and flags: tid, seq,
    tsc_base, tsc_flush, mono_flush_ns (a rewrite keeps them)."""
    with open(path, "rb") as f:
        data = f.read()
    kept = ("tid", "seq", "tsc_base", "tsc_flush", "mono_flush_ns")
    return [tuple(h[f] for f in kept)
            for _, h in tracefmt.chunks(data)][:n]


def packed(path):
    c = chunks(path)
    return sum(1 for _, fl, _ in c if fl & F.CHUNKF_ZSTD), len(c)


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

# --- record: compressed by default, raw with the off switches.
dflt, err = record("default.trace")
z, n = packed(dflt)
check(n > 0 and z >= n // 2, f"record compresses by default ({z} of {n} chunks)")
with open(dflt, "rb") as f:
    ver = f.read(12)[8:12]
    check(ver[0:2] == b"\x01\x00" and ver[2] >= 2 and ver[3] == 0,
          "the compressed trace says 1.2 or later: %r" % ver)
line = [l for l in err.splitlines() if "compressed" in l]
check(len(line) == 1 and "B/event" in line[0] and " -> " in line[0],
      f"record says what it did in one line: {line}")
raw, err = record("raw.trace", "--no-compress")
z, n = packed(raw)
check(n > 0 and z == 0 and "compressed" not in err,
      f"--no-compress: no chunk compressed ({z} of {n}), nothing said")
raw0, err = record("raw0.trace", env_extra={"MALLOCK_COMPRESS": "0"})
z, n = packed(raw0)
check(n > 0 and z == 0, f"MALLOCK_COMPRESS=0: no chunk compressed ({z} of {n})")
check(report(dflt) is not None, "the compressed recorded trace is reported")

# --- compress: the same report, a smaller file.
base = report(raw)
check(base is not None and base["totals"]["allocations"] > 1000,
      "the raw trace is reported")
comp = os.path.join(TMP, "comp.trace")
shutil.copy(raw, comp)
r = compress("--level", "3", comp)
z, n = packed(comp)
check(r.returncode == 0 and z >= n // 2 and
      os.path.getsize(comp) < os.path.getsize(raw) * 0.7,
      f"compress: {z} of {n} chunks, {os.path.getsize(raw)} -> "
      f"{os.path.getsize(comp)} bytes: {r.stderr.strip()}")
check(len(r.stderr.splitlines()) == 1, "one line about it")
check(base is not None and report(comp) == base,
      "the report of the compressed trace is the report of the raw one")
check(headers(comp) == headers(raw),
      "every chunk keeps its thread, sequence number and clock pair")
mode = os.stat(comp).st_mode & 0o777
check(mode == os.stat(raw).st_mode & 0o777, f"the mode is kept ({oct(mode)})")
check(not [f for f in os.listdir(TMP) if ".mallock-" in f],
      "no temporary file left")
r = compress(comp)
check(r.returncode == 0 and "left as it is" in r.stderr,
      f"compressing again leaves it: {r.stderr.strip()}")

with open(raw, "rb") as f:
    data = f.read()
rc = chunks(raw)
k = len(rc) // 2
off, _, plen = rc[k]


def bad_case(name, bad):
    """bad: the damaged raw bytes; the damage is at chunk k (offset off)."""
    src = os.path.join(TMP, name + ".trace")
    with open(src, "wb") as f:
        f.write(bad)
    before = report(src)
    work = os.path.join(TMP, name + ".z.trace")
    shutil.copy(src, work)
    r = compress(work)
    with open(work, "rb") as f:
        out = f.read()
    z, n = packed(work)
    tail = bad[off:]
    check(r.returncode == 0 and z >= k // 2,
          f"{name}: the {k} good chunks compressed ({z}): {r.stderr.strip()}")
    check(out.endswith(tail) and len(out) < len(bad) and
          len(chunks(work)) >= k,
          f"{name}: the {len(tail)} bytes from the bad chunk on are kept as they were")
    check(f"at byte {off}" in r.stderr and f"{len(tail)} bytes" in r.stderr,
          f"{name}: the bad chunk and the bytes kept are named")
    check(headers(work, k) == headers(src, k),
          f"{name}: the good chunks keep their headers")
    after = report(work)
    check(before is not None and before["trace"]["truncated"] and after == before,
          f"{name}: the report is the same before and after")


bad_case("cut", data[:off + F.CHUNK_HEADER_SIZE + plen // 2])
corrupt = bytearray(data)
corrupt[off + F.CHUNK_HEADER_SIZE + plen // 2] ^= 0x5a
bad_case("corrupt", bytes(corrupt))

# --- a trace some process still writes: never rewritten in place.
live = os.path.join(TMP, "live.trace")
shutil.copy(raw, live)
holder = subprocess.Popen([sys.executable, "-c",
                           "import sys,time; f=open(sys.argv[1],'ab'); "
                           "print('open', flush=True); time.sleep(30)", live],
                          stdout=subprocess.PIPE, text=True)
holder.stdout.readline()
try:
    r = compress(live)
    check(r.returncode != 0 and f"pid {holder.pid}" in r.stderr and
          len(r.stderr.splitlines()) == 1,
          f"a trace open for writing is refused: {r.stderr.strip()}")
    with open(live, "rb") as f:
        check(f.read() == data, "and left byte for byte")
    copy = os.path.join(TMP, "copy.trace")
    r = compress("-o", copy, live)
    check(r.returncode == 0 and report(copy) == base,
          f"-o OUT writes a compressed copy of it: {r.stderr.strip()}")
finally:
    holder.kill()
    holder.wait()

# --- record: a forked child that outlives the command keeps its trace
# open; record leaves that trace raw and says so, and compresses the rest.
fork_trace = os.path.join(TMP, "fork.trace")
env = dict(os.environ, MALLOCK_BUFFER_KB="4", MALLOCK_FLUSH_MS="50")
env.pop("LD_PRELOAD", None)
env.pop("MALLOCK_COMPRESS", None)
# The child tells the parent when its trace is on disk (the shim creates
# it at the first flush), so the parent never exits before it.
prog = ("import os, sys, time\n"
        "rd, wr = os.pipe()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    x = [bytearray(100) for _ in range(50000)]\n"
        "    mine = sys.argv[1] + '.' + str(os.getpid())\n"
        "    for _ in range(200):\n"
        "        if os.path.exists(mine): break\n"
        "        x.append(bytearray(100)); time.sleep(0.05)\n"
        "    os.write(wr, b'x')\n"
        "    time.sleep(4)\n"
        "    os._exit(0)\n"
        "os.read(rd, 1)\n"
        "print(pid, flush=True)\n")
r = subprocess.run([MALLOCK, "record", "-o", fork_trace, "--", sys.executable,
                    "-c", prog, fork_trace], capture_output=True, text=True,
                   env=env, timeout=120)
child = r.stdout.split()[-1] if r.stdout.split() else "?"
child_trace = fork_trace + "." + child
check(r.returncode == 0 and f"{child_trace}: still open for writing by pid {child}" in r.stderr,
      f"record leaves the trace of a child still running ({child}): {r.stderr.strip()}")
check(os.path.exists(child_trace) and packed(child_trace)[0] == 0,
      "that trace is raw and whole")
check(packed(fork_trace)[0] > 0, "the command's own trace is compressed")
for _ in range(100):
    if not os.path.exists(f"/proc/{child}"):
        break
    time.sleep(0.1)
r = compress(child_trace)
check(r.returncode == 0 and packed(child_trace)[0] > 0,
      f"once it exited, mallock compress compresses it: {r.stderr.strip()}")

# --- bad input: one line, non-zero exit.
notrace = os.path.join(TMP, "notrace.txt")
with open(notrace, "w") as f:
    f.write("hello, this is not a trace\n" * 10)
empty = os.path.join(TMP, "empty.trace")
open(empty, "w").close()
for what, path in (("not a trace", notrace), ("an empty file", empty),
                   ("a missing file", os.path.join(TMP, "missing.trace"))):
    before = open(path, "rb").read() if os.path.exists(path) else None
    r = compress(path)
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0 and len(lines) == 1 and path in lines[0],
          f"{what}: exit {r.returncode}, {lines}")
    if before is not None:
        check(open(path, "rb").read() == before, f"{what}: left as it was")
r = compress("--level", "99", comp)
check(r.returncode == 2 and r.stderr.splitlines() == [
    "mallock compress: --level '99': not a whole number from 1 to 19",
    "try 'mallock compress --help'"], f"a bad level: {r.stderr.strip()}")

done("post_compress")
