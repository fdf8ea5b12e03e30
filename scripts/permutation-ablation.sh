#!/usr/bin/env bash
# Issue #28's wire-bytes ablation of the permutation (000_b87022286e416fdf.txt, Fig. 4;
# docs/notebook/000-permutation-fairness.md): MPTCP-8 and TCP on the k=4 fat tree at 5 Mb/s,
# once as the paper's permutation and once with --pattern pairing (half the hosts send, the
# other half receive, so no access link carries one flow's data and another's ACKs), 5
# repetitions x 20 s each, about 4 minutes a part; then ablation.csv / ablation.md /
# ablation.png in results/permutation-ablation from studies/permutation_ablation.py.
# A part with a complete run is not run again (delete its folder to redo it).  The
# congestion control is the one argument (default cubic; lia writes to
# results/permutation-ablation-lia).  As root:
#   scripts/permutation-ablation.sh [cubic|lia]
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. scripts/ablation.sh
cc=${1:-cubic}
root=results/permutation-ablation$([ "$cc" = cubic ] || echo "-$cc")
flags=(--bw 5 --cc "$cc" --runs 5 --duration 20 --trim 4 --seed 1 --idle-cpus spin)
labels=()
for pattern in permutation pairing; do
  part permutation "$pattern" "${flags[@]}" --pattern "$pattern" || continue
  labels+=("$cc $pattern=$(newest permutation "$root/$pattern")")
done
if [ "${#labels[@]}" -eq 2 ]; then
  .venv/bin/python -m studies.permutation_ablation "$root" "${labels[@]}" || failed+=(figure)
fi
ablation_end permutation-ablation
