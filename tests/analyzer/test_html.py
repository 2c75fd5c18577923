#!/usr/bin/env python3
"""--format=html in headless Chromium.

usage: test_html.py MALLOCK MKTRACE SRCDIR

Records svcqueue, writes the HTML report and loads it in headless Chromium
(Debian chromium, installed when missing; exit 77 only when that install
fails), with the URL hash selecting what a user would click. The page must
load with no error, name the top finding's lock and function, draw a flame
graph whose totals are the JSON report's, draw for hold time every frame
of at least 1% of it (frames under half a pixel are not drawn), change when the metric selector changes, turn bottom-up,
find a function by search, show the lock table and the timeline, and need
no network. A screenshot is written next to the report."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MALLOCK, TMP, check, done, eq, run  # noqa: E402
from recorded import ensure_tool, record_svcqueue  # noqa: E402

chromium = ensure_tool("chromium", "chromium")
if not chromium:
    print("SKIP: chromium not installable here")
    sys.exit(77)

trace, j = record_svcqueue(MALLOCK, TMP, duration="0.3")
html = os.path.join(TMP, "report.html")
rc, out, err = run("report", "--format=html", "-o", html, trace)
if rc != 0:
    raise SystemExit("mallock report --format=html: %s" % err)
with open(html) as f:
    page = f.read()
check(not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page),
      "the page loads nothing from the network")

CHROME = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
          "--no-first-run", "--user-data-dir=" + os.path.join(TMP, "chr"),
          "--virtual-time-budget=4000"]


def load(hash_=""):
    r = subprocess.run(CHROME + ["--enable-logging=stderr", "--v=0",
                                 "--dump-dom", "file://%s#%s" % (html, hash_)],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "chromium exit %d: %s" % (r.returncode,
                                                       r.stderr[-500:]))
    errs = [l for l in r.stderr.splitlines() if "CONSOLE" in l or
            "Uncaught" in l]
    eq(errs, [], "console messages for #%s" % hash_)
    m = re.search(r"<body([^>]*)>", r.stdout)
    attrs = dict(re.findall(r'data-([\w-]+)="([^"]*)"', m.group(1))) if m \
        else {}
    eq(attrs.get("errors"), "0", "page errors for #%s" % hash_)
    eq(attrs.get("ready"), "1", "page finished for #%s" % hash_)
    return attrs, r.stdout


check(j["findings"], "the trace has findings")
top = j["findings"][0]
a, dom = load()
if top.get("lock_name"):  # the queue lock when svcqueue ran contended
    check(re.search(r'class="lock">%s<' % re.escape(top["lock_name"]), dom),
          "the top finding's lock %r is shown" % top["lock_name"])
aul = [f for f in j["findings"] if f["kind"] == "alloc_under_lock"]
if aul:  # the cascade, with the JSON report's numbers
    casc = re.search(r'<ol id="cascade">(.*?)</ol>', dom, re.S)
    check(casc and "%d contended" % aul[0]["evidence"]["contended"]
          in casc.group(1) and aul[0]["lock_name"] in casc.group(1),
          "the cascade in numbers: %r" % (casc and casc.group(1)[:300]))
fn = top["site"]["function"] if top.get("site") else None
check(fn and re.search(r'id="finding-0".*?class="site">%s ' % re.escape(fn),
                       dom, re.S), "the top finding's function %r is shown"
      % fn)
eq(a.get("metric"), "wait", "default metric")
eq(int(a.get("flame-total", -1)), j["totals"]["lock_wait_ns"],
   "flame graph total (wait) = the JSON report's lock wait")
check(int(a.get("frames", 0)) > 3, "wait: frames drawn %s" % a.get("frames"))
rows = re.findall(r"<tr><td>([^<]*)</td>", dom)
check("svcqueue.lock" in rows, "the lock table lists svcqueue.lock: %r"
      % rows[:5])
check(int(a.get("timeline-slices", 0)) > 0, "the timeline has slices")

h, dom_h = load("metric=hold")
eq(h.get("metric"), "hold", "the selector took hold")
rc, fo, err = run("report", "--format=folded", "--metric=hold", trace)
node = {}
for line in fo.splitlines():
    st, n = line.rsplit(" ", 1)
    fr = st.split(";")
    for i in range(1, len(fr) + 1):
        node[tuple(fr[:i])] = node.get(tuple(fr[:i]), 0) + int(n)
total = sum(v for k, v in node.items() if len(k) == 1)
big = {k[-1] for k, v in node.items() if v >= total / 100}
drawn = set(re.findall(r'<g class="frame[^"]*" name="([^"]*)"', dom_h))
drawn = {d.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
         for d in drawn}
eq(sorted(big - drawn), [], "hold: every frame of >= 1% drawn")
check(int(h.get("frames", 0)) > 3, "hold: frames drawn (%s)"
      % h.get("frames"))
b, dom_b = load("metric=allocator-time")
eq(b.get("metric"), "allocator-time", "the selector took allocator-time")
# A selector that is ignored draws the same graph: same total and same
# frames. (Two metrics' graphs can happen to have as many frames.)
check(b.get("flame-total") != a.get("flame-total") or
      b.get("frames") != a.get("frames"), "the metric changes the graph "
      "(total %s and %s frames, was %s and %s)" % (
          b.get("flame-total"), b.get("frames"), a.get("flame-total"),
          a.get("frames")))
want = sum(s["allocator_ns"] for s in j["alloc_sites"])
check(int(b.get("flame-total", 0)) >= want, "allocator time >= the top "
      "sites' %d: %s" % (want, b.get("flame-total")))

c, dom_c = load("metric=alloc-under-lock")
eq(int(c.get("flame-total", -1)),
   sum(l["allocator_ns_in_holds"] for l in j["locks"]),
   "alloc-under-lock total = the locks' allocator time in holds")


def depth_of(dom, name):
    """Depths (rows from the top, icicle) of the frames called name."""
    ys = re.findall(r'<g[^>]*transform="translate\([\d.e+-]+,([\d.]+)\)"'
                    r'[^>]*name="%s"' % re.escape(name), dom)
    ys += re.findall(r'<g[^>]*name="%s"[^>]*transform="translate\('
                     r'[\d.e+-]+,([\d.]+)\)"' % re.escape(name), dom)
    return sorted({round(float(y) / 18) for y in ys})


leaf = "[wait svcqueue.lock]"
td, bu = depth_of(dom, leaf), load("view=bottom-up")
check(td and min(td) >= 2, "top-down: %s is a leaf (depths %r)" % (leaf, td))
eq(depth_of(bu[1], leaf), [1], "bottom-up: %s right under the root" % leaf)
eq(bu[0].get("flame-total"), a.get("flame-total"), "bottom-up keeps the total")

s, _ = load("metric=alloc-under-lock&search=tree_insert")
check(int(s.get("matches", 0)) >= 1, "search finds tree_insert: %s"
      % s.get("matches"))
s2, _ = load("metric=alloc-under-lock&search=no_such_function_xyz")
eq(s2.get("matches"), "0", "search for a missing function")

png = os.path.splitext(html)[0] + ".png"
r = subprocess.run(CHROME + ["--window-size=1300,2200",
                             "--screenshot=" + png, "file://" + html],
                   capture_output=True, text=True, timeout=120)
with open(png, "rb") as f:
    head = f.read(8)
check(head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 20000,
      "screenshot %s" % png)
print("report: %s\nscreenshot: %s" % (html, png))
if not os.environ.get("MALLOCK_TEST_TRACE"):
    os.unlink(trace)
done("analyzer_html")
