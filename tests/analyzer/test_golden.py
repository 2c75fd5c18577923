#!/usr/bin/env python3
"""Golden tests: checked-in small traces (golden/*.trace, written once by
mktrace --no-module, so their frames are plain addresses) and their
expected JSON reports (golden/*.json). The report's JSON, less the members
that depend on where the test runs (paths), must equal the expected one.
Run with --update as a fourth argument to rewrite the expected files after
an intended change (and review the diff)."""
import glob
import json
import os
from common import *

UPDATE = len(sys.argv) > 4 and sys.argv[4] == "--update"


def stable(d):
    for t in [d["trace"]] + d["traces"]:
        for k in ("path", "exe", "command"):
            t.pop(k, None)
    return d


for trace in sorted(glob.glob(os.path.join(SRCDIR, "golden", "*.trace"))):
    want_path = trace[:-len(".trace")] + ".json"
    got = stable(report_json(trace))
    if UPDATE:
        with open(want_path, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
            f.write("\n")
        continue
    with open(want_path) as f:
        want = json.load(f)
    name = os.path.basename(trace)
    for key in sorted(set(want) | set(got)):
        eq(json.dumps(got.get(key), sort_keys=True),
           json.dumps(want.get(key), sort_keys=True), "%s: %s" % (name, key))
    rc, out, err = run("report", trace)
    eq(rc, 0, name + ": text report")
check(len(glob.glob(os.path.join(SRCDIR, "golden", "*.trace"))) >= 2,
      "at least two golden traces")
done("analyzer_golden")
