#!/usr/bin/env python3
"""No size field in a trace can make the reader allocate more than the file
could hold. Small forged files whose size fields claim far more:
a chunk header claiming 16 MiB (the largest payload a reader accepts) and
one claiming 4 GiB, a STACK record claiming 2^40 frames, a metadata record
and a string claiming 2^60 bytes. Each must be reported (exit 0 with a
truncation note or a malformed-metadata count, or exit 2) and the
analyzer's peak memory must stay near what a tiny valid trace needs.

Peak RSS alone cannot see a reader that reserves the claimed size without
touching it (a large malloc is an untouched mmap), so each run is also made
under an address-space limit: the smallest RLIMIT_AS a tiny valid trace's
report needs, plus AS_SLACK. A reservation of the 16 MiB a forged chunk
claims then fails the analyzer's allocation (exit 1), which fails the test.
Under ASan (make test-sanitize) the shadow memory rules RLIMIT_AS out;
ASan's own max_allocation_size_mb bounds any single allocation instead."""
import os
import subprocess
from common import *

SLACK_KB = 16 * 1024  # peak RSS over the baseline's that we tolerate


def sized_chunk(payload, tid=0, seq=0, claim=None, crc=True):
    """A chunk header (48 bytes, trace_format.h) and its payload; claim
    overrides the payload length written in the header."""
    return tracefmt.chunk(tid, payload, seq=seq, base=1000, flush=2000,
                          mono=3000, plen=claim, crc=None if crc else 0)


good, _ = mktrace("cascade", "sizes-good.trace", "--rounds", 3)
HEADER = open(good, "rb").read()[:16]


AS_SLACK = 8 << 20  # address space over the baseline's that we tolerate
with open(MALLOCK, "rb") as f:
    ASAN = b"__asan_init" in f.read()
ASAN_ENV = dict(os.environ, ASAN_OPTIONS="max_allocation_size_mb=8:"
                "allocator_may_return_null=0:" +
                os.environ.get("ASAN_OPTIONS", ""))


def peak_kb(*args, as_limit=0):
    """Runs mallock in a child of a fresh python (with RLIMIT_AS as_limit
    bytes when non-zero), returning (rc, stderr, the child's peak RSS in
    KB)."""
    code = ("import resource, subprocess, sys\n"
            "lim = int(sys.argv[1])\n"
            "pre = (lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim)))"
            " if lim else None\n"
            "r = subprocess.run(sys.argv[2:], capture_output=True, text=True,"
            " preexec_fn=pre)\n"
            "sys.stdout.write('%d %d\\n' % (r.returncode, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.stdout.write(r.stderr)\n")
    r = subprocess.run(["python3", "-c", code, str(as_limit), MALLOCK] +
                       [str(a) for a in args], capture_output=True, text=True,
                       env=ASAN_ENV if ASAN else None)
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


def min_as(*args):
    """The smallest RLIMIT_AS (to 256 KiB) under which mallock ARGS exits 0."""
    lo, hi = 1 << 20, 4 << 30
    if peak_kb(*args, as_limit=hi)[0] != 0:
        raise SystemExit("baseline fails even with RLIMIT_AS 4 GiB")
    while hi - lo > 256 << 10:
        mid = (lo + hi) // 2
        if peak_kb(*args, as_limit=mid)[0] == 0:
            hi = mid
        else:
            lo = mid
    return hi


AS_LIMIT = 0
if not ASAN:
    AS_LIMIT = max(min_as("report", "--format=json", good),
                   min_as("dump", "--merged", good)) + AS_SLACK
    print("address-space limit %d KiB (%d KiB over the baseline's)" %
          (AS_LIMIT >> 10, AS_SLACK >> 10))

cases = [
    # (name, file body, expected stderr substring)
    ("chunk-16mib", sized_chunk(b"\x01" * 64, claim=16 << 20),
     "incomplete (16777216-byte payload"),
    ("chunk-4gib", sized_chunk(b"\x01" * 64, claim=0xFFFFFFF0), "bad chunk header"),
    ("stack-2p40", sized_chunk(b"\x82" + uv(8 + 6) + uv(7) + uv(1 << 40) +
                         uv(0x401000) + b"\x02\x02\x02\x02"), None),
    ("meta-2p60", sized_chunk(b"\x87" + uv(1 << 60) + b"abc"), "malformed record"),
    ("string-2p60", sized_chunk(b"\x87" + uv(12) + uv(1) + uv(1 << 60) +
                          b"x" * 2), None),
    ("many-empty-chunks", b"".join(sized_chunk(b"", tid=i + 1) for i in range(2000)),
     None),
]
for name, body, want in cases:
    path = forged(name + ".trace", body)
    for args in (("report", "--format=json", path), ("dump", path),
                 ("dump", "--merged", path)):
        rc, err, kb = peak_kb(*args, as_limit=AS_LIMIT)
        what = "%s: mallock %s" % (name, " ".join(args[:-1]))
        # 1: a trace of which no chunk could be read (report), said so
        check(rc in (0, 2) or (rc == 1 and args[0] == "report" and
                               "no chunk could be read" in err),
              "%s: exit %d (want 0 or 2, or 1 with no chunk read: %r)"
              % (what, rc, err))
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
