#!/usr/bin/env bash
# Regenerate the packet-spraying figures of 004_a477753408ad7b79.txt (Fig. 1 (a)-(c):
# throughput.png, latency_rank.png, flows_rank.png, claims.md): ECMP vs random, counter and
# round-robin spraying on a 6-pod fat tree, 27 TCP transfers, on the BPF dataplane.
# Flags pass through to `dcrepro run plts` (see --help), e.g.:
#   scripts/plts-sweep.sh --quick
#   scripts/plts-sweep.sh --recovery both          # also with the paper-era loss recovery
#   scripts/plts-sweep.sh --ecmp-aqm red/droptail  # ECMP on RED/ECN (the paper's) and on drop-tail
#   scripts/plts-sweep.sh --backend model --topo fattree,k=16
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null
# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
exec "${cmd[@]}" run plts "$@"
