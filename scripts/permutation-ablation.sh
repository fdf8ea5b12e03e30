#!/usr/bin/env bash
# Issue #28's wire-bytes ablation of the permutation (000_b87022286e416fdf.txt, Fig. 4;
# docs/results/000-permutation-fairness.md): MPTCP-8 and TCP on the k=4 fat tree at 5 Mb/s,
# once as the paper's permutation and once with --pattern pairing (half the hosts send, the
# other half receive, so no access link carries one flow's data and another's ACKs), 5
# repetitions x 20 s each, about 4 minutes a part; then ablation.csv / ablation.md /
# ablation.png in results/permutation-ablation from experiments/permutation/ablation.py.
# A part with a complete run is not run again (delete its folder to redo it).  The
# congestion control is the one argument (default cubic; lia writes to
# results/permutation-ablation-lia).  As root:
#   scripts/permutation-ablation.sh [cubic|lia]
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null || exit 1
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
cc=${1:-cubic}
root=results/permutation-ablation$([ "$cc" = cubic ] || echo "-$cc")
flags=(--bw 5 --cc "$cc" --runs 5 --duration 20 --trim 4 --seed 1 --idle-cpus spin)
failed=()
labels=()
newest() {  # the newest run folder below $1 whose status is ok, or nothing
  .venv/bin/python -c "import sys; from store import newest_ok_run; print(newest_ok_run(sys.argv[1], 'permutation') or '')" "$1"
}
for pattern in permutation pairing; do
  if [ -n "$(newest "$root/$pattern")" ]; then
    echo "=== $pattern: complete run present, skipped"
  else
    echo "=== $pattern: ${cmd[*]} run permutation ${flags[*]} --pattern $pattern --out $root/$pattern"
    "${cmd[@]}" run permutation "${flags[@]}" --pattern "$pattern" --out "$root/$pattern" ||
      { failed+=("$pattern"); continue; }
  fi
  labels+=("$cc $pattern=$(newest "$root/$pattern")")
done
if [ "${#labels[@]}" -eq 2 ]; then
  .venv/bin/python -m experiments.permutation.ablation "$root" "${labels[@]}" || failed+=(figure)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "permutation-ablation: failed: ${failed[*]} (their run folders' log.txt say why)" >&2
  exit 1
fi
