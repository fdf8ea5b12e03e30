#!/usr/bin/env bash
# Reproduce every experiment's figures: installs what is missing (setup.sh), checks in under
# a minute that the machine can carry it (`dcrepro check`: a verdict, and how long the quick
# sweeps take here), then runs each sweep in quick mode (default) or at paper length
# (--full), says how many figures it made, and ends with the report over the runs it made:
# one screen, a line per headline claim beside the committed reference's verdict (every
# claim, with its cause, on the page results/report/index.html; `dcrepro report --all`
# prints them all).
# Exits non-zero only when setup, a sweep or the report failed (not when a paper's claim
# does not hold).
# As root:
#   ./scripts/reproduce.sh          # quick
#   ./scripts/reproduce.sh --runs 5 # quick, 5 repetitions of every experiment (more decided
#                                   # verdicts; 26 min on a 2-core VM against 15, 2026-12-04)
#   ./scripts/reproduce.sh --full   # paper-length runs (hours)
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
mode=(--quick)
runs=()       # --runs N: for the check's estimate and every sweep with repetitions
while [ "$#" -gt 0 ]; do
  case "$1" in
    --full) mode=(); shift ;;
    --runs)
      if ! [[ "${2:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "reproduce: --runs takes a whole number of repetitions, at least 1 (got '${2:-}')" >&2
        exit 2
      fi
      runs=(--runs "$2"); shift 2 ;;
    *) echo "reproduce: unknown option '$1' (known: --full, --runs N)" >&2; exit 2 ;;
  esac
done
./setup.sh || exit 1
export DCREPRO_SETUP_DONE=1   # the sweep scripts' own ./setup.sh then returns at once

# every experiment of the registry (store/registry.py), each by its sweep script
mapfile -t sweeps < <(.venv/bin/dcrepro list --sweeps "${runs[@]}")
[ "${#sweeps[@]}" -gt 0 ] || { echo "reproduce: the registry names no sweep" >&2; exit 1; }
# can this machine carry it (dcrepro check, under a minute): one flow's calibration, stored
# where the runs look it up, the load and steal beside it, a verdict (fine, busy, slow) and
# how long the quick sweeps take here.  It only warns.  When it cannot measure at all, the
# sweeps run anyway: each says itself what fails, and a failed sweep fails the reproduction
# (CI, a fresh machine: nothing is lost by trying).  Ctrl-C during it stops here.
.venv/bin/dcrepro check "${runs[@]}"
rc=$?
case $rc in
  0) ;;
  130|143) exit "$rc" ;;
  *) echo "reproduce: the machine check could not run (above); the sweeps run without it" >&2 ;;
esac
# why a sweep failed: the one-line error of each run folder it made that did not end ok
# (status.json), or, when it made none, where to look
why() {
  local said
  said=$(find results -mindepth 3 -maxdepth 3 -name status.json -newer "$1" -print0 |
    xargs -0 -r .venv/bin/python -c 'import json, sys
for p in sys.argv[1:]:
    try:
        s = json.load(open(p))
    except (OSError, ValueError):
        continue
    status, error = s.get("status"), s.get("error")
    if status != "ok":
        print(f"{p[:-12]}: {status}: {error}"[:300])')
  echo "${said:-no run folder says why; see the lines of the sweep above}"
}
failed=()     # failed twice: the reproduction fails
again=()      # failed once, then passed: said, kept in the report, not a failure
stamp=$(mktemp)
try=$(mktemp)
for sweep in "${sweeps[@]}"; do
  read -r -a cmd <<<"$sweep"
  [ -x "${cmd[0]}" ] || { echo "reproduce: ${cmd[0]} not present, skipped"; continue; }
  # A sweep that fails is run once more: one transient failure (a wait that timed out on a
  # loaded host) should not cost the whole reproduction, and a real defect fails twice.
  # Both attempts' run folders stay, and the report shows the failed one with its cause.
  for attempt in 1 2; do
    echo "=== ${cmd[*]} ${mode[*]}"
    touch "$try"
    "${cmd[@]}" "${mode[@]}"
    rc=$?
    [ "$rc" -eq 0 ] && break
    case $rc in 130|143) rm -f "$stamp" "$try"; exit "$rc" ;; esac   # Ctrl-C: stop here
    cause=$(why "$try")
    if [ "$attempt" -eq 1 ]; then
      echo "reproduce: ${cmd[0]} failed (exit $rc), running it once more: $cause" >&2
      again+=("${cmd[0]}: $cause")
    else
      echo "reproduce: ${cmd[0]} failed again (exit $rc): $cause" >&2
      failed+=("${cmd[0]}: $cause")
    fi
  done
done
rm -f "$try"
echo
# (one line: the figures are on the report's page, each beside its run)
echo "figures: $(find results -newer "$stamp" -name '*.png' | wc -l) made, in the run folders" \
     "below results/ (every one is on the report's page)"
# which claims hold: the run folders made here (results/<experiment>/<UTC time>-<id>/)
mapfile -t made < <(find "$PWD/results" -mindepth 2 -maxdepth 2 -type d -newer "$stamp" \
                      -name '*T*Z-*' | sort)
rm -f "$stamp"
echo
if [ "${#made[@]}" -gt 0 ]; then
  .venv/bin/dcrepro report "${made[@]}" || failed+=("dcrepro report: its error above")
else
  echo "reproduce: no run folder was made, so there is no report" >&2
fi
if [ "${#again[@]}" -gt 0 ]; then
  printf 'reproduce: failed once, then passed on the second attempt: %s\n' "${again[@]}" >&2
fi
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'reproduce: failed twice: %s\n' "${failed[@]}" >&2
  exit 1
fi
