#!/usr/bin/env python3
"""What describes the command line agrees with the parser: each command's
--help (written from the option table its parser reads, cli.h) against
(1) its man page's source, docs/mallock-CMD.md, whose "Options" section
names every option --help lists, and lists as a bullet only options
--help knows; (2) the bash completion (packaging/mallock.bash-completion),
which offers exactly the options --help lists, "--name=" for those with a
value, and the values a --help gives as a|b|c; `mallock help` and every
command complete at the first word; (3) the built man page
(BUILD/man/man1/mallock-CMD.1.gz), whose OPTIONS section opens with
`mallock help --man CMD`: one .TP paragraph per option of the table,
the same options --help lists, each with its help text."""
import gzip
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
# (3) the man pages the build made (packaging/man.cmake), unless the build
# was configured without them.
BUILD = os.path.dirname(os.path.dirname(os.path.abspath(MALLOCK)))
MAN1 = os.path.join(BUILD, "man", "man1")
cache = os.path.join(BUILD, "CMakeCache.txt")
man_off = os.path.isfile(cache) and \
    "MALLOCK_MAN:BOOL=OFF" in open(cache).read()
if man_off:
    print("note: configured with -DMALLOCK_MAN=OFF: no man page to compare")
for cmd in [] if man_off else COMMANDS:
    rc, frag, err = run("help", "--man", cmd)
    eq(rc, 0, "mallock help --man %s: %s" % (cmd, err))
    tps = frag.split(".TP\n")
    check(tps[0] == "" and len(tps) > 1,
          "help --man %s is .TP paragraphs: %r" % (cmd, frag[:200]))
    got = {}
    for tp in tps[1:]:
        label, _, text = tp.partition("\n")
        plain = label.replace("\\-", "-")
        val = re.search(r"\\fI([^\\]+)\\fR", plain)
        for n in re.findall(r"\\fB(-[a-z]|--[a-z-]+)\\fR", plain):
            got[n] = val.group(1) if val else None
        check(text.startswith("\\&") and len(text) > 3,
              "help --man %s: %s has its text: %r" % (cmd, label, text))
    eq(got, help_options(cmd), "help --man %s names --help's options and "
       "values" % cmd)
    for o, h in re.findall(r"^  (?:-\w, )?(--[a-z-]+)\S*\s+(\S[^\n]*)",
                           run(cmd, "--help")[1], re.M):
        if o != "--help":
            check(h.replace("\\", "\\e") in frag,
                  "help --man %s: %s says %r as --help does" % (cmd, o, h))
    f = os.path.join(MAN1, "mallock-%s.1.gz" % cmd)
    if not check(os.path.isfile(f), "man page " + f):
        continue
    src = gzip.open(f, "rt").read()
    check(frag in src, "%s holds `mallock help --man %s`" % (f, cmd))
    m = re.search(r"^\.SH OPTIONS\n(?:\.SS [^\n]*\n)?\.TP\n", src, re.M)
    check(m is not None, "%s: OPTIONS opens with the option list" % f)
check(set(COMMANDS + ["help"]) <= set(complete("")),
      "the commands complete: %r" % complete(""))
eq(complete("help", ""), sorted(COMMANDS), "mallock help completes commands")
eq(complete("ctl", ""), ["start", "status", "stop"], "ctl's requests")
done("analyzer_surface")
