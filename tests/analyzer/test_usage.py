#!/usr/bin/env python3
"""One command line (docs/mallock.md, "Options" and "Exit status"): every
command, run with each bad form (an unknown option, long and short, a bad
number, an option without its value, a missing operand, an extra operand),
exits 2 with the first line "mallock CMD: what is wrong" and the second
"try 'mallock CMD --help'"; the good forms of every option syntax are
taken by every command alike (--opt=V, --opt V, -oFILE, -o FILE); each
option --help lists is one the parser knows; `mallock help CMD` is CMD's
--help; `record -- /nonexistent/prog` says the exec failed and exits
127."""
import re
import shutil

from common import *

trace, _ = mktrace("cascade", "c.trace", "--rounds", 20)

# command: (operands that are good, the form of each bad kind). A form is
# (argv after the command, the first line wanted after "mallock CMD: ");
# None where the command has no such thing (dump and diff take no
# number, record and report any number of operands).
PID = str(os.getpid())
NUM = "'%s': not a whole number from %d to %d"
TABLE = {
    "report": dict(
        number=(["--top=abc", trace], "--top " + NUM % ("abc", 0, 1000000)),
        value=([trace, "--top"], "option '--top' needs a value"),
        missing=([], "missing TRACE (a file, or - for the standard input)"),
        extra=None),
    "record": dict(
        number=(["--depth=0", "--", "true"],
                "--depth " + NUM % ("0", 1, 64)),
        value=(["--depth"], "option '--depth' needs a value"),
        missing=(["--depth=8"], "missing CMD (the program to run)"),
        extra=None),
    "compress": dict(
        number=(["--level=x", trace], "--level " + NUM % ("x", 1, 19)),
        value=([trace, "--level"], "option '--level' needs a value"),
        missing=(["--level=5"], "missing TRACE"),
        extra=(["-o", os.path.join(TMP, "x"), trace, trace],
               "-o takes one TRACE, not 2")),
    "diff": dict(
        number=None,
        value=([trace, trace, "--format"], "option '--format' needs a value"),
        missing=([trace], "missing BEFORE AFTER (two traces)"),
        extra=([trace, trace, trace], "extra operand '%s'" % trace)),
    "dump": dict(
        number=None,
        value=None,
        missing=(["--merged"], "missing TRACE"),
        extra=([trace, "x"], "extra operand 'x'")),
    "ctl": dict(
        number=(["status", "12x"], "process id " + NUM % ("12x", 1, 4194304)),
        value=(["status", "--exe"], "option '--exe' needs a value"),
        missing=(["status"], "missing PID (or --exe=NAME)"),
        extra=(["status", PID, "7"], "extra operand '7'")),
    "attach": dict(
        number=(["--duration=0", PID],
                "--duration (seconds) " + NUM % ("0", 1, 31536000)),
        value=([PID, "--duration"], "option '--duration' needs a value"),
        missing=(["-o", os.path.join(TMP, "a.trace")],
                 "missing PID (the process to attach to)"),
        extra=([PID, "7"], "extra operand '7'")),
    "top": dict(
        number=(["--count=0", PID], "--count " + NUM % ("0", 1, 100000000)),
        value=([PID, "--count"], "option '--count' needs a value"),
        missing=(["--batch"], "missing PID, --attach PID or -- CMD"),
        extra=([PID, "7"],
               "extra operand '7' (a command to run follows --)")),
    "detach": dict(
        number=(["abc"], "process id " + NUM % ("abc", 1, 4194304)),
        value=None,
        missing=([], "missing PID (the process to detach from)"),
        extra=([PID, "7"], "extra operand '7'")),
}
# The operands that make a command line complete, for the unknown options.
GOOD = {"report": [trace], "record": ["--", "true"], "compress": [trace],
        "diff": [trace, trace], "dump": [trace], "ctl": ["status", PID],
        "attach": [PID], "detach": [PID], "top": [PID]}


def usage_error(argv, first):
    """argv exits 2, its stderr two lines: first, then the hint."""
    cmd = argv[0]
    rc, out, err = run(*argv)
    lines = err.splitlines()
    want = "mallock %s: " % cmd
    ok = lines[:1] == [want + first]
    check(rc == 2 and ok and lines[1:] == ["try 'mallock %s --help'" % cmd],
          "%s: exit %d, stderr %r (want 2, %r and the hint)"
          % (" ".join(argv), rc, err, want + str(first)))
    eq(out, "", " ".join(argv) + ": nothing on stdout")


for cmd, forms in TABLE.items():
    check(sorted(forms) == ["extra", "missing", "number", "value"],
          cmd + ": every bad form has a row")
    if cmd == "record":
        # '+': options end at CMD; before it they are record's
        usage_error([cmd, "--bogus", "--", "true"],
                    "unknown option '--bogus'")
        usage_error([cmd, "-Z", "--", "true"], "unknown option '-Z'")
        usage_error([cmd, "--no-compress=1", "--", "true"],
                    "option '--no-compress' takes no value")
    else:
        usage_error([cmd, "--bogus"] + GOOD[cmd], "unknown option '--bogus'")
        usage_error([cmd] + GOOD[cmd] + ["--bogus=3"],
                    "unknown option '--bogus'")
        usage_error([cmd, "-Z"] + GOOD[cmd], "unknown option '-Z'")
        usage_error([cmd, "--help=1"] + GOOD[cmd],
                    "option '--help' takes no value")
    for kind in ("number", "value", "missing", "extra"):
        if forms[kind]:
            argv, first = forms[kind]
            usage_error([cmd] + argv, first)

    # --help: stdout, status 0, written from the table the parser reads:
    # every long option it lists is one the parser knows.
    rc, out, err = run(cmd, "--help")
    check(rc == 0 and out.startswith("usage: mallock %s " % cmd)
          and err == "", "%s --help: %d %r" % (cmd, rc, err))
    longs = sorted(set(re.findall(r"^  (?:-\w, )?--([a-z-]+)", out, re.M)))
    check(len(longs) >= 1 and "help" in longs, cmd + " --help lists options")
    for o in longs:
        rc2, _, err2 = run(cmd, "--" + o)
        check(rc2 != 2 or "unknown option" not in err2,
              "%s --help lists --%s, which the parser does not know: %r"
              % (cmd, o, err2))
    rc2, out2, err2 = run("help", cmd)
    eq((rc2, out2, err2), (0, out, ""), "mallock help %s" % cmd)

# The dispatcher: the same two lines.
for argv, first in (([], "mallock: missing COMMAND"),
                    (["bogus"], "mallock: unknown command 'bogus'"),
                    (["help", "bogus"],
                     "mallock help: unknown command 'bogus'")):
    rc, out, err = run(*argv)
    eq((rc, err.splitlines()), (2, [first, "try 'mallock --help'"]),
       "mallock " + " ".join(argv))

# The good forms: every syntax getopt_long gives, in every command.
rep = os.path.join(TMP, "rep.txt")
rc, want, err = run("report", "--top=5", trace)
eq(rc, 0, "report --top=5: " + err)
for argv in (["report", "--top", "5", trace], ["report", trace, "--top=5"],
             ["report", "--top=5", "-o" + rep, trace],
             ["report", "--top=5", "--output=" + rep, trace],
             ["report", "--top=5", "-o", rep, trace]):
    if os.path.exists(rep):
        os.unlink(rep)
    rc, out, err = run(*argv)
    got = open(rep).read() if os.path.exists(rep) else out
    check(rc == 0 and got == want, "%s: %d %r" % (" ".join(argv), rc, err))
for i, opts in enumerate((["--depth=8", "-o%s"], ["--depth", "8", "-o", "%s"],
                          ["--compress-level=5", "--output=%s"])):
    out_path = os.path.join(TMP, "r%d.trace" % i)
    argv = ["record"] + [o.replace("%s", out_path) for o in opts] + \
        ["--", "true"]
    rc, out, err = run(*argv)
    check(rc == 0 and os.path.exists(out_path),
          "%s: %d %r" % (" ".join(argv), rc, err))
# record's options end at CMD: "-o" after it is the program's.
rc, out, err = run("record", "-o", os.path.join(TMP, "e.trace"), "sh", "-c",
                   'test "$1" = -o', "sh", "-o")
eq(rc, 0, "record CMD -o: -o is CMD's: " + err)
for i, opts in enumerate((["--level=5", "-o%s"], ["--level", "5", "-o", "%s"],
                          ["--level", "5", "--output=%s"])):
    out_path = os.path.join(TMP, "c%d.trace" % i)
    argv = ["compress"] + [o.replace("%s", out_path) for o in opts] + [trace]
    rc, out, err = run(*argv)
    check(rc == 0 and os.path.getsize(out_path) > 0,
          "%s: %d %r" % (" ".join(argv), rc, err))
# Not a usage error: a failure (1), the option taken.
rc, out, err = run("ctl", "status", "--exe=no-such-program-here")
check(rc == 1 and err.startswith("mallock ctl: no process named "),
      "ctl status --exe=NAME: %d %r" % (rc, err))

# An exec that fails: said, and as a shell has it.
rc, out, err = run("record", "--", "/nonexistent/prog")
eq((rc, err.splitlines()[:1]),
   (127, ["mallock record: cannot run /nonexistent/prog: exec failed: "
          "No such file or directory"]), "record -- /nonexistent/prog")
check("warnings above" not in err, "no warnings to point at: %r" % err)
plain = os.path.join(TMP, "plain")
shutil.copy(trace, plain)
os.chmod(plain, 0o644)
rc, out, err = run("record", "--", plain)
check(rc == 126 and "exec failed: Permission denied" in err,
      "record of a file that is not executable: %d %r" % (rc, err))
done("analyzer_usage")
