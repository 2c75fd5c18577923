#!/usr/bin/env python3
"""A CTest run read from the JUnit file of `ctest --output-junit` (CTest >=
3.21; checked with 3.25). CTest itself exits 0 when a test is skipped (exit
77 with SKIP_RETURN_CODE) or disabled, and prints only "100% tests passed".

usage: ctest_verdict.py JUNIT.xml MIN_TESTS [NAME[=REGEX]...]
       ctest_verdict.py --summary JUNIT.xml

The verdict (CI, .ci/run): fails (exit 1, one line per reason) when the run
holds fewer than MIN_TESTS tests (a CMake change that drops a folder), when
any test is disabled, when a test did not run for another reason (missing
required files), or when a test skipped that is not allowed: NAME allows
test NAME to skip, NAME=REGEX only when its output (the reason it printed)
matches REGEX. An allowed skip is printed with the reason it gave.
Prints the counts.

--summary (`make test`, after ctest): prints the tests that did not run,
each with the reason it printed ("2 skipped: ...", one line each), or that
none was skipped; exit 0 (ctest's own status says pass or fail)."""
import re
import sys
import xml.etree.ElementTree as ET


def read_cases(path):
    """The run's test cases, in order: dicts with name, status (run, failed,
    skipped, disabled, notrun), out (the test's output) and why (the
    skipped element's message: SKIP_RETURN_CODE=77 for a skip). Raises
    OSError or ET.ParseError."""
    cases = []
    for c in ET.parse(path).getroot().iter("testcase"):
        status = c.get("status")
        skipped = c.find("skipped")
        case = {"name": c.get("name"),
                "out": (c.findtext("system-out") or "").strip(),
                "why": skipped.get("message") if skipped is not None
                else ""}
        if status == "disabled":
            case["status"] = "disabled"
        elif status == "notrun":
            case["status"] = ("skipped" if case["why"] == "SKIP_RETURN_CODE=77"
                              else "notrun")
        elif c.find("failure") is not None or status == "fail":
            case["status"] = "failed"
        else:
            case["status"] = "run"
        cases.append(case)
    return cases


def reason(case):
    """The reason a skipped test gave: the last line of its output that says
    "skip" (tests print "NAME: SKIP: why"), else its last line."""
    lines = case["out"].splitlines()
    said = [l for l in lines if "skip" in l.lower()]
    return (said or lines or ["no reason printed"])[-1].strip()


def summary(path):
    try:
        cases = read_cases(path)
    except (OSError, ET.ParseError) as e:
        print("ctest_verdict: %s: %s" % (path, e), file=sys.stderr)
        return 1
    skipped = [c for c in cases if c["status"] == "skipped"]
    notrun = [c for c in cases if c["status"] in ("notrun", "disabled")]
    if not skipped and not notrun:
        print("%d tests, none skipped" % len(cases))
        return 0
    if skipped:
        print("%d skipped (of %d tests), each with the reason it printed:"
              % (len(skipped), len(cases)))
        for c in skipped:
            print("  %s: %s" % (c["name"], reason(c)))
    if notrun:
        print("%d not run:" % len(notrun))
        for c in notrun:
            print("  %s: %s" % (c["name"], c["status"] if c["status"] ==
                                "disabled" else c["why"] or "not run"))
    return 0


def verdict(path, min_tests, allowed):
    try:
        cases = read_cases(path)
    except (OSError, ET.ParseError) as e:
        print("ctest_verdict: %s: %s" % (path, e), file=sys.stderr)
        return 1
    bad, counts = [], {"run": 0, "failed": 0, "skipped": 0}
    for c in cases:
        name, status, out = c["name"], c["status"], c["out"]
        if status == "disabled":
            bad.append("%s: disabled (a disabled test asserts nothing)" % name)
        elif status == "notrun":
            counts["skipped"] += 1
            bad.append("%s: not run (%s)" % (name, c["why"] or "not run"))
        elif status == "skipped":
            counts["skipped"] += 1
            if name not in allowed or not re.search(allowed[name], out):
                bad.append("%s: skipped and not on .ci/run's allow-list%s: %s"
                           % (name, " for this reason" if name in allowed
                              else "", reason(c)))
            else:
                print("ctest_verdict: allowed skip: %s: %s" %
                      (name, reason(c)))
        elif status == "failed":
            counts["failed"] += 1
        else:
            counts["run"] += 1
    if len(cases) < min_tests:
        bad.append("%d tests ran, at least %d expected" %
                   (len(cases), min_tests))
    print("ctest_verdict: %s: %d tests, %d passed, %d failed, %d skipped"
          % (path, len(cases), counts["run"], counts["failed"],
             counts["skipped"]))
    for b in bad:
        print("ctest_verdict: FAIL: " + b, file=sys.stderr)
    return 1 if bad or counts["failed"] else 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--summary":
        return summary(argv[2])
    if len(argv) < 3 or argv[1].startswith("--"):
        print("usage: ctest_verdict.py JUNIT.xml MIN_TESTS "
              "[NAME[=REGEX]...]\n"
              "       ctest_verdict.py --summary JUNIT.xml", file=sys.stderr)
        return 2
    allowed = dict((a.split("=", 1) + [""])[:2] for a in argv[3:])
    return verdict(argv[1], int(argv[2]), allowed)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
