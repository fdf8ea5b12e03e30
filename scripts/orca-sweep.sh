#!/usr/bin/env bash
# Regenerate the Orca figures of 001_da816e6d87c9a0a9.txt (Figs. 5-8: exec_time.png,
# send_cdf.png, wait_cdf.png, procs.png, claims.md): in-network multicast vs application-layer
# UDP unicast, 33 rounds a workload, workloads doubling, on the paper's testbed shape.
# Flags pass through to `dcrepro run orca` (see --help), e.g.:
#   scripts/orca-sweep.sh --quick
#   scripts/orca-sweep.sh --pace 0                 # unpaced sender, as the paper's
#   scripts/orca-sweep.sh --dataplane ovs          # OpenFlow group ALL instead of tc-BPF
#   scripts/orca-sweep.sh --backend model
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null
# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
exec "${cmd[@]}" run orca "$@"
