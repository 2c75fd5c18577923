"""cut_short.py BUILD_DIR - a traced process killed with SIGKILL in the
middle of a heavy run (allocmt, 4 threads, endless; MALLOCK_FLUSH_MS=20):
`mallock report` reads every complete chunk (exit 0), says where the trace
stops (no END record, and the byte offset when the last chunk is cut), and
reports findings from what was read; the notes written at the start
(where the trace goes) are there too. Done three times, killed after 0.5,
0.8 and 1.2 s.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relcommon import Ctx, note_texts  # noqa: E402

c = Ctx("cut_short", sys.argv[1])
for i, after in enumerate((0.5, 0.8, 1.2)):
    d = c.tmpdir("cut_%d" % i)
    trace = os.path.join(d, "t.trace")
    env = dict(os.environ)
    env.update(c.shim_env(trace, {"MALLOCK_FLUSH_MS": "20"}))
    p = subprocess.Popen([c.bin("allocmt"), "4", "0"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(after)
    p.send_signal(signal.SIGKILL)
    p.wait()
    c.check(p.returncode == -signal.SIGKILL, "not killed: %s" % p.returncode)
    st, text, err = c.report(trace, fmt="text")
    text = text.decode()
    c.check(st == 0, "report of a killed trace failed (%s): %s" %
            (st, err.decode()[:300]))
    c.check("no END record" in text or "truncated at byte" in text,
            "the report does not say where the trace stops:\n" + text[:600])
    st, rep, err = c.report(trace)
    if c.check(st == 0, "json report failed"):
        tr = rep["trace"]
        c.check(not tr["clean_exit"] and tr["events"] > 10000,
                "clean %s events %d" % (tr["clean_exit"], tr["events"]))
        c.check(len(rep["findings"]) > 0, "no findings from a cut trace")
        c.check(any(n.startswith("tracing to ") for n in note_texts(rep)),
                "the start's notes are not in the cut trace: %s"
                % note_texts(rep))
        print("cut_short: killed after %.1f s: %d events in %d chunks, "
              "truncated %s, %d findings (%s)" %
              (after, tr["events"], tr["chunks_read"], tr["truncated"],
               len(rep["findings"]),
               ", ".join(sorted({f["kind"] for f in rep["findings"]}))))
c.done()
