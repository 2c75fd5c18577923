"""life.py BUILD_DIR SCENARIO [ARG] - one process-life scenario of
life.c: run bare and under the shim (timeout 60 s each: a hang fails), the
exit status (or the signal it died of), stdout and stderr must be the same,
and every trace the shim run left must be read by `mallock report`.
Scenario-specific checks follow (see the table at the end).
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx, events, note_texts, wait_for  # noqa: E402

build, scen = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
tag = scen + ("_" + os.path.basename(arg) if arg and scen == "crash" else "")
c = Ctx("life " + scen + (" " + os.path.basename(arg) if arg else ""), build)
d = c.tmpdir("life_" + tag)
life = c.bin("life")


def run(under_shim):
    a = arg
    if scen == "daemon":
        a = os.path.join(d, "done." + ("shim" if under_shim else "bare"))
    env = c.shim_env(os.path.join(d, "t.%p.trace")) if under_shim else {}
    if under_shim and scen == "_exit_thread":
        # Small buffers: the other threads flush while _exit writes.
        env["MALLOCK_BUFFER_KB"] = "4"
    st, out, err = c.run([life, scen, a], env=env, timeout=60)
    if scen == "daemon":
        c.check(wait_for(lambda: os.path.exists(a), 30),
                "the daemon did not finish (%s)" % a)
    return st, out, err


bare = run(False)
shim = run(True)
c.check(bare[0] is not None, "hung without the shim")
c.check(shim[0] is not None, "hung under the shim")
c.check(bare[0] == shim[0], "exit status %s bare, %s under the shim" %
        (bare[0], shim[0]))
c.check(bare[1] == shim[1], "stdout differs: %r vs %r" % (bare[1], shim[1]))
c.check(bare[2] == shim[2], "stderr differs: %r vs %r" % (bare[2], shim[2]))

if scen == "daemon":
    # The daemon writes its trace at exit, after the done file.
    def daemon_done():
        reps = [c.report(f) for f in c.traces(d)]
        return any(r[0] == 0 and r[1]["trace"]["clean_exit"] and
                   r[1]["trace"]["pid"] != 0 and events(r[1]) > 4000
                   for r in reps)
    c.check(wait_for(daemon_done, 30), "no complete trace of the daemon")

reps = c.check_readable(d)
main = [r for r in reps if r["trace"]["command"].endswith("life")]
total = sum(events(r) for r in main)
# crash_own: the program's handler replaced the shim's and _exits: what
# was still in the buffers is lost (documented), the header is readable.
c.check(total > 0 or scen == "crash_own", "no events recorded")

expect = {
    # scenario: traces at least (vfork: exactly, below)
    "vfork": 3, "daemon": 2, "dlopen_ctor": 1, "early_ctor": 1,
    "atexit": 1, "cancel": 1, "sig_alloc": 1, "sig_lock": 1,
    "exit_thread": 1, "_exit_thread": 1, "never_exits": 1, "crash": 1,
    "crash_own": 1,
}
c.check(len(reps) >= expect.get(scen, 1), "%d traces" % len(reps))

if scen == "vfork":
    # The exec'ed children are followed (true after vfork, echo after
    # posix_spawn), each with a trace of its own, and the vfork child did
    # not write into the parent's buffers: the parent's counts are exact
    # (churn(100) twice: 200 blocks under one mutex; stdout's buffer).
    cmds = sorted(os.path.basename(r["trace"]["command"]) for r in reps)
    c.check(cmds == ["echo", "life", "true"], "traces of %s, expected "
            "echo, life and true" % cmds)
    c.check(all(r["trace"]["clean_exit"] for r in reps),
            "a trace is not clean: %s" % [(r["trace"]["command"],
                                           r["trace"]["clean_exit"])
                                          for r in reps])
    t = main[0]["totals"]
    c.check((t["allocations"], t["frees"]) == (201, 200),
            "main trace: %d allocations, %d frees (expected 201, 200)" %
            (t["allocations"], t["frees"]))
    c.check([lk["acquisitions"] for lk in main[0]["locks"]] == [200],
            "main trace: lock acquisitions %s, expected one lock, 200" %
            [lk["acquisitions"] for lk in main[0]["locks"]])
if scen == "cancel":
    # Both cancelled threads' locks were released by their cleanup
    # handlers and taken again: "held" twice, "mu" 102 times (the waiter,
    # main once, churn(100)). (sig_*, exit_thread: their counts depend on
    # timing, so only the clean exit is checked.)
    acq = sorted(lk["acquisitions"] for lk in main[0]["locks"])
    c.check(acq == [2, 102], "cancel: lock acquisitions %s, expected "
            "[2, 102]" % acq)
if scen == "crash":
    sig = {"segv": signal.SIGSEGV, "bus": signal.SIGBUS,
           "abrt": signal.SIGABRT, "fpe": signal.SIGFPE,
           "ill": signal.SIGILL}[arg]
    c.check(shim[0] == -sig, "died of %s, not %s" % (shim[0], -sig))
    r = main[0]
    c.check(any("fatal signal" in n for n in note_texts(r)),
            "no fatal-signal note: %s" % note_texts(r))
    c.check(not r["trace"]["clean_exit"], "crash reported as a clean exit")
    # The crasher's 3000 lock+malloc+free rounds were written.
    c.check(r["totals"]["allocations"] >= 3000 if "allocations" in
            r["totals"] else events(r) >= 12000,
            "too few events after a crash: %d" % events(r))
if scen == "crash_own":
    c.check(shim[0] == 42, "the program's own handler did not run")
if scen in ("vfork", "dlopen_ctor", "early_ctor", "atexit", "cancel",
            "sig_alloc", "sig_lock", "never_exits"):
    c.check(main[0]["trace"]["clean_exit"], "main trace not clean")
if scen == "early_ctor":
    # The 32 blocks the early constructor allocated, unseen, are freed.
    c.check(main[0]["totals"]["unknown_frees"] >= 32, "early blocks seen?")
if scen == "atexit":
    c.check(b"atexit ran" in shim[1] and b"destructor ran" in shim[1],
            "handlers did not run")
if scen == "_exit_thread":
    # _exit from a thread while the others allocate: the shim's _exit
    # writes every buffer and END (exit_hooks.c) before the real call.
    c.check(main[0]["trace"]["clean_exit"], "_exit wrote no END record")
c.done()
