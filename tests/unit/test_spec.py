"""Spec strings and CLI validation: every bad value stops with one clear line (no root)."""
import subprocess
import sys

import pytest

import routing
import topos
from topos.spec import SpecError


@pytest.mark.parametrize("text,msg", [
    ("", "empty topology spec"),
    ("torus", "unknown topology 'torus'"),
    ("fattree,k=4,k=6", "given twice"),
    ("fattree,q=2", "unknown key 'q'"),
    ("fattree,k=four", "not a valid int"),
    ("fattree,4,5", "too many positional"),
    ("fattree,,", "empty item"),
    ("jellyfish,ports=0", "invalid"),
])
def test_topology_spec_errors(text, msg):
    with pytest.raises(SpecError, match=msg):
        topos.parse(text)


def test_positional_and_defaults():
    s = topos.parse("jellyfish,30,seed=7")
    assert s.name == "jellyfish" and s["switches"] == 30 and s["seed"] == 7 and s["ports"] == 4
    assert str(routing.parse("ksp")) == "ksp,k=8"
    assert str(routing.parse("spray")) == "spray,mode=rr"
    with pytest.raises(SpecError, match="unknown routing 'sprey'"):
        routing.parse("sprey")
    with pytest.raises(SpecError, match="k=0 is invalid"):
        routing.parse("ksp,k=0")


@pytest.mark.parametrize("args,msg", [
    (["--topo", "fattree,k=3"], "even number"),
    (["--routing", "nope"], "unknown routing"),
    (["--bw", "-1"], "--bw must be"),
    (["--queue", "0"], "--queue must be"),
    (["--duration", "4", "--trim", "2"], "no measurement window"),
    (["--transport", "udp"], "--transport"),
    (["--subflows", "9"], "--subflows must be 1..8"),
    (["--runs", "0"], "--runs must be"),
    (["--cc", "nosuchcc"], "--cc nosuchcc: not available on this machine"),
    (["--dataplane", "p4"], "--dataplane must be one of bpf, ovs"),
    (["--dataplane", "ovs", "--routing", "spray,mode=rnd"], "use --dataplane bpf"),
    (["--dataplane", "bpf,socket=drop"], "bpf takes no option 'socket=drop'"),
    (["--dataplane", "ovs,socket=keep"], "ovs takes no option"),
    (["--dataplane", "bpf,cnt=flows"], "bpf takes no option 'cnt=flows'"),
    # values the chosen set-up would ignore, or a network without what the run compares
    ("plts --topo fattree,k=2", "one path between its hosts"),
    ("plts --sample -1", "--sample must be >= 0"),
    ("orca --members 0", "has its own 4 receivers"),
    ("orca --topo fattree,k=4 --members 0", "--members 0 must be 1..15"),
])
def test_cli_rejects_bad_values_before_building(args, msg, tmp_path):
    exp, args = (args.split()[0], args.split()[1:]) if isinstance(args, str) else \
        ("permutation", args)
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", exp,
                        "--out", str(tmp_path), *args], capture_output=True, text=True)
    assert p.returncode == 2
    assert msg in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not any(tmp_path.iterdir()), "nothing may be created for a rejected run"


def test_help_lists_every_flag_with_default():
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", "permutation", "--help"],
                       capture_output=True, text=True)
    assert p.returncode == 0
    for flag in ("--topo", "--routing", "--bw", "--queue", "--duration", "--trim", "--runs",
                 "--seed", "--transport", "--subflows", "--cc", "--quick", "--out",
                 "--dataplane", "--backend"):
        assert flag in p.stdout
    assert "default: fattree,k=4" in " ".join(p.stdout.split())   # (argparse wraps lines)


def test_unwritable_out_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", "run", "permutation",
                        "--backend", "model", "--out", str(blocker / "sub")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "--out" in p.stderr and "cannot create it" in p.stderr


@pytest.mark.parametrize("args,msg", [
    (["run", "outcast", "--rto-min", "fast"], "--rto-min must look like 2ms"),
    (["run", "outcast-fattree", "--receiver", "9_9_9"], "is not a host of fattree,k=4"),
    (["run", "outcast-fattree", "--routing", "ksp,k=0"], "k=0 is invalid"),
    (["run", "fairness", "--jellyfish", "nope"], "unknown topology 'nope'"),
    (["run", "fairness", "--extra-servers", "-1"], "--extra-servers must be a fraction"),
    (["run", "plts", "--schemes", "ecmp,foo"], "--schemes 'ecmp,foo'"),
    (["run", "orca", "--pace", "2"], "--pace must be in [0, 1]"),
    (["run", "orca", "--workloads", "1,x"], "--workloads '1,x'"),
    (["run", "grin", "--degrees", "1,2"], "--degrees must include 0"),
    (["run", "grin", "--multihomed", "9"], "upstream MPTCP opens at most 9"),
    (["run", "grin", "--base", "fattree"], "--multihomed needs --base racks"),
    (["run", "permutation", "--topo", "jellyfish,switches=2,ports=2,hosts=1"],
     "a topology needs at least two hosts"),
    (["sweep", "grin", "--backend", "model", "--grid", "nosuch=1"], "unknown parameter"),
    (["sweep", "grin", "--backend", "model", "--grid", "bw=fast"], "is not a float"),
])
def test_every_experiment_rejects_bad_values_before_building(args, msg, tmp_path):
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", *args, "--out",
                        str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert msg in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not any(tmp_path.iterdir()), "nothing may be created for a rejected run"


@pytest.mark.parametrize("args", [["rerun", "/nonexistent"], ["plot", "/nonexistent"]])
def test_a_folder_that_is_not_a_run_is_bad_input(args):
    p = subprocess.run([sys.executable, "-m", "dcrepro.cli", *args],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr


def test_every_path_argument_is_made_absolute_at_the_door(tmp_path, monkeypatch):
    from dcrepro.cli import PATH_ARGS, absolute_paths, build_parser
    monkeypatch.chdir(tmp_path)
    args = absolute_paths(build_parser().parse_args(["run", "permutation", "--out", "r"]))
    assert args.out == str(tmp_path / "r")
    args = absolute_paths(build_parser().parse_args(["rerun", "results/x/y", "--out", "o"]))
    assert (args.run_dir, args.out) == (str(tmp_path / "results/x/y"), str(tmp_path / "o"))
    args = absolute_paths(build_parser().parse_args(["collect", "s"]))
    assert args.sweep_dir == str(tmp_path / "s")
    assert set(PATH_ARGS) >= {"out", "run_dir", "manifest", "sweep_dir", "hosts"}
