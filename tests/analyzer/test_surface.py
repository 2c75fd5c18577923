#!/usr/bin/env python3
"""What describes the command line agrees with the parser: each command's
--help (written from the option table its parser reads, cli.h) against
(1) its man page's source, docs/mallock-CMD.md, whose "Options" section
names every option --help lists, and lists as a bullet only options
--help knows; (2) the bash completion (packaging/mallock.bash-completion),
which offers exactly the options --help lists, "--name=" for those with a
value, and the values a --help gives as a|b|c; `mallock help` and every
command complete at the first word."""
import re
import subprocess

from common import *

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(SRCDIR)))
COMPLETION = os.path.join(ROOT, "packaging", "mallock.bash-completion")
COMMANDS = ["record", "report", "diff", "compress", "dump", "ctl", "attach",
            "detach", "top"]
OPT = re.compile(r"^  (?:(-\w), )?(--[a-z-]+)(=(\S+))?", re.M)


def help_options(cmd):
    """{"--name" or "-x": value or None} from `mallock CMD --help`."""
    rc, out, err = run(cmd, "--help")
    eq(rc, 0, cmd + " --help")
    opts = {}
    for m in OPT.finditer(out):
        opts[m.group(2)] = m.group(4)
        if m.group(1):
            opts[m.group(1)] = m.group(4)
    return opts


def options_section(cmd):
    page = "attach" if cmd == "detach" else cmd
    text = open(os.path.join(ROOT, "docs", "mallock-%s.md" % page)).read()
    m = re.search(r"^## Options\n(.*?)(?=^## )", text, re.M | re.S)
    check(m is not None, "docs/mallock-%s.md has an Options section" % page)
    return m.group(1) if m else ""


def complete(*words):
    """COMPREPLY of the completion for `mallock WORDS...` (the last word is
    the one being completed), in a bash without bash-completion."""
    words = [MALLOCK] + list(words)
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _mallock; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    r = subprocess.run(["bash", "--norc", "-c", script, "bash", COMPLETION]
                       + words, capture_output=True, text=True)
    eq(r.stderr, "", "completion of %s: no error" % " ".join(words[1:]))
    return sorted(w for w in r.stdout.split("\n") if w)


for cmd in COMMANDS:
    opts = help_options(cmd)
    check("--help" in opts and "-h" in opts, cmd + ": --help in its help")
    out = run(cmd, "--help")[1]
    check(max(map(len, out.splitlines())) <= 80,
          cmd + " --help fits 80 columns: %r" % out)
    # (1) the man page's source
    sec = options_section(cmd)
    if cmd == "detach":
        sec = ""  # attach's page: detach has no option but --help
    for o in opts:
        if o in ("--help", "-h") or cmd == "detach":
            continue
        check(re.search(r"`%s[`= ]" % re.escape(o), sec),
              "docs/mallock-%s.md, Options, names %s (in its --help)"
              % (cmd, o))
    for line in re.findall(r"^- (.*?):", sec, re.M):
        for o in re.findall(r"`(--?[a-zA-Z][a-z-]*)", line):
            check(o in opts, "docs/mallock-%s.md lists %s, which `mallock "
                  "%s --help` does not" % (cmd, o, cmd))
    # (2) the completion
    first = ["start"] if cmd == "ctl" else []
    want = sorted(o + ("=" if v and o.startswith("--") else "")
                  for o, v in opts.items())
    eq(complete(cmd, *first, "-"), want, "completion of mallock %s -" % cmd)
    for o, v in opts.items():
        if o.startswith("--") and v and re.fullmatch(r"[a-z-]+(\|[a-z-]+)+",
                                                     v):
            eq(complete(cmd, *first, o + "="),
               sorted(o + "=" + x for x in v.split("|")),
               "completion of mallock %s %s=" % (cmd, o))
check(set(COMMANDS + ["help"]) <= set(complete("")),
      "the commands complete: %r" % complete(""))
eq(complete("help", ""), sorted(COMMANDS), "mallock help completes commands")
eq(complete("ctl", ""), ["start", "status", "stop"], "ctl's requests")
done("analyzer_surface")
