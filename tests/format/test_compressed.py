#!/usr/bin/env python3
"""Compressed chunks (trace format 1.2, docs/trace-format.md).

usage: test_compressed.py MALLOCK ZCHUNKS SVCQUEUE TMPDIR SHIM

- The shim writes zstd chunks with MALLOCK_COMPRESS=1 (most of the bytes
  stored are in compressed chunks) and none by default
  (MALLOCK_COMPRESS=0);
  the file says 1.2. Seen in a trace the shim wrote alone (LD_PRELOAD of
  SHIM, libmallock.so), since `mallock record` compresses the trace again
  at its end and would hide a shim that compresses nothing.
- A trace and its compressed rewrite (zchunks) give the same JSON report.
- A compressed trace cut inside its k-th chunk is read up to chunk k-1 and
  the report says where it stopped; a compressed chunk whose frame is
  corrupt (with a CRC that matches, so only the frame is wrong) stops the
  reading at that chunk, with the chunks before it used.
"""
import json
import os
import shutil
import subprocess
import sys

from chunkfile import F, check, chunks, done, tracefmt

MALLOCK, ZCHUNKS, SVCQUEUE, TMP, SHIM = sys.argv[1:6]


def report(path, *extra):
    r = subprocess.run([MALLOCK, "report", "--format=json", "--no-symbols",
                        *extra, path], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        return None
    return json.loads(r.stdout)


def record(name, compress):
    path = os.path.join(TMP, name)
    env = dict(os.environ, MALLOCK_COMPRESS=str(compress))
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([MALLOCK, "record", "-o", path, "--", SVCQUEUE,
                        "--duration=0.5"], capture_output=True, text=True,
                       env=env, timeout=120)
    check(r.returncode == 0, f"record {name} (exit {r.returncode}) {r.stderr[-200:]}")
    return path


shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

plain = record("plain.trace", 0)
packed = record("packed.trace", 1)
with open(packed, "rb") as f:
    ver = tracefmt.version(f.read(F.FILE_HEADER_SIZE))
    check(ver[0] == 1 and ver[1] >= 2, "the file header says 1.2 or later")
pc = chunks(plain)
zc = chunks(packed)
check(pc and all(fl == 0 for _, fl, _ in pc),
      "MALLOCK_COMPRESS=0: no chunk is compressed")


def zbytes(cs):
    """The bytes stored in compressed chunks, and in all. Bytes, not
    chunks: the process chunks and a thread's last few records are a few
    bytes each and stay raw, and a loaded machine, whose threads do less
    in the run, writes fewer large chunks beside the same small ones."""
    return (sum(n for _, fl, n in cs if fl & F.CHUNKF_ZSTD),
            sum(n for _, _, n in cs))


zb, allb = zbytes(zc)
check(zb >= allb // 2,
      f"MALLOCK_COMPRESS=1: most bytes are in compressed chunks ({zb} of "
      f"{allb}; {sum(1 for _, fl, _ in zc if fl & F.CHUNKF_ZSTD)} of "
      f"{len(zc)} chunks)")
# The shim alone, without `mallock record`'s compression after the run.
alone = os.path.join(TMP, "alone.trace")
env = dict(os.environ, MALLOCK_COMPRESS="1", MALLOCK_OUTPUT=alone,
           LD_PRELOAD=SHIM)
r = subprocess.run([SVCQUEUE, "--duration=0.5"], capture_output=True,
                   text=True, env=env, timeout=120)
check(r.returncode == 0, f"svcqueue under the shim alone (exit "
      f"{r.returncode}) {r.stderr[-200:]}")
written = sorted(f for f in os.listdir(TMP) if f.startswith("alone.trace"))
ac = chunks(os.path.join(TMP, written[0])) if written else []
nz = sum(1 for _, fl, _ in ac if fl & F.CHUNKF_ZSTD)
zb, allb = zbytes(ac)
check(ac and zb >= allb // 2,
      f"the shim alone, MALLOCK_COMPRESS=1: most bytes are in compressed "
      f"chunks ({zb} of {allb}; {nz} of {len(ac)} chunks in {written})")
rp = report(packed)
check(rp is not None and rp["totals"]["allocations"] > 1000,
      "the shim's compressed trace is reported")

# The same events, stored both ways, give the same report.
rewritten = os.path.join(TMP, "rewritten.trace")
r = subprocess.run([ZCHUNKS, plain, rewritten], capture_output=True, text=True)
check(r.returncode == 0, "zchunks: " + r.stdout.strip() + r.stderr.strip())
a, b = report(plain), report(rewritten)
for d in (a, b):
    if d:
        d["trace"].pop("path", None)
        for t in d["traces"]:
            t.pop("path", None)
check(a is not None and a == b, "a trace and its compressed rewrite report alike")

# Cut inside a compressed chunk: read up to the one before.
zr = chunks(rewritten)
k = next(i for i, (_, fl, _) in enumerate(zr) if fl & F.CHUNKF_ZSTD and i >= len(zr) // 2)
off, _, plen = zr[k]
cut = os.path.join(TMP, "cut.trace")
with open(rewritten, "rb") as f:
    data = f.read()
with open(cut, "wb") as f:
    f.write(data[:off + F.CHUNK_HEADER_SIZE + plen // 2])
rc = report(cut)
check(rc is not None and rc["trace"]["truncated"] and
      rc["trace"]["truncated_at"] == off,
      f"a cut compressed chunk stops the reading at its offset {off}: "
      f"{rc and rc['trace'].get('truncation')}")

# A forged chunk whose CRC matches but whose frame is wrong: (a) the frame's
# magic number, which zstd refuses; (b) a byte inside the compressed data,
# which could decompress into other records but for the frame's checksum.
# Either way the reading stops at that chunk's offset, naming it, and the
# chunks before it are used.
frame = off + F.CHUNK_HEADER_SIZE
for what, at in (("frame magic", frame + 4),
                 ("frame data", frame + 4 + (plen - 4) // 2)):
    bad = bytearray(data)
    bad[at] ^= 0x5a
    tracefmt.seal(bad, off)
    corrupt = os.path.join(TMP, "corrupt.trace")
    with open(corrupt, "wb") as f:
        f.write(bad)
    rb = report(corrupt)
    why = rb and rb["trace"].get("truncation", "")
    check(rb is not None and rb["trace"]["truncated"] and
          rb["trace"]["truncated_at"] == off and
          f"chunk {k + 1}: corrupt compressed payload" in why,
          f"corrupt {what}: the reading stops at chunk {k + 1}: {why}")

done("compressed")
