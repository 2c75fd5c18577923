"""Helpers shared by the analyzer's python3 tests: run mktrace and mallock,
parse JSON, and a tiny CHECK that counts failures like tests/check.h."""
import atexit
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

MALLOCK, MKTRACE, SRCDIR = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="mallock-test-")
failures = 0
total = 0
_passed = False


def _cleanup():
    """The traces a test wrote go with it when it passed (a thousand runs
    left a gigabyte in /tmp); kept, and named, when it failed or stopped
    before done() (an exception, SystemExit, a skip that wrote some)."""
    if _passed or not os.listdir(TMP):
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print("traces kept: " + TMP, file=sys.stderr)


atexit.register(_cleanup)


def check(cond, what):
    global failures, total
    total += 1
    if not cond:
        failures += 1
        print("CHECK failed: " + what, file=sys.stderr)


def eq(a, b, what):
    check(a == b, "%s: %r != %r" % (what, a, b))


def near(a, b, rel, what):
    check(abs(a - b) <= rel * abs(b), "%s: %r not within %g of %r" % (what, a, rel, b))


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
    _passed = not failures
    print("%s: %d checks, %d failed" % (name, total, failures))
    sys.exit(1 if failures else 0)

# Trace bytes written by hand (format/trace_format.h, docs/trace-format.md):
# an unsigned varint, a zigzag-coded signed value, one chunk of thread tid
# with its CRC, a length-prefixed string.
def uv(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def chunk(tid, payload, base=1000):
    tail = struct.pack("<IIIQQQ", tid, 0, 0, base, base + 1000, base + 1000)
    return (struct.pack("<III", 0x434B4C4D, len(payload),
                       zlib.crc32(tail + payload)) + tail + payload)


def s(b):
    return uv(len(b)) + b


def proc_record(exe, comm):
    """A PROCESS record (1 tick = 1 ns) for a trace forged by hand."""
    body = b"".join(uv(v) for v in (42, 1, 0, 1000, 1000, 10**9, 16, 1, 0))
    body += s(exe) + s(comm) + s(b"h") + s(b"test")
    return b"\x80" + uv(len(body)) + body


def lock_acq(dt, lk, site=0):
    return b"\x04" + uv(dt) + uv(lk) + uv(site)


def lock_acq_wait(dt, lk, w, site=0):
    return b"\x06" + uv(dt) + uv(lk) + uv(site) + uv(w) + uv(2)


def lock_rel(dt, lk):
    return b"\x09" + uv(dt) + uv(lk)
