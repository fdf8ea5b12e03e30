#!/usr/bin/env bash
# Issue #28's PLTS ablations (004_a477753408ad7b79.txt, Fig. 1a; docs/notebook/004-plts.md):
# ECMP's collision draw in the flow model (100 pairings and hashes, no root, about 20 s)
# and the loss recovery without undo beside modern recovery in the emulator (ECMP on RED
# and the three sprays, 5 pairings x 25 s, about 25 minutes, root), and CNT balancing bytes
# against packets (--dataplane bpf against bpf,cnt=packets, CNT and RR, 5 pairings x 25 s,
# about 6 minutes each); then ablation.csv / ablation.md / ablation.png in
# results/plts-ablation from studies/plts_ablation.py.
# A part with a complete run is not run again (delete its folder to redo it).  As root:
#   scripts/plts-ablation.sh
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. scripts/ablation.sh
root=results/plts-ablation
part plts draws --backend model --runs 100 --seed 1
part plts noundo --ecmp-aqm red --recovery modern,noundo --runs 5 --duration 25 --trim 5 --seed 1
counter=(--schemes cnt,rr --runs 5 --duration 25 --trim 5 --seed 1 --idle-cpus spin)
part plts counter-bytes "${counter[@]}" --dataplane bpf
part plts counter-packets "${counter[@]}" --dataplane bpf,cnt=packets
draws=$(newest plts "$root/draws"); noundo=$(newest plts "$root/noundo")
bytes=$(newest plts "$root/counter-bytes"); packets=$(newest plts "$root/counter-packets")
if [ -n "$draws" ] && [ -n "$noundo" ] && [ -n "$bytes" ] && [ -n "$packets" ]; then
  .venv/bin/python -m studies.plts_ablation "$root" --draws "$draws" --runs "$noundo" \
    --counters "bytes=$bytes" "packets=$packets" || failed+=(figure)
fi
ablation_end plts-ablation
