#!/usr/bin/env bash
# TCP Outcast in a k=4 fat tree (002_b94e7e7e77304abe.txt, Fig. 5 and 6): 15 senders, one
# receiver.  -r st|hashed|ecmp picks the routing (repeatable; default: all three).
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
    *) extra+=("$1"); shift ;;
  esac
done
[ ${#strategies[@]} -gt 0 ] || strategies=(st hashed ecmp)
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
