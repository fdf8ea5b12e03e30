#!/usr/bin/env bash
# TCP Outcast on the linear topology: 1 lone flow vs N = 2, 6, 12 flows behind s2
# (002_b94e7e7e77304abe.txt, Fig. 4).  Extra arguments go to `dcrepro run outcast`,
# e.g.  scripts/outcast-sweep.sh --quick   or   scripts/outcast-sweep.sh --rto-min 2ms
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh
DCREPRO=${DCREPRO:-.venv/bin/dcrepro}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
$DCREPRO run outcast --flows 2,6,12 "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
dir=$(sed -n 's/^run folder: //p' "$log" | head -1)
if [ "$rc" -ne 0 ]; then
  echo "outcast-sweep: run failed (exit $rc); see ${dir:-the output above}/log.txt" >&2
  exit "$rc"
fi
echo "outcast-sweep: figures in $dir:"
ls "$dir"/*.png
