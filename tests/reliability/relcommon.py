"""relcommon - what the reliability tests share: running a host bare and
under the shim (with a timeout: a hang is a failure), reading every trace
it left with `mallock report --format=json`, and a check tally on
tests/lib/pycheck.py.

Every test is `python3 TEST.py BUILD_DIR [ARGS]`: BUILD_DIR/bin/mallock,
BUILD_DIR/lib/libmallock.so and the test programs in BUILD_DIR/bin.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402


class Ctx:
    def __init__(self, name, build):
        self.name = name
        self.build = os.path.abspath(build)
        self.mallock = os.path.join(self.build, "bin", "mallock")
        self.shim = os.path.join(self.build, "lib", "libmallock.so")
        self.skipped = []

    def bin(self, name):
        return os.path.join(self.build, "bin", name)

    def tmpdir(self, sub):
        d = os.path.join(self.build, "tests", "reliability", "tmp_" + sub)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def check(self, cond, what):
        """pycheck's check (tests/lib), the test's name before WHAT."""
        return pycheck.check(cond, "%s: %s" % (self.name, what))

    def skip(self, why):
        """A part of the test cannot run here: WHY names the prerequisite
        proved missing. The other parts still run; done() then exits 77
        (CTest's SKIP_RETURN_CODE) unless a check failed, so a part left
        untested is never reported as a pass."""
        self.skipped.append(why)
        print("%s: SKIP: %s" % (self.name, why), flush=True)

    def done(self):
        """pycheck's done(), but exit 77 when a part was skipped and no
        check failed."""
        if self.skipped and not pycheck.failures:
            print("%s: %d checks, 0 failed" % (self.name, pycheck.total))
            print("%s: SKIP: untested here: %s" % (self.name,
                                                   "; ".join(self.skipped)))
            sys.exit(pycheck.SKIP)
        pycheck.done(self.name)

    def run(self, argv, env=None, timeout=60, cwd=None, preexec=None):
        """Runs argv; returns (status, stdout, stderr). status is the exit
        code, -SIG when killed by a signal, or None when it hung (then the
        whole process group is killed)."""
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("MALLOCK_") or k == "LD_PRELOAD":
                del e[k]
        e.update(env or {})

        def pre():
            os.setpgrp()
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if preexec:
                preexec()
        p = subprocess.Popen(argv, env=e, cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             preexec_fn=pre)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return None, out, err
        return p.returncode, out, err

    def shim_env(self, out_pattern, extra=None, preload_after=None):
        pre = self.shim + (":" + preload_after if preload_after else "")
        env = {"LD_PRELOAD": pre, "MALLOCK_OUTPUT": out_pattern}
        env.update(extra or {})
        return env

    def report(self, trace, fmt="json", extra=()):
        """`mallock report` of one trace: (status, parsed json or text,
        stderr)."""
        p = subprocess.run([self.mallock, "report", "--format=" + fmt] +
                           list(extra) + [trace], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if fmt == "json" and p.returncode == 0:
            try:
                return p.returncode, json.loads(p.stdout), p.stderr
            except ValueError:
                return 99, None, p.stderr
        return p.returncode, p.stdout, p.stderr

    def traces(self, d):
        return sorted(glob.glob(os.path.join(d, "*.trace*")))

    def check_readable(self, d, min_traces=1):
        """Every trace in d is read by `mallock report` (exit 0). Returns
        the parsed reports."""
        files = self.traces(d)
        self.check(len(files) >= min_traces, "expected at least %d traces in "
                   "%s, found %d" % (min_traces, d, len(files)))
        reps = []
        for f in files:
            st, rep, err = self.report(f)
            if self.check(st == 0 and rep is not None,
                          "mallock report %s: status %s: %s" %
                          (f, st, err.decode(errors="replace")[:300])):
                reps.append(rep)
        return reps


def wait_for(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def events(rep):
    return rep["trace"]["events"]


def note_texts(rep):
    return [n["text"] for n in rep["trace"].get("notes", [])]
