#!/usr/bin/env python3
"""The shim's and the analyzer's folders are layers, bottom first.

shim/: prim/ (OS and libc), core/ (a call's data to bytes in the file),
hooks/ (the calls it records), control/ (the shim's life in its host:
init, ctl, attach, the event policy, and the host's lifecycle calls:
exec, exit, credentials, signals, the public API).

analyzer/: util/ < trace/ (bytes to records) < model/ (records to the
model) < symbols/ (addresses to names) < find/ (the model to findings) <
pipeline/ (one trace from file to findings) < output/ (findings to
bytes) < target/ (a running process) < cmd/ (the commands).

Two rules, each with the known exceptions listed here with their reasons:
- a file includes headers of its own layer and of the layers below, never
  of a layer above;
- a function declared in a header is defined in that header's layer or
  below: a prototype in a lower layer whose body lives above hides an
  up-call that the include rule cannot see.

usage: scripts/check_layers.py [ROOT]   (exit 1 on a violation)"""
import os
import re
import sys

TREES = {
    "shim": ["prim", "core", "hooks", "control"],
    "analyzer": ["util", "trace", "model", "symbols", "find", "pipeline",
                 "output", "target", "cmd"],
}

# (tree/folder/file, header): why the lower layer includes one above.
ALLOWED_INCLUDES = {
    ("shim/core/wbuf.c", "attach.h"):
        "an attached process's late-library walk after a flush",
    ("shim/core/writer.c", "control.h"):
        "ctl_capped: the byte cap ends the window and says so on the page; "
        "ctl_ever_recorded: a child that never had a window creates no "
        "file",
    ("shim/hooks/futex_hook.c", "control.h"):
        "syscall(SYS_rt_sigaction) tells ctl the wake signal may not be "
        "the shim's any more",
    ("shim/hooks/futex_hook.c", "exit_hooks.h"):
        "syscall(SYS_exit_group) runs the final flush before the process "
        "ends",
    ("analyzer/model/aggregate.c", "thresholds.h"):
        "the slow-call and short-life limits of the detectors, converted "
        "to ticks once per trace, decide what the model counts per site",
    ("analyzer/model/aggregate_alloc.c", "thresholds.h"):
        "a timed call past the preemption limits is set apart from the "
        "site's slow calls as it is counted",
    ("analyzer/model/lockfold.c", "thresholds.h"):
        "a lock taken as often as starvation compares (STARVE_MIN_OPS) "
        "keeps its own record: its per-thread counts may make a finding",
    ("analyzer/model/classes.h", "symbols.h"):
        "classes are keyed and named after symbolization",
    ("analyzer/model/classes.c", "symbols.h"):
        "a class's owner and maker are read from symbolized frames",
    ("analyzer/model/lock_names.c", "symbols.h"):
        "a lock's name is its symbol or the symbolized site that made it",
    ("analyzer/model/sites.c", "symbols.h"):
        "allocation sites are grouped by their symbolized first user frame",
}

# (tree/folder/header, function): why its body lives in a layer above.
ALLOWED_DEFINITIONS = {
    ("shim/core/tls.h", "hook_enter_slow"):
        "the slow half of the thread gate: a thread's first call sets up "
        "its state, which may start the shim (control/init.c)",
    ("shim/core/tls.h", "gate_take"):
        "the gate a hook takes; its slow path is the shim's start "
        "(control/init.c)",
    ("shim/core/event.h", "ev_commit_slow"):
        "the slow half of every event: a full or old buffer, a window "
        "closed by its duration or by ctl, is the event policy's "
        "(control/event.c)",
    ("shim/core/event.h", "acq_pend_flush"):
        "an event after a pending acquisition encodes it first, in the "
        "lock hooks' encoding (hooks/lock_hooks.c)",
}

ATTR = r"(?:__attribute__\(\([\w, ]+\)\)\s*)*"
PROTO = re.compile(r"^" + ATTR + r"[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*;",
                   re.M)
DEFN = re.compile(r"^" + ATTR + r"[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)"
                  r"\s*\{", re.M)
KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof"}


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"),
                  text, flags=re.S)


def check_tree(root, tree, layers):
    base = os.path.join(root, tree)
    layer_of, files = {}, []
    for rank, layer in enumerate(layers):
        for name in sorted(os.listdir(os.path.join(base, layer))):
            if name in layer_of:
                sys.exit("check_layers: %s is in both %s/ and %s/"
                         % (name, layers[layer_of[name]], layer))
            layer_of[name] = rank
            if name.endswith((".c", ".h")):
                files.append((rank, layer, name))
    bad = []
    declared, defined, used = {}, {}, set()
    for rank, layer, name in files:
        path = os.path.join(base, layer, name)
        rel = "%s/%s/%s" % (tree, layer, name)
        with open(path) as f:
            text = f.read()
        for no, line in enumerate(text.splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or m.group(1) not in layer_of:
                continue
            inc = m.group(1)
            if layer_of[inc] <= rank:
                continue
            if (rel, inc) in ALLOWED_INCLUDES:
                used.add((rel, inc))
                continue
            bad.append("%s:%d: includes %s/%s, a layer above %s/"
                       % (rel, no, layers[layer_of[inc]], inc, layer))
        code = strip_comments(text)
        if name.endswith(".h"):
            for m in PROTO.finditer(code):
                if m.group(1) not in KEYWORDS:
                    declared.setdefault(m.group(1), (rank, rel))
        else:
            for m in DEFN.finditer(code):
                if m.group(1) not in KEYWORDS and "static" not in \
                        m.group(0).split("(")[0].split():
                    defined.setdefault(m.group(1), (rank, rel))
    for fn, (drank, drel) in sorted(declared.items()):
        if fn not in defined or defined[fn][0] <= drank:
            continue
        if (drel, fn) in ALLOWED_DEFINITIONS:
            used.add((drel, fn))
            continue
        bad.append("%s: declares %s, defined a layer above in %s"
                   % (drel, fn, defined[fn][1]))
    return bad, used


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad, used = [], set()
    for tree, layers in TREES.items():
        b, u = check_tree(root, tree, layers)
        bad += b
        used |= u
    # An exception that no longer happens is a stale reason: drop it.
    for key in sorted(set(ALLOWED_INCLUDES) | set(ALLOWED_DEFINITIONS)):
        if key not in used:
            bad.append("check_layers.py: allowed %s %s is not used any more"
                       % key)
    for line in bad:
        print(line)
    if bad:
        print("check_layers: %d violation(s) of the layer orders %s"
              % (len(bad), "; ".join(" < ".join(v)
                                      for v in TREES.values())))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
