"""The Python tests' one check, as tests/lib/test.h is the C tests':
check, eq and near, a failure said in one line, and the exit status CTest
reads (0 passed, 1 failed, SKIP = 77: a prerequisite proven missing,
SKIP_RETURN_CODE in CMake).

A test chooses once, with setup(), how it takes a failed check:
- counting (the default): the test runs on; done(NAME) prints
  "NAME: N checks, M failed" and exits 1 if any failed;
- stop=True: the first failed check raises Failed, the one failure
  exception; a test may catch it (ground_truth.py does, to name its case
  and keep its traces), and uncaught it prints
  "FAIL: WHAT" and ends the test with exit status 1;
- echo=True: every check is printed, "ok: WHAT" or "FAIL: WHAT" on
  stdout; without it a passed check prints nothing and a failed one
  "CHECK failed: WHAT" on stderr.

A test finds this folder by a path relative to its own file:
    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "lib"))
"""
import sys

SKIP = 77
failures = 0
total = 0
_stop = False
_echo = False


class Failed(Exception):
    """A failed check of a test that stops at its first one."""


def setup(stop=False, echo=False):
    global _stop, _echo
    _stop, _echo = stop, echo


def check(cond, what):
    """Counts the check; cond false is a failure, said as the test chose.
    Returns cond."""
    global failures, total
    total += 1
    if cond:
        if _echo:
            print("ok: " + what, flush=True)
        return cond
    failures += 1
    if _stop:
        raise Failed(what)
    if _echo:
        print("FAIL: " + what, flush=True)
    else:
        print("CHECK failed: " + what, file=sys.stderr, flush=True)
    return cond


def fail(what):
    """A failure whatever the state: check(False, what)."""
    return check(False, what)


def eq(a, b, what):
    return check(a == b, "%s: %r != %r" % (what, a, b))


def near(a, b, rel, what):
    return check(abs(a - b) <= rel * abs(b),
                 "%s: %r not within %g of %r" % (what, a, rel, b))


def done(name):
    """The summary line; exit 1 if a check failed, else 0."""
    print("%s: %d checks, %d failed" % (name, total, failures), flush=True)
    sys.exit(1 if failures else 0)


def _uncaught(kind, value, tb, _default=sys.excepthook):
    if isinstance(value, Failed):
        print("FAIL: %s" % value, flush=True)
    else:
        _default(kind, value, tb)


sys.excepthook = _uncaught
