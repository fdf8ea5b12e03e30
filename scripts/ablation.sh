# Sourced by the ablation scripts once they are in the repository's folder (not run on its
# own): each runs parts (one `dcrepro run` of an experiment into $root/NAME), then draws its
# figure from them.  Sourcing it installs what is missing (exit 1 if that fails) and sets
#   cmd     the dcrepro command line (DCREPRO may name another, e.g. a development copy)
#   failed  the parts that failed (a script adds "figure" when its drawing fails)
./setup.sh >/dev/null || exit 1
read -r -a cmd <<< "${DCREPRO:-.venv/bin/dcrepro}"
failed=()

# newest EXPERIMENT FOLDER: the newest run folder of EXPERIMENT below FOLDER whose status is
# ok, or nothing.
newest() {
  .venv/bin/python -c "import sys; from store import newest_ok_run; print(newest_ok_run(sys.argv[2], sys.argv[1]) or '')" "$1" "$2"
}

# part EXPERIMENT NAME FLAGS...: run EXPERIMENT with FLAGS into $root/NAME unless that folder
# has a complete run (delete it to redo the part); a failure adds NAME to $failed and
# returns 1.
part() {
  local experiment=$1 name=$2
  shift 2
  if [ -n "$(newest "$experiment" "$root/$name")" ]; then
    echo "=== $name: complete run present, skipped"
    return
  fi
  echo "=== $name: ${cmd[*]} run $experiment $* --out $root/$name"
  "${cmd[@]}" run "$experiment" "$@" --out "$root/$name" || { failed+=("$name"); return 1; }
}

# ablation_end WHO: name what failed on stderr and exit 1, if anything did.
ablation_end() {
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "$1: failed: ${failed[*]} (their run folders' log.txt say why)" >&2
    exit 1
  fi
}
