#!/usr/bin/env bash
# Issue #28's PLTS ablations (004_a477753408ad7b79.txt, Fig. 1a; docs/results/004-plts.md):
# ECMP's collision draw in the flow model (100 pairings and hashes, no root, about 20 s)
# and the loss recovery without undo beside modern recovery in the emulator (ECMP on RED
# and the three sprays, 5 pairings x 25 s, about 25 minutes, root), and CNT balancing bytes
# against packets (--dataplane bpf against bpf,cnt=packets, CNT and RR, 5 pairings x 25 s,
# about 6 minutes each); then ablation.csv / ablation.md / ablation.png in
# results/plts-ablation from experiments/plts/ablation.py.
# A part with a complete run is not run again (delete its folder to redo it).  As root:
#   scripts/plts-ablation.sh
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null || exit 1
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
root=results/plts-ablation
failed=()
newest() {  # the newest run folder below $1 whose status is ok, or nothing
  .venv/bin/python -c "import sys; from store import newest_ok_run; print(newest_ok_run(sys.argv[1], 'plts') or '')" "$1"
}
part() {  # part NAME FLAGS...: run plts with FLAGS into $root/NAME unless it has a run
  local name=$1; shift
  if [ -n "$(newest "$root/$name")" ]; then echo "=== $name: complete run present, skipped"; return; fi
  echo "=== $name: ${cmd[*]} run plts $* --out $root/$name"
  "${cmd[@]}" run plts "$@" --out "$root/$name" || failed+=("$name")
}
part draws --backend model --runs 100 --seed 1
part noundo --ecmp-aqm red --recovery modern,noundo --runs 5 --duration 25 --trim 5 --seed 1
counter=(--schemes cnt,rr --runs 5 --duration 25 --trim 5 --seed 1 --idle-cpus spin)
part counter-bytes "${counter[@]}" --dataplane bpf
part counter-packets "${counter[@]}" --dataplane bpf,cnt=packets
draws=$(newest "$root/draws"); noundo=$(newest "$root/noundo")
bytes=$(newest "$root/counter-bytes"); packets=$(newest "$root/counter-packets")
if [ -n "$draws" ] && [ -n "$noundo" ] && [ -n "$bytes" ] && [ -n "$packets" ]; then
  .venv/bin/python -m experiments.plts.ablation "$root" --draws "$draws" --runs "$noundo" \
    --counters "bytes=$bytes" "packets=$packets" || failed+=(figure)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "plts-ablation: failed: ${failed[*]} (their run folders' log.txt say why)" >&2
  exit 1
fi
