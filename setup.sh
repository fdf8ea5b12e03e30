#!/usr/bin/env bash
# Idempotent installer for dcrepro on Debian 12 (root). A second run takes seconds.
#   Debian packages -> Open vSwitch running -> .venv (system site packages, for Debian's
#   Mininet) with dcrepro installed -> a short environment report.
#   --with-slurm: also the sweep launchers' engines: GNU parallel, Slurm and munge
#   (`dcrepro sweep --engine parallel|slurm`; the test suite runs a one-node Slurm).
#   --with-browser: also Debian's Chromium, in which the test suite opens the report page
#   (`dcrepro report`) headless; nothing else needs it.
#   --with-sim: also the ns-3 packet-level simulator (PyPI ns3, about 500 MB in .venv, a few
#   minutes to install) for `--backend sim`; docs/sim.md.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

# reproduce.sh has run this already and calls each sweep script, which calls it again:
# skip the second look (about 2 s each, 7 sweeps) when nothing more is asked for
if [ "${DCREPRO_SETUP_DONE:-}" = 1 ] && [ "$#" -eq 0 ]; then
  exit 0
fi

with_slurm=0
with_browser=0
with_sim=0
for arg in "$@"; do
  case "$arg" in
    --with-slurm) with_slurm=1 ;;
    --with-browser) with_browser=1 ;;
    --with-sim) with_sim=1 ;;
    *) echo "setup.sh: unknown option $arg (known: --with-slurm, --with-browser, --with-sim)" >&2
       exit 2 ;;
  esac
done

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: needs root (Mininet and Open vSwitch do): sudo ./setup.sh" >&2
  exit 1
fi

PKGS=(mininet openvswitch-switch iperf3 bwm-ng mptcpize ethtool iputils-ping iproute2
      procps python3-venv python3-networkx git
      clang llvm libbpf-dev bpftool linux-libc-dev)
# only when asked: a plain machine needs none of them for `dcrepro run` or a local sweep
if [ "$with_slurm" -eq 1 ]; then
  PKGS+=(parallel slurm-wlm munge)
fi
if [ "$with_browser" -eq 1 ]; then
  PKGS+=(chromium)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  # policy-rc.d may forbid service starts inside containers; OVS is started below instead
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Open vSwitch: start it without systemd when its switch daemon is not answering (works
# without the kernel module: dcrepro then uses the userspace datapath).  `ovs-vsctl show` is
# not the test: the database server answers it alone even with ovs-vswitchd dead.
ovs_ok() {
  timeout 5 ovs-appctl -T 3 -t ovs-vswitchd version >/dev/null 2>&1 &&
    timeout 5 ovs-vsctl --timeout=3 show >/dev/null 2>&1
}
# The daemons outlive this script and inherit every descriptor it holds open: started under
# `flock LOCK ./setup.sh`, they would hold that lock for ever.  So they get none of ours
# but the standard three (Python's subprocess closes the rest).
ovs_ctl() {
  /usr/bin/python3 -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' \
    /usr/share/openvswitch/scripts/ovs-ctl "$@" --system-id=random
}
if ! ovs_ok; then
  echo "setup: (re)starting Open vSwitch"
  ovs_ctl restart >/tmp/dcrepro-ovs-start.log 2>&1 ||
    ovs_ctl start >>/tmp/dcrepro-ovs-start.log 2>&1 || true
  if ! ovs_ok; then
    echo "setup: Open vSwitch did not start; see /tmp/dcrepro-ovs-start.log" >&2
    cat /tmp/dcrepro-ovs-start.log >&2
    exit 1
  fi
fi

# Python: Debian's Mininet lives in /usr/bin/python3's dist-packages.
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
stamp=.venv/.dcrepro-installed
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -x .venv/bin/dcrepro ]; then
  echo "setup: installing dcrepro into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  echo "$want" > "$stamp"
fi

# The simulator, only when asked: ns-3's wheel (cppyy bindings) for this venv's Python.  The
# marker tells the test suite that a missing ns-3 is a failure here, not a skip.
if [ "$with_sim" -eq 1 ]; then
  if ! .venv/bin/python -c 'import importlib.metadata as m; m.version("ns3")' 2>/dev/null; then
    echo "setup: installing ns-3 (PyPI ns3) into .venv; this takes a few minutes"
    .venv/bin/python -m pip install -q --disable-pip-version-check ns3
  fi
  touch .venv/.dcrepro-with-sim
fi

# The kernel dataplane's programs, compiled once per source version (and kernel, for the
# probe that reads kernel structs); a run would build them too, but a failure shows here.
.venv/bin/python - <<'PY' || echo "setup: the bpf dataplane's programs did not build (above); use --dataplane ovs" >&2
from emulator.bpfobj import bpf_unavailable
if not bpf_unavailable():
    from dataplanes.bpf import switch as bpfswitch
    from emulator import bpfobj, qgap
    bpfswitch.build_program(qgap.BUILD_DIR)
    bpfobj.build(qgap.BUILD_DIR, qgap.SOURCE, kernel_types=True)
PY

# dcrepro's BPF congestion controls (--cc lia, balia, olia, dctcp: emulator/cc.py), same cache
.venv/bin/python - <<'PY' || echo "setup: the BPF congestion controls did not build (above); --cc lia/balia/olia/dctcp will not run" >&2
from emulator import cc
if not cc.bpf_cc_unavailable():
    for name in cc.BPF_CCS:
        cc.build_object(name)
PY

.venv/bin/python - <<'PY'
from emulator.environment import environment
e = environment()
v = e["versions"]
print(f"dcrepro environment: BPF dataplane {e['bpf_dataplane']}; OVS datapath={e['ovs_datapath']} "
      f"running={e['ovs_running']} "
      f"netem={'yes' if e['netem'] else 'no'} MPTCP={'on' if e['mptcp_enabled'] else 'off'} "
      f"cc={e['tcp_congestion_control']} cpus={e['cpus']} "
      f"ns-3={e['ns3'] or 'absent (setup.sh --with-sim)'}")
print("  congestion controls: " + ", ".join(f"{k} ({v})" for k, v in e["congestion_controls"].items()))
print("  " + ", ".join(f"{k} {val}" for k, val in v.items()))
PY
