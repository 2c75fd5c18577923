#!/usr/bin/env python3
"""The commands' surface: `mallock report -` reads the trace from the
standard input (a pipe and a redirected file give the report of the file);
every numeric option refuses a value that is not a whole number in range
with the line "mallock CMD: OPTION 'VALUE': not a whole number from MIN to
MAX", the hint "try 'mallock CMD --help'" and the usage error status 2 in
every command; `diff --help` and `dump --help` describe each option; every
usage error starts with "mallock CMD: " (test_usage.py: every command
with every bad form)."""
import re

from common import *

trace, _ = mktrace("cascade", "c.trace", "--rounds", 50)
rc, want, err = run("report", "--format=json", trace)
eq(rc, 0, "report of the file")
want = json.loads(want)


def stdin_report(how, *args):
    cmd = [MALLOCK, "report"] + list(args) + ["-"]
    if how == "pipe":
        data = open(trace, "rb").read()
        r = subprocess.run(cmd, input=data, capture_output=True)
    else:
        with open(trace, "rb") as f:
            r = subprocess.run(cmd, stdin=f, capture_output=True)
    no_sanitizer_finding(cmd, r.stderr.decode())
    return r.returncode, r.stdout.decode(), r.stderr.decode()


for how in ("pipe", "file"):
    rc, out, err = stdin_report(how, "--format=json")
    eq(rc, 0, "report - from a %s: %s" % (how, err))
    if rc == 0:
        got = json.loads(out)
        eq(got["findings"], want["findings"], "findings from a " + how)
        eq(got["locks"], want["locks"], "locks from a " + how)
    rc, out, err = stdin_report(how)
    check(rc == 0 and "\n-: pid " in out, "text names the trace '-' (%s)"
          % how)
# A binary output reads the trace twice: from a pipe too.
pb = os.path.join(TMP, "p.pb")
rc, out, err = stdin_report("pipe", "--format=pprof", "-o", pb)
check(rc == 0 and os.path.getsize(pb) > 0, "pprof from a pipe: %d %s"
      % (rc, err))
r = subprocess.run([MALLOCK, "report", "-"], input=b"not a trace at all",
                   capture_output=True)
eq(r.returncode, 2, "junk on stdin: not a trace")
r = subprocess.run([MALLOCK, "report", "-", "-"],
                   input=open(trace, "rb").read(), capture_output=True)
check(r.returncode == 1 and b"only once" in r.stderr,
      "stdin twice: %d %r" % (r.returncode, r.stderr))

# Numeric options: (status, argv..., option, range).
cases = [
    (2, ["report", "--top=abc", trace], "report", "--top", "abc", 0, 1000000),
    (2, ["report", "--top=-5", trace], "report", "--top", "-5", 0, 1000000),
    (2, ["report", "--top=1e3", trace], "report", "--top", "1e3", 0,
     1000000),
    (2, ["report", "--top", "99999999999999999999", trace], "report",
     "--top", "99999999999999999999", 0, 1000000),
    (2, ["report", "--top=", trace], "report", "--top", "", 0, 1000000),
    (2, ["record", "--depth", "0", "--", "true"], "record", "--depth", "0",
     1, 64),
    (2, ["record", "--depth", "8x", "--", "true"], "record", "--depth",
     "8x", 1, 64),
    (2, ["record", "--compress-level", "20", "--", "true"], "record",
     "--compress-level", "20", 1, 19),
    (2, ["compress", "--level", "x", trace], "compress", "--level", "x",
     1, 19),
    (2, ["ctl", "status", "12x"], "ctl", "process id", "12x", 1, 4194304),
    (2, ["ctl", "stop", "--tree", "3x"], "ctl", "process id", "3x", 1,
     4194304),
    (2, ["attach", "--duration", "0", "1"], "attach",
     "--duration (seconds)", "0", 1, 31536000),
    (2, ["attach", "9999999999"], "attach", "process id", "9999999999", 1,
     4194304),
    (2, ["detach", "x1"], "detach", "process id", "x1", 1, 4194304),
]
for status, argv, cmd, opt, val, lo, hi in cases:
    rc, out, err = run(*argv)
    line = ("mallock %s: %s '%s': not a whole number from %d to %d\n"
            "try 'mallock %s --help'\n" % (cmd, opt, val, lo, hi, cmd))
    eq((rc, err), (status, line), " ".join(argv))
rc, out, err = run("report", "--top=0", trace)
eq(rc, 0, "--top=0 is a number")
for v in ("soon", "-1s", "5 ms"):
    rc, out, err = run("report", "--format=perfetto", "-o",
                       os.path.join(TMP, "x.pftrace"), "--from=" + v, trace)
    eq((rc, err), (2, "mallock report: --from '%s': not a time (seconds, or "
                   "a number with s, ms, us or ns)\n"
                   "try 'mallock report --help'\n" % v), "--from=" + v)

# The help of diff and dump: each option with what it does.
rc, out, err = run("diff", "--help")
eq(rc, 0, "diff --help")
for opt in ("--format=text|json", "--no-symbols", "--help"):
    check(re.search(r"^  .*%s\s+\S" % re.escape(opt), out, re.M),
          "diff --help describes %s: %r" % (opt, out))
rc, out, err = run("dump", "--help")
eq(rc, 0, "dump --help")
for opt in ("--merged", "--help"):
    check(re.search(r"^  .*%s\s+\S" % re.escape(opt), out, re.M),
          "dump --help describes %s: %r" % (opt, out))

# Usage errors: the first line names the command.
for argv, cmd in ((["diff", "--format=xml", trace, trace], "diff"),
                  (["dump", "--bogus", trace], "dump"),
                  (["dump"], "dump"),
                  (["dump", trace, trace], "dump"),
                  (["report", "--format=xml", trace], "report"),
                  (["report", "-o", "/nonexistent/dir/x", trace], "report"),
                  (["compress", "--bogus"], "compress"),
                  (["record", "--bogus"], "record"),
                  (["ctl", "status", "0"], "ctl")):
    rc, out, err = run(*argv)
    check(rc != 0 and err.startswith("mallock %s: " % cmd),
          "%s: %d %r" % (" ".join(argv), rc, err))
done("analyzer_cli")
