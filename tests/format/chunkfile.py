"""Helpers shared by the format's python3 tests: a CHECK that prints each
result and counts failures, and the chunks of a trace file as found by
their headers, read through the Python view of the format
(tests/lib/tracefmt.py). Both tests pass BUILD/bin/mallock first."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import tracefmt  # noqa: E402

failed = [0]
F = tracefmt.find(os.path.dirname(os.path.dirname(os.path.abspath(
    sys.argv[1]))))


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failed[0] += 1


def done(name):
    print(f"{name}: {failed[0]} failed")
    sys.exit(1 if failed[0] else 0)


def chunks(path):
    """(offset, flags, payload_len) of each chunk, up to the first header
    with a bad magic or a payload past the end of the file."""
    with open(path, "rb") as f:
        data = f.read()
    return [(off, h["flags"], h["payload_len"])
            for off, h in tracefmt.chunks(data)]
