#!/usr/bin/env bash
# Install what is missing, then run the whole test suite (unit + integration as root).
# Extra arguments go to pytest, e.g. scripts/test.sh -m "not integration".
# --with-slurm: the launcher tests run GNU parallel and a real one-node Slurm.
# --with-browser: the report page is opened in headless Chromium (tests/unit/test_report_browser.py).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh --with-slurm --with-browser
exec .venv/bin/python -m pytest "$@"
