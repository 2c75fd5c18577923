#!/usr/bin/env python3
"""`cmake --install` into a temporary prefix, then the installed tree as
its users meet it:
- a man page per command `mallock --help` lists, and mallock(1), each
  rendered by man(1) with its own name in NAME; every `mallock-X(1)` the
  docs and the README name is one of them;
- `pkg-config --cflags mallock` and CMake's find_package(mallock CONFIG)
  compile a program that includes mallock.h (nothing to link: weak
  symbols);
- the bash completion completes commands, options and option values;
- PREFIX/bin/mallock records /bin/true with PREFIX's own shim."""
import glob
import gzip
import shutil
import sys
import tempfile

from common import *

BUILD, SRC = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="mallock-install-")
P = os.path.join(TMP, "prefix")
rc, out, err = run(["cmake", "--install", BUILD, "--prefix", P])
if not check(rc == 0, "cmake --install: %d %s" % (rc, err)):
    done("install_tree")

# ---- man pages ------------------------------------------------------------
man1 = os.path.join(P, "share", "man", "man1")
pages = ["mallock"] + ["mallock-" + c for c in
                       commands(os.path.join(P, "bin", "mallock"))]
summaries = {}
for page in pages:
    f = os.path.join(man1, page + ".1.gz")
    if not check(os.path.isfile(f), "man page " + f):
        continue
    src = gzip.open(f, "rt").read()
    check(re.search(r'^\.TH "%s" "1"' % re.escape(page), src, re.M),
          "%s: title line .TH %s 1" % (f, page))
    if shutil.which("man"):
        rc, text, err = run(["man", "-l", f],
                            env=dict(os.environ, MANWIDTH="80"))
        check(rc == 0 and re.search(r"^NAME\n\s+%s\s+-\s+\S" % re.escape(page),
                                    text, re.M),
              "man -l %s: NAME says %s: %r" % (f, page, text[:300]))
        check("SYNOPSIS" in text and "DESCRIPTION" in text,
              "%s: SYNOPSIS and DESCRIPTION" % page)
        m = re.search(r"^NAME\n\s+\S+\s+-\s+(.*)", text, re.M)
        summaries[page] = m.group(1) if m else ""
        # groff's warnings (lintian's groff-message): none, as man(1)
        # renders the page and as groff itself does (with tbl).
        rc, _, err = run(["man", "--warnings", "-E", "UTF-8", "-l", f],
                         env=dict(os.environ, LC_ALL="C.UTF-8",
                                  MANROFFSEQ="", MANWIDTH="80"))
        check(rc == 0 and not err.strip(),
              "%s: man --warnings: %r" % (page, err))
    if shutil.which("groff"):
        for pre in ([], ["-t"]):
            r = subprocess.run(["groff"] + pre + ["-man", "-ww", "-z"],
                               input=src, capture_output=True, text=True,
                               env=dict(os.environ, LC_ALL="C.UTF-8"))
            check(r.returncode == 0 and not r.stderr.strip(),
                  "%s: groff %s-man -ww -z: %r"
                  % (page, " ".join(pre + [""]), r.stderr))
if summaries.get("mallock-detach"):
    check(summaries["mallock-detach"] != summaries.get("mallock-attach") and
          "attach" in summaries["mallock-detach"],
          "whatis mallock-detach: its own NAME line: %r" % summaries)
refs = set()
for doc in glob.glob(os.path.join(SRC, "docs", "*.md")) + \
        [os.path.join(SRC, "README.md")]:
    refs |= set(re.findall(r"\b(mallock(?:-[a-z]+)?)\(1\)", open(doc).read()))
check("mallock-diff" in refs, "the docs name mallock-diff(1): %r" % refs)
for ref in sorted(refs):
    check(os.path.isfile(os.path.join(man1, ref + ".1.gz")),
          "%s(1), named in the docs, is installed" % ref)

# ---- mallock.h through pkg-config and CMake -----------------------------
prog = os.path.join(TMP, "use.c")
with open(prog, "w") as f:
    f.write('#include <mallock.h>\n#include <stdio.h>\n'
            'int main(void) { int l; mallock_lock_name(&l, "l");\n'
            '  printf("%d\\n", mallock_recording(1)); return 0; }\n')
env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(P, "share", "pkgconfig"))
rc, cflags, err = run(["pkg-config", "--cflags", "mallock"], env=env)
check(rc == 0 and "include" in cflags, "pkg-config --cflags: %d %s %s"
      % (rc, cflags, err))
rc, mv, err = run(["pkg-config", "--modversion", "mallock"], env=env)
check(rc == 0 and re.fullmatch(r"\d+\.\d+\.\d+\n", mv),
      "pkg-config --modversion: %r" % mv)
exe = os.path.join(TMP, "use")
rc, out, err = run(["cc", "-Werror", "-o", exe, prog] + cflags.split())
check(rc == 0, "cc with pkg-config's flags: %s" % err)
if rc == 0:
    rc, out, err = run([exe])
    check(rc == 0 and out == "-1\n", "without the shim: -1, got %r" % out)
proj = os.path.join(TMP, "proj")
os.mkdir(proj)
shutil.copy(prog, proj)
with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
    f.write("cmake_minimum_required(VERSION 3.20)\nproject(use C)\n"
            "find_package(mallock 0.1 CONFIG REQUIRED)\n"
            "add_executable(use use.c)\n"
            "target_link_libraries(use PRIVATE mallock::mallock)\n")
rc, out, err = run(["cmake", "-S", proj, "-B", os.path.join(proj, "b"),
                    "-DCMAKE_PREFIX_PATH=" + P])
check(rc == 0, "find_package(mallock CONFIG): %s" % err[-500:])
if rc == 0:
    rc, out, err = run(["cmake", "--build", os.path.join(proj, "b")])
    check(rc == 0, "build with mallock::mallock: %s" % (out + err)[-500:])

# ---- bash completion --------------------------------------------------------
comp = os.path.join(P, "share", "bash-completion", "completions", "mallock")
check(os.path.isfile(comp), "completion installed at " + comp)


def complete(*words):
    script = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _mallock; '
              'printf "%%s\\n" "${COMPREPLY[@]}"' %
              (comp, " ".join("'%s'" % w for w in words), len(words) - 1))
    # The completion asks `mallock CMD --help`: the installed one, on PATH.
    env = dict(os.environ, PATH=os.path.join(P, "bin") + ":" +
               os.environ.get("PATH", ""))
    rc, out, err = run(["bash", "--norc", "-c", script], cwd=TMP, env=env)
    check(rc == 0, "completion of %r: %s" % (words, err))
    return sorted(out.split())


if os.path.isfile(comp):
    check(complete("mallock", "re") == ["record", "report"],
          "mallock re<TAB>: %r" % complete("mallock", "re"))
    check(complete("mallock", "report", "--format=p") ==
          ["--format=perfetto", "--format=pprof"],
          "report --format=p<TAB>: %r" % complete("mallock", "report",
                                                  "--format=p"))
    check("--merged" in complete("mallock", "dump", "--"),
          "dump --<TAB> offers --merged")
    check(complete("mallock", "ctl", "st") == ["start", "status", "stop"],
          "ctl st<TAB>: %r" % complete("mallock", "ctl", "st"))
    check(complete("mallock", "record", "--unwind", "") ==
          ["fp", "libunwind", "none"], "record --unwind <TAB>")
    check("--wake" in complete("mallock", "ctl", "start", "--"),
          "ctl start --<TAB> offers --wake")

# ---- the installed tree runs ------------------------------------------------
record_true(P, "bin", "lib", TMP)
shutil.rmtree(TMP, ignore_errors=True)
done("install_tree")
