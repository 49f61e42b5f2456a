#!/usr/bin/env bash
# Main job: python -m xpu_lite demo on the best available device (extra args pass through).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m xpu_lite demo "$@"
