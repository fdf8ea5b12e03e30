#!/usr/bin/env bash
# Regenerate the GRIN figure of 003_aa7e1801a46c453f.txt (Figs. 6/7 style: throughput.png,
# claims.md): per-server throughput vs % of active servers, original vs GRIN1/2/3 vs
# dual-homing (--multihomed), MPTCP over horizontal server-to-server links, beside the
# paper's h1 optimum.  The hop-count
# study of section 5.1 is its own experiment, `.venv/bin/dcrepro run grin-hops` (flow model,
# no root; reproduce.sh runs it with --quick), and `.venv/bin/python bench/bench_grin_model.py`
# prints the same table.
# Flags pass through to `dcrepro run grin` (see --help), e.g.:
#   scripts/grin-sweep.sh --quick
#   scripts/grin-sweep.sh --placement cross
#   scripts/grin-sweep.sh --base fattree --k 4 --multihomed 0 --degrees 0,1,2 --placement cross
#   scripts/grin-sweep.sh --backend model --racks 6 --servers 20 --pattern all-to-all
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
./setup.sh >/dev/null
# DCREPRO may name another dcrepro command line (e.g. a development copy of the CLI).
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
exec "${cmd[@]}" run grin "$@"
