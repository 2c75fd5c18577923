#!/usr/bin/env python3
"""The HTML report driven in a real browser: Debian's chromium through its
DevTools protocol (--remote-debugging-pipe, no extra package).

usage: test_browser.py MALLOCK MKTRACE SRCDIR

Records svcqueue with the demo's settings (a churn pair and
TCMALLOC_TRANSFER_NUM_OBJ=1: the whole cascade), writes the HTML report and:
  - opens it at a URL per metric and view and checks what is drawn at once,
    with no interaction: a non-empty flame graph whose every bar lies inside
    its parent, one row below it; the same URLs captured by
    `chromium --headless --screenshot` (and --dump-dom) show the same;
  - clicks each control with the mouse (the metric and view selectors are
    set as a pick of an option does: value, then a change event), types a
    search, clicks a frame to zoom and again to zoom out, sorts the lock
    table, opens a finding's folded evidence, and zooms and pans the
    timeline with its buttons, the wheel and a drag, checking its time axis
    and the cascade drawn in the costliest window;
  - fails on any console error or uncaught exception.
Screenshots are kept in BUILD/tests/analyzer/browser/ (BUILD is MALLOCK's
../..), or in $MALLOCK_TEST_SHOTS. Chromium is installed with apt-get when missing; exit 77 only when
that install fails."""
import base64
import fcntl
import json
import os
import re
import select
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import MALLOCK, SRCDIR, TMP, check, done, eq, run  # noqa: E402
from recorded import ensure_tool, record_svcqueue  # noqa: E402

chromium = ensure_tool("chromium", "chromium")
if not chromium:
    print("SKIP: chromium not installable here")
    sys.exit(77)

BUILD = os.path.dirname(os.path.dirname(os.path.abspath(MALLOCK)))
SHOTS = os.environ.get("MALLOCK_TEST_SHOTS") or os.path.join(
    BUILD, "tests", "analyzer", "browser")
os.makedirs(SHOTS, exist_ok=True)
for f in os.listdir(SHOTS):
    if f.endswith(".png"):
        os.unlink(os.path.join(SHOTS, f))

# The zoom check needs waits at more than one stack: a run whose lock was
# contended only a few times (6, in one run beside three builds) may
# have them all at one.
trace, j = record_svcqueue(MALLOCK, TMP, duration="0.6", min_contended=100,
                           extra=["--churn-threads=1"],
                           env_extra={"TCMALLOC_TRANSFER_NUM_OBJ": "1"})
html = os.path.join(TMP, "report.html")
rc, out, err = run("report", "--format=html", "-o", html, trace)
if rc != 0:
    raise SystemExit("mallock report --format=html: %s" % err)
URL = "file://" + html
METRICS = ["wait", "caused", "alloc-under-lock", "cross-thread",
           "allocator-time", "hold"]
VIEWS = ["top-down", "bottom-up"]


class Chrome:
    """One headless chromium spoken to over --remote-debugging-pipe: JSON
    messages ended by NUL, commands in on fd 3, answers out on fd 4."""

    def __init__(self):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        hi = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_r, from_w)]
        for fd in (to_r, from_w):
            os.close(fd)

        def fds():
            os.dup2(hi[0], 3)
            os.dup2(hi[1], 4)

        self.p = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--remote-debugging-pipe",
             "--user-data-dir=" + os.path.join(TMP, "cdp-profile"),
             "--window-size=1400,1000", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        for fd in hi:
            os.close(fd)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        t = self.cmd("Target.createTarget", url="about:blank",
                     session=False)["targetId"]
        self.session = self.cmd("Target.attachToTarget", targetId=t,
                                flatten=True, session=False)["sessionId"]
        for d in ("Page", "Runtime", "Log"):
            self.cmd(d + ".enable")
        self.cmd("Emulation.setDeviceMetricsOverride", width=1400,
                 height=1000, deviceScaleFactor=1, mobile=False)

    def _read(self, timeout):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise SystemExit("chromium did not answer in %ds" % timeout)
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise SystemExit("chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def cmd(self, method, session=True, timeout=60, **params):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params}
        if session and self.session:
            m["sessionId"] = self.session
        os.write(self.w, json.dumps(m).encode() + b"\0")
        while True:
            a = self._read(timeout)
            if a.get("id") == self.next_id:
                if "error" in a:
                    raise SystemExit("%s: %s" % (method, a["error"]))
                return a.get("result", {})
            self.events.append(a)

    def js(self, expr):
        r = self.cmd("Runtime.evaluate", expression=expr, returnByValue=True,
                     awaitPromise=True)
        if "exceptionDetails" in r:
            raise SystemExit("page script %r: %s" % (expr[:80],
                                                     r["exceptionDetails"]))
        return r["result"].get("value")

    def errors(self):
        bad = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                bad.append(p["exceptionDetails"].get("text"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in (
                    "error", "warning", "assert"):
                bad.append(str(p.get("args")))
            elif m == "Log.entryAdded" and p["entry"]["level"] in (
                    "error", "warning"):
                bad.append(p["entry"].get("text"))
        return bad

    def open(self, url):
        self.cmd("Page.navigate", url=url)
        for _ in range(200):
            if self.js("document.body && document.body.dataset.ready") == "1":
                return
            time.sleep(0.05)
        raise SystemExit("the page never got ready: " + url)

    def center(self, selector):
        r = self.js("(function(){var e=document.querySelector(%s);"
                    "if(!e)return null;e.scrollIntoView({block:'center'});"
                    "var b=e.getBoundingClientRect();"
                    "return [b.left+b.width/2,b.top+b.height/2];})()"
                    % json.dumps(selector))
        if not r:
            raise SystemExit("nothing matches %s" % selector)
        return r

    def mouse(self, kind, x, y, **kw):
        self.cmd("Input.dispatchMouseEvent", type=kind, x=x, y=y, **kw)

    def click(self, selector, at=None):
        x, y = at or self.center(selector)
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)

    def pick(self, selector, value):
        """What picking an option of a <select> does."""
        self.click(selector)
        self.cmd("Input.dispatchKeyEvent", type="keyDown", key="Escape",
                 code="Escape", windowsVirtualKeyCode=27)
        self.js("(function(){var s=document.querySelector(%s);s.value=%s;"
                "s.dispatchEvent(new Event('change',{bubbles:true}));})()"
                % (json.dumps(selector), json.dumps(value)))

    def shot(self, name, selector=None):
        kw = {"format": "png", "captureBeyondViewport": True}
        if selector:
            b = self.js("(function(){var b=document.querySelector(%s)"
                        ".getBoundingClientRect();return [b.left+scrollX,"
                        "b.top+scrollY,b.width,b.height];})()"
                        % json.dumps(selector))
            kw["clip"] = {"x": b[0], "y": b[1], "width": max(1, b[2]),
                          "height": max(1, b[3]), "scale": 1}
        png = base64.b64decode(self.cmd("Page.captureScreenshot", **kw)
                               ["data"])
        path = os.path.join(SHOTS, name + ".png")
        with open(path, "wb") as f:
            f.write(png)
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000,
              "screenshot %s" % path)

    def close(self):
        try:
            self.cmd("Browser.close", session=False, timeout=10)
        except SystemExit:
            pass
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


# Every flame bar (a <g class="frame">) against its parent: inside it
# horizontally, one row below it, and wide enough to be seen. The callers of
# a zoomed frame span the width, as it does.
FLAME_CHECK = r"""(function(){
  var svg = document.querySelector('#flame svg'); if (!svg) return {n: 0};
  var W = +svg.getAttribute('width'), by = {}, bad = [], n = 0;
  var gs = svg.querySelectorAll('g.frame');
  gs.forEach(function (g) { by[g.dataset.id] = g; });
  function xy(g) { var m = /translate\(([-\d.e]+),([-\d.e]+)\)/.exec(g.getAttribute('transform'));
                   return [+m[1], +m[2]]; }
  var kids = {};
  gs.forEach(function (g) {
    n++;
    var p = by[g.dataset.parent], a = xy(g), w = +g.dataset.w;
    var rw = +g.querySelector('rect').getAttribute('width');
    if (!(rw > 0.4)) bad.push(g.getAttribute('name') + ': rect width ' + rw);
    if (!p) { if (a[0] !== 0 || w < W - 0.01 || a[1] !== 0) bad.push('root ' + a + ' w ' + w); return; }
    var b = xy(p), pw = +p.dataset.w;
    if (a[0] < b[0] - 0.02 || a[0] + w > b[0] + pw + 0.02)
      bad.push(g.getAttribute('name') + ' [' + a[0] + ',' + (a[0] + w) + '] outside its parent ' +
               p.getAttribute('name') + ' [' + b[0] + ',' + (b[0] + pw) + ']');
    if (Math.abs(a[1] - b[1] - 18) > 0.01) bad.push(g.getAttribute('name') + ' not one row below its parent');
    kids[p.dataset.id] = (kids[p.dataset.id] || 0) + w;
  });
  for (var id in kids) if (kids[id] > +by[id].dataset.w + 0.05)
    bad.push(by[id].getAttribute('name') + ': children wider than it');
  return {n: n, bad: bad.slice(0, 5), width: W,
          names: Array.prototype.map.call(gs, function (g) { return g.getAttribute('name'); })};
})()"""


def state(c):
    return c.js("Object.assign({}, document.body.dataset)")


def check_flame(c, what, total_wanted=None):
    s, f = state(c), c.js(FLAME_CHECK)
    check(int(s.get("flameTotal", 0)) > 0, "%s: a non-empty metric (total %s)"
          % (what, s.get("flameTotal")))
    check(f["n"] >= 2, "%s: bars drawn (%d)" % (what, f["n"]))
    eq(f["bad"], [], "%s: bars inside their parents" % what)
    eq(int(s.get("frames", -1)), f["n"], "%s: data-frames" % what)
    if total_wanted is not None:
        eq(int(s["flameTotal"]), total_wanted, "%s: total" % what)
    return s, f


c = Chrome()
try:
    # 1. Each view opened by URL draws at once: no click, no waiting.
    for m in METRICS:
        for v in VIEWS:
            c.open("%s#metric=%s&view=%s" % (URL, m, v))
            s, f = check_flame(c, "opened at #metric=%s&view=%s" % (m, v))
            eq((s.get("metric"), s.get("view")), (m, v), "the URL's view")
            c.shot("url-%s-%s" % (m, v), "#flame")
    eq(c.errors(), [], "console errors on the URL loads")
    # The example link of docs/mallock-report.md finds what it searches.
    doc = open(os.path.join(SRCDIR, "..", "..", "docs",
                            "mallock-report.md")).read()
    links = re.findall(r"`report\.html(#[^`]*search=[^`]*)`", doc)
    check(len(links) == 1, "the docs' example link: %r" % links)
    for h in links:
        c.open(URL + h)
        s = state(c)
        check(int(s.get("matches", 0)) >= 1, "the docs' %s finds frames "
              "(%s matches)" % (h, s.get("matches")))

    # 2. The controls, clicked.
    c.open(URL)
    c.shot("page")
    s = state(c)
    eq(s.get("metric"), "wait", "the default metric")
    check_flame(c, "default", j["totals"]["lock_wait_ns"])
    for m in METRICS:
        for v in VIEWS:
            c.pick("#view", v)
            c.pick("#metric", m)
            s, f = check_flame(c, "picked %s %s" % (m, v))
            eq((s.get("metric"), s.get("view")), (m, v), "the picked view")
            if m == "wait" and v == "bottom-up":
                check(f["names"][1].startswith("[wait "),
                      "bottom-up: the wait leaf right under the root (%r)"
                      % f["names"][:3])
            if m == "alloc-under-lock":
                eq(int(s["flameTotal"]),
                   sum(l["allocator_ns_in_holds"] for l in j["locks"]),
                   "alloc-under-lock total = the locks' allocator time "
                   "in holds")
    c.pick("#view", "top-down")
    c.pick("#metric", "alloc-under-lock")
    c.shot("flame-alloc-under-lock", "#flame")
    c.pick("#metric", "wait")
    # a click on a frame zooms into it: it spans the width, its callers too
    target = c.js("(function(){var g=[].slice.call(document.querySelectorAll"
                  "('#flame g.frame')).filter(function(g){return "
                  "g.transform.baseVal.length&&+g.dataset.w<"
                  "+document.querySelector('#flame svg').getAttribute('width')"
                  "*0.99&&+g.dataset.w>10;});return g.length?"
                  "g[0].getAttribute('name'):null;})()")
    check(target, "a frame narrower than the graph to zoom into")
    if target:
        c.click('#flame g.frame[name="%s"] rect' % target)
        s, f = check_flame(c, "zoomed into %s" % target)
        eq(s.get("flameFocus"), target, "the clicked frame is the focus")
        zw = c.js("+document.querySelector('#flame g.focus').dataset.w")
        check(abs(zw - f["width"]) < 0.01, "the focus spans the width "
              "(%s of %s)" % (zw, f["width"]))
        c.shot("flame-zoomed", "#flame")
        c.click('#flame g.frame[name="all"] rect')
        eq(state(c).get("flameFocus"), "all", "a click on all zooms out")
    # typing a search
    c.click("#search")
    # A function the graph draws (which ones a recording under load has
    # varies: the consumers' svcqueue_get is not always among the waits).
    word = c.js("(function(){var n=[].map.call(document.querySelectorAll("
                "'#flame g.frame'),function(g){return g.getAttribute('name');"
                "}).filter(function(n){return n&&n!=='all'&&/^[A-Za-z_]\\w*$/"
                ".test(n);});return n.indexOf('svcqueue_get')>=0?"
                "'svcqueue_get':n.length?n[n.length-1]:'svcqueue_get';})()")
    c.cmd("Input.insertText", text=word)
    s = state(c)
    check(int(s.get("matches", 0)) >= 1, "typed search finds %s (%s)"
          % (word, s.get("matches")))
    eq(c.js("document.querySelectorAll('#flame g.match').length"),
       int(s.get("matches", -1)), "every match highlighted")
    c.shot("flame-search", "#flame")
    c.js("(function(){var s=document.querySelector('#search');s.value='';"
         "s.dispatchEvent(new Event('input'));})()")

    # the lock table: labels, then a click on a header sorts by it
    labels = c.js("[].map.call(document.querySelectorAll('#locks tr td:first-"
                  "child'),function(t){return t.textContent;})")
    for f in j["findings"]:
        if f.get("lock_name"):
            check(f["lock_name"] in labels, "the lock table names %r as the "
                  "findings do (%r)" % (f["lock_name"], labels[:6]))
    col = c.js("[].map.call(document.querySelectorAll('#locks th'),"
               "function(t){return t.textContent;}).findIndex(function(t){"
               "return t.indexOf('acquisitions')===0;})")
    check(col >= 0, "an acquisitions column")

    def column(i):
        return c.js("[].map.call(document.querySelectorAll('#locks tr'),"
                    "function(r){return r.children[%d].textContent;})"
                    ".slice(1).map(Number)" % i)
    c.click("#locks th:nth-child(%d)" % (col + 1))
    a = column(col)
    eq(a, sorted(a, reverse=True), "a click sorts by acquisitions, most first")
    c.click("#locks th:nth-child(%d)" % (col + 1))
    a = column(col)
    eq(a, sorted(a), "a second click, fewest first")

    # a finding's evidence: the few numbers in words, the rest folded
    check(c.js("document.querySelector('#finding-0 .evidence') !== null"),
          "the top finding's evidence in words")
    eq(c.js("document.querySelector('#finding-0 details').open"), False,
       "the rest folded")
    c.click("#finding-0 details summary")
    eq(c.js("document.querySelector('#finding-0 details').open"), True,
       "a click unfolds it")
    eq(c.js("document.querySelectorAll('#finding-0 details tr').length"),
       len(j["findings"][0]["evidence"]), "every number of the evidence")
    c.shot("findings", "#findings")

    # 3. The timeline: the cascade at the costliest window, an axis, zoom
    # and pan over the whole trace.
    T = c.js("JSON.parse(document.getElementById('mallock-data')"
             ".textContent).timeline")
    check(T, "a timeline")
    s = state(c)
    eq((int(s["tlFrom"]), int(s["tlTo"])),
       (T["window"]["from_ns"], T["window"]["to_ns"]),
       "the timeline opens at the costliest window")
    eq(s.get("tlMode"), "slices", "every slice in that window")
    note = c.js("document.getElementById('tl-note').textContent")
    m = re.match(r"Shown: (.+?) to (.+?) \(", note or "")
    check(m and m.group(1) != m.group(2),
          "the note tells the window's ends apart: %r" % note)
    # ... and those of a 2 us view (once "300.00 ms to 300.00 ms").
    f0 = T["window"]["from_ns"]
    c.open("%s#tl=%d,%d" % (URL, f0, f0 + 2000))
    note = c.js("document.getElementById('tl-note').textContent")
    m = re.match(r"Shown: (.+?) to (.+?) \(", note or "")
    check(m and m.group(1) != m.group(2),
          "a 2 us view's note tells its ends apart: %r" % note)
    c.open(URL + "#tl=window")
    check(int(s.get("tlTicks", 0)) >= 3, "a time axis (%s ticks)"
          % s.get("tlTicks"))
    check(c.js("document.querySelector('#tl-svg line.axis') !== null"),
          "the axis line")
    kinds = c.js("[0,1,2,3].map(function(k){return document.querySelectorAll"
                 "('#tl-svg rect.slice.k'+k).length;})")
    check(kinds[0] and kinds[1] and kinds[2], "holds, waits and allocator "
          "calls drawn (%r)" % kinds)
    if T["window"]["allocator_lock_wait_ns"]:
        check(kinds[3] > 0, "waits on the allocator's lock drawn (%r)" % kinds)
    # the cascade: a wait on one row while an allocator call runs in a
    # hold on another
    casc = c.js(r"""(function(){
      function sp(k){return [].map.call(document.querySelectorAll('#tl-svg rect.slice.k'+k),
        function(r){return [+r.getAttribute('y'), +r.getAttribute('x'), +r.getAttribute('x') + +r.getAttribute('width')];});}
      var w = sp(1), a = sp(2), n = 0;
      a.forEach(function(x){ w.forEach(function(y){
        if (Math.floor(y[0]/22) !== Math.floor(x[0]/22) && y[1] < x[2] && x[1] < y[2]) n++; }); });
      return n; })()""")
    check(casc > 0, "waiters waiting while a holder is in the allocator "
          "(%d overlaps)" % casc)
    c.shot("timeline-window", "#timeline")
    labels = c.js("[].map.call(document.querySelectorAll('#tl-svg "
                  ".tick-label'),function(t){return t.textContent;})")
    check(all(re.match(r"^[\d.]+ (ns|us|ms|s)$", t) for t in labels),
          "axis labels are times: %r" % labels[:4])

    c.click("#tl-whole")
    s = state(c)
    eq((int(s["tlFrom"]), int(s["tlTo"])), (0, T["duration_ns"]),
       "whole trace")
    eq(s.get("tlMode"), "bins", "the whole trace in bins")
    check(int(s.get("tlRects", 0)) > 10 and int(s.get("tlTicks", 0)) >= 3,
          "the whole trace drawn with an axis (%s rects, %s ticks)"
          % (s.get("tlRects"), s.get("tlTicks")))
    c.shot("timeline-whole", "#timeline")

    def span(s):
        return int(s["tlTo"]) - int(s["tlFrom"])
    before = state(c)
    c.click("#tl-in")
    s = state(c)
    check(abs(span(s) - span(before) / 2) <= 2, "zoom in halves the span "
          "(%d -> %d)" % (span(before), span(s)))
    c.click("#tl-left")
    s2 = state(c)
    check(int(s2["tlFrom"]) < int(s["tlFrom"]) or int(s["tlFrom"]) == 0,
          "earlier pans left")
    c.click("#tl-right")
    c.click("#tl-right")
    s3 = state(c)
    check(int(s3["tlFrom"]) > int(s2["tlFrom"]), "later pans right (%s -> %s)"
          % (s2["tlFrom"], s3["tlFrom"]))
    c.click("#tl-out")
    s4 = state(c)
    check(span(s4) > span(s3), "zoom out widens the span")
    # the wheel zooms around the pointer, a drag pans
    x, y = c.center("#tl-svg")
    c.cmd("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=0,
          deltaY=-120)
    s5 = state(c)
    check(span(s5) < span(s4), "the wheel zooms in (%d -> %d)"
          % (span(s4), span(s5)))
    c.mouse("mousePressed", x, y, button="left", clickCount=1)
    c.mouse("mouseMoved", x - 200, y, button="left")
    c.mouse("mouseReleased", x - 200, y, button="left", clickCount=1)
    s6 = state(c)
    # The page publishes its edges rounded to the ns: after the wheel the
    # span has a fraction, so the two roundings can differ by one.
    check(int(s6["tlFrom"]) > int(s5["tlFrom"])
          and abs(span(s6) - span(s5)) <= 1,
          "a drag to the left pans later, the span kept (%s -> %s, "
          "span %d -> %d)" % (s5["tlFrom"], s6["tlFrom"], span(s5),
                              span(s6)))
    c.click("#tl-window")
    eq(state(c).get("tlMode"), "slices", "back to the costliest window")
    c.shot("page-end")
    eq(c.errors(), [], "console errors while clicking")
finally:
    c.close()

# 4. The same URLs captured as `chromium --headless --screenshot` does: the
# DOM at the capture's time is the drawn view.
CHROME = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
          "--no-first-run", "--user-data-dir=" + os.path.join(TMP, "chr"),
          "--window-size=1400,2600", "--virtual-time-budget=8000"]
for m in METRICS:
    for v in VIEWS:
        h = "metric=%s&view=%s" % (m, v)
        png = os.path.join(SHOTS, "capture-%s-%s.png" % (m, v))
        r = subprocess.run(CHROME + ["--screenshot=" + png, URL + "#" + h],
                           capture_output=True, text=True, timeout=180)
        check(r.returncode == 0 and os.path.exists(png) and
              os.path.getsize(png) > 20000, "capture of #%s" % h)
        r = subprocess.run(CHROME + ["--dump-dom", URL + "#" + h],
                           capture_output=True, text=True, timeout=180)
        bars = re.findall(r'<g class="frame[^"]*" name="([^"]*)" data-id="'
                          r'(\d+)" data-parent="(\d+)" data-x="([\d.]+)" '
                          r'data-w="([\d.]+)"', r.stdout)
        check(len(bars) >= 2, "#%s captured: %d bars" % (h, len(bars)))
        by = {b[1]: b for b in bars}
        out = [b[0] for b in bars if b[2] in by and (
            float(b[3]) < float(by[b[2]][3]) - 0.02 or
            float(b[3]) + float(b[4]) >
            float(by[b[2]][3]) + float(by[b[2]][4]) + 0.02)]
        eq(out, [], "#%s captured: bars inside their parents" % h)
print("screenshots: %s" % SHOTS)
if not os.environ.get("MALLOCK_TEST_TRACE"):
    os.unlink(trace)
done("analyzer_browser")
