#!/usr/bin/env python3
"""`mallock top`'s incremental engine on a recorded trace: svcqueue under
`mallock record` (recorded.py), then unit_live (unit_live.c) copies it
chunk by chunk into a growing file and checks that each poll of the
engine equals a re-read of the window at the same watermark.

usage: test_live_recorded.py MALLOCK UNIT_LIVE"""
import subprocess
import sys
import tempfile

from recorded import record_svcqueue

MALLOCK, UNIT = sys.argv[1:3]
with tempfile.TemporaryDirectory() as d:
    trace, _ = record_svcqueue(MALLOCK, d)
    sys.exit(subprocess.run([UNIT, trace], timeout=600).returncode)
