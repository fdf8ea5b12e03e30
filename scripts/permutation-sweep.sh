#!/usr/bin/env bash
# Regenerate the permutation figures (TCP vs MPTCP under ECMP on a k=4 fat tree: rank.png,
# iperf_vs_bwm.png, fidelity.png) into a new results folder. MPTCP runs the paper's coupled
# LIA (--cc lia) at 5 Mb/s, as the reference run does: on 2 cores the 10 Mb/s default leaves
# the CPU saturated. Flags pass through to `dcrepro run permutation` (see --help) and win,
# e.g.:  scripts/permutation-sweep.sh --quick --cc cubic --bw 10
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null
# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
exec "${cmd[@]}" run permutation --cc lia --bw 5 "$@"
