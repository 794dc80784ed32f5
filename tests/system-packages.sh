#!/usr/bin/env bash
# Debian's chromium (the browser tests) and nodejs (the page's pure modules, under node
# --test), installed when missing and this user may install them (root, or sudo without a
# password); otherwise one line says what to install. Part of tests/run.sh.
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || missing+=(nodejs)
if ((${#missing[@]})); then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo -n)
  if command -v apt-get >/dev/null 2>&1 && "${as_root[@]}" true 2>/dev/null; then
    echo "Installing ${missing[*]} (Debian packages) ..."
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "Cannot install ${missing[*]} here: run 'sudo apt-get install -y ${missing[*]}' (until then their tests skip)"
  fi
fi
if command -v chromium >/dev/null 2>&1; then chromium --version; fi
if command -v node >/dev/null 2>&1; then echo "node $(node --version)"; fi
