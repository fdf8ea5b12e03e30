#!/usr/bin/env bash
# Regenerate the permutation figures (TCP vs MPTCP under ECMP on a k=4 fat tree: rank.png,
# iperf_vs_bwm.png, fidelity.png) into a new results folder. Flags pass through to
# `dcrepro run permutation` (see --help), e.g.:  scripts/permutation-sweep.sh --quick --bw 5
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null
# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
exec "${cmd[@]}" run permutation "$@"
