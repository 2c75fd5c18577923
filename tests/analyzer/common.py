"""Helpers shared by the analyzer's python3 tests: run mktrace and mallock,
parse JSON, the tests' check (tests/lib/pycheck.py, counting failures),
and trace bytes forged through the format's Python view
(tests/lib/tracefmt.py)."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

MALLOCK, MKTRACE, SRCDIR = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="mallock-test-")
_passed = False
sys.path.insert(0, os.path.join(SRCDIR, "..", "lib"))
import pycheck  # noqa: E402
from pycheck import check, eq, near  # noqa: E402,F401


def _cleanup():
    """The traces a test wrote go with it when it passed (a thousand runs
    left a gigabyte in /tmp); kept, and named, when it failed or stopped
    before done() (an exception, SystemExit, a skip that wrote some)."""
    if _passed or not os.listdir(TMP):
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print("traces kept: " + TMP, file=sys.stderr)


atexit.register(_cleanup)


def no_sanitizer_finding(cmd, err):
    """Fails the test at once when a sanitizer spoke on stderr: a sanitized
    build (make test-sanitize) must not rely on the finding also changing
    the exit status or losing buffered output."""
    if "Sanitizer" in err or "runtime error:" in err:
        raise SystemExit("sanitizer finding in %s:\n%s" % (" ".join(cmd), err))


def mktrace(scenario, name, *opts):
    path = os.path.join(TMP, name)
    cmd = [MKTRACE, scenario, path] + [str(o) for o in opts]
    r = subprocess.run(cmd, capture_output=True, text=True)
    no_sanitizer_finding(cmd, r.stderr)
    if r.returncode != 0:
        raise SystemExit("mktrace failed: " + r.stderr)
    return path, r.stdout


def run(*args):
    """Runs mallock ARGS: (exit status, stdout, stderr). Every caller checks
    the status; a sanitizer report on stderr fails the test here."""
    cmd = [MALLOCK] + [str(a) for a in args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    no_sanitizer_finding(cmd, r.stderr)
    return r.returncode, r.stdout, r.stderr


def report_json(*args):
    rc, out, err = run("report", "--format=json", *args)
    if rc != 0:
        raise SystemExit("mallock report failed (%d): %s" % (rc, err))
    return json.loads(out)


def lock_by_name(d, name):
    for lk in d["locks"]:
        if lk["name"] == name:
            return lk
    raise SystemExit("no lock named " + name)


def done(name):
    global _passed
    _passed = not pycheck.failures
    pycheck.done(name)

# Trace bytes forged through the Python view of the format (tests/lib/
# tracefmt.py over trace_format.py, generated from format/trace_format.h at
# build time): varints, zigzag, a chunk of thread tid with its CRC, a
# length-prefixed string, the file header.
import tracefmt  # noqa: E402
from tracefmt import uv, zz, s, file_header  # noqa: E402,F401

# MKTRACE is BUILD/tests/analyzer/mktrace
FMT = tracefmt.find(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(MKTRACE)))))


def chunk(tid, payload, base=1000):
    return tracefmt.chunk(tid, payload, base=base)


def proc_record(exe, comm, time_every=None, hold_every=None):
    """A PROCESS record (1 tick = 1 ns) for a trace forged by hand; with
    time_every and hold_every, their fields (1.4, 1.6) after sample_bytes
    and max_bytes 0."""
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(exe) + s(comm) + s(b"h") + s(b"test")
    if time_every is not None:
        body += uv(0) + uv(0) + uv(time_every) + uv(hold_every)
    return tracefmt.meta("PROCESS", body)


def lock_acq(dt, lk, site=0):
    return tracefmt.event("ACQ", dt, lk, site)


def lock_acq_wait(dt, lk, w, site=0):
    return tracefmt.event("ACQ_WAIT", dt, lk, site, w, 2)


def lock_rel(dt, lk):
    return tracefmt.event("REL", dt, lk)


# ---- protobuf, read by hand (pprof's and Perfetto's outputs) ----

def pb_varint(b, i):
    """The varint at b[i]: (value, index past it)."""
    v = sh = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << sh
        sh += 7
        if c < 0x80:
            return v, i


def pb_fields(b):
    """The (field, value) pairs of message b: varints as ints,
    length-delimited fields as bytes."""
    i = 0
    while i < len(b):
        k, i = pb_varint(b, i)
        if k & 7 == 0:
            v, i = pb_varint(b, i)
            yield k >> 3, v
        elif k & 7 == 2:
            n, i = pb_varint(b, i)
            yield k >> 3, b[i:i + n]
            i += n
        else:
            raise SystemExit("protobuf: wire type %d" % (k & 7))


def pb_packed(b):
    """The varints of a packed repeated field."""
    i, out = 0, []
    while i < len(b):
        v, i = pb_varint(b, i)
        out.append(v)
    return out
