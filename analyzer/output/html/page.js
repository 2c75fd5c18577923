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
  function fmtNs(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + " s";
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + " ms";
    if (ns >= 1e3) return (ns / 1e3).toFixed(1) + " us";
    return ns + " ns";
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

  /* ---- findings ---- */
  app.appendChild(el("h2", { text: "Findings" }));
  var fbox = el("div", { id: "findings" });
  app.appendChild(fbox);
  if (!R.findings.length) fbox.appendChild(el("p", { text: "No findings." }));
  R.findings.slice(0, 10).forEach(function (f, i) {
    var ev = Object.keys(f.evidence).map(function (k) {
      var v = f.evidence[k];
      return k + " " + (/_ns(_|$)/.test(k) ? fmtNs(v) : (+v.toFixed(3)));
    }).join(", ");
    fbox.appendChild(el("div", { class: "finding " + f.severity, id: "finding-" + i }, [
      el("div", {}, [
        el("span", { class: "kind", text: (i + 1) + ". " + f.kind + " (" + f.severity + ")" }),
        f.lock_name ? el("span", { text: " on " }) : null,
        f.lock_name ? el("code", { class: "lock", text: f.lock_name }) : null,
        el("span", { text: " at " }),
        el("code", { class: "site", text: frameText(f.site) })]),
      el("div", { text: f.summary }),
      el("div", { class: "evidence", text: ev }),
      el("div", { text: "Fix: " + f.advice })]));
  });

  /* ---- the cascade, in numbers (as the text report tells it) ---- */
  var ci = R.findings.findIndex(function (f) { return f.kind === "alloc_under_lock"; });
  if (ci >= 0) {
    var cf = R.findings[ci], e = cf.evidence;
    var lk = R.locks.filter(function (l) { return l.id === cf.lock; })[0] || {};
    var W = e.lock_wait_ns || 0, A = e.allocator_share_of_hold || 0;
    app.appendChild(el("h2", { text: "The cascade (finding " + (ci + 1) + ")" }));
    app.appendChild(el("ol", { id: "cascade" }, [
      "waiters lost " + fmtNs(W) + " on lock " + cf.lock_name + " (" + e.contended +
        " contended acquisitions, up to " + (lk.max_waiters || "?") + " waiting at once);",
      "its holders spent " + (100 * A).toFixed(1) + "% of their hold time (" +
        fmtNs(e.allocator_ns_in_holds) + " of " + fmtNs(e.hold_ns) + ") in the allocator;",
      e.calls + " of those calls (" + e.allocs + " allocations, " + e.frees +
        " frees) are for blocks allocated at " + frameText(cf.site) + " (" +
        fmtNs(e.site_allocator_ns) + "), " + e.slow_calls + " of them slow, " +
        fmtNs(e.allocator_lock_wait_ns) + " of it waiting on the allocator's own lock;",
      "moving the allocation out of the critical section, or pre-allocating, would give back up to about " +
        fmtNs(Math.round(W * A)) + " (" + fmtNs(W) + " x " + (100 * A).toFixed(1) + "%)."
    ].map(function (t) { return el("li", { text: t }); })));
  }

  /* ---- locks, sortable ---- */
  app.appendChild(el("h2", { text: "Locks" }));
  var cols = [
    ["lock", function (l) { return l.name || (l.kind + "@" + l.address); }],
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
          c = { name: name, value: 0, children: [] };
          (n.kids = n.kids || {})[name] = c;
          n.children.push(c);
        }
        c.value += v;
        n = c;
      });
    });
    (function strip(n) { delete n.kids; n.children.forEach(strip); })(root);
    return root;
  }
  var chart = null;
  function drawFlame() {
    var m = metric.value, data = tree(D.flame[m] || "", view.value === "bottom-up");
    var unit = D.units[m];
    flameBox.textContent = "";
    body.dataset.metric = m;
    body.dataset.flameTotal = String(data.value);
    fnote.textContent = data.value ? "total " + (unit === "ns" ? fmtNs(data.value) : fmtN(data.value) + " " + unit)
                                   : "nothing recorded for this metric";
    chart = mallockFlame.flamegraph()
      .width(Math.max(600, Math.min(1400, app.clientWidth || 960)))
      .cellHeight(18).transitionDuration(250)
      .inverted(true).sort(true)
      .label(function (d) {
        var v = d.data.value;
        return d.data.name + " - " + (unit === "ns" ? fmtNs(v) : fmtN(v) + " " + unit) +
          " (" + (100 * v / (data.value || 1)).toFixed(1) + "%)";
      });
    chart.setSearchHandler(function (results, sum, total) {
      body.dataset.matches = String(results.length);
      fnote.textContent = search.value ? results.length + " frames match, " +
        (100 * sum / (total || 1)).toFixed(1) + "% of the total" : fnote.textContent;
    });
    mallockFlame.select(flameBox).datum(data).call(chart);
    if (search.value) chart.search(search.value);
    body.dataset.frames = String(flameBox.querySelectorAll("svg g").length);
  }
  metric.addEventListener("change", drawFlame);
  view.addEventListener("change", drawFlame);
  search.addEventListener("input", function () {
    if (!chart) return;
    if (search.value) chart.search(search.value);
    else { chart.clear(); body.dataset.matches = "0"; }
  });

  /* ---- timeline of the top lock ---- */
  app.appendChild(el("h2", { text: "Timeline" }));
  var T = D.timeline, tl = el("div", { id: "timeline" });
  app.appendChild(tl);
  if (!T || !T.slices.length) {
    tl.appendChild(el("p", { text: "No waits on the top lock to show." }));
  } else {
    tl.appendChild(el("p", { class: "note", text: T.lock + ": holds (blue), waits (red) and allocator calls in holds (orange) of each thread, " +
      fmtNs(T.to_ns - T.from_ns) + " from " + fmtNs(T.from_ns) + " into the trace. The whole timeline: --format=perfetto." }));
    var NS = "http://www.w3.org/2000/svg", rowH = 22, left = 140, W = 1000;
    var svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", left + W + 10);
    svg.setAttribute("height", T.threads.length * rowH + 20);
    var span = (T.to_ns - T.from_ns) || 1;
    function X(t) { return left + Math.max(0, Math.min(W, (t - T.from_ns) / span * W)); }
    T.threads.forEach(function (name, i) {
      var t = document.createElementNS(NS, "text");
      t.setAttribute("x", 4); t.setAttribute("y", i * rowH + 15);
      t.textContent = name;
      svg.appendChild(t);
    });
    var colors = ["#3b78c2", "#c0392b", "#e67e22"];
    T.slices.forEach(function (s) {
      var r = document.createElementNS(NS, "rect");
      var y = s[0] * rowH + (s[1] === 2 ? 9 : 3);
      r.setAttribute("x", X(s[2]));
      r.setAttribute("y", y);
      r.setAttribute("width", Math.max(1, X(s[3]) - X(s[2])));
      r.setAttribute("height", s[1] === 2 ? 6 : 16);
      r.setAttribute("fill", colors[s[1]]);
      var ti = document.createElementNS(NS, "title");
      ti.textContent = ["hold", "wait", "allocator call"][s[1]] + " " + fmtNs(s[3] - s[2]);
      r.appendChild(ti);
      svg.appendChild(r);
    });
    tl.appendChild(svg);
    body.dataset.timelineSlices = String(T.slices.length);
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
    drawFlame();
    if (h.search) {
      search.value = h.search;
      search.dispatchEvent(new Event("input"));
    }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  body.dataset.ready = "1";
})();
