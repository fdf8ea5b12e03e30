#!/usr/bin/env bash
# TCP Outcast in a k=4 fat tree (002_b94e7e7e77304abe.txt, Fig. 5 and 6): 15 senders, one
# receiver.  -r st|hashed|ecmp picks the routing (repeatable; default: all three, and with
# --quick the two the headline claims judge, st and hashed).
# Other arguments go to `dcrepro run outcast-fattree`, e.g.
#   scripts/fattree-outcast-sweep.sh -r st --quick
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
strategies=()
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    -r|--routing)
      [ $# -ge 2 ] || { echo "fattree-outcast-sweep: $1 needs st, hashed or ecmp" >&2; exit 2; }
      case "$2" in st|hashed|ecmp) strategies+=("$2") ;;
        *) echo "fattree-outcast-sweep: -r must be st, hashed or ecmp, got '$2'" >&2; exit 2 ;;
      esac
      shift 2 ;;
    --quick) quick=1; extra+=("$1"); shift ;;
    *) extra+=("$1"); shift ;;
  esac
done
if [ ${#strategies[@]} -eq 0 ]; then
  # quick: the headlines' routings only (ecmp's claims are not headlines; issue #54)
  if [ -n "${quick:-}" ]; then strategies=(st hashed); else strategies=(st hashed ecmp); fi
fi
. scripts/run-folder.sh
./setup.sh
DCREPRO=${DCREPRO:-.venv/bin/dcrepro}
dirs=()
for r in "${strategies[@]}"; do
  run_folder fattree-outcast-sweep "routing $r" \
    $DCREPRO run outcast-fattree --routing "$r" ${extra[@]+"${extra[@]}"}
  dirs+=("$dir")
done
show_figures fattree-outcast-sweep "${dirs[@]}"
