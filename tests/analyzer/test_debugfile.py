#!/usr/bin/env python3
"""Separate debug files and the missing-symbols hint.

A copy of debugfile is stripped as Debian strips its packages (the DWARF
into a .debug file, .gnu_debuglink in the binary) and recorded. With the
debug file moved away, frames in it stay addresses and the report says
how many, in which module, and how to get them; a fake dpkg on PATH names
the package to install (a hung one does not hang the report). With the
debug file found (--debug-dir DIR holding it by its .gnu_debuglink name
or in the .build-id layout, or in the debuginfod client's cache), the
frames are named. A FIFO where a debug file would be does not block.

usage: test_debugfile.py MALLOCK MKTRACE SRCDIR SHIM DEBUGFILE"""
import shutil
import stat
import subprocess
import time
from common import *

SHIM, APP = sys.argv[4], sys.argv[5]
for tool in ("objcopy", "strip", "readelf"):
    if not shutil.which(tool):
        print("SKIP: %s (binutils) is not installed" % tool)
        sys.exit(77)


def sh(*cmd):
    r = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(cmd), r.stderr))
    return r.stdout


bindir = os.path.join(TMP, "bin")
os.makedirs(bindir)
prog = os.path.join(bindir, "dbgprog")
shutil.copy(APP, prog)
dbg = prog + ".debug"
sh("objcopy", "--only-keep-debug", prog, dbg)
sh("strip", "--strip-debug", "--strip-unneeded", prog)
sh("objcopy", "--add-gnu-debuglink=" + dbg, prog)
build_id = None
for line in sh("readelf", "-n", prog).splitlines():
    if "Build ID:" in line:
        build_id = line.split("Build ID:")[1].strip()
check(build_id and len(build_id) > 2, "the program has a build-id")

trace = os.path.join(TMP, "dbg.trace")
r = subprocess.run([prog], env=dict(os.environ, LD_PRELOAD=SHIM,
                                    MALLOCK_OUTPUT=trace),
                   capture_output=True, text=True, timeout=120)
eq(r.returncode, 0, "dbgprog ran (stderr %r)" % r.stderr)

# The debug file leaves the binary's directory (where libdw would find it
# by its debuglink name).
store = os.path.join(TMP, "store")
os.makedirs(store)
os.rename(dbg, os.path.join(store, "dbgprog.debug"))
root = os.path.join(TMP, "root", ".build-id", build_id[:2])
os.makedirs(root)
shutil.copy(os.path.join(store, "dbgprog.debug"),
            os.path.join(root, build_id[2:] + ".debug"))
home = os.path.join(TMP, "home")
os.makedirs(os.path.join(home, ".cache", "debuginfod_client", build_id))
shutil.copy(os.path.join(store, "dbgprog.debug"),
            os.path.join(home, ".cache", "debuginfod_client", build_id,
                         "debuginfo"))
fifo = os.path.join(TMP, "fifo")
os.makedirs(os.path.join(fifo, ".build-id", build_id[:2]))
os.mkfifo(os.path.join(fifo, ".build-id", build_id[:2],
                       build_id[2:] + ".debug"))
os.mkfifo(os.path.join(fifo, "dbgprog.debug"))

fakebin = os.path.join(TMP, "fakebin")
os.makedirs(fakebin)
hungbin = os.path.join(TMP, "hungbin")
os.makedirs(hungbin)
for d, body in ((fakebin, 'echo "dbgprog-core:amd64: $3"'),
                (hungbin, "exec sleep 60")):
    p = os.path.join(d, "dpkg")
    with open(p, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(p, 0o755)
base_env = dict(os.environ, HOME=os.path.join(TMP, "nohome"))
for k in ("DEBUGINFOD_CACHE_PATH", "XDG_CACHE_HOME", "DEBUGINFOD_URLS"):
    base_env.pop(k, None)


def report(fmt, *args, env=None, timeout=60):
    cmd = [MALLOCK, "report", "--format=" + fmt] + list(args) + [trace]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=env or base_env, timeout=timeout)
    no_sanitizer_finding(cmd, r.stderr)
    eq(r.returncode, 0, "%s: %s" % (" ".join(cmd), r.stderr))
    out = json.loads(r.stdout) if fmt == "json" and r.returncode == 0 else r.stdout
    return out, time.monotonic() - t0


def functions(d):
    return json.dumps(d)


def missing(d):
    t = d.get("traces") if isinstance(d, dict) else None
    return t[0].get("missing_symbols", []) if t else []


# (a) no debug file anywhere: unnamed, and the report says so.
d, _ = report("json")
check("dbgf_fill_under_lock" not in functions(d),
      "stripped: no function names without the debug file")
m = missing(d)
check(len(m) == 1 and m[0]["module"] == prog and m[0]["frames"] > 0 and
      m[0]["build_id"] == build_id,
      "JSON missing_symbols names the stripped module: %r" % m)
check(m and m[0]["package"] is None and "--debug-dir" in m[0]["hint"],
      "no package owns it: the hint says --debug-dir: %r" % m)
txt, _ = report("text")
check("stayed unnamed" in txt and prog in txt and "--debug-dir" in txt,
      "text: how many stayed unnamed, where, and how to get them")

# dpkg owns it: the package to install.
env = dict(base_env, PATH=fakebin + ":" + base_env["PATH"])
d, _ = report("json", env=env)
m = missing(d)
check(m and m[0]["package"] == "dbgprog-core" and
      "install dbgprog-core-dbgsym" in m[0]["hint"],
      "dpkg -S names the package: %r" % m)
txt, _ = report("text", env=env)
check("install dbgprog-core-dbgsym" in txt, "text: the package to install")
# A dpkg that never answers delays the report by its bound (3 s), no more.
env = dict(base_env, PATH=hungbin + ":" + base_env["PATH"])
d, secs = report("json", env=env, timeout=30)
check(secs < 15 and missing(d) and missing(d)[0]["package"] is None,
      "a hung dpkg: report in %.1f s, no package" % secs)
check(missing(d) and "did not answer in time" in missing(d)[0]["hint"] and
      "build it with -g" not in missing(d)[0]["hint"],
      "a hung dpkg: the hint says dpkg did not answer, not to rebuild a "
      "file a package may own: %r" % missing(d))

# (b) the debug file found: named, and nothing missing in the program.
for what, args, env in (
        ("--debug-dir holding DEBUGLINK", ["--debug-dir", store], None),
        ("--debug-dir holding .build-id/", ["--debug-dir",
                                            os.path.join(TMP, "root")], None),
        ("the debuginfod cache", [], dict(base_env, HOME=home))):
    d, _ = report("json", *args, env=env)
    check("dbgf_fill_under_lock" in functions(d) and
          "dbgf_worker" in functions(d), what + ": frames named")
    check(not [x for x in missing(d) if x["module"] == prog],
          what + ": nothing missing in the program: %r" % missing(d))
txt, _ = report("text", "--debug-dir", store)
check("dbgf_fill_under_lock" in txt, "text with --debug-dir: named")

# Another program's debug file under this one's debuglink name: not taken
# (its build-id differs), so no wrong names.
other = os.path.join(TMP, "other")
os.makedirs(other)
sh("objcopy", "--only-keep-debug", MKTRACE, os.path.join(other, "dbgprog.debug"))
d, _ = report("json", "--debug-dir", other)
check("dbgf_fill_under_lock" not in functions(d) and
      [x for x in missing(d) if x["module"] == prog],
      "a debug file of another build is not used: %r" % missing(d))

# The stripped program itself where a debug file would be, by its build-id
# (the same build-id, no DWARF), and the real one by its debuglink name in
# the same --debug-dir: the one without DWARF is passed over.
both = os.path.join(TMP, "both")
os.makedirs(os.path.join(both, ".build-id", build_id[:2]))
shutil.copy(prog, os.path.join(both, ".build-id", build_id[:2],
                               build_id[2:] + ".debug"))
shutil.copy(os.path.join(store, "dbgprog.debug"), both)
d, _ = report("json", "--debug-dir", both)
check("dbgf_fill_under_lock" in functions(d),
      "a file of the same build-id without DWARF is not used: %r" %
      missing(d))

# FIFOs where the debug files would be: no hang, frames stay addresses.
d, secs = report("json", "--debug-dir", fifo, timeout=30)
check("dbgf_fill_under_lock" not in functions(d) and secs < 15,
      "FIFOs as debug files: skipped in %.1f s" % secs)

# Bad input: a usage error (the line, then the hint), exit 2.
r = subprocess.run([MALLOCK, "report", "--debug-dir",
                    os.path.join(TMP, "nonexistent"), trace],
                   capture_output=True, text=True, timeout=30)
check(r.returncode == 2 and "--debug-dir" in r.stderr and
      r.stderr.splitlines()[1:] == ["try 'mallock report --help'"],
      "--debug-dir of no directory: %d %r" % (r.returncode, r.stderr))
done("analyzer_debugfile")
