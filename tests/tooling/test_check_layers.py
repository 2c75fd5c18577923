#!/usr/bin/env python3
"""scripts/check_layers.py passes on the tree, and fails on each kind of
violation planted in a copy of it: an include of a layer above (shim and
analyzer), a prototype in a lower layer's header whose body lives above,
and an allowed exception that no longer happens.

usage: test_check_layers.py SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

src = sys.argv[1]
script = os.path.join(src, "scripts", "check_layers.py")
failures = 0


def run(root):
    p = subprocess.run([sys.executable, "-B", script, root],
                       capture_output=True, text=True)
    return p.returncode, p.stdout


def expect(what, root, rc, needle):
    global failures
    got, out = run(root)
    ok = got == rc and needle in out
    print("%s: %s (rc %d%s)" % ("ok" if ok else "FAIL", what, got,
                                "" if ok else ", output: " + out.strip()))
    failures += not ok


def append(root, rel, text):
    with open(os.path.join(root, rel), "a") as f:
        f.write(text)


def planted(plant):
    tmp = tempfile.mkdtemp(prefix="layers.")
    for tree in ("shim", "analyzer"):
        shutil.copytree(os.path.join(src, tree), os.path.join(tmp, tree))
    plant(tmp)
    return tmp


expect("the tree as it is", src, 0, "")
cases = [
    ("a core file includes a control header",
     lambda r: append(r, "shim/core/stack.c", '\n#include "control.h"\n'),
     "shim/core/stack.c"),
    ("a model file includes an output header",
     lambda r: append(r, "analyzer/model/model.c", '\n#include "json.h"\n'),
     "analyzer/model/model.c"),
    ("a core header declares a function defined in hooks/",
     lambda r: (append(r, "shim/core/stack.h",
                       "\nint layers_planted(int x);\n"),
                append(r, "shim/hooks/alloc_hooks.c",
                       "\nint layers_planted(int x)\n{\n\treturn x;\n}\n")),
     "declares layers_planted"),
    ("an allowed up-call that is gone",
     lambda r: os.remove(os.path.join(r, "analyzer/model/sites.c")),
     "is not used any more"),
]
for what, plant, needle in cases:
    root = planted(plant)
    try:
        expect(what, root, 1, needle)
    finally:
        shutil.rmtree(root)
print("check_layers: %d failure(s)" % failures)
sys.exit(1 if failures else 0)
