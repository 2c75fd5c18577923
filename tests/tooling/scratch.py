"""The scratch copy both mutation tools work in (mutants.py, the hand-picked
catalogue; mutate.py, the mechanical mutator): the tracked files of a
source tree copied to a directory of their own, built there with warnings
as errors, and tests run there. The source tree is never written.
"""
import os
import re
import shutil
import signal
import subprocess


def copy_tracked(src, dst):
    """Copies SRC's git-tracked files to DST, keeping their times (so a
    second copy over an earlier one rebuilds only what changed)."""
    files = subprocess.run(["git", "-C", src, "ls-files", "-z"],
                           capture_output=True, check=True).stdout
    for f in files.decode().split("\0"):
        if f and os.path.isfile(os.path.join(src, f)):
            os.makedirs(os.path.dirname(os.path.join(dst, f)) or dst,
                        exist_ok=True)
            shutil.copy2(os.path.join(src, f), os.path.join(dst, f))


def sh(cmd, cwd, timeout=None):
    """Runs CMD in its own process group; on TIMEOUT (seconds) kills the
    group and returns None."""
    p = subprocess.Popen(cmd, shell=True, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)  # interrupted: leave no build
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def configure(dst, prefix=""):
    c = sh(f"{prefix}cmake -S . -B build -DMALLOCK_WERROR=ON", dst)
    return c.returncode == 0, c.stdout[-800:] + c.stderr[-800:]


def build(dst, prefix="", jobs=2):
    b = sh(f"{prefix}cmake --build build -j {jobs}", dst)
    return b.returncode == 0, b.stdout[-800:] + b.stderr[-800:]


def ctest(dst, regex, prefix="", timeout=None):
    """Runs the tests REGEX selects; returns (exit status, the match of
    ctest's summary line or None, output). With TIMEOUT, the status is
    None when ctest did not end in that many seconds."""
    t = sh(f"{prefix}ctest --test-dir build -R '{regex}' "
           f"--output-on-failure", dst, timeout)
    if t is None:
        return None, None, f"ctest -R '{regex}': no end in {timeout} s"
    ran = re.search(r"tests passed, (\d+) tests failed out of (\d+)",
                    t.stdout)
    return t.returncode, ran, t.stdout + t.stderr
