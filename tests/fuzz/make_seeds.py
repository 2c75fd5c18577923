#!/usr/bin/env python3
"""Writes the fuzzer's seed corpus (tests/fuzz/corpus/) from real traces:
short runs of the bundled test apps recorded with `mallock record`,
mktrace's synthetic scenarios and small hostile traces from forge. Each trace is cut to at most LIMIT bytes at
a chunk boundary, keeping every process-level chunk (tid 0: PROCESS,
MODULE, END...), so each seed is a valid trace of a few chunks and the
corpus stays small (< 200 KB in all).

    tests/fuzz/make_seeds.py BUILD_DIR [OUT_DIR]

BUILD_DIR is an ordinary (gcc) build with the shim, the test apps,
mktrace and forge built. Seeds have no .trace suffix (.gitignore excludes *.trace)."""
import os
import subprocess
import sys
import tempfile

LIMIT = 24 * 1024
BUILD = sys.argv[1]
# The chunk headers are read through the Python view of the format.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import tracefmt  # noqa: E402

F = tracefmt.find(BUILD)
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "corpus")
BIN = os.path.join(BUILD, "bin")
MKTRACE = os.path.join(BUILD, "tests", "analyzer", "mktrace")
TMP = tempfile.mkdtemp(prefix="mallock-seeds-")


def cut(src, dst, limit=LIMIT):
    data = open(src, "rb").read()
    out = bytearray(data[:F.FILE_HEADER_SIZE])
    for off, h in tracefmt.chunks(data):
        n = F.CHUNK_HEADER_SIZE + h["payload_len"]
        if h["tid"] == 0 or len(out) + n <= limit:
            out += data[off:off + n]
    open(dst, "wb").write(bytes(out))
    return len(out)


def record(name, argv, **extra):
    path = os.path.join(TMP, name + ".trace")
    env = dict(os.environ, MALLOCK_BUFFER_KB="4", **extra)
    subprocess.run([os.path.join(BIN, "mallock"), "record", "-o", path,
                    "--depth", "4", "--"] + argv, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def mktrace(name, *args):
    path = os.path.join(TMP, name + ".trace")
    subprocess.run([MKTRACE, name.split("-")[0], path] + list(args),
                   check=True, stdout=subprocess.DEVNULL)
    return path


os.makedirs(OUT, exist_ok=True)
seeds = {
    "svcqueue-tree": record("svcqueue-tree", [
        os.path.join(BIN, "svcqueue"), "--duration=0.01", "--producers=2",
        "--consumers=2"]),
    "svcqueue-heap": record("svcqueue-heap", [
        os.path.join(BIN, "svcqueue"), "--duration=0.01", "--container=heap"]),
    "xthread": record("xthread", [os.path.join(BIN, "xthread"),
                                  "--duration=0.01"]),
    # futex words (FUTEX_WAIT, FUTEX_WAKE: format 1.3)
    "futexlock": record("futexlock", [
        os.path.join(BUILD, "tests", "analyzer", "futexlock"), "300"]),
    # hold forms (HOLD_UNTIMED and the rest: format 1.8)
    "holdrec": record("holdrec", [
        os.path.join(BUILD, "tests", "analyzer", "holdrec")],
        MALLOCK_HOLD_EVERY="16"),
    # definitions at init (LOCK_INIT_NEW: format 1.9)
    "initnew": record("initnew", [
        os.path.join(BUILD, "tests", "analyzer", "initnew")]),
    "cascade": mktrace("cascade", "--rounds", "20", "--chunk", "2000"),
    "precise": mktrace("precise", "--rounds", "20", "--chunk", "1500"),
    "mixed": mktrace("mixed", "--rounds", "10", "--chunk", "3000"),
    "cascade-nomodule": mktrace("cascade-nomodule", "--rounds", "3",
                                "--no-module"),
}
total = 0
# holdrec's at half size, initnew's at a quarter: the corpus stays
# under 200 KB
SMALL = {"holdrec": LIMIT // 2, "initnew": LIMIT // 4}
for name, path in sorted(seeds.items()):
    total += cut(path, os.path.join(OUT, name), SMALL.get(name, LIMIT))

# Small versions of the hostile shapes (tests/analyzer/forge.c):
# at fuzzing sizes they cost nothing, but they start the fuzzer next to
# code that forged files made slow (1024 locks held, a thread per name and
# MARKs, colliding pointers...). hostile-stdin names /proc/self/fd/0 as a
# module: not a regular file, which the symbolizer must refuse to open.
FORGE = os.path.join(BUILD, "tests", "analyzer", "forge")
hostile = [("flood", ""), ("marks", ""), ("holds", ""), ("rotate", ""),
           ("threads", ""), ("modules", ""), ("notes", ""),
           ("module", "/proc/self/fd/0")]
for shape, path in hostile:
    name = "hostile-" + (shape if not path else "stdin")
    out = os.path.join(OUT, name)
    subprocess.run([FORGE, shape, "8000", out] + ([path] if path else []),
                   check=True)
    total += os.path.getsize(out)
print("%d seeds, %d bytes in %s" % (len(seeds) + len(hostile), total, OUT))
