#!/usr/bin/env python3
"""The shim's folders are layers, bottom first: prim/ (OS and libc),
core/ (a call's data to bytes in the file), hooks/ (the calls it
records), control/ (the shim's life in its host: init, ctl, attach, the
event policy, and the host's lifecycle calls: exec, exit, credentials,
signals, the public API). A file may include headers of its own layer
and of the layers below; this fails on an include of a layer above,
unless it is one of the known up-calls listed here with its reason.

usage: scripts/check_layers.py [ROOT]   (exit 1 on a violation)"""
import os
import re
import sys

LAYERS = ["prim", "core", "hooks", "control"]
# (file, header): why the lower layer calls up.
ALLOWED = {
    ("core/wbuf.c", "attach.h"):
        "an attached process's late-library walk after a flush",
    ("core/writer.c", "control.h"):
        "ctl_capped, ctl_writer_stopped: the byte cap or a lost trace ends "
        "the window and says so on the page; ctl_ever_recorded: a child "
        "that never had a window creates no file",
    ("hooks/futex_hook.c", "control.h"):
        "syscall(SYS_rt_sigaction) tells ctl the wake signal may not be "
        "the shim's any more",
    ("hooks/futex_hook.c", "exit_hooks.h"):
        "syscall(SYS_exit_group) runs the final flush before the process "
        "ends",
}


def main():
    root = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "shim")
    layer_of = {}
    for rank, layer in enumerate(LAYERS):
        for name in os.listdir(os.path.join(root, layer)):
            if name in layer_of:
                sys.exit("check_layers: %s is in both %s/ and %s/"
                         % (name, LAYERS[layer_of[name]], layer))
            layer_of[name] = rank
    bad = 0
    for rank, layer in enumerate(LAYERS):
        for name in sorted(os.listdir(os.path.join(root, layer))):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(root, layer, name)
            with open(path) as f:
                for no, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m or m.group(1) not in layer_of:
                        continue
                    inc = m.group(1)
                    if layer_of[inc] <= rank:
                        continue
                    if ("%s/%s" % (layer, name), inc) in ALLOWED:
                        continue
                    print("shim/%s/%s:%d: includes %s/%s, a layer above %s/"
                          % (layer, name, no, LAYERS[layer_of[inc]], inc,
                             layer))
                    bad += 1
    if bad:
        print("check_layers: %d include(s) against the layer order %s"
              % (bad, " < ".join(LAYERS)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
