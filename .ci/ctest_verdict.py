#!/usr/bin/env python3
"""CI's verdict on a CTest run, from the JUnit file of `ctest --output-junit`
(CTest >= 3.21; checked with 3.25). CTest itself exits 0 when a test is
skipped (exit 77 with SKIP_RETURN_CODE) or disabled; here those fail CI.

usage: ctest_verdict.py JUNIT.xml MIN_TESTS [NAME[=REGEX]...]

Fails (exit 1, one line per reason) when the run holds fewer than MIN_TESTS
tests (a CMake change that drops a folder), when any test is disabled, when a
test did not run for another reason (missing required files), or when a test
skipped that is not allowed: NAME allows test NAME to skip, NAME=REGEX only
when its output (the reason it printed) matches REGEX. An allowed skip is
printed with the test's own output. Prints the counts."""
import re
import sys
import xml.etree.ElementTree as ET


def main(argv):
    if len(argv) < 3:
        print("usage: ctest_verdict.py JUNIT.xml MIN_TESTS "
              "[NAME[=REGEX]...]", file=sys.stderr)
        return 2
    path, min_tests = argv[1], int(argv[2])
    allowed = dict((a.split("=", 1) + [""])[:2] for a in argv[3:])
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print("ctest_verdict: %s: %s" % (path, e), file=sys.stderr)
        return 1
    cases = root.iter("testcase")
    bad, counts = [], {"run": 0, "failed": 0, "skipped": 0}
    n = 0
    for c in cases:
        n += 1
        name, status = c.get("name"), c.get("status")
        out = (c.findtext("system-out") or "").strip()
        skipped = c.find("skipped")
        if status == "disabled":
            bad.append("%s: disabled (a disabled test asserts nothing)" % name)
        elif status == "notrun":
            why = skipped.get("message") if skipped is not None else "not run"
            counts["skipped"] += 1
            if why != "SKIP_RETURN_CODE=77":
                bad.append("%s: not run (%s)" % (name, why))
            elif name not in allowed or not re.search(allowed[name], out):
                bad.append("%s: skipped and not on .ci/run's allow-list%s: %s"
                           % (name, " for this reason" if name in allowed
                              else "",
                              out.splitlines()[-1] if out else "no reason"))
            else:
                print("ctest_verdict: allowed skip: %s: %s" %
                      (name, out.splitlines()[-1] if out else ""))
        elif c.find("failure") is not None or status == "fail":
            counts["failed"] += 1
        else:
            counts["run"] += 1
    if n < min_tests:
        bad.append("%d tests ran, at least %d expected" % (n, min_tests))
    print("ctest_verdict: %s: %d tests, %d passed, %d failed, %d skipped"
          % (path, n, counts["run"], counts["failed"], counts["skipped"]))
    for b in bad:
        print("ctest_verdict: FAIL: " + b, file=sys.stderr)
    return 1 if bad or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
