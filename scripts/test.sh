#!/usr/bin/env bash
# The test suite, by tier (docs/testing.md#tiers says what each holds and what it costs):
#   ./scripts/test.sh           install what is missing (setup.sh: a second of looking when
#                               everything is there), the code checks (ruff, mypy), then the
#                               tiers fast, integration and slow (root: real networks)
#   ./scripts/test.sh --fast    the code checks and the fast tier only: pure code, no root,
#                               no setup.sh extras (a .venv from one ./setup.sh is enough)
#   ./scripts/test.sh --checks-only   the code checks alone (seconds)
# Extra arguments go to every pytest call, e.g. ./scripts/test.sh -k plts.  A tier whose
# tests the arguments all deselect is not a failure.  Every tier runs even when an earlier
# one failed; the exit code is non-zero when any did.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
mode=all
case "${1:-}" in
  --fast) mode=fast; shift ;;
  --checks-only) mode=checks; shift ;;
esac

if [ "$(id -u)" -eq 0 ]; then
  if [ "$mode" = all ]; then
    # the slow tier runs a one-node Slurm and GNU parallel, opens the report in Chromium and
    # runs ns-3: setup.sh installs all three here
    ./setup.sh --with-slurm --with-browser --with-sim
  else
    ./setup.sh
  fi
elif [ "$mode" = all ]; then
  echo "test.sh: the integration and slow tiers need root (sudo ./scripts/test.sh); without it: ./scripts/test.sh --fast" >&2
  exit 1
elif [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import dcrepro, pytest' 2>/dev/null; then
  echo "test.sh: no .venv with dcrepro in it yet: run ./setup.sh once as root (sudo ./setup.sh)" >&2
  exit 1
fi

echo "code checks: ruff, mypy"
.venv/bin/ruff check --no-cache --quiet . || { echo "test.sh: ruff found problems (above)" >&2; exit 1; }
typed=$(.venv/bin/mypy --no-incremental --cache-dir=/dev/null 2>&1) ||
  { echo "$typed"; echo "test.sh: mypy found problems (above)" >&2; exit 1; }
echo "$typed" | tail -1
[ "$mode" != checks ] || exit 0

tiers=(fast)
[ "$mode" = fast ] || tiers=(fast integration slow)
failed=()
for tier in "${tiers[@]}"; do
  echo "=== tier $tier"
  start=$SECONDS
  rc=0
  .venv/bin/python -m pytest -m "$tier" "$@" || rc=$?
  # 5: the extra arguments deselected every test of this tier
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || failed+=("$tier (pytest exit $rc)")
  echo "tier $tier: pytest exit $rc after $((SECONDS - start)) s"
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "test.sh: failed tiers: ${failed[*]}" >&2
  exit 1
fi
