"""security.py BUILD_DIR - what tests/shim/output.sh does not cover:

  setid    a copy of secure_host (linked with libmallock.so, so the loader
           keeps the shim even in a secure run) made set-user-ID root, and
           one made set-group-ID, run as nobody (setpriv): no trace, nothing
           on stderr (even with a bad MALLOCK_STACK_DEPTH, which warns in a
           normal run), one line with MALLOCK_VERBOSE=1. A plain run of the
           same copy does trace and warn (the shim is really there).
  env      strict parsing: bad numbers and over-long values get one short
           warning and the default, the host is unharmed; an over-long
           MALLOCK_OUTPUT (or one whose %e expansion is) is refused.
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx  # noqa: E402

c = Ctx("security", sys.argv[1])
host = c.bin("secure_host")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# ---- set-user-ID / set-group-ID
if os.geteuid() != 0 or not shutil.which("setpriv"):
    c.skip("setid: needs root (euid %d) and setpriv (%s)" %
           (os.geteuid(), shutil.which("setpriv")))
else:
    top = tempfile.mkdtemp(prefix="mallock-secure.")
    os.chmod(top, 0o755)
    out = os.path.join(top, "out")
    os.makedirs(out)
    os.chmod(out, 0o1777)
    exe = os.path.join(top, "secure_host")
    shutil.copy(host, exe)
    nosuid = subprocess.run(["findmnt", "-n", "-o", "OPTIONS", "-T", top],
                            stdout=subprocess.PIPE).stdout.decode()
    libok = subprocess.run(NOBODY + ["test", "-r", c.shim]).returncode == 0
    env = {"MALLOCK_OUTPUT": os.path.join(out, "t.%p.trace"),
           "MALLOCK_STACK_DEPTH": "abc"}
    # Control: not set-ID, as root: traces and warns.
    st, o, e = c.run([exe], env=env)
    c.check(st == 3 and o == b"secure_host ok\n", "control run: %s %r" %
            (st, o))
    c.check(b"MALLOCK_STACK_DEPTH=abc" in e, "control run did not warn: %r"
            % e)
    c.check(len(os.listdir(out)) == 1, "control run left no trace")
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    if "nosuid" in nosuid:
        c.skip("setid: %s is mounted nosuid" % top)
    else:
        modes = [("setuid", stat.S_ISUID)]
        if libok:
            modes.append(("setgid", stat.S_ISGID))
        else:
            # The loader ignores $ORIGIN in a secure run: the copy finds
            # the shim only at its RUNPATH, which nobody must read.
            c.skip("setgid: nobody cannot read %s" % c.shim)
        for what, bit in modes:
            os.chown(exe, 0, 0)
            os.chmod(exe, 0o755 | bit)
            for verbose in (False, True):
                e2 = dict(env)
                if verbose:
                    e2["MALLOCK_VERBOSE"] = "1"
                st, o, e = c.run(NOBODY + [exe], env=e2)
                c.check(st == 3 and o == b"secure_host ok\n",
                        "%s: host changed: %s %r %r" % (what, st, o, e))
                want = (b"mallock: set-user-ID or set-group-ID program; "
                        b"not recording\n") if verbose else b""
                c.check(e == want, "%s verbose=%s: stderr %r" %
                        (what, verbose, e))
                c.check(os.listdir(out) == [], "%s: a trace was written: "
                        "%s" % (what, os.listdir(out)))
            print("security: %s run as nobody: inert and silent" % what)
    shutil.rmtree(top, ignore_errors=True)

# ---- strict environment parsing
d = c.tmpdir("sec_env")
big = "x" * 100000
cases = [
    ("MALLOCK_STACK_DEPTH", "12abc", r"not a whole number in 1\.\.64"),
    ("MALLOCK_STACK_DEPTH", "-5", r"not a whole number"),
    ("MALLOCK_STACK_DEPTH", "0x10", r"not a whole number"),
    ("MALLOCK_STACK_DEPTH", " 5", r"not a whole number"),
    ("MALLOCK_STACK_DEPTH", "", r"not a whole number"),
    ("MALLOCK_STACK_DEPTH", "65", r"not a whole number"),
    ("MALLOCK_STACK_DEPTH", "9" * 40, r"not a whole number"),
    ("MALLOCK_BUFFER_KB", "16385", r"4\.\.16384"),
    ("MALLOCK_BUFFER_KB", "3", r"4\.\.16384"),
    ("MALLOCK_FLUSH_MS", "1e3", r"not a whole number"),
    ("MALLOCK_VERBOSE", "3", r"0\.\.2"),
    ("MALLOCK_FOLLOW_EXEC", "yes", r"0\.\.1"),
    ("MALLOCK_UNWIND", big, r"not libunwind, fp or none"),
    ("MALLOCK_STACK_DEPTH", big, r"not a whole number"),
    ("MALLOCK_OUTPUT", os.path.join(d, "o" * 5000), r"longer than"),
    ("MALLOCK_OUTPUT", os.path.join(d, "%e" * 300), r"expands to a path "
     r"longer than"),
]
bare = c.run([host])
import re  # noqa: E402
for var, val, pat in cases:
    env = {"LD_PRELOAD": c.shim, "MALLOCK_OUTPUT": os.path.join(d, "t.%p")}
    env[var] = val
    st, o, e = c.run([host], env=env, cwd=d)
    short = val if len(val) < 20 else val[:12] + "...(%d)" % len(val)
    c.check(st == bare[0] and o == bare[1], "%s=%s: host changed" %
            (var, short))
    lines = e.decode(errors="replace").splitlines()
    c.check(len(lines) == 1 and re.search(pat, lines[0]) and
            len(lines[0]) < 400, "%s=%s: expected one short line matching "
            "%r, got %r" % (var, short, pat, [ln[:200] for ln in lines]))
for f in os.listdir(d):
    os.unlink(os.path.join(d, f))
c.done()
