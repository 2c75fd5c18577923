#!/usr/bin/env python3
"""The mechanical mutator: mutations nobody chose, drawn at random from
standard operators over mallock's C sources, each built and judged by the
tests that guard its folder (docs/testing.md, "Mutations nobody chose").

  mutate.py --check
      the operators on a fixed C snippet give the mutants they must, and
      each entry of the equivalents file is still a mutant of its file
      (CTest's tooling_mutate);
  mutate.py --list [--paths P,P...]
      how many mutable lines and mutants each file has;
  mutate.py --sample N --seed S [--paths P,P...] [--scratch DIR]
            [--timeout SEC] [--jobs J] [--show]
      draws N mutants with the seed S across the files under the paths
      (default: shim/hooks,shim/core,analyzer/model,analyzer/find), each
      file weighted by its mutable lines, skipping those the equivalents
      file names; with --show prints them and stops. Otherwise copies the
      tracked files to DIR (default /tmp/mallock-mutate), builds them
      there (-DMALLOCK_WERROR=ON), runs the guarding tests unmutated (each
      must pass), then for each mutant: applies it, rebuilds, runs the
      tests its folder's entry in GUARDS names one by one until one fails,
      each with a TIMEOUT (default 60 s), and reverts. A mutant is
      killed (a test failed), survived (all passed), timed out (a test
      ran past its timeout; reported apart) or not compiled (not a kill).
      Ends with the score per folder and each survivor's diff. Exits 1
      when a survivor is not in the equivalents file.
  mutate.py --sample N --seed S --in-place [...]
      the same in the source tree itself and its build/ (built already,
      as CI's is after `make test`): each mutated file is restored after
      its mutant, on SIGINT and SIGTERM too, and must be unmodified in
      git before (so `git checkout` restores it in any case); build/ is
      rebuilt unmutated at the end. CI runs this, saving a second build.

The mutants are made by token (a small C tokenizer below), not through
libclang: the shim's hooks are largely macros that a parsed tree shows
only expanded, a token is a span of the file as written (the diff is the
source line), and the tool needs nothing CI does not already have.
Comments, strings, preprocessor lines and the arguments of logging and
assertion calls (SKIP_CALLS) are never mutated.
"""
import argparse
import hashlib
import os
import random
import re
import signal
import subprocess
import sys
import time

from scratch import Pristine, build, configure, copy_tracked, ctest, sh

HERE = os.path.dirname(os.path.abspath(__file__))
EQUIVALENTS = os.path.join(HERE, "equivalent-mutants.txt")
DEFAULT_PATHS = "shim/hooks,shim/core,analyzer/model,analyzer/find"

# Which tests guard which folder: the first folder that is a prefix of the
# mutated file's path names the build targets a mutant of it rebuilds (only
# those: the shim's library, or the analyzer's command and the unit tests
# that link its library) and the tests run on it, in this order: the
# quickest first, those on forged traces and unit tests before recorded
# ones (seconds each on 2 cores, measured 2026-12-05), because a mutant is
# killed by its first failing test and the rest do not run. The shim's
# folders are guarded by the tests that record through the shim and read
# what it wrote; the analyzer's by the tests on forged traces, then the
# ground-truth cases.
GUARDS = [
    ("shim/", ["mallock"], [
        "shim_newfail", "server_toggle", "shim_stackcache", "shim_robust",
        "shim_nextalloc",
        "shim_exact", "shim_cxx_glibc", "shim_cancel", "shim_fork",
        "shim_exec", "shim_output", "shim_lockids", "shim_waiters",
        "shim_sampled", "analyzer_hold_records", "shim_preload_order",
        "shim_stackfull", "analyzer_plainlock",
        "rel_hostile_closeall_range", "rel_hostile_execfail", "rel_resources",
        "rel_ending_sigexit_writer",
        "analyzer_futex", "analyzer_time_every",
        "server_cap", "shim_threads1000",
        "format_compressed", "rel_hostile_signals", "groundtruth.xthread",
        "groundtruth.svcqueue_cascade", "groundtruth.reportqueue",
        "rel_cut_short", "shim_stress", "server_detach",
    ]),
    ("analyzer/find/", ["mallock-cli", "unit_find_contention",
                        "unit_find_locks", "unit_find_allocs",
                        "unit_find_futex", "unit_find_starvation",
                        "unit_evidence"], [
        "analyzer_unit_find_contention", "analyzer_unit_find_locks",
        "analyzer_unit_find_allocs", "analyzer_unit_find_futex",
        "analyzer_unit_find_starvation", "analyzer_unit_evidence",
        "analyzer_golden", "analyzer_contention", "analyzer_inversion",
        "analyzer_striped", "analyzer_futex_words", "analyzer_pools",
        "analyzer_frees", "analyzer_estimates", "analyzer_headers",
        "analyzer_report", "analyzer_seed", "groundtruth.stripped",
        "groundtruth.xthread", "groundtruth.admission",
        "groundtruth.svcqueue_cascade", "groundtruth.reportqueue",
    ]),
    ("analyzer/model/", ["mallock-cli", "unit_holds", "unit_reader",
                         "unit_classes"], [
        "analyzer_unit_holds", "analyzer_unit_reader",
        "analyzer_unit_classes", "analyzer_golden", "analyzer_holds",
        "analyzer_forged_weights", "analyzer_timed_holds",
        "analyzer_as_sampled", "analyzer_nest_overlap",
        "analyzer_nest_claim", "analyzer_pools", "analyzer_frees",
        "analyzer_striped", "analyzer_calibration_forged",
        "analyzer_inversion", "analyzer_window_names",
        "analyzer_lock_names", "analyzer_classes", "analyzer_preempt",
        "analyzer_estimates", "analyzer_reuse", "analyzer_contention",
        "analyzer_sites", "analyzer_futex_words", "analyzer_headers",
        "analyzer_malformed", "analyzer_fold", "analyzer_report",
        "analyzer_seed", "groundtruth.stripped", "groundtruth.xthread",
        "groundtruth.admission", "groundtruth.svcqueue_cascade",
        "groundtruth.reportqueue", "analyzer_pprof", "analyzer_sizes",
    ]),
    ("analyzer/", ["mallock-cli", "unit_reader", "unit_classes"], [
        "analyzer_unit_reader", "analyzer_unit_classes", "analyzer_golden",
        "analyzer_as_sampled",
        "analyzer_holds", "analyzer_forged_weights", "analyzer_nest_overlap",
        "analyzer_nest_claim",
        "analyzer_pools", "analyzer_frees", "analyzer_striped",
        "analyzer_calibration_forged", "analyzer_inversion",
        "analyzer_window_names", "analyzer_lock_names", "analyzer_classes",
        "analyzer_preempt", "analyzer_estimates", "analyzer_reuse",
        "analyzer_contention", "analyzer_sites", "analyzer_futex_words",
        "analyzer_malformed", "analyzer_fold", "analyzer_report",
        "analyzer_seed", "groundtruth.stripped", "groundtruth.xthread",
        "groundtruth.admission", "groundtruth.svcqueue_cascade",
        "groundtruth.reportqueue", "analyzer_sizes",
    ]),
]

# Calls whose arguments are logging, warnings or assertions: a mutant there
# changes a message, not what mallock does.
SKIP_CALLS = {
    "assert", "static_assert", "_Static_assert", "shim_warn", "shim_info",
    "fprintf", "printf", "snprintf", "perror", "fail", "die_name",
    "model_note", "note_vadd",
}
TYPE_WORDS = {
    "int", "unsigned", "signed", "char", "short", "long", "float", "double",
    "void", "const", "static", "struct", "union", "enum", "volatile",
    "_Atomic", "extern", "inline", "register", "typedef", "bool", "size_t",
    "_Bool", "__thread", "_Thread_local",
}

TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+|\d+(?:[eE][-+]?\d+)?)[uUlLfF]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\.\.\.|[-+*/%<>=!&|^~?:;,.(){}\[\]#\\])
""", re.S | re.X)


def tokenize(text):
    """Returns the code tokens of TEXT as (kind, text, offset, line):
    comments, whitespace and preprocessor lines (with their
    continuations) left out."""
    toks, pos, line, bol, inpp = [], 0, 1, True, False
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"line {line}: cannot tokenize "
                             f"{text[pos:pos + 20]!r}")
        kind, s = m.lastgroup, m.group()
        if kind == "op" and s == "#" and bol:
            inpp = True
        if kind in ("ws", "comment"):
            for i, c in enumerate(s):
                if c == "\n":
                    if not (inpp and text[pos + i - 1:pos + i] == "\\"):
                        inpp = False
                    bol = True
        elif not inpp:
            if not (kind == "op" and s == "\\"):
                toks.append((kind, s, pos, line))
            bol = False
        else:
            bol = False
        line += s.count("\n")
        pos = m.end()
    return toks


def skipped(toks):
    """The indices of tokens inside a SKIP_CALLS call (the name too)."""
    out, i = set(), 0
    while i < len(toks):
        if toks[i][1] in SKIP_CALLS and i + 1 < len(toks) and \
                toks[i + 1][1] == "(":
            depth, j = 0, i + 1
            while j < len(toks):
                depth += {"(": 1, ")": -1}.get(toks[j][1], 0)
                if depth == 0:
                    break
                j += 1
            out.update(range(i, j + 1))
            i = j
        i += 1
    return out


def match_paren(toks, i):
    depth = 0
    for j in range(i, len(toks)):
        depth += {"(": 1, ")": -1}.get(toks[j][1], 0)
        if depth == 0:
            return j
    return None


KEYWORDS = {"return", "case", "sizeof", "else", "do", "goto"}


def operand_end(kind, s):
    """Whether a token of KIND and text S can end an operand (so that a
    + or - after it is binary, a ++ or -- postfix)."""
    return kind == "num" or kind == "id" and s not in KEYWORDS or \
        s in (")", "]")


def mutants_of(text):
    """Every mutant of TEXT, as (operator, start, end, replacement, line):
    the span [start, end) of TEXT replaced."""
    toks = tokenize(text)
    skip = skipped(toks)
    out, pdepth, d = [], [], 0
    for t in toks:  # the parenthesis depth of each token
        d += t[1] == "("
        d -= t[1] == ")"
        pdepth.append(d)
    swap = {"&&": "||", "||": "&&", "<": "<=", "<=": "<", ">": ">=",
            ">=": ">", "==": "!=", "!=": "==", "+": "-", "-": "+"}
    name = {"&&": "and-or", "||": "and-or", "<": "relational",
            "<=": "relational", ">": "relational", ">=": "relational",
            "==": "equality", "!=": "equality", "+": "arith",
            "-": "arith"}
    for i, (kind, s, off, line) in enumerate(toks):
        if i in skip:
            continue
        prev = toks[i - 1] if i else ("op", ";", 0, 0)
        nxt = toks[i + 1] if i + 1 < len(toks) else ("op", ";", 0, 0)
        end = off + len(s)
        if kind == "op" and s in swap:
            if s in "+-" and not operand_end(prev[0], prev[1]):
                continue  # unary
            out.append((name[s], off, end, swap[s], line))
        elif kind == "id" and s in ("if", "while") and nxt[1] == "(":
            j = match_paren(toks, i + 1)
            if j is not None and not (skip & set(range(i, j + 1))):
                a, b = toks[i + 1][2] + 1, toks[j][2]
                out.append(("negate", a, b, "!(" + text[a:b] + ")", line))
        elif kind == "op" and s in ("++", "--"):
            if operand_end(prev[0], prev[1]):
                # postfix: standalone (x++; or a for's step) keeps a
                # statement with an effectless += 0, else the value stays
                k, depth = i - 1, 0
                while k > 0:
                    depth += {"]": 1, "[": -1}.get(toks[k][1], 0)
                    if not (depth > 0 or toks[k][1] in ("[", "]", ".",
                                                         "->") or
                            toks[k][0] in ("id", "num")):
                        break
                    k -= 1
                alone = toks[k][1] in (";", "{", "}", ")") and \
                    nxt[1] in (";", ")")
                out.append(("incdec", off, end, " += 0" if alone else "",
                            line))
            else:
                out.append(("incdec", off, end, "", line))
        elif kind == "num" and not (prev[1] == "[" and nxt[1] == "]" and
                                    i >= 3 and
                                    (toks[i - 3][0] == "id" and
                                     toks[i - 3][1] not in KEYWORDS or
                                     toks[i - 3][1] == "*") and
                                    i + 2 < len(toks) and
                                    toks[i + 2][1] in (";", "=", "[")):
            # an array's length in its declaration: a size, not logic
            m = re.match(r"(0[xX][0-9a-fA-F]+|\d+)(\w*)$", s)
            if not m:
                continue
            digits, suf = m.groups()
            v = int(digits, 0) if digits.startswith(("0x", "0X")) else \
                int(digits, 8 if len(digits) > 1 and digits[0] == "0"
                    else 10)
            if digits.startswith(("0x", "0X")):
                fmt = lambda x: hex(x) + suf  # noqa: E731
            else:
                fmt = lambda x: str(x) + suf  # noqa: E731
            for w in (v + 1, v - 1):
                if w >= 0:
                    out.append(("constant", off, end, fmt(w), line))
        elif kind == "id" and s == "return" and nxt[1] != ";":
            j = i + 1
            depth = 0
            while j < len(toks) and not (toks[j][1] == ";" and depth == 0):
                depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(
                    toks[j][1], 0)
                j += 1
            if j >= len(toks) or skip & set(range(i, j)):
                continue
            a, b = toks[i + 1][2], toks[j][2]
            expr = text[a:b].strip()
            out.append(("return", a, b, "1" if expr == "0" else "0", line))
        if kind == "id" and prev[1] in (";", "{", "}") and \
                pdepth[i] == 0 and \
                s not in TYPE_WORDS and not s.endswith("_t") and \
                s not in ("if", "while", "for", "do", "else", "switch",
                          "case", "default", "goto", "typedef") and \
                nxt[1] not in (":",):
            # a statement on one line, deleted
            j, depth = i, 0
            while j < len(toks) and not (toks[j][1] == ";" and depth == 0):
                depth += {"(": 1, ")": -1, "[": 1, "]": -1, "{": 9,
                          "}": -9}.get(toks[j][1], 0)
                if depth < 0 or depth >= 9:
                    break
                j += 1
            whole = j < len(toks) and toks[j][1] == ";" and \
                depth == 0 and toks[j][3] == line and \
                not (skip & set(range(i, j + 1)))
            decl = nxt[0] == "id" or nxt[1] == "*" and prev[1] != ")"
            if s == "return" and nxt[1] != ";":
                whole = False  # would not compile: see "return" above
            if whole and (not decl or s in ("break", "continue",
                                             "return")):
                out.append(("delete", off, toks[j][2] + 1, "", line))
    return out


def files_under(src, paths):
    out = []
    for p in paths:
        base = os.path.join(src, p)
        if os.path.isfile(base):
            out.append(p)
        for dirpath, _, names in os.walk(base):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, n),
                                               src))
    return sorted(out)


def norm(s):
    return " ".join(s.split())


class Mutant:
    def __init__(self, path, text, m):
        self.path, self.op = path, m[0]
        start, end, repl, self.line = m[1], m[2], m[3], m[4]
        self.new = text[:start] + repl + text[end:]
        a = text.rfind("\n", 0, start) + 1
        b = text.find("\n", end)
        b = len(text) if b < 0 else b
        self.before = text[a:b]
        self.after = text[a:start] + repl + text[end:b]
        self.result, self.by, self.secs, self.num = None, "", 0.0, 0

    def key(self):
        return (self.path, self.op, norm(self.before), norm(self.after))

    def diff(self):
        out = [f"--- {self.path}:{self.line} ({self.op})"]
        out += ["- " + ln for ln in self.before.splitlines()]
        out += ["+ " + ln for ln in self.after.splitlines()]
        return "\n".join(out)


def read_equivalents(path=EQUIVALENTS):
    """The equivalents file: blocks of `--- PATH:LINE (OP)`, `- before`
    lines, `+ after` lines and a `why:` line. Returns {key: why}."""
    out, cur = {}, None
    if not os.path.exists(path):
        return out
    for ln in open(path):
        ln = ln.rstrip("\n")
        m = re.match(r"--- (\S+):\d+ \(([\w-]+)\)", ln)
        if m:
            cur = [m.group(1), m.group(2), [], [], ""]
        elif cur and ln.startswith("- "):
            cur[2].append(ln[2:])
        elif cur and ln.startswith("+ "):
            cur[3].append(ln[2:])
        elif cur and ln.startswith("why:"):
            cur[4] = ln[4:].strip()
            out[(cur[0], cur[1], norm("\n".join(cur[2])),
                 norm("\n".join(cur[3])))] = cur[4]
            cur = None
    return out


def all_mutants(src, paths):
    """{path: {line: [Mutant...]}} over the files under PATHS."""
    out = {}
    for f in files_under(src, paths):
        text = open(os.path.join(src, f)).read()
        byline = {}
        for m in mutants_of(text):
            mu = Mutant(f, text, m)
            if mu.after != mu.before:
                byline.setdefault(mu.line, []).append(mu)
        out[f] = byline
    return out


def sample(src, paths, n, seed, equiv):
    """N mutants drawn with SEED: a line drawn among all mutable lines of
    all files (so each file weighted by its mutable lines), then one of
    that line's mutants. A draw the equivalents file names is skipped and
    does not count, so each mutant's number (its draw) stays the same when
    the equivalents file grows."""
    every = all_mutants(src, paths)
    lines = [(f, ln) for f in sorted(every) for ln in sorted(every[f])]
    rng = random.Random(seed)
    rng.shuffle(lines)
    picked = []
    for k, (f, ln) in enumerate(lines, 1):
        if len(picked) == n:
            break
        m = rng.choice(every[f][ln])
        m.num = k
        if m.key() not in equiv:
            picked.append(m)
    return picked


def sample_stable(src, paths, n, seed, equiv):
    """N mutants drawn with SEED so that an edit elsewhere does not change
    them: each mutable line ranked by a hash of the seed, its file, its
    text and which occurrence of that text in the file it is; the N lines
    ranked first, each with its mutant ranked first by the same hash of
    the mutant. A draw changes only when its own line changes or a new
    line ranks before it. Numbered by rank; equivalents skipped."""
    def h(*parts):
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()
    every = all_mutants(src, paths)
    ranked = []
    for f in sorted(every):
        lines = open(os.path.join(src, f)).read().split("\n")
        seen = {}
        for ln in sorted(every[f]):
            t = norm(lines[ln - 1])
            seen[t] = seen.get(t, 0) + 1
            ranked.append((h(seed, f, t, str(seen[t])), f, ln))
    ranked.sort()
    picked = []
    for k, (_, f, ln) in enumerate(ranked, 1):
        if len(picked) == n:
            break
        m = min(every[f][ln], key=lambda x: h(seed, *x.key()))
        m.num = k
        if m.key() not in equiv:
            picked.append(m)
    return picked


def guards(path):
    for prefix, _, tests in GUARDS:
        if path.startswith(prefix):
            return tests
    return []


def targets(path):
    for prefix, tgts, _ in GUARDS:
        if path.startswith(prefix):
            return tgts
    return []


def judge(dst, m, timeout, prefix, jobs, budget):
    """Builds mutant M in DST (its folder's targets only) and runs its
    guards until one fails, each within TIMEOUT seconds and all within
    BUDGET; then restores the file and, for a .c file, its pristine
    objects (scratch.Pristine), so that the next build only relinks."""
    full = os.path.join(dst, m.path)
    text = open(full).read()
    keep = Pristine(dst, m.path)
    t0 = time.time()
    try:
        open(full, "w").write(m.new)
        ok, _ = build(dst, prefix, jobs, targets(m.path))
        if not ok:
            m.result = "not compiled"
            return
        m.result = "survived"
        for t in guards(m.path):
            left = budget - (time.time() - t0)
            if left <= 0:
                m.result, m.by = "timed out", "the budget of the mutant"
                return
            rc, _, _ = ctest(dst, f"^{re.escape(t)}$", prefix,
                             min(timeout, left))
            if rc is None:
                m.result, m.by = "timed out", t
                return
            if rc:
                m.result, m.by = "killed", t
                return
    finally:
        open(full, "w").write(text)
        keep.restore()
        m.secs = time.time() - t0


def folder(path):
    return "/".join(path.split("/")[:2])


def report(ms, equiv):
    print("\nmutation score per folder (killed / (killed + survived); "
          "timed out and not compiled apart):")
    rows = {}
    for m in ms:
        rows.setdefault(folder(m.path), []).append(m)
    tot = {"killed": 0, "survived": 0, "timed out": 0, "not compiled": 0}
    for f in sorted(rows):
        c = {k: sum(m.result == k for m in rows[f]) for k in tot}
        for k in tot:
            tot[k] += c[k]
        judged = c["killed"] + c["survived"]
        score = f"{100 * c['killed'] / judged:.0f}%" if judged else "-"
        print(f"  {f:16} {score:>5}  killed {c['killed']}, survived "
              f"{c['survived']}, timed out {c['timed out']}, not compiled "
              f"{c['not compiled']}")
    judged = tot["killed"] + tot["survived"]
    score = f"{100 * tot['killed'] / judged:.0f}%" if judged else "-"
    print(f"  {'all':16} {score:>5}  killed {tot['killed']}, survived "
          f"{tot['survived']}, timed out {tot['timed out']}, not compiled "
          f"{tot['not compiled']}")
    open_ = [m for m in ms if m.result == "survived" and
             m.key() not in equiv]
    for m in ms:
        if m.result == "survived":
            why = equiv.get(m.key())
            print(f"\nsurvivor #{m.num}" +
                  (f" (equivalent: {why})" if why else "") +
                  ":\n" + m.diff())
    for m in ms:
        if m.result == "timed out":
            print(f"\n#{m.num} timed out in {m.by}:\n" + m.diff())
    return 1 if open_ else 0


SNIPPET = """\
#define MAX(a, b) ((a) > (b) ? (a) : (b))
/* if (x < 1) a++; */
static int f(int *v, int n)
{
	int buf[8];
	shim_warn("n < %d", n + 1);
	assert(n >= 0);
	for (int i = 0; i < n; i++)
		v[i] = v[i] + 2;
	if (n == 3 && v[0])
		return -1;
	n--;
	v[*v]++;
	return buf[0];
}
"""
SNIPPET_WANT = {
    ("relational", "for (int i = 0; i <= n; i++)"),
    ("incdec", "for (int i = 0; i < n; i += 0)"),
    ("constant", "for (int i = 1; i < n; i++)"),
    ("arith", "v[i] = v[i] - 2;"),
    ("constant", "v[i] = v[i] + 3;"),
    ("constant", "v[i] = v[i] + 1;"),
    ("delete", ""),
    ("negate", "if (!(n == 3 && v[0]))"),
    ("equality", "if (n != 3 && v[0])"),
    ("and-or", "if (n == 3 || v[0])"),
    ("constant", "if (n == 4 && v[0])"),
    ("constant", "if (n == 2 && v[0])"),
    ("return", "return 0;"),
    ("constant", "return -2;"),
    ("constant", "return -0;"),
    ("incdec", "n += 0;"),
    ("incdec", "v[*v] += 0;"),
    ("delete", ""),
    ("constant", "return buf[1];"),
    ("constant", "if (n == 3 && v[1])"),
}


def check(src):
    bad = 0
    got = {(m.op, norm(m.after)) for m in
           (Mutant("s.c", SNIPPET, x) for x in mutants_of(SNIPPET))}
    for w in sorted(SNIPPET_WANT ^ got):
        bad += 1
        what = "missing" if w in SNIPPET_WANT else "not expected"
        print(f"mutate: the snippet's mutant {w} is {what}",
              file=sys.stderr)
    equiv = read_equivalents()
    files = {k[0] for k in equiv}
    have = {m.key() for f in files if os.path.exists(os.path.join(src, f))
            for ms in all_mutants(src, [f]).get(f, {}).values()
            for m in ms} if files else set()
    for k in sorted(set(equiv) - have):
        bad += 1
        print(f"mutate: {EQUIVALENTS}: {k[0]} ({k[1]}) `{k[2]}` -> "
              f"`{k[3]}` is no longer a mutant of its file; follow the "
              f"code or drop the entry", file=sys.stderr)
    blocks = (sum(1 for ln in open(EQUIVALENTS) if ln.startswith("--- "))
              if os.path.exists(EQUIVALENTS) else 0)
    if blocks != len(equiv):
        bad += 1
        print(f"mutate: {EQUIVALENTS}: {blocks} blocks but {len(equiv)} "
              f"read: a block's header, lines or why: is malformed, or "
              f"two blocks are the same mutant", file=sys.stderr)
    print(f"mutate: {len(SNIPPET_WANT)} snippet mutants, {len(equiv)} "
          f"equivalents, {bad} wrong")
    return 1 if bad else 0


def main(argv):
    start = time.time()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=os.path.join(HERE, "..", ".."))
    ap.add_argument("--paths", default=DEFAULT_PATHS)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--sample", type=int)
    ap.add_argument("--seed", default="0")
    ap.add_argument("--scratch", default="/tmp/mallock-mutate")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--budget", type=float, default=240,
                    help="seconds a mutant may take, build and tests")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--nice", type=int, default=0)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--in-place", action="store_true")
    ap.add_argument("--no-baseline", action="store_true",
                    help="do not run the guarding tests unmutated first "
                    "(CI: the suite has just passed in the same build)")
    ap.add_argument("--only", default="",
                    help="judge only these mutants of the sample (N,N...)")
    ap.add_argument("--until", default="",
                    help="HH:MM UTC: judge no mutant after it, report")
    ap.add_argument("--stable", action="store_true",
                    help="draw by a hash of each line's text, so that "
                    "edits elsewhere leave the draws as they are (CI)")
    ap.add_argument("--minutes", type=float, default=0,
                    help="judge no mutant after this many minutes from "
                    "the start (a deadline that does not wrap at midnight)")
    a = ap.parse_args(argv[1:])
    src = os.path.abspath(a.src)
    paths = [p.strip().rstrip("/") for p in a.paths.split(",") if p.strip()]
    for p in paths:
        if not os.path.isdir(os.path.join(src, p)):
            print(f"mutate: {p}: no such folder under {src}",
                  file=sys.stderr)
            return 2
    if a.check:
        return check(src)
    if a.list:
        every = all_mutants(src, paths)
        for f in sorted(every):
            print(f"{f}: {len(every[f])} mutable lines, "
                  f"{sum(map(len, every[f].values()))} mutants")
        return 0
    if not a.sample:
        ap.print_usage(sys.stderr)
        return 2
    equiv = read_equivalents()
    ms = (sample_stable if a.stable else sample)(src, paths, a.sample,
                                                 a.seed, equiv)
    if a.only:
        only = {int(x) for x in a.only.split(",")}
        ms = [m for m in ms if m.num in only]
    if a.show:
        for m in ms:
            print(f"#{m.num} " + m.diff())
        return 0
    prefix = f"nice -n {a.nice} " if a.nice else ""
    if a.in_place:
        dst = src
        dirty = subprocess.run(["git", "-C", src, "diff", "--name-only",
                                "HEAD", "--"] + sorted({m.path for m in ms}),
                               capture_output=True, text=True).stdout
        if dirty.strip():
            print("mutate: --in-place: these files have changes git would "
                  "not restore:\n" + dirty, file=sys.stderr)
            return 2
        cok, clog = os.path.isdir(os.path.join(src, "build")), \
            "mutate: --in-place needs build/, built\n"
    else:
        dst = os.path.abspath(a.scratch)
        os.makedirs(dst, exist_ok=True)
        copy_tracked(src, dst)
        cok, clog = configure(dst, prefix)
    for s_ in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s_, lambda *_: sys.exit(130))  # runs judge's finally
    ok, log = build(dst, prefix, a.jobs)
    if not cok or not ok:
        print("mutate: the unmutated build failed:\n" + clog + log)
        return 2
    need = sorted({t for m in ms for t in guards(m.path)})
    regex = "|".join(f"^{re.escape(t)}$" for t in need)
    if a.no_baseline:
        print(f"mutate: {len(ms)} mutants, seed {a.seed!r}; the guarding "
              f"tests not run unmutated (--no-baseline)", flush=True)
    else:
        rc, ran, out = ctest(dst, regex, prefix)
        if rc or not ran:
            print("mutate: the guarding tests fail unmutated, so no kill "
                  "would mean anything:\n" + out[-3000:])
            return 2
        print(f"mutate: {len(ms)} mutants, seed {a.seed!r}; unmutated, "
              f"the {ran.group(2)} guarding tests pass", flush=True)
    t0 = time.time()
    done = []
    for m in ms:
        if a.until and time.strftime("%H:%M", time.gmtime()) >= a.until:
            print(f"mutate: {a.until} UTC reached: {len(done)} of "
                  f"{len(ms)} mutants judged, the rest not run")
            break
        if a.minutes and time.time() - start >= a.minutes * 60:
            print(f"mutate: {a.minutes:g} minutes passed: {len(done)} of "
                  f"{len(ms)} mutants judged, the rest not run")
            break
        judge(dst, m, a.timeout, prefix, a.jobs, a.budget)
        done.append(m)
        by = f" by {m.by}" if m.by else ""
        print(f"#{m.num} {m.path}:{m.line} {m.op}: {m.result}{by} "
              f"({m.secs:.0f} s)", flush=True)
        if m.result == "survived":
            print(m.diff(), flush=True)
    build(dst, prefix, a.jobs)
    ms, n = done, len(done)
    print(f"mutate: {n} mutants in {time.time() - t0:.0f} s, "
          f"{(time.time() - t0) / max(n, 1):.0f} s a mutant")
    return report(ms, equiv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
