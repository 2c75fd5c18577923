"""What every tests/server/*.py shares: the tests' check (tests/lib/
pycheck.py), printing each check and stopping the test at its first
failure (one FAIL line, exit 1), the skip status CTest is told of
(SKIP_RETURN_CODE 77), and whether ptrace (mallock attach) is blocked,
with the fresh directory an attach test starts from."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
from pycheck import SKIP, check, fail  # noqa: E402,F401

pycheck.setup(stop=True, echo=True)


def alive(pid):
    """Whether pid runs (exists and is not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def ptrace_blocked():
    """Why no process of ours may ptrace a child of ours here, or None.
    Decided from the kernel's policy and a bare PTRACE_SEIZE of a throwaway
    child (`sleep`) by a sibling process, as mallock attach will be, never
    from mallock's answer: a bug in mallock's pre-check must fail the test,
    not skip it."""
    cap_eff = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                cap_eff = int(line.split()[1], 16)
    cap_ptrace = bool(cap_eff >> 19 & 1)  # CAP_SYS_PTRACE
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except OSError:
        scope = 0  # no Yama: the classic same-uid rule
    if scope >= 3:
        return "kernel.yama.ptrace_scope is 3 (no attach at all)"
    if scope >= 1 and not cap_ptrace:
        # 1: only a tracer's descendants; the app is not mallock's.
        return "kernel.yama.ptrace_scope is %d and CAP_SYS_PTRACE is off" % scope
    # A seccomp filter or an LSM may still refuse: seize and release a
    # throwaway child from a sibling process.
    dummy = subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    probe = ("import ctypes,sys\n"
             "libc=ctypes.CDLL(None,use_errno=True)\n"
             "libc.ptrace.argtypes=[ctypes.c_long,ctypes.c_long,"
             "ctypes.c_void_p,ctypes.c_void_p]\n"
             "pid=int(sys.argv[1])\n"
             "if libc.ptrace(0x4206,pid,None,None)!=0:\n"
             "  import os;print(os.strerror(ctypes.get_errno()));sys.exit(1)\n"
             "libc.ptrace(17,pid,None,None)\n")
    try:
        g = subprocess.run([sys.executable, "-c", probe, str(dummy.pid)],
                           capture_output=True, text=True, timeout=60)
    finally:
        dummy.kill()
        dummy.wait()
    if g.returncode != 0:
        return "a bare PTRACE_SEIZE of a child fails: " + \
            (g.stdout + g.stderr).strip()
    return None


def attach_workdir(tmp):
    """A fresh, empty tmp for an attach test, or exit 77 (SKIP) when ptrace
    is blocked here (ptrace_blocked: decided without mallock)."""
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    blocked = ptrace_blocked()
    if blocked:
        print("SKIP: ptrace is blocked here: " + blocked)
        sys.exit(SKIP)
