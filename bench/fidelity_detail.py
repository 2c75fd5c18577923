#!/usr/bin/env python3
"""fidelity_detail.py BUILD_DIR [REPS] - the apps whose fidelity needs
explaining (reportqueue, admission): each variant bare and under
`mallock record --no-compress`, alternated REPS times (default 7), with
every figure the apps print (rate, failed offers, CPU per report,
latency; successes per client), median [min..max]. docs/performance.md,
"Fidelity of reportqueue and admission", quotes its output.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

APPS = [
    ("reportqueue", ["--locking=nested"], ["--locking=single"],
     ["Reports/ms", "Latency p50", "Latency p99", "CPU per report", "Offers (whole run)"], "0.5"),
    ("admission", ["--policy=lifo"], ["--policy=edf"],
     ["Total", "Min", "Max", "Mean", "Stddev/mean"], "1"),
]


def numbers(out, label):
    """Every number after 'LABEL:' on the line that starts with it."""
    for line in out.splitlines():
        if line.split(":", 1)[0].strip() == label:
            return [float(x) for x in
                    re.findall(r"[-+]?[0-9][0-9.]*(?:e[-+]?[0-9]+)?", line.split(":", 1)[1])]
    return None


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[0])
    b = os.path.join(os.path.abspath(sys.argv[1]), "bin")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    trace = os.path.join(tempfile.mkdtemp(prefix="mallock-fid."), "t.trace")
    res = {}
    for _ in range(reps):
        for app, bug, fix, labels, dur in APPS:
            for variant, args in (("bug", bug), ("fix", fix)):
                for tool in ("bare", "mallock"):
                    cmd = [os.path.join(b, app)] + args + ["--duration=" + dur]
                    if tool == "mallock":
                        cmd = [os.path.join(b, "mallock"), "record", "-o", trace, "--no-compress", "--"] + cmd
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
                    for lab in labels:
                        res.setdefault((app, variant, tool, lab), []).append(numbers(out, lab))
                    if os.path.exists(trace):
                        os.unlink(trace)
    for key, vals in sorted(res.items()):
        cols = list(zip(*[v for v in vals if v]))
        print(" ".join(key) + ": " + " | ".join(
            "%.4g [%.4g..%.4g]" % (statistics.median(c), min(c), max(c)) for c in cols))


if __name__ == "__main__":
    main()
