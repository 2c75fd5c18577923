#!/usr/bin/env python3
"""C++ names in the text report are short: no parameter
lists unless overloads meet (then with short types), std::string for
std::__cxx11::basic_string<char, ...>; JSON keeps the full names; stacks
that reach one site and read the same say where they part.

usage: test_cxxnames.py MALLOCK MKTRACE SRCDIR SHIM CXXNAMES"""
import subprocess
from common import *

SHIM, APP = sys.argv[4], sys.argv[5]
trace = os.path.join(TMP, "cxx.trace")
r = subprocess.run([APP], env=dict(os.environ, LD_PRELOAD=SHIM,
                                   MALLOCK_OUTPUT=trace),
                   capture_output=True, text=True, timeout=120)
eq(r.returncode, 0, "cxxnames ran (stderr %r)" % r.stderr)
rc, out, err = run("report", "--top", 20, trace)
eq(rc, 0, "report: " + err)
check("std::__cxx11" not in out and "basic_string<" not in out,
      "text: no std::__cxx11::basic_string")
check("Registry::add (cxxnames.cc:" in out,
      "text: Registry::add without its parameter list")
check("Registry::add(" not in out, "text: no parameters for Registry::add")
check("put(std::string const&, int) (cxxnames.cc:" in out and
      "put(std::string const&, std::string const&) (cxxnames.cc:" in out,
      "text: the put overloads with short parameter types")
# put's allocations come from several library paths (the map's node, the
# vector's growth, the string): stacks that read the same in the user's
# frames say where they part.
check("parts at std::" in out, "text: where the stacks reaching a site part")
d = report_json(trace)
fns = {f["site"]["function"] for f in d["findings"] if f.get("site")}
check(any(f.startswith("Registry::add(std::__cxx11::basic_string<char, "
                       "std::char_traits<char>, std::allocator<char> > "
                       "const&)") for f in fns),
      "JSON: full names: %s" % sorted(fns))
done("analyzer_cxxnames")
