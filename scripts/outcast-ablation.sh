#!/usr/bin/env bash
# Issue #26's TCP Outcast ablation (002_b94e7e7e77304abe.txt, Fig. 4): the linear topology
# at N = 2, 6, 12 with 10 repetitions each, once per setting of studies/outcast_ablation.py
# (the default, the socket kept, ovs, rto_min 2ms, RED, HTB burst 15k, queue 100, 100 Mb/s),
# each changing one thing.  A setting with a complete run is not run again (delete its folder
# to redo it); then ablation.csv / ablation.md / ablation.png in results/outcast-ablation.
# About 8 minutes per setting.  As root:
#   scripts/outcast-ablation.sh              # every setting
#   scripts/outcast-ablation.sh default red  # only these
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. scripts/ablation.sh
root=results/outcast-ablation
while read -r name flags; do
  if [ "$#" -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  # shellcheck disable=SC2086  # the flags are words by design
  part outcast "$name" $flags
done < <(.venv/bin/python -m studies.outcast_ablation --list)
.venv/bin/python -m studies.outcast_ablation "$root" || failed+=(figure)
ablation_end outcast-ablation
