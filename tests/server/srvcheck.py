"""What every tests/server/*.py shares: a check that stops the test at its
first failure (one FAIL line, exit 1), and the skip status CTest is told
of (SKIP_RETURN_CODE 77)."""
import sys

SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok:", msg)
