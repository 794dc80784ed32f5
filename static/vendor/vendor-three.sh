#!/usr/bin/env bash
# Fetch the pinned three.js release from the npm registry and copy, unmodified, the files the
# scene imports (the ES module build, its core, and the OrbitControls addon) plus the licence.
# Run from anywhere: `bash static/vendor/vendor-three.sh`. Needs npm and tar.
set -euo pipefail

VERSION="0.187.0"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/three"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "three@$VERSION" >/dev/null 2>&1
tar xzf "three-$VERSION.tgz"

rm -rf "$DEST"
mkdir -p "$DEST/build" "$DEST/examples/jsm/controls"
cp package/LICENSE "$DEST/LICENSE"
# 0.187 ships no minified builds; three.module.js imports the shared three.core.js.
cp package/build/three.module.js package/build/three.core.js "$DEST/build/"
cp package/examples/jsm/controls/OrbitControls.js "$DEST/examples/jsm/controls/"
echo "$VERSION" > "$DEST/VERSION"
echo "three $VERSION vendored into $DEST"
