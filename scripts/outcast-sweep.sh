#!/usr/bin/env bash
# TCP Outcast on the linear topology: 1 lone flow vs N = 2, 6, 12 flows behind s2
# (002_b94e7e7e77304abe.txt, Fig. 4).  Extra arguments go to `dcrepro run outcast`,
# e.g.  scripts/outcast-sweep.sh --quick   or   scripts/outcast-sweep.sh --rto-min 2ms
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. scripts/run-folder.sh
./setup.sh
DCREPRO=${DCREPRO:-.venv/bin/dcrepro}
run_folder outcast-sweep run $DCREPRO run outcast "$@"
show_figures outcast-sweep "$dir"
