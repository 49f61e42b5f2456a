#!/usr/bin/env bash
# Create .venv with the pinned torch (CPU build, from the local wheel cache) and triton,
# and install xpu_lite into it in editable mode. Idempotent: a stamp records what is in it.
# transformers (pure Python, no torch of its own) is for tests/test_tools.py and tools/hf_models.py.
set -euo pipefail
cd "$(dirname "$0")/.."
REQS="torch==2.13.0 triton==3.9.0 pytest pytest-xdist numpy expecttest transformers==5.23.0"
STAMP=".venv/.xpu_lite_bootstrap"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$REQS $(sha256sum setup.py | cut -c1-16)" ]; then
  exit 0
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
echo "bootstrap: installing $REQS into .venv (torch pinned: never resolve a bare 'torch')" >&2
.venv/bin/python -m pip install -q --disable-pip-version-check $REQS
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
echo "$REQS $(sha256sum setup.py | cut -c1-16)" > "$STAMP"
