#!/usr/bin/env python3
"""Malformed traces and their expected errors: a file that is not a trace
or of a future version gets one line and exit status 2; a trace cut in
the middle of a chunk, with a bad CRC in chunk 3, or with a malformed
record inside a CRC-valid chunk, is read up to the damage and the report
says where it stopped; one of which no chunk can be read is an error (exit
1) saying so."""
import os
import re
from common import *


def chunk_offsets(path):
    rc, out, err = run("dump", path)
    eq(rc, 0, "dump exit for chunk offsets")
    return [int(m.group(1)) for m in re.finditer(r"^# chunk \d+ at byte (\d+):",
                                                  out, re.M)]


def one_line_error(path, text):
    rc, out, err = run("report", path)
    eq(rc, 2, "exit status for " + text)
    eq(err, "mallock: %s: %s\n" % (path, text), "message for " + text)
    eq(out, "", "no output for " + text)


empty = os.path.join(TMP, "empty.trace")
open(empty, "w").close()
one_line_error(empty, "not a mallock trace")
junk = os.path.join(TMP, "junk.trace")
with open(junk, "w") as f:
    f.write("this is not a trace at all, but it is long enough\n")
one_line_error(junk, "not a mallock trace")
p, _ = mktrace("cascade", "magic.trace", "--rounds", 10, "--bad-magic")
one_line_error(p, "not a mallock trace")
p, _ = mktrace("cascade", "v2.trace", "--rounds", 10, "--version", 2)
rc, out, err = run("report", p)
eq(rc, 2, "exit status for a future version")
check(re.fullmatch(r"mallock: %s: version 2\.\d+ not supported\n" % re.escape(p),
                   err) is not None, "message for a future version (got %r)" % err)
eq(out, "", "no output for a future version")
rc, out, err = run("dump", p)
eq(rc, 2, "dump: exit 2 on a future version")
rc, out, err = run("report", os.path.join(TMP, "missing.trace"))
eq(rc, 1, "missing file: exit 1")
check(err.startswith("mallock: ") and err.count("\n") == 1, "missing: one line")

# A trace of many chunks, for the damage below.
good, _ = mktrace("cascade", "good.trace", "--rounds", 200)
offs = chunk_offsets(good)
K = len(offs)
check(K > 5, "enough chunks")
full = report_json(good)

# Cut in the middle of the last chunk.
p, cut = mktrace("cascade", "cut.trace", "--rounds", 200, "--cut", K)
cut = int(cut)
eq(cut, offs[-1], "cut at the last chunk")
rc, out, err = run("report", "--format=json", p)
eq(rc, 0, "truncated trace: still reported")
msg = "trace truncated at byte %d: %d of %d chunks read" % (cut, K - 1, K)
check(msg in err, "stderr says: " + msg + " (got %r)" % err)
d = json.loads(out)
eq(d["trace"]["truncated"], True, "json truncated")
eq(d["trace"]["truncated_at"], cut, "json truncated_at")
eq(d["trace"]["chunks_read"], K - 1, "chunks read")
check(msg in d["trace"]["truncation"], "json truncation text")
check(d["totals"]["allocations"] > 0, "events before the cut are read")
rc, out, err = run("report", p)
eq(rc, 0, "truncated trace: text report exit")
check(msg in out, "text report says truncated")

# Bad CRC in chunk 3 of K.
p, _ = mktrace("cascade", "crc.trace", "--rounds", 200, "--corrupt-crc", 3)
rc, out, err = run("report", "--format=json", p)
eq(rc, 0, "bad CRC: still reported")
msg = "trace truncated at byte %d: 2 of %d chunks read (chunk 3: CRC mismatch)" % (
    offs[2], K)
check(msg in err, "stderr says: " + msg + " (got %r)" % err)
d = json.loads(out)
eq(d["trace"]["chunks_read"], 2, "two chunks read")

# A malformed record (an unterminated varint) at the end of chunk 4,
# inside a CRC-valid chunk.
p, _ = mktrace("cascade", "varint.trace", "--rounds", 200, "--bad-record", 4)
rc, out, err = run("report", "--format=json", p)
eq(rc, 0, "bad varint: still reported")
check("malformed record" in err and "trace truncated at byte" in err,
      "stderr names the malformed record (got %r)" % err)
d = json.loads(out)
eq(d["trace"]["truncated"], True, "bad varint: truncated")
check(0 < d["trace"]["events"] < full["trace"]["events"], "stopped there")
rc, out, err = run("dump", p)
eq(rc, 0, "bad varint: dump exit")
check("# malformed record at byte" in out, "dump says where")

# No chunk read (cut in the first, or a bad CRC in it): a report of nothing
# is an error, one line saying what, where and why; dump still prints what
# it can.
# (Cut inside chunk 1, the file holds one chunk, begun.)
for what, opts, total in (("cut in chunk 1", ["--cut", 1], 1),
                          ("bad CRC in chunk 1", ["--corrupt-crc", 1], K)):
    p, _ = mktrace("cascade", "none.trace", "--rounds", 200, *opts)
    for fmt in ("text", "json"):
        rc, out, err = run("report", "--format=" + fmt, p)
        line = ("mallock: %s: no chunk could be read: trace truncated at "
                "byte %d: 0 of %d chunks read (chunk 1: " % (p, offs[0], total))
        check(rc == 1 and err.startswith(line) and err.count("\n") == 1
              and out == "",
              "%s, %s: %d %r %r (want 1, %r...)" % (what, fmt, rc, err,
                                                    out[:80], line))
    rc, out, err = run("diff", p, good)
    check(rc == 1 and err.startswith("mallock: %s: no chunk" % p),
          "%s: diff: %d %r" % (what, rc, err))
    rc, out, err = run("dump", p)
    check(rc == 0 and "0 of %d chunks read" % total in out,
          "%s: dump: %d %r" % (what, rc, out[-200:]))

# A 5-chunk trace with a bad CRC in chunk 3: "2 of 5 chunks read".
p, _ = mktrace("cascade", "five.trace", "--rounds", 3, "--chunk", 100000)
n = len(chunk_offsets(p))
p, _ = mktrace("cascade", "five.trace", "--rounds", 3, "--chunk", 100000,
               "--corrupt-crc", 3)
rc, out, err = run("report", p)
eq(rc, 0, "five chunks, bad CRC: exit")
check(("2 of %d chunks read" % n) in err, "2 of %d (got %r)" % (n, err))
done("analyzer_malformed")
