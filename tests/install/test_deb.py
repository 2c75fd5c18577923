#!/usr/bin/env python3
"""The .deb CPack makes from the build (cpack -G DEB), unpacked with
dpkg-deb -x into a temporary root: ROOT/usr/bin/mallock records /bin/true
with ROOT/usr/lib/mallock/libmallock.so (found relative to itself, not
through the build tree or /usr), the package holds the man pages, .pc,
CMake config, completion, copyright and changelog, and lintian (installed
with apt-get when missing; Debian's package checker) reports no error and
no warning: each tag left is overridden in the package's lintian
overrides after a comment giving the reason, and each override is used.
Exits 77 only when lintian is missing and cannot be installed (not root,
or apt-get failed), after every other check passed."""
import shutil
import sys
import tempfile

from common import *

BUILD, SRC = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="mallock-deb-")
rc, out, err = run(["cpack", "-G", "DEB", "-B", os.path.join(TMP, "pkg"),
                    "--config", os.path.join(BUILD, "CPackConfig.cmake")])
debs = [os.path.join(TMP, "pkg", f) for f in
        os.listdir(os.path.join(TMP, "pkg"))
        if f.endswith(".deb")] if rc == 0 else []
if not check(rc == 0 and len(debs) == 1, "cpack -G DEB: %d %s %s"
             % (rc, out[-500:], err[-500:])):
    done("install_deb")
deb = debs[0]
rc, info, err = run(["dpkg-deb", "-f", deb, "Package", "Depends",
                     "Recommends"])
check(rc == 0 and "Package: mallock" in info and "libunwind" in info,
      "control: %r %s" % (info, err))
# The completion's option values need bash-completion's _init_completion.
check(re.search(r"^Recommends: .*\bbash-completion\b", info, re.M),
      "Recommends bash-completion: %r" % info)
root = os.path.join(TMP, "root")
rc, out, err = run(["dpkg-deb", "-x", deb, root])
check(rc == 0, "dpkg-deb -x: %s" % err)
for f in ("usr/bin/mallock", "usr/lib/mallock/libmallock.so",
          "usr/include/mallock.h", "usr/share/pkgconfig/mallock.pc",
          "usr/share/cmake/mallock/mallockConfig.cmake",
          "usr/share/bash-completion/completions/mallock",
          "usr/share/man/man1/mallock.1.gz",
          "usr/share/man/man1/mallock-report.1.gz",
          "usr/share/doc/mallock/copyright",
          "usr/share/doc/mallock/changelog.gz"):
    check(os.path.isfile(os.path.join(root, f)), "in the .deb: " + f)
record_true(root, "usr/bin", "usr/lib", TMP)

lintian = shutil.which("lintian")
why = "not root: apt-get cannot install it"
if not lintian and os.geteuid() == 0:
    print("lintian missing: apt-get install -y lintian")
    r = subprocess.run("apt-get install -y -qq --no-install-recommends "
                       "lintian || (apt-get update -qq && apt-get install "
                       "-y -qq --no-install-recommends lintian)", shell=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"),
                       capture_output=True, text=True)
    lintian = shutil.which("lintian")
    why = "apt-get install lintian: exit %d %s" % (r.returncode,
                                                  r.stderr.strip()[-300:])
if lintian:
    # Clean: no error, no warning; a tag left is overridden in the
    # package's overrides, each after a comment saying why (lintian shows
    # it as N: before the O: line).
    rc, out, err = run([lintian, "--show-overrides", deb])
    lines = (out + err).splitlines()
    tags = [l for l in lines if re.match(r"^[EWX]: ", l)]
    check(not tags, "lintian: errors or warnings: %r" % tags)
    ov = os.path.join(root, "usr/share/lintian/overrides/mallock")
    check(os.path.isfile(ov), "in the .deb: the lintian overrides " + ov)
    prev = ""
    for l in open(ov).read().splitlines() if os.path.isfile(ov) else []:
        if l.startswith("mallock:"):
            check(prev.startswith("#") or prev.startswith("mallock:"),
                  "override %r follows a comment saying why" % l)
            check(any(o.startswith("O: " + l) for o in lines),
                  "override %r is used by lintian (it names a tag lintian "
                  "reports)" % l)
        prev = l if l.strip() else ""
shutil.rmtree(TMP, ignore_errors=True)
if not lintian and not pycheck.failures:
    print("SKIP: lintian cannot be installed here (%s); "
          "scripts/install-deps.sh --test-tools installs it" % why)
    sys.exit(77)
done("install_deb")
