#!/usr/bin/env python3
"""Progress of a long analysis: on stderr, only on a terminal in
the foreground, by pass and bytes read; --progress and --no-progress.

usage: test_progress.py MALLOCK MKTRACE SRCDIR

Runs `mallock report` on a pseudo-terminal (python's pty module) and under
pipes. MALLOCK_PROGRESS_DELAY_MS=0 removes the one-second delay, so the
assertions do not depend on how fast this machine is; one check keeps the
delay and only asserts that a run far shorter than it prints nothing."""
import os
import pty
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MALLOCK, TMP, check, done, mktrace  # noqa: E402

trace, _ = mktrace("big", "big.trace", "--events", 300000, "--threads", 4)
NOW = dict(os.environ, MALLOCK_PROGRESS_DELAY_MS="0")


def under_pty(args, env, background=False):
    """Runs mallock with stdin/stdout/stderr on a new pseudo-terminal, as
    the foreground process (or in a background process group)."""
    pid, fd = pty.fork()
    if pid == 0:
        argv = [MALLOCK] + args
        if background:
            child = os.fork()
            if child == 0:
                os.setpgid(0, 0)  # not the terminal's foreground group
                os.execve(MALLOCK, argv, env)
            _, st = os.waitpid(child, 0)
            os._exit(os.waitstatus_to_exitcode(st))
        os.execve(MALLOCK, argv, env)
    out = b""
    while True:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    _, st = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(st), out.decode(errors="replace")


def under_pipe(args, env):
    r = subprocess.run([MALLOCK] + args, env=env, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stderr


out = os.path.join(TMP, "r.json")
rep = ["report", "--format=json", "-o", out, trace]

rc, tty = under_pty(rep, NOW)
check(rc == 0, "pty run: exit %d" % rc)
check("big.trace: pass 1/2" in tty and "big.trace: pass 2/2" in tty,
      "progress by pass on a terminal: %r" % tty[:300])
check("% (" in tty and " MB)" in tty, "progress in bytes: %r" % tty[:300])
check(tty.startswith("\r") and tty.endswith("\r\x1b[K"),
      "progress overwrites its line and clears it at the end: %r"
      % tty[-40:])

rc, tty = under_pty(rep[:1] + ["--no-progress"] + rep[1:], NOW)
check(rc == 0 and "pass" not in tty, "--no-progress: %r" % tty[:200])

rc, tty = under_pty(rep, NOW, background=True)
check(rc == 0 and "pass" not in tty, "in the background: %r" % tty[:200])

rc, err = under_pipe(rep, NOW)
check(rc == 0 and err == "", "silent under a pipe: %r" % err[:200])

rc, err = under_pipe(rep[:1] + ["--progress"] + rep[1:], NOW)
check(rc == 0 and "pass 2/2" in err, "--progress under a pipe: %r" % err[:200])

rc, tty = under_pty(["report", "--format=pprof", "--metric=wait", "-o",
                     os.path.join(TMP, "w.pb.gz"), trace], NOW)
check(rc == 0 and "pass 3/3" in tty, "pprof's second read is pass 3/3: %r"
      % tty[:300])

small, _ = mktrace("cascade", "small.trace")
rc, tty = under_pty(["report", "--format=json", "-o", out, small],
                    dict(os.environ))
check(rc == 0 and "pass" not in tty, "nothing within the first second: %r"
      % tty[:200])
done("analyzer_progress")
