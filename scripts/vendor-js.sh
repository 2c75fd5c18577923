#!/bin/bash
# Rebuilds analyzer/output/html/vendor/: the flame graph library of the HTML report
# (`mallock report --format=html`), bundled once at development time so that
# building and testing mallock need no npm. Run it only to change the
# library's version, then commit the result:
#   scripts/vendor-js.sh            (needs node and npm, and npm's registry)
# What it does: installs d3-flame-graph (Apache-2.0) and the d3 modules it
# imports (ISC) at the pinned versions into a scratch directory, bundles
# them with esbuild into one minified IIFE (global `mallockFlame`), and
# copies the stylesheet and every bundled package's license next to it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/analyzer/html/vendor
FLAME=d3-flame-graph@5.0.0
ESBUILD=esbuild@0.24.0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
npm init -y >/dev/null
npm install --no-audit --no-fund --save-exact "$FLAME" d3-selection@3.0.0 \
  "$ESBUILD" >/dev/null
cat > entry.js <<'JS'
// d3-flame-graph 5's default export is the chart factory; d3-selection
// draws into the page; d3-transition (imported by the chart) animates.
import flamegraph from "d3-flame-graph";
import { select } from "d3-selection";
window.mallockFlame = { flamegraph, select };
JS
npx esbuild entry.js --bundle --minify --format=iife --target=es2018 \
  --legal-comments=none --outfile=flamegraph.bundle.js >/dev/null
mkdir -p "$OUT"
{
  echo "/* mallock's bundle of d3-flame-graph and d3 (scripts/vendor-js.sh)."
  echo " * $(node -e 'const p=require("./package-lock.json").packages;console.log(Object.keys(p).filter(k=>k).map(k=>k.replace("node_modules/","")+"@"+p[k].version+" ("+(p[k].license||"?")+")").filter(s=>/d3|internmap/.test(s)).join(", "))')"
  echo " * Licenses: analyzer/output/html/vendor/LICENSES. */"
  cat flamegraph.bundle.js
} > "$OUT/flamegraph.bundle.js"
cp node_modules/d3-flame-graph/dist/d3-flamegraph.css "$OUT/d3-flamegraph.css"
{
  for d in node_modules/d3-* node_modules/internmap; do
    [ -d "$d" ] || continue
    echo "==== $(basename "$d") $(node -p "require('./$d/package.json').version") ===="
    cat "$d"/LICENSE* 2>/dev/null || echo "(license: $(node -p "require('./$d/package.json').license"))"
    echo
  done
} > "$OUT/LICENSES"
ls -l "$OUT"
