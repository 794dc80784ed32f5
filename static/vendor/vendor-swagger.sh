#!/usr/bin/env bash
# Fetch the pinned Swagger UI release from the npm registry and copy, unmodified, the files the
# /docs page loads (the browser bundle, its stylesheet and favicon) plus the licence and notices.
# Run from anywhere: `bash static/vendor/vendor-swagger.sh`. Needs npm and tar.
set -euo pipefail

VERSION="5.35.0"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEST="$HERE/swagger-ui"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$WORK"
npm pack --silent "swagger-ui-dist@$VERSION" >/dev/null 2>&1
tar xzf "swagger-ui-dist-$VERSION.tgz"

rm -rf "$DEST"
mkdir -p "$DEST"
cp package/swagger-ui-bundle.js package/swagger-ui.css "$DEST/"
if [ -f package/favicon-32x32.png ]; then
  cp package/favicon-32x32.png "$DEST/"
fi
# Apache-2.0: the licence and the NOTICE travel with the code; the bundle also carries
# third-party code whose licences npm ships next to it.
cp package/LICENSE "$DEST/LICENSE"
[ -f package/NOTICE ] && cp package/NOTICE "$DEST/NOTICE"
[ -f package/swagger-ui-bundle.js.LICENSE.txt ] && cp package/swagger-ui-bundle.js.LICENSE.txt "$DEST/"
echo "$VERSION" > "$DEST/VERSION"
echo "swagger-ui-dist $VERSION vendored into $DEST"
