#!/usr/bin/env bash
# The test suite, by tier (docs/testing.md#tiers says what each holds and what it costs):
#   ./scripts/test.sh           install what is missing (setup.sh: a second of looking when
#                               everything is there), the code checks (ruff, mypy), then the
#                               tiers fast, integration and slow (root: real networks).  The
#                               pure tests (fast, and slow's ns-3, redraw and browser tests)
#                               run at nice 19 beside the integration tier, whose networks
#                               leave most of the CPU idle (docs/testing.md#schedule), with
#                               their own run registry; slow's tests that emulate (the
#                               launchers') run after it, alone
#   ./scripts/test.sh --fast    the code checks and the fast tier only, one pytest-xdist
#                               worker per core (up to 4): pure code, no root, no setup.sh
#                               extras (a .venv from one ./setup.sh is enough)
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
elif [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import dcrepro, pytest, xdist' 2>/dev/null; then
  echo "test.sh: no .venv with dcrepro and its test tools yet: run ./setup.sh once as root (sudo ./setup.sh)" >&2
  exit 1
fi

echo "code checks: ruff, mypy"
.venv/bin/ruff check --no-cache --quiet . || { echo "test.sh: ruff found problems (above)" >&2; exit 1; }
typed=$(.venv/bin/mypy --no-incremental --cache-dir=/dev/null 2>&1) ||
  { echo "$typed"; echo "test.sh: mypy found problems (above)" >&2; exit 1; }
echo "$typed" | tail -1
[ "$mode" != checks ] || exit 0

failed=()
# tier NAME ARGS...: one pytest call, its exit and time printed (5: the extra arguments
# deselected every test of this selection, which is no failure)
tier() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "=== tier $name"
  .venv/bin/python -m pytest "$@" || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || failed+=("$name (pytest exit $rc)")
  echo "tier $name: pytest exit $rc after $((SECONDS - start)) s"
}

if [ "$mode" = fast ]; then
  tier fast -m fast -n auto --maxprocesses 4 "$@"
else
  # The pure tests beside the integration tier, at the lowest priority, their output kept
  # until it ends (an emulation takes the CPU it wants; measured: integration 524 s alone,
  # 567 s beside them at their threads' nice only; their session's group at nice 19 as
  # well took 6 % off, bench/bench_test_schedule.py, docs/testing.md#schedule)
  log=$(mktemp /tmp/dcrepro-test-pure.XXXXXX)
  start=$SECONDS
  # (their own --basetemp: pytest's cleanup of old temporary folders must not meet the
  # integration session's; it is emptied at the next start, kept until then to look into)
  # (and their own run registry: their model runs, as root, would otherwise mark the
  # integration tier's SIGKILLed runs killed before its tests' next run does)
  rm -rf /tmp/dcrepro-test-pure-state
  # (in a session of their own, with Ctrl-C's signal given back: bash starts a background
  # job with SIGINT ignored, and pytest then could not tear its fixtures down, the Slurm
  # daemons among them)
  # (and the lowest priority set on that session's scheduling group, not only on its
  # threads: with autogroups on, this kernel's default, the CPU is shared between sessions
  # first, each at its group's nice, so a thread's own nice 19 yields nothing to the
  # networks' sessions (docs/measured.md "dcrepro's session"; bench/bench_autogroup.py))
  DCREPRO_STATE_DIR=/tmp/dcrepro-test-pure-state setsid nice -n 19 .venv/bin/python -c \
    'import os, signal, sys, contextlib; signal.signal(signal.SIGINT, signal.SIG_DFL)
with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as f: f.write("19")
os.execv(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]])' \
    -m "fast or (slow and not emulates)" -p no:xdist --basetemp /tmp/dcrepro-test-pure \
    "$@" >"$log" 2>&1 &
  pure=$!
  # Ctrl-C or an error here stops the pure tests too (SIGINT: pytest tears down; what is
  # still there 30 s later is killed), and nothing stays in /tmp
  stop_pure() {
    kill -INT -- "-$pure" 2>/dev/null || return 0
    for _ in $(seq 60); do kill -0 "$pure" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pure" 2>/dev/null || true
  }
  trap 'stop_pure; rm -rf "$log" /tmp/dcrepro-test-pure-state' EXIT
  # its slowest tests are printed: the tier is the suite's floor, and this shows where it goes
  tier integration -m integration --durations=15 --durations-min=5 "$@"
  rc=0
  wait "$pure" || rc=$?
  echo "=== tiers fast and slow (what does not emulate), run beside integration"
  cat "$log"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || failed+=("fast and slow, not emulating (pytest exit $rc)")
  echo "tiers fast and slow (not emulating): pytest exit $rc after $((SECONDS - start)) s"
  tier "slow (emulating: the launchers)" -m "slow and emulates" "$@"
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "test.sh: failed tiers: ${failed[*]}" >&2
  exit 1
fi
