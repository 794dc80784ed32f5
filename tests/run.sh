#!/usr/bin/env bash
# The whole test suite, set up from nothing on a Debian machine: Debian's chromium (the
# browser tests) and nodejs (the page's pure modules, under node --test) when they are
# missing and this user may install them, a virtual environment with the project and every
# extra, the linter, then pytest (arguments given to this script go to pytest).
#
#   bash tests/run.sh                  # everything
#   bash tests/run.sh -m "not browser" # the fast tests only
#
# Without chromium or node their tests skip, saying why; under CI=true they fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
trap 'took=$((SECONDS - started)); echo "The tests took $((took / 60)) min $((took % 60)) s"' EXIT

bash tests/system-packages.sh

python3 -m venv .venv
.venv/bin/pip install -q -e '.[test,torch,notebook]'
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest "$@"
