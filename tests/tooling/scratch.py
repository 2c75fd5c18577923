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


def build(dst, prefix="", jobs=2, targets=()):
    """Builds DST's build/: all of it, or only TARGETS and what they
    need."""
    tg = " --target " + " ".join(targets) if targets else ""
    b = sh(f"{prefix}cmake --build build -j {jobs}{tg}", dst)
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


class Pristine:
    """The objects a build made from a .c file PATH of DST, before a
    mutant of it is built: restore() puts them back with the source's own
    time, newer than the source, so make relinks but recompiles nothing
    (a mutant then costs one compile, not two). A header has no object of
    its own: restore() leaves it the time of its restoring, newer than
    the objects built from the mutant, so make recompiles what includes
    it."""

    def __init__(self, dst, path):
        self.src = os.path.join(dst, path)
        self.stat = os.stat(self.src)
        self.objs = {}
        if not path.endswith(".c"):
            return
        build_dir = os.path.join(dst, "build")
        for dirpath, _, names in os.walk(build_dir):
            for n in names:
                if n != os.path.basename(path) + ".o":
                    continue
                o = os.path.join(dirpath, n)
                # build/<dir>/CMakeFiles/<target>.dir/<rest>.o compiles
                # <dir>/<rest>
                rel = os.path.relpath(o, build_dir)
                head, _, rest = rel.partition("/CMakeFiles/")
                rest = rest.split("/", 1)[1] if "/" in rest else ""
                srcrel = os.path.normpath(os.path.join(
                    "" if head.startswith("CMakeFiles") else head,
                    rest))[:-2]
                if srcrel == os.path.normpath(path):
                    self.objs[o] = open(o, "rb").read()

    def restore(self):
        if not self.objs:
            return  # a header: its new time recompiles what includes it
        os.utime(self.src, ns=(self.stat.st_atime_ns, self.stat.st_mtime_ns))
        for o, data in self.objs.items():
            with open(o, "wb") as f:
                f.write(data)
            os.utime(o)  # now: newer than the source
