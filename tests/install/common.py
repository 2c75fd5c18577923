"""Helpers of the install tests: the tests' check (tests/lib/pycheck.py,
counting failures), running a command, and the installed tree's checks
shared by the prefix and the .deb root."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
from pycheck import check, done  # noqa: E402,F401


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return r.returncode, r.stdout, r.stderr


def commands(mallock):
    """The commands `mallock --help` lists."""
    rc, out, err = run([mallock, "--help"])
    check(rc == 0, "mallock --help: %d %s" % (rc, err))
    cmds = re.findall(r"^  ([a-z]+) ", out, re.M)
    check(len(cmds) >= 8, "commands listed: %r" % cmds)
    return cmds


def record_true(root, bindir, libdir, tmp):
    """ROOT's mallock records /bin/true with ROOT's shim: the trace reads
    back and its modules name ROOT/LIBDIR/mallock/libmallock.so, and so does
    the LD_PRELOAD a recorded program sees."""
    mallock = os.path.join(root, bindir, "mallock")
    shim = os.path.realpath(os.path.join(root, libdir, "mallock",
                                         "libmallock.so"))
    check(os.path.isfile(shim), "shim installed at " + shim)
    out = os.path.join(tmp, "true.trace")
    rc, so, se = run([mallock, "record", "-o", out, "--", "/bin/true"],
                     cwd=tmp)
    check(rc == 0 and "trace written to " + out in se,
          "%s record -- /bin/true: %d %s" % (mallock, rc, se))
    rc, so, se = run([mallock, "dump", out])
    check(rc == 0 and " PROCESS pid=" in so,
          "the trace reads back: %d %s" % (rc, se[-300:]))
    check('MODULE' in so and 'path="%s"' % shim in so,
          "the trace's modules name the tree's shim %s" % shim)
    rc, so, se = run([mallock, "record", "-o", os.path.join(tmp, "p.trace"),
                      "--", "/bin/sh", "-c", 'echo "$LD_PRELOAD"'], cwd=tmp)
    check(rc == 0 and so.strip() == shim,
          "the preloaded shim is the tree's own: %r, want %r" %
          (so.strip(), shim))
