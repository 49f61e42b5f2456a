#!/usr/bin/env bash
# The whole test suite (cpu always; cuda/xpu tests skip with a reason when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# as this project's CI runs it: torch checks some things only where CI is set (Inductor's
# lowerings at import, custom ops returning aliases), and a run here should fail as CI would
export CI="${CI:-1}"
# two worker processes (pytest-xdist): about half the time on two cores; "-n 0" runs in one.
# worksteal: a worker that runs out takes queued tests from the other (the slowest files
# run first: tests/conftest.py); the 25 slowest tests listed at the end
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal --durations=25 "$@"  # no path: pytest.ini's testpaths (tests/)
