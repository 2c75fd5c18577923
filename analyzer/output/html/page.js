/*
 * page.js - mallock's HTML report, run in the browser (report_html.c embeds
 * it after the data and the vendored flame graph). It draws, from the
 * embedded data: the findings, the cascade told in numbers, the lock table (sortable), a flame graph per
 * metric (top-down or bottom-up, with search) and a timeline of the top
 * lock's holds and waits. No network. For tests the state is mirrored in
 * document.body's data- attributes (metric, frames, errors), and the URL
 * hash (#metric=caused&view=bottom-up&search=x) selects through the same
 * controls a user clicks.
 */
(function () {
  "use strict";
  var body = document.body;
  body.dataset.errors = "0";
  window.addEventListener("error", function () {
    body.dataset.errors = String(+body.dataset.errors + 1);
  });
  var D = JSON.parse(document.getElementById("mallock-data").textContent);
  var R = D.report;

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  // d: the decimals (default 2, 1 in us).
  function fmtNs(ns, d) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(d || 2) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(d || 2) + " ms";
    if (ns >= 1e3) return (ns / 1e3).toFixed(d || 1) + " us";
    return ns + " ns";
  }
  // "A to B" with as many decimals as tell A from B (a 2 ms window at
  // 2.12 s is not "2.12 s to 2.12 s").
  function fmtRange(a, b) {
    var d = 2;
    while (d < 9 && fmtNs(a, d) === fmtNs(b, d)) d++;
    return fmtNs(a, d) + " to " + fmtNs(b, d);
  }
  function fmtN(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(2) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return String(n);
  }
  function frameText(f) {
    if (!f) return "?";
    var s = f.function || f.address || "?";
    if (f.file) s += " (" + f.file.split("/").pop() + (f.line ? ":" + f.line : "") + ")";
    return s;
  }
  var app = document.getElementById("app");

  /* ---- header ---- */
  var tr = R.trace;
  app.appendChild(el("h1", { text: "mallock report: " + (tr.command || tr.path) }));
  app.appendChild(el("div", { class: "meta", text:
    tr.path + " - pid " + tr.pid + ", " + fmtNs(tr.duration_ns) + ", " +
    tr.threads + " threads, " + fmtN(R.totals.lock_acquisitions) +
    " lock acquisitions (" + fmtN(R.totals.contended_acquisitions) +
    " contended, " + fmtNs(R.totals.lock_wait_ns) + " waited), " +
    fmtN(R.totals.allocations) + " allocations" +
    (tr.truncated ? " - " + tr.truncation : "") }));

  /* ---- findings: the few numbers each rests on in words, the rest
   * folded. The evidence members' units and phrases, and each kind's
   * members put in words (D.evidence, D.headline), are written by
   * report_html.c from finding_evidence.h: no member name is kept here
   * (the cascade below is the JSON's `cascade`, in the text report's
   * words). ---- */
  function pct(v) { return (100 * v).toFixed(1) + "%"; }
  function evValue(k, v) {
    var u = (D.evidence[k] || {}).unit;
    if (u === "ns") return fmtNs(v);
    if (u === "share") return pct(v);
    return String(+(+v).toFixed(3));
  }
  function evWords(k, v) {
    var d = D.evidence[k], u = d.unit;
    var s = u === "ns" ? fmtNs(v) : u === "share" ? pct(v) :
      u === "count" ? fmtN(v) : u === "per_s" ? fmtN(Math.round(v)) : String(v);
    return d.words.replace("%s", s);
  }
  app.appendChild(el("h2", { text: "Findings" }));
  var fbox = el("div", { id: "findings" });
  app.appendChild(fbox);
  if (!R.findings.length) fbox.appendChild(el("p", { text: "No findings." }));
  R.findings.slice(0, 10).forEach(function (f, i) {
    var keys = (D.headline[f.kind] || []).filter(function (k) {
      return f.evidence[k] != null && D.evidence[k] && D.evidence[k].words;
    });
    var words = keys.map(function (k) { return evWords(k, f.evidence[k]); }).join("; ");
    var all = Object.keys(f.evidence);
    var rows = all.map(function (k) {
      return el("tr", {}, [el("td", { text: k }), el("td", { text: evValue(k, f.evidence[k]) })]);
    });
    fbox.appendChild(el("div", { class: "finding " + f.severity, id: "finding-" + i }, [
      el("div", {}, [
        el("span", { class: "kind", text: (i + 1) + ". " + f.kind + " (" + f.severity + ")" }),
        f.lock_name ? el("span", { text: " on " }) : null,
        f.lock_name ? el("code", { class: "lock", text: f.lock_name }) : null,
        el("span", { text: " at " }),
        el("code", { class: "site", text: frameText(f.site) })]),
      el("div", { text: f.summary }),
      words ? el("div", { class: "evidence", text: words.charAt(0).toUpperCase() + words.slice(1) + "." }) : null,
      all.length ? el("details", { class: "evidence-all" }, [
        el("summary", { text: "all evidence (" + all.length + " numbers)" }),
        el("table", {}, rows)]) : null,
      el("div", { text: "Fix: " + f.advice })]));
  });

  /* ---- the cascade, in the text report's words (JSON `cascade`) ---- */
  if (R.cascade) {
    app.appendChild(el("h2", { text: "The cascade (finding " + R.cascade.finding + ")" }));
    app.appendChild(el("ol", { id: "cascade" }, R.cascade.steps.map(function (t) {
      return el("li", { text: t });
    })));
  }

  /* ---- locks, sortable ---- */
  app.appendChild(el("h2", { text: "Locks" }));
  var cols = [
    ["lock", function (l) { return l.label || l.name || (l.kind + "@" + l.address); }],
    ["kind", function (l) { return l.kind; }],
    ["acquisitions", function (l) { return l.acquisitions; }],
    ["contended", function (l) { return l.contended; }],
    ["wait", function (l) { return l.wait_ns; }, fmtNs],
    ["hold", function (l) { return l.hold_ns; }, fmtNs],
    ["max waiters", function (l) { return l.max_waiters; }],
    ["allocator calls in holds", function (l) { return l.allocations_in_holds; }],
    ["allocator time in holds", function (l) { return l.allocator_ns_in_holds; }, fmtNs]];
  var locks = R.locks.filter(function (l) { return l.acquisitions || l.contended; });
  var table = el("table", { class: "locks", id: "locks" });
  var sortCol = 4, sortDesc = true;
  function drawLocks() {
    locks.sort(function (a, b) {
      var x = cols[sortCol][1](a), y = cols[sortCol][1](b);
      var c = x < y ? -1 : x > y ? 1 : 0;
      return sortDesc ? -c : c;
    });
    table.textContent = "";
    table.appendChild(el("tr", {}, cols.map(function (c, i) {
      var th = el("th", { text: c[0] + (i === sortCol ? (sortDesc ? " \u25bc" : " \u25b2") : "") });
      th.addEventListener("click", function () {
        sortDesc = i === sortCol ? !sortDesc : true;
        sortCol = i;
        drawLocks();
      });
      return th;
    })));
    locks.slice(0, 50).forEach(function (l) {
      table.appendChild(el("tr", {}, cols.map(function (c) {
        var v = c[1](l);
        return el("td", { text: c[2] ? c[2](v) : v == null ? "" : String(v) });
      })));
    });
  }
  drawLocks();
  app.appendChild(table);

  /* ---- flame graph ---- */
  app.appendChild(el("h2", { text: "Flame graph" }));
  var metric = el("select", { id: "metric" }, D.metrics.map(function (m) {
    return el("option", { value: m[0], text: m[1] });
  }));
  var view = el("select", { id: "view" }, [
    el("option", { value: "top-down", text: "top-down (callers first)" }),
    el("option", { value: "bottom-up", text: "bottom-up (the lock or leaf first)" })]);
  var search = el("input", { id: "search", type: "search", placeholder: "search functions" });
  var fnote = el("span", { class: "note", id: "flame-note" });
  app.appendChild(el("div", { class: "controls" }, [metric, view, search, fnote]));
  var flameBox = el("div", { id: "flame" });
  app.appendChild(flameBox);

  /* Folded lines -> {name, value, children}; children sorted by name. */
  function tree(folded, bottomUp) {
    var root = { name: "all", value: 0, children: [] };
    folded.split("\n").forEach(function (line) {
      var sp = line.lastIndexOf(" ");
      if (sp <= 0) return;
      var v = +line.slice(sp + 1);
      if (!v) return;
      var fr = line.slice(0, sp).split(";");
      if (bottomUp) fr.reverse();
      var n = root;
      root.value += v;
      fr.forEach(function (name) {
        var c = n.kids && n.kids[name];
        if (!c) {
          c = { name: name, value: 0, children: [], parent: n };
          (n.kids = n.kids || {})[name] = c;
          n.children.push(c);
        }
        c.value += v;
        n = c;
      });
    });
    (function fix(n, d) {
      delete n.kids;
      n.depth = d;
      n.children.sort(function (x, y) { return x.name < y.name ? -1 : x.name > y.name ? 1 : 0; });
      n.children.forEach(function (c) { fix(c, d + 1); });
    })(root, 0);
    return root;
  }

  /* The flame graph (an icicle: callers above callees in top-down), drawn
   * at once, with no transition: what a link, a print or a screenshot
   * shows is the selected view. A click zooms into a frame (its callers
   * span the width); a click on "all" or an ancestor zooms back out. */
  var CELL = 18, flame = { data: null, focus: null, unit: "ns" };
  function frameColor(name) {
    if (/^\[(wait|hold|caused)/.test(name)) return "#e15a4f";
    if (/^\[(alloc|allocator|cross)/.test(name)) return "#f0a23b";
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hsl(" + (20 + h % 40) + "," + (55 + h % 30) + "%," + (62 + (h >> 8) % 14) + "%)";
  }
  function valText(v) {
    return flame.unit === "ns" ? fmtNs(v) : fmtN(v) + " " + flame.unit;
  }
  function searchMatches(term) {
    var n = 0, sum = 0;
    (function walk(f, under) {
      var hit = term && f.name.indexOf(term) >= 0;
      f.match = !!hit;
      if (hit) { n++; if (!under) sum += f.value; }
      f.children.forEach(function (c) { walk(c, under || hit); });
    })(flame.data, false);
    return { n: n, sum: sum };
  }
  function renderFlame() {
    var data = flame.data, focus = flame.focus || data;
    var width = Math.max(600, Math.min(1400, app.clientWidth || 960));
    var NS = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(NS, "svg");
    var maxDepth = 0, drawn = 0, ids = 0;
    function frame(f, x, w, parentId) {
      var g = document.createElementNS(NS, "g");
      var id = ++ids;
      g.setAttribute("class", "frame" + (f.match ? " match" : "") + (f === focus ? " focus" : ""));
      g.setAttribute("name", f.name);
      g.setAttribute("data-id", id);
      g.setAttribute("data-parent", parentId);
      g.setAttribute("data-x", x.toFixed(2));
      g.setAttribute("data-w", w.toFixed(2));
      g.setAttribute("transform", "translate(" + x.toFixed(2) + "," + f.depth * CELL + ")");
      var r = document.createElementNS(NS, "rect");
      r.setAttribute("width", Math.max(0.5, w - 0.5).toFixed(2));
      r.setAttribute("height", CELL - 1);
      r.setAttribute("fill", f.match ? "#d14cd1" : frameColor(f.name));
      g.appendChild(r);
      var title = document.createElementNS(NS, "title");
      title.textContent = f.name + " - " + valText(f.value) + " (" + (100 * f.value / (data.value || 1)).toFixed(1) + "%)";
      g.appendChild(title);
      if (w > 30) {
        var t = document.createElementNS(NS, "text");
        t.setAttribute("x", 3); t.setAttribute("y", CELL - 5);
        var chars = Math.floor((w - 6) / 6.6);
        t.textContent = f.name.length > chars ? f.name.slice(0, Math.max(0, chars - 2)) + ".." : f.name;
        g.appendChild(t);
      }
      g.addEventListener("click", function (ev) {
        ev.stopPropagation();
        flame.focus = f === flame.focus ? f.parent || null : f;
        renderFlame();
      });
      svg.appendChild(g);
      drawn++;
      if (f.depth > maxDepth) maxDepth = f.depth;
      return id;
    }
    /* the focus's callers, full width */
    var chain = [];
    for (var a = focus; a; a = a.parent) chain.unshift(a);
    var pid = 0;
    chain.forEach(function (c) { pid = frame(c, 0, width, pid); });
    (function kids(f, x, w, fid) {
      var cx = x;
      f.children.forEach(function (c) {
        var cw = w * c.value / (f.value || 1);
        if (cw >= 0.5) kids(c, cx, cw, frame(c, cx, cw, fid));
        cx += cw;
      });
    })(focus, 0, width, pid);
    svg.setAttribute("width", width);
    svg.setAttribute("height", (maxDepth + 1) * CELL);
    svg.setAttribute("class", "flame");
    flameBox.textContent = "";
    flameBox.appendChild(svg);
    body.dataset.frames = String(drawn);
    body.dataset.flameFocus = focus.name;
  }
  function drawFlame() {
    var m = metric.value;
    flame.unit = D.units[m];
    flame.data = tree(D.flame[m] || "", view.value === "bottom-up");
    flame.focus = null;
    body.dataset.metric = m;
    body.dataset.view = view.value;
    body.dataset.flameTotal = String(flame.data.value);
    applySearch();
  }
  function applySearch() {
    var r = searchMatches(search.value);
    var data = flame.data;
    body.dataset.matches = String(r.n);
    fnote.textContent = !data.value ? "nothing recorded for this metric"
      : "total " + valText(data.value) + (search.value ? "; " + r.n + " frames match, " +
        (100 * r.sum / (data.value || 1)).toFixed(1) + "% of the total" : "") +
        "; click a frame to zoom";
    renderFlame();
  }
  metric.addEventListener("change", drawFlame);
  view.addEventListener("change", drawFlame);
  search.addEventListener("input", applySearch);

  /* ---- timeline of the top lock: the whole trace, zoom and pan ---- */
  app.appendChild(el("h2", { text: "Timeline" }));
  var T = D.timeline, tl = el("div", { id: "timeline" });
  app.appendChild(tl);
  var tlView = null, setView = null;
  if (!T) {
    tl.appendChild(el("p", { text: "No waits on the top lock to show." }));
  } else {
    var Wn = T.window;
    var KCOL = ["#3b78c2", "#c0392b", "#f39c12", "#6c2a91"];
    var KNAME = ["hold", "wait", "allocator call", "wait on the allocator's lock"];
    tl.appendChild(el("p", { class: "note", id: "tl-legend", text: T.lock + ": each thread's holds (blue), " +
      "waits for it (red), allocator calls in its holds (orange) and, inside them, waits on the " +
      "allocator's own lock (purple). Exact in the window where the cascade cost most, the " +
      "wait on the lock while its holders were in the allocator (" +
      fmtRange(Wn.from_ns, Wn.to_ns) + ": " + fmtNs(Wn.wait_ns) + " waited, " +
      fmtNs(Wn.allocator_ns) + " in the allocator in holds, " + fmtNs(Wn.allocator_lock_wait_ns) +
      " of it on the allocator's lock" + (Wn.cut ? "; slices past the page's limit left out" : "") +
      "); elsewhere the time in each state per " + fmtNs(T.bin_ns) + ". Wheel or buttons to zoom, " +
      "drag to pan. Every slice of the whole trace: --format=perfetto." }));
    var bar = el("div", { class: "controls", id: "tl-controls" });
    tl.appendChild(bar);
    var tlNote = el("div", { class: "note", id: "tl-note" });
    tl.appendChild(tlNote);
    var holder = el("div", { id: "tl-plot" });
    tl.appendChild(holder);
    var NS = "http://www.w3.org/2000/svg", rowH = 22, left = 150, axisH = 24;
    var PW = Math.max(600, Math.min(1200, (app.clientWidth || 1100) - left - 20));
    var slices = T.slices.slice().sort(function (a, b) { return a[2] - b[2]; });
    tlView = { from: Wn.from_ns, to: Wn.to_ns };
    var MIN_SPAN = 1000;
    setView = function (f, t) {
      var span = Math.max(MIN_SPAN, Math.min(T.duration_ns, t - f));
      f = Math.max(0, Math.min(T.duration_ns - span, f));
      tlView = { from: f, to: f + span };
      drawTimeline();
    };
    function tickStep(span) {
      var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
      var m = raw / p;
      return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
    }
    /* t in the unit of its size, with as many decimals as the step needs */
    function tickLabel(t, step) {
      var u = t >= 1e9 ? [1e9, "s"] : t >= 1e6 ? [1e6, "ms"] : t >= 1e3 ? [1e3, "us"] : [1, "ns"];
      var d = Math.max(0, Math.min(9, Math.ceil(Math.log10(u[0] / step) - 1e-9)));
      return (t / u[0]).toFixed(d) + " " + u[1];
    }
    function svgEl(tag, attrs) {
      var e = document.createElementNS(NS, tag);
      for (var k in attrs) e.setAttribute(k, attrs[k]);
      return e;
    }
    function drawTimeline() {
      var v0 = tlView.from, v1 = tlView.to, span = v1 - v0;
      var X = function (t) { return left + (t - v0) / span * PW; };
      var svg = svgEl("svg", { width: left + PW + 10, height: axisH + T.threads.length * rowH + 4, id: "tl-svg" });
      var exact = v0 >= Wn.from_ns && v1 <= Wn.to_ns;
      var nrect = 0;
      /* the axis: a tick every 1, 2 or 5 x 10^k ns */
      var step = tickStep(span), ticks = 0;
      svg.appendChild(svgEl("line", { x1: left, x2: left + PW, y1: axisH - 4, y2: axisH - 4, stroke: "#888", class: "axis" }));
      for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
        var x = X(t);
        svg.appendChild(svgEl("line", { x1: x, x2: x, y1: axisH - 8, y2: axisH + T.threads.length * rowH, stroke: "#e4e4e4", class: "tick" }));
        ticks++;
        if (x + 70 > left + PW + 10) continue; /* no room for its label */
        var lab = svgEl("text", { x: x + 2, y: axisH - 10, class: "tick-label" });
        lab.textContent = tickLabel(t, step);
        svg.appendChild(lab);
      }
      T.threads.forEach(function (name, i) {
        var tx = svgEl("text", { x: 4, y: axisH + i * rowH + 15 });
        tx.textContent = name;
        svg.appendChild(tx);
      });
      var plot = svgEl("g", { class: "plot" });
      svg.appendChild(plot);
      if (!exact) {
        /* the costliest window, when in view */
        var a0 = Math.max(v0, Wn.from_ns), a1 = Math.min(v1, Wn.to_ns);
        if (a1 > a0) plot.appendChild(svgEl("rect", { x: X(a0), y: axisH, width: Math.max(2, X(a1) - X(a0)),
          height: T.threads.length * rowH, fill: "#fff3b0", class: "window" }));
        var bw = T.bin_ns, b0 = Math.floor(v0 / bw), b1 = Math.ceil(v1 / bw);
        T.bins.forEach(function (row, i) {
          var y0 = axisH + i * rowH;
          for (var b = b0; b < b1; b++) {
            var x0 = X(Math.max(v0, b * bw)), x1 = X(Math.min(v1, (b + 1) * bw));
            var w = Math.max(1, x1 - x0);
            /* wait from the top of the row, hold from its bottom, the
             * allocator (and its lock) inside the hold */
            [[1, 0], [0, 1], [2, 1], [3, 1]].forEach(function (kb) {
              var v = row[kb[0]][b] || 0;
              if (!v) return;
              var h = Math.max(1, Math.min(1, v / bw) * (rowH - 4));
              var r = svgEl("rect", { x: x0, width: w, height: h, fill: KCOL[kb[0]], class: "bin k" + kb[0],
                y: kb[1] ? y0 + rowH - 2 - h : y0 + 2 });
              var ti = svgEl("title", {});
              ti.textContent = KNAME[kb[0]] + " " + fmtNs(v) + " of " + fmtNs(bw) + " from " + fmtNs(b * bw);
              r.appendChild(ti);
              plot.appendChild(r);
              nrect++;
            });
          }
        });
      } else {
        /* each slice; those under a pixel that touch the last one of
         * their row and kind are merged into it */
        var last = {};
        slices.forEach(function (s) {
          if (s[3] < v0 || s[2] > v1) return;
          var x0 = X(Math.max(v0, s[2])), x1 = X(Math.min(v1, s[3]));
          var key = s[0] * 4 + s[1], p = last[key];
          if (p && x0 <= p.x1 + 0.5) {
            if (x1 > p.x1) { p.x1 = x1; p.r.setAttribute("width", Math.max(1, x1 - p.x0)); }
            p.n++;
            return;
          }
          var y = axisH + s[0] * rowH + [2, 2, 6, 9][s[1]], h = [18, 18, 10, 4][s[1]];
          var r = svgEl("rect", { x: x0, y: y, width: Math.max(1, x1 - x0), height: h, fill: KCOL[s[1]],
            class: "slice k" + s[1] });
          var ti = svgEl("title", {});
          ti.textContent = KNAME[s[1]] + " " + fmtNs(s[3] - s[2]) + " at " + fmtNs(s[2]);
          r.appendChild(ti);
          plot.appendChild(r);
          last[key] = { r: r, x0: x0, x1: x1, n: 1 };
          nrect++;
        });
      }
      var drag = null;
      svg.addEventListener("wheel", function (ev) {
        ev.preventDefault();
        var rect = svg.getBoundingClientRect();
        var fx = Math.max(0, Math.min(1, (ev.clientX - rect.left - left) / PW));
        var at = v0 + fx * span, k = ev.deltaY < 0 ? 1 / 1.5 : 1.5;
        setView(at - fx * span * k, at + (1 - fx) * span * k);
      });
      svg.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, from: v0 }; ev.preventDefault(); });
      svg.addEventListener("mousemove", function (ev) {
        if (!drag) return;
        var dt = (drag.x - ev.clientX) / PW * span;
        if (Math.abs(drag.x - ev.clientX) >= 2) { setView(drag.from + dt, drag.from + dt + span); }
      });
      window.onmouseup = function () { drag = null; };
      holder.textContent = "";
      holder.appendChild(svg);
      tlNote.textContent = "Shown: " + fmtRange(v0, v1) + " (" + fmtNs(span) + " of " +
        fmtNs(T.duration_ns) + "), " + (exact ? "every slice" : "time per " + fmtNs(T.bin_ns) +
        (Wn.from_ns < v1 && Wn.to_ns > v0 ? "; the costliest window is highlighted, zoom into it for each slice" : "")) + ".";
      body.dataset.tlFrom = String(Math.round(v0));
      body.dataset.tlTo = String(Math.round(v1));
      body.dataset.tlMode = exact ? "slices" : "bins";
      body.dataset.tlRects = String(nrect);
      body.dataset.tlTicks = String(ticks);
    }
    function button(id, text, fn) {
      var b = el("button", { id: id, type: "button", text: text });
      b.addEventListener("click", fn);
      bar.appendChild(b);
    }
    function zoom(k) {
      var c = (tlView.from + tlView.to) / 2, h = (tlView.to - tlView.from) * k / 2;
      setView(c - h, c + h);
    }
    function pan(k) {
      var d = (tlView.to - tlView.from) * k;
      setView(tlView.from + d, tlView.to + d);
    }
    button("tl-whole", "whole trace", function () { setView(0, T.duration_ns); });
    button("tl-window", "costliest window", function () { setView(Wn.from_ns, Wn.to_ns); });
    button("tl-in", "zoom in", function () { zoom(1 / 2); });
    button("tl-out", "zoom out", function () { zoom(2); });
    button("tl-left", "\u25c0 earlier", function () { pan(-0.5); });
    button("tl-right", "later \u25b6", function () { pan(0.5); });
    body.dataset.timelineSlices = String(T.slices.length);
    drawTimeline();
  }

  /* ---- state from the URL hash (tests, links) ---- */
  function fromHash() {
    var h = {};
    location.hash.slice(1).split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p[0]) h[p[0]] = decodeURIComponent(p[1] || "");
    });
    if (h.metric) metric.value = h.metric;
    if (h.view) view.value = h.view;
    search.value = h.search || "";
    drawFlame();
    if (T && h.tl) {
      var ft = h.tl.split(",");
      if (h.tl === "whole") setView(0, T.duration_ns);
      else if (h.tl === "window") setView(T.window.from_ns, T.window.to_ns);
      else if (ft.length === 2 && +ft[1] > +ft[0]) setView(+ft[0], +ft[1]);
    }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  body.dataset.ready = "1";
})();
