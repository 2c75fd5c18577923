"""The Python view of the format (tests/lib/tracefmt.py over the generated
trace_format.py) agrees with the C reader: a trace forged through the view,
every core record with distinct field values, a chunk header with every
field set, is read back by `mallock dump` record for record, with the
view's record and field names and the values written. A layout, a field
order, a code or a chunk header offset the view got wrong fails here.

    test_tracefmt.py MALLOCK BUILD SRCDIR"""
import os
import re
import subprocess
import sys
import tempfile

MALLOCK, BUILD, SRC = sys.argv[1:4]
sys.path.insert(0, os.path.join(SRC, "tests", "lib"))
import tracefmt as T  # noqa: E402
from pycheck import check, done  # noqa: E402

F = T.find(BUILD)

want = []
enc, pay = T.Enc(), b""
for i, (name, (code, layout, names)) in enumerate(sorted(F.CORE.items())):
    check(len(names) == len(layout), "%s: a name per field" % name)
    # fn is printed by name: the last entry point the format lists
    vals = [F.FN_REALLOCARRAY if n == "fn" else 0x10000 * (i + 1) + 3 * k
            for k, n in enumerate(names)]
    pay += enc.event(name, 1, *vals)
    want.append((name, list(zip(names, vals))))
with tempfile.TemporaryDirectory(prefix="mallock-tracefmt-") as d:
    path = os.path.join(d, "view.trace")
    with open(path, "wb") as f:
        f.write(T.file_header())
        f.write(T.chunk(7, pay, base=5000, seq=0, flush=5000 + len(want),
                        mono=123456789))
    r = subprocess.run([MALLOCK, "dump", path], capture_output=True,
                       text=True)
check(r.returncode == 0, "mallock dump: %d %s" % (r.returncode, r.stderr))
lines = r.stdout.splitlines()
hdr = [l for l in lines if l.startswith("# chunk")]
check(len(hdr) == 1 and all(x in hdr[0] for x in (
    "tid=7 ", "seq=0 ", "len=%d " % len(pay), "flags=0 ", "tsc_base=5000 ",
    "tsc_flush=%d " % (5000 + len(want)), "mono_flush_ns=123456789")),
    "the chunk header: %r" % hdr)
recs = [l for l in lines if l.startswith("tid=")]
check(len(recs) == len(want), "%d records read, %d written"
      % (len(recs), len(want)))
for (name, fields), line in zip(want, recs):
    m = re.match(r"tid=7 tsc=(\d+) (\S+)(.*)$", line)
    check(m and m.group(2) == name, "record %s read as: %s" % (name, line))
    if not m:
        continue
    got = dict(kv.split("=", 1) for kv in m.group(3).split())
    for fname, v in fields:
        g = got.get(fname)
        if fname == "fn":
            check(g == "reallocarray", "%s.fn: read %s" % (name, g))
            continue
        check(g is not None and int(g, 0) == v,
              "%s.%s: wrote %#x, read %s" % (name, fname, v, g))
print("test_tracefmt: %d records" % len(want))
done("test_tracefmt")
