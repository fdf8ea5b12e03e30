# Sourced by the sweep scripts that run `dcrepro run` themselves (not run on its own).
#
# run_folder WHO WHAT COMMAND...: run COMMAND with its output shown; on failure say where
# its log is ("WHO: WHAT failed (exit N); see FOLDER/log.txt") and exit with its code;
# on success set $dir to the run folder it printed.
run_folder() {
  local who=$1 what=$2 log rc
  shift 2
  log=$(mktemp)
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  dir=$(sed -n 's/^run folder: //p' "$log" | head -1)
  rm -f "$log"
  if [ "$rc" -ne 0 ]; then
    echo "$who: $what failed (exit $rc); see ${dir:-the output above}/log.txt" >&2
    exit "$rc"
  fi
}

# show_figures WHO FOLDER...: list each run folder's figures.
show_figures() {
  local who=$1 d
  shift
  for d in "$@"; do
    echo "$who: figures in $d:"
    ls "$d"/*.png
  done
}
