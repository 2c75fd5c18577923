#!/usr/bin/env python3
"""`make test` runs every test it can, and says which it could not:
- .ci/ctest_verdict.py --summary lists each skipped test with the reason
  it printed, and each test not run, from a JUnit file written by hand and
  from one a real ctest run wrote (a test exiting 77 under
  SKIP_RETURN_CODE); its verdict (CI's) still fails on a skip not allowed,
  a disabled test, a failure and too few tests, and passes an allowed skip;
- `make -n test` and `make -n test-sanitize` install the test tools
  (scripts/install-deps.sh --test-tools) before ctest and print the summary
  after it, from the JUnit file they tell ctest to write;
- the test tools include the packages of the tests that skipped on a fresh
  machine: libjemalloc2 (rel_hostile_*_jemalloc), protobuf-compiler
  (analyzer_perfetto), chromium (analyzer_html), golang-go (analyzer_pprof),
  lintian (install_deb), tmux (server_top_screen); the build's own list
  has libncurses-dev (top's screen) and no test tool."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
VERDICT = os.path.join(SRC, ".ci", "ctest_verdict.py")
TMP = tempfile.mkdtemp(prefix="mallock-tooling-")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
from pycheck import check, done  # noqa: E402


def run(*cmd, **kw):
    r = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    return r.returncode, r.stdout, r.stderr


JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="x" tests="5" failures="1" disabled="1" skipped="2">
 <testcase name="ok_test" classname="ok_test" time="0.1" status="run">
  <system-out>ok_test: 3 checks, 0 failed</system-out></testcase>
 <testcase name="bad_test" classname="bad_test" time="0.1" status="fail">
  <failure message="Failed"/><system-out>CHECK failed: x</system-out>
 </testcase>
 <testcase name="rel_mariadb_short" classname="rel_mariadb_short"
   time="0.1" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
  <system-out>mariadb: SKIP: needs root (the server starts as root)
</system-out></testcase>
 <testcase name="analyzer_html" classname="analyzer_html" time="0.1"
   status="notrun"><skipped message="SKIP_RETURN_CODE=77"/>
  <system-out>chromium missing: apt-get install -y chromium
SKIP: chromium not installable here
some trailing line</system-out></testcase>
 <testcase name="off_test" classname="off_test" time="0" status="disabled">
  <skipped message="Disabled"/></testcase>
</testsuite>
"""
j = os.path.join(TMP, "j.xml")
with open(j, "w") as f:
    f.write(JUNIT)
rc, out, err = run(sys.executable, VERDICT, "--summary", j)
check(rc == 0, "--summary exit 0: %d %s" % (rc, err))
check(out == "2 skipped (of 5 tests), each with the reason it printed:\n"
      "  rel_mariadb_short: mariadb: SKIP: needs root (the server starts "
      "as root)\n"
      "  analyzer_html: SKIP: chromium not installable here\n"
      "1 not run:\n  off_test: disabled\n", "--summary: %r" % out)

# The verdict, unchanged.
rc, out, err = run(sys.executable, VERDICT, j, "5", "rel_mariadb_short")
check(rc == 1 and "analyzer_html: skipped and not on" in err and
      "off_test: disabled" in err and "rel_mariadb_short" not in err,
      "verdict on the hand-written file: %d %r" % (rc, err))
clean = re.sub(r' <testcase name="(bad|off)_test".*?</testcase>\n', "",
               JUNIT, flags=re.S)
with open(j, "w") as f:
    f.write(clean)
rc, out, err = run(sys.executable, VERDICT, j, "3", "rel_mariadb_short",
                   "analyzer_html=not installable")
check(rc == 0 and "allowed skip: analyzer_html: SKIP: chromium not "
      "installable here\n" in out,
      "verdict with both skips allowed, each with its reason, not its "
      "last line: %d %r %r" % (rc, out, err))
rc, out, err = run(sys.executable, VERDICT, j, "4", "rel_mariadb_short",
                   "analyzer_html=not installable")
check(rc == 1 and "3 tests ran, at least 4 expected" in err,
      "verdict: too few tests: %r" % err)
rc, out, err = run(sys.executable, VERDICT, j, "3", "rel_mariadb_short",
                   "analyzer_html=busy")
check(rc == 1 and "for this reason: SKIP: chromium not installable here"
      in err, "verdict: a skip allowed for another reason: %r" % err)

# A JUnit file of a real ctest run.
proj = os.path.join(TMP, "proj")
os.mkdir(proj)
with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.20)\nproject(p NONE)\n"
            "enable_testing()\n"
            "add_test(NAME t_pass COMMAND sh -c \"echo fine\")\n"
            "add_test(NAME t_skip COMMAND sh -c "
            "\"echo t_skip: SKIP: no widget here; exit 77\")\n"
            "set_tests_properties(t_skip PROPERTIES SKIP_RETURN_CODE 77)\n")
b = os.path.join(proj, "b")
rc, out, err = run("cmake", "-S", proj, "-B", b)
check(rc == 0, "cmake of the small project: %s" % err)
real = os.path.join(b, "junit.xml")
rc, out, err = run("ctest", "--output-junit", real, cwd=b)
check(rc == 0 and "100% tests passed" in out, "ctest says all passed")
rc, out, err = run(sys.executable, VERDICT, "--summary", real)
check(rc == 0 and out == "1 skipped (of 2 tests), each with the reason it "
      "printed:\n  t_skip: t_skip: SKIP: no widget here\n",
      "--summary of ctest's own file: %r %s" % (out, err))

# make test: the tools first, ctest with a JUnit file, the summary last.
for target, junit in (("test", "bt/ctest-junit.xml"),
                      ("test-sanitize", "bt-san/ctest-junit.xml")):
    rc, out, err = run("make", "-n", "-C", SRC, target,
                       "BUILD=" + os.path.join(TMP, "bt"))
    check(rc == 0, "make -n %s: %s" % (target, err))
    lines = out.splitlines()

    def at(pat):
        for i, l in enumerate(lines):
            if re.search(pat, l):
                return i
        return -1
    tools, ctest = at(r"install-deps\.sh --test-tools"), at(r"\bctest\b")
    summ = at(r"ctest_verdict\.py --summary \S*" + re.escape(junit))
    check(0 <= tools < ctest, "%s installs the test tools before ctest: %r"
          % (target, out))
    check(re.search(r"--output-junit \S*" + re.escape(junit), out),
          "%s: ctest writes %s" % (target, junit))
    check(summ >= ctest, "%s: the summary comes after ctest" % target)

rc, out, err = run(os.path.join(SRC, "scripts", "install-deps.sh"), "--list",
                   "--test-tools")
pkgs = out.split()
for p in ("libjemalloc2", "protobuf-compiler", "chromium", "golang-go",
          "lintian", "pandoc", "rsyslog", "tmux"):
    check(p in pkgs, "install-deps.sh --test-tools installs %s: %r" %
          (p, pkgs))
rc, out, err = run(os.path.join(SRC, "scripts", "install-deps.sh"), "--list")
check("pandoc" in out.split() and "libncurses-dev" in out.split() and
      "chromium" not in out.split() and "tmux" not in out.split(),
      "the build's own list: pandoc and libncurses-dev (top's screen), no "
      "test tool: %r" % out)
shutil.rmtree(TMP, ignore_errors=True)
done("tooling_make_test")
