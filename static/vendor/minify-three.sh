#!/usr/bin/env bash
# Build the minified three.js the page loads, from pinned npm packages: `three` (the version in
# three/VERSION, as vendor-three.sh fetched it), bundled and tree-shaken by `esbuild` and
# compressed by `terser` (both pinned below). Writes
#   three/examples/jsm/controls/OrbitControls.min.js   the addon, minified, importing 'three'
#   three/build/three.module.min.js   three.module.js with three.core.js folded in, keeping
#       only what the page uses (every `THREE.Name` and `import { Name } from 'three'` under
#       static/js, and the names the minified addon imports), minified
# The code is three's own, only tree-shaken and minified (licence comments kept at the end of
# the file). index.html's import map points `three` at the minified build; the unminified
# copies stay next to it for reading. After the page starts using another part of three.js,
# run this again (tests/web/test_first_load.py names any name the build lacks).
# Run from anywhere: `bash static/vendor/minify-three.sh`. Needs npm.
set -euo pipefail

VERSION="$(cat "$(dirname "${BASH_SOURCE[0]}")/three/VERSION")"
ESBUILD="0.28.2"
TERSER="5.51.4"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/three"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "three@$VERSION" >/dev/null 2>&1
tar xzf "three-$VERSION.tgz"
npm install --silent --no-save --no-audit --no-fund "esbuild@$ESBUILD" "terser@$TERSER" >/dev/null 2>&1
ESB="$WORK/node_modules/.bin/esbuild"
TERSER_BIN="$WORK/node_modules/.bin/terser"

"$ESB" package/examples/jsm/controls/OrbitControls.js --bundle --format=esm --minify \
  --external:three --legal-comments=eof --log-level=warning \
  --outfile="$DEST/examples/jsm/controls/OrbitControls.min.js"

# The names the page takes from three.js.
JS="$HERE/../js"
{
  grep -rhoE 'THREE\.[A-Za-z_][A-Za-z0-9_]*' "$JS" | sed 's/^THREE\.//'
  grep -rhoE "import[[:space:]]*\{[^}]*\}[[:space:]]*from[[:space:]]*['\"]three['\"]" "$JS" \
    "$DEST/examples/jsm/controls/OrbitControls.min.js" \
    | sed -E "s/^import[[:space:]]*\{//; s/\}.*//" | tr ',' '\n' \
    | sed -E 's/[[:space:]]+as[[:space:]].*//; s/[[:space:]]//g'
} | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u > names.txt
echo "export { $(paste -sd, names.txt) } from './package/build/three.module.js';" > entry.js
# esbuild bundles and tree-shakes; terser's two compression passes then take a few KB more.
"$ESB" entry.js --bundle --format=esm --minify --legal-comments=eof --log-level=warning \
  --outfile=bundle.js
"$TERSER_BIN" bundle.js --module --compress passes=2 --mangle --comments /@license/ \
  -o "$DEST/build/three.module.min.js"
echo "$(wc -l < names.txt) names kept"
echo "three $VERSION minified with esbuild $ESBUILD into $DEST"
