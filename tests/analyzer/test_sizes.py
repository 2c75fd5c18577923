#!/usr/bin/env python3
"""No size field in a trace can make the reader allocate more than the file
could hold (issue 6). Small forged files whose size fields claim far more:
a chunk header claiming 16 MiB (the largest payload a reader accepts) and
one claiming 4 GiB, a STACK record claiming 2^40 frames, a metadata record
and a string claiming 2^60 bytes. Each must be reported (exit 0 with a
truncation note or a malformed-metadata count, or exit 2) and the
analyzer's peak memory must stay near what a tiny valid trace needs."""
import os
import struct
import subprocess
import zlib
from common import *

MAGIC = 0x434B4C4D
SLACK_KB = 16 * 1024  # peak RSS over the baseline's that we tolerate


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def chunk(payload, tid=0, seq=0, claim=None, crc=True):
    """A chunk header (48 bytes, trace_format.h) and its payload; claim
    overrides the payload length written in the header."""
    plen = len(payload) if claim is None else claim
    tail = struct.pack("<IIIQQQ", tid, seq, 0, 1000, 2000, 3000)
    c = zlib.crc32(tail + payload) if crc else 0
    return struct.pack("<III", MAGIC, plen & 0xFFFFFFFF, c) + tail + payload


good, _ = mktrace("cascade", "sizes-good.trace", "--rounds", 3)
HEADER = open(good, "rb").read()[:16]


def peak_kb(*args):
    """Runs mallock in a child of a fresh python, returning (rc, stderr,
    stdout, the child's peak RSS in KB)."""
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stdout.write('%d %d\\n' % (r.returncode, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.stdout.write(r.stderr)\n")
    r = subprocess.run(["python3", "-c", code, MALLOCK] + [str(a) for a in args],
                       capture_output=True, text=True)
    first, _, err = r.stdout.partition("\n")
    no_sanitizer_finding([MALLOCK] + list(args), err)
    rc, kb = (int(x) for x in first.split())
    return rc, err, kb


def forged(name, body):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(HEADER + body)
    return path


rc, err, base = peak_kb("report", "--format=json", good)
eq(rc, 0, "baseline report")

cases = [
    # (name, file body, expected stderr substring)
    ("chunk-16mib", chunk(b"\x01" * 64, claim=16 << 20),
     "incomplete (16777216-byte payload"),
    ("chunk-4gib", chunk(b"\x01" * 64, claim=0xFFFFFFF0), "bad chunk header"),
    ("stack-2p40", chunk(b"\x82" + varint(8 + 6) + varint(7) + varint(1 << 40) +
                         varint(0x401000) + b"\x02\x02\x02\x02"), None),
    ("meta-2p60", chunk(b"\x87" + varint(1 << 60) + b"abc"), "malformed record"),
    ("string-2p60", chunk(b"\x87" + varint(12) + varint(1) + varint(1 << 60) +
                          b"x" * 2), None),
    ("many-empty-chunks", b"".join(chunk(b"", tid=i + 1) for i in range(2000)),
     None),
]
for name, body, want in cases:
    path = forged(name + ".trace", body)
    for args in (("report", "--format=json", path), ("dump", path),
                 ("dump", "--merged", path)):
        rc, err, kb = peak_kb(*args)
        what = "%s: mallock %s" % (name, " ".join(args[:-1]))
        check(rc in (0, 2), "%s: exit %d (want 0 or 2)" % (what, rc))
        check(err.count("\n") <= 1, "%s: one line on stderr (got %r)" % (what, err))
        if want and args[0] == "report":
            check(want in err, "%s: stderr names it: %r (got %r)" % (what, want, err))
        check(kb <= base + SLACK_KB, "%s: peak RSS %d KB, baseline %d KB" % (
            what, kb, base))
    if name == "stack-2p40" or name == "string-2p60":
        rc, out, err = run("report", "--format=json", path)
        eq(rc, 0, name + ": report exit")
        d = json.loads(out)
        eq(d["totals"]["malformed_metadata"], 1, name + ": counted as malformed")
done("analyzer_sizes")
