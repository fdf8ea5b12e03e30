#!/usr/bin/env bash
# Jellyfish vs fat tree fairness (issue #4): one command that regenerates rank.png and the
# other figures (path_lengths.png, utilisation.png, iperf_vs_bwm.png, ...) in a run folder.
#
# As root:
#   scripts/jellyfish-sweep.sh                 # emulated: 2 topologies x 8 runs x 60 s, MPTCP
#        with the paper's coupled LIA at 5 Mb/s, as the reference run (15 Mb/s, the default,
#        saturates 2 cores)
#   scripts/jellyfish-sweep.sh --quick         # short version (what reproduce.sh runs)
#   scripts/jellyfish-sweep.sh --paper         # paper scale via the flow-level model:
#        k=10 fat tree vs 125-switch Jellyfish (10 ports) with 250 and 12 % more servers, ksp k=8
#
# Every other flag passes through to `dcrepro run fairness` and wins over --paper's presets,
# e.g. --runs 3 --seed 7 --bw 10 --duration 30 --jellyfish jellyfish,switches=20,ports=4,hosts=16
# --k 8 --grow 2 --extra-servers 0.12 --backend model --out results.
# Prints the run folder, the summary, one headline per topology and the figure paths.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >&2

PAPER=(--backend model --fattree fattree,k=10 --jellyfish jellyfish,switches=125,ports=10,hosts=250
       --extra-servers 0.12 --k 8 --cc lia)
preset=(--cc lia --bw 5)
args=()
for a in "$@"; do
  if [ "$a" = "--paper" ]; then preset=("${PAPER[@]}"); else args+=("$a"); fi
done

# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
"${cmd[@]}" run fairness "${preset[@]}" "${args[@]}" | tee "$log"
run_dir=$(sed -n 's/^run folder: //p' "$log" | head -n1)
echo "jellyfish-sweep: $(( $(date +%s) - start )) s wall"
.venv/bin/python -c 'import sys; from experiments.fairness.figures import headline; print(headline(sys.argv[1]))' "$run_dir"
echo "figures:"
sed -n 's/^figure: /  /p' "$log"
