#!/usr/bin/env bash
# Install what is missing, then run the code checks (ruff, mypy: pyproject.toml says what they
# cover) and the whole test suite (unit + integration as root).
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not integration".
# --checks-only: the code checks alone (seconds; no root needed once installed).
# The launcher tests run GNU parallel and a real one-node Slurm, and the report page is opened
# in headless Chromium (tests/unit/test_report_browser.py), and the simulation backend's tests
# run ns-3 (tests/unit/test_sim_ns3.py): setup.sh installs all three here.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
checks_only=0
if [ "${1:-}" = "--checks-only" ]; then checks_only=1; shift; fi
./setup.sh --with-slurm --with-browser --with-sim
echo "code checks: ruff, mypy"
.venv/bin/ruff check --no-cache --quiet . || { echo "test.sh: ruff found problems (above)" >&2; exit 1; }
typed=$(.venv/bin/mypy --no-incremental --cache-dir=/dev/null 2>&1) ||
  { echo "$typed"; echo "test.sh: mypy found problems (above)" >&2; exit 1; }
echo "$typed" | tail -1
[ "$checks_only" -eq 0 ] || exit 0
exec .venv/bin/python -m pytest "$@"
