"""Every evidence member name used outside C is in the list
(analyzer/find/finding_evidence.h), and the list's docs say what it says.

C reads evidence by enum (EV_*): a misspelt member does not compile. The
rest is checked here against the list, as parsed from the header and as
the binary writes it into an HTML page's data (so the parse cannot drift
from the code):
- page.js reads members only through ev(f, "name"), each in the list, and
  keeps no table of its own (no object key or string that names one);
- the python tests' reads (["evidence"]["name"], .get("name") and their
  aliases) name members of the list;
- docs/report-json.md's "Evidence members by kind" names, for each kind,
  exactly the members the list lets that kind carry, and every other name
  it quotes is a finding kind or a member the page documents above."""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SRCDIR, check, done, eq, mktrace, run  # noqa: E402

ROOT = os.path.normpath(os.path.join(SRCDIR, "..", ".."))


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


# ---- the list, from the header ----
h = read("analyzer/find/finding_evidence.h")
body = h[h.index("#define FINDING_EVIDENCE(X)"):h.index("typedef enum ev")]
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S).replace("\\\n", " ")
rows = re.findall(r'X\(\s*(\w+)\s*,\s*"(\w+)"\s*,\s*(\w+)\s*,\s*([^,]+?)\s*,'
                  r'\s*(NULL|"[^"]*")\s*\)', body)
NAMES = {r[1] for r in rows}
eq(len(rows), len(NAMES), "each member is in the list once")
check(len(rows) > 100, "the list parsed (%d members)" % len(rows))
unit_rows = dict(re.findall(r'X\((\w+),\s*"(\w+)"\)', h.replace("\\\n", " ")))
fh = read("analyzer/find/finding.h")
fh = fh[:fh.index("enum finding_kind")].replace("\\\n", " ")
KIND_ENUM = dict(re.findall(r'X\((\w+), "(\w+)"\)', fh))
EVK = dict(re.findall(r"#define (EVK_\w+) \(1u << FK_(\w+)\)", h))
EVK_GROUP = {k: re.findall(r"EVK_\w+", v) for k, v in
             re.findall(r"#define (EVK_\w+) \((EVK_[^)]*)\)", h)}


def kinds_of(mask):
    out = set()
    for m in re.findall(r"EVK_\w+", mask):
        for one in EVK_GROUP.get(m, [m]):
            out.add(KIND_ENUM[EVK[one]])
    return out


DECL = {}
for e, name, unit, mask, words in rows:
    for k in kinds_of(mask):
        DECL.setdefault(k, set()).add(name)
eq(sorted(DECL), sorted(KIND_ENUM.values()), "every kind carries evidence")

# ---- the list, as the binary writes it for the page ----
trace, _ = mktrace("contention", "contention.trace", "--rounds", 50)
rc, page, err = run("report", "--format=html", trace)
eq(rc, 0, "report --format=html: " + err)
m = re.search(r'<script id="mallock-data" type="application/json">\n(.*?)'
              r'\n</script>', page, re.S)
data = json.loads(m.group(1)) if m else {}
ev = data.get("evidence", {})
eq(sorted(ev), sorted(NAMES), "the page's evidence table is the list")
for e, name, unit, mask, words in rows:
    if name in ev:
        eq(ev[name]["unit"], unit_rows[unit], name + "'s unit")
        eq(ev[name]["words"], None if words == "NULL" else json.loads(words),
           name + "'s phrase")
for kind, members in data.get("headline", {}).items():
    for n in members:
        check(n in DECL.get(kind, ()),
              "%s's headline %s is a member %s carries" % (kind, n, kind))

# ---- page.js ----
js = read("analyzer/output/html/page.js")
# The cascade is the JSON's `cascade` (report_cascade.c's sentences): the
# page does no arithmetic of its own on evidence.
check("R.cascade.steps" in js, "page.js shows the JSON's cascade steps")
rest = js
# strings of page.js that are not evidence names though they spell one:
# a unit (ev.unit === "share") and the lock table's columns (l.contended)
NOT_EVIDENCE = set(unit_rows.values()) | {"contended", "acquisitions"}
for n in re.findall(r'"(\w+)"', rest) + re.findall(r"^\s*(\w+)\s*:", rest,
                                                   re.M):
    check(n not in NAMES or n in NOT_EVIDENCE,
          "page.js names evidence member %s outside ev(): the page reads "
          "names from the list" % n)
for n in re.findall(r"\.evidence\.(\w+)", js):
    check(False, "page.js reads .evidence.%s: use ev()" % n)

# ---- the python tests ----
reads = 0
for path in sorted(glob.glob(os.path.join(ROOT, "tests", "**", "*.py"),
                             recursive=True)):
    if os.path.samefile(path, __file__):
        continue
    with open(path) as f:
        src = f.read()
    rel = os.path.relpath(path, ROOT)
    names = re.findall(r'\["evidence"\]\s*(?:\[\s*|\.get\(\s*)"(\w+)"', src)
    for alias in set(re.findall(r'^\s*(\w+)\s*=\s*[\w\[\]"\.]*\["evidence"\]'
                                r'\s*$', src, re.M)):
        names += re.findall(r"\b%s\s*(?:\[\s*|\.get\(\s*)\"(\w+)\"" % alias,
                            src)
    for n in names:
        reads += 1
        check(n in NAMES, "%s reads evidence member %s, not in the list"
              % (rel, n))
check(reads > 50, "the tests' evidence reads found (%d)" % reads)

# ---- docs/report-json.md ----
doc = read("docs/report-json.md")
sec = doc[doc.index("Evidence members by kind:"):]
# the members the rest of the page documents (sites_total, locks, ...)
tabled = set(re.findall(r"`(\w+)`", doc[:doc.index(sec)]))
DOC = {}
for b in re.split(r"\n- ", sec)[1:]:
    b = " ".join(b.split())
    kind = re.match(r"`(\w+)`", b).group(1)
    quoted = re.findall(r"`(\w+)`", b)
    DOC[kind] = ({n for n in quoted if n in NAMES},
                 "the contention evidence" in b)
    for n in quoted:
        check(n in NAMES or n in KIND_ENUM.values() or n in tabled,
              "docs/report-json.md, %s: `%s` is neither an evidence member "
              "nor a documented member" % (kind, n))
eq(sorted(DOC), sorted(DECL), "docs/report-json.md lists every kind")
# the units as the page says they follow from the names
for e, name, unit, mask, words in rows:
    want = ("FLAG" if name == "allocator_ns_estimated" else
            "NS" if "_ns" in name else
            "SHARE" if "share" in name.split("_") else
            "RATIO" if name.endswith("_cv") else
            "BYTES" if name in ("size", "size_min", "size_max", "bytes") else
            "RATE" if name == "rate_per_s" else
            "ID" if name == "lock_id" else unit)
    eq(unit, want, "%s's unit, as docs/report-json.md says" % name)
    if unit == "FLAG":
        check(re.search(r"`%s`[^`]*?\((0/1|1)\b" % name, sec) or
              re.search(r"`%s`[^.;]*\(1:" % name, " ".join(sec.split())),
              "docs/report-json.md says %s is 0 or 1" % name)
for kind in DECL:
    docd, contention = DOC.get(kind, (set(), False))
    if contention:
        docd = docd | DOC["lock_contention"][0]
    eq(sorted(DECL[kind] - docd), [],
       "members %s carries that docs/report-json.md does not list" % kind)
    eq(sorted(docd - DECL[kind]), [],
       "members docs/report-json.md lists for %s that it cannot carry"
       % kind)

done("test_evidence_names")
