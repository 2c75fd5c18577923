"""Helpers shared by the format's python3 tests: the tests' check
(tests/lib/pycheck.py, each check printed), and the chunks of a trace file
as found by their headers, read through the Python view of the format
(tests/lib/tracefmt.py). Both tests pass BUILD/bin/mallock first."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import pycheck  # noqa: E402
import tracefmt  # noqa: E402
from pycheck import check, done  # noqa: E402,F401

pycheck.setup(echo=True)
F = tracefmt.find(os.path.dirname(os.path.dirname(os.path.abspath(
    sys.argv[1]))))


def chunks(path):
    """(offset, flags, payload_len) of each chunk, up to the first header
    with a bad magic or a payload past the end of the file."""
    with open(path, "rb") as f:
        data = f.read()
    return [(off, h["flags"], h["payload_len"])
            for off, h in tracefmt.chunks(data)]
