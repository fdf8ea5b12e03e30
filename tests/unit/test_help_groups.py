"""Issue #55 part 2: every experiment's --help is grouped.  First the flags the experiment
adds itself, then the shared ones in harness.common.GROUPS' order (network, traffic,
repetitions and output, backend, ns-3, emulator tuning); parsing is what it was (same
dests, defaults, types and choices), only the presentation changed."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from dcrepro import cli
from harness import common
from harness.common import GROUPS, SHARED, add_backend, add_shared
from harness.params import Params
from store import registry

#: every member of a group: SHARED names and --quick, --out, --backend
MEMBERS = {name: title for title, (_, names) in GROUPS.items() for name in names}


def parser(name: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"dcrepro run {name}")
    registry.module(name).add_arguments(p)
    return p


def flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


def headings(text: str) -> dict[str, int]:
    """Title -> offset of each section heading of argparse's help ('title:' alone on a line
    after a blank one)."""
    return {m.group(1): m.start() for m in re.finditer(r"\n\n(\S[^\n]*):\n", text)}


def test_every_shared_flag_is_in_exactly_one_group():
    members = [n for _, names in GROUPS.values() for n in names]
    assert len(members) == len(set(members))
    assert set(SHARED) <= set(members)
    assert set(members) - set(SHARED) == {"quick", "out", "backend"}
    assert list(GROUPS) == ["network", "traffic", "repetitions and output", "backend", "ns-3",
                            "emulator tuning"]
    assert "reference runs" in GROUPS["emulator tuning"][0]
    common.check_groups()


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_each_action_is_in_one_group_the_right_one(name):
    p = parser(name)
    where: dict[str, list[str]] = {}
    for group in p._action_groups:
        for action in group._group_actions:
            where.setdefault(action.dest, []).append(group.title or "")
    assert {d: len(t) for d, t in where.items() if len(t) != 1} == {}
    for dest, (title,) in where.items():
        assert title == MEMBERS.get(dest, "options"), dest
    # no heading without flags under it
    assert all(g._group_actions for g in p._action_groups if g.title in GROUPS)


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_help_shows_own_flags_then_the_groups_in_order(name):
    p = parser(name)
    text = p.format_help()
    heads = headings(text)
    dests = {a.dest: a for a in p._actions}
    shown = [t for t, (_, names) in GROUPS.items() if set(names) & set(dests)]
    assert [t for t in heads if t in GROUPS] == shown, heads
    assert heads["options"] < heads[shown[0]]
    bounds = sorted(heads.values()) + [len(text)]

    def section(opt: str) -> int:
        """The offset of the heading ``opt`` is listed under."""
        at = re.search(rf"\n  (-\w, )?{re.escape(opt)}\b", text)
        assert at, opt
        return max(b for b in bounds if b < at.start())

    for dest, action in dests.items():
        for opt in (o for o in action.option_strings if o.startswith("--")):
            if dest in MEMBERS:
                assert section(opt) == heads[MEMBERS[dest]], (opt, MEMBERS[dest])
            else:   # the experiment's own (and -h): before the first shared group
                assert section(opt) == heads["options"], opt


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_parsing_is_unchanged(name):
    """Same dests, defaults (None: resolve tells an explicit flag from a default), option
    strings, types and choices as before the groups."""
    mod = registry.module(name)
    p = parser(name)
    defaults = mod.PARAMS.defaults()
    assert vars(p.parse_args([])) == {**{k: None for k in defaults}, "quick": False,
                                      "out": "results"}
    for n in (n for n in defaults if n in SHARED):
        action = p._option_string_actions[flag(n)]
        assert (action.option_strings, action.dest, action.type) == ([flag(n)], n,
                                                                      SHARED[n][0])
    backends = getattr(mod, "BACKENDS", ("emulated", "model"))
    assert p._option_string_actions["--backend"].choices == list(backends)
    got = vars(p.parse_args(["--seed", "7", "--quick", "--out", "elsewhere", "--backend",
                             backends[-1]]))
    assert got == {**{k: None for k in defaults}, "seed": 7, "quick": True,
                   "out": "elsewhere", "backend": backends[-1]}
    if "bw" in defaults:
        assert p.parse_args(["--bw", "5"]).bw == 5.0
    with pytest.raises(SystemExit):
        p.parse_args(["--backend", "no-such-backend"])


def test_cli_help_keeps_the_launch_group_last(capsys):
    """`dcrepro sweep EXPERIMENT --help`: its own flags (--grid), the shared groups, then
    the launch options' group."""
    with pytest.raises(SystemExit) as stop:
        cli.main(["sweep", "permutation", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    heads = headings(text)
    assert list(heads) == ["options", *GROUPS, "launching (beyond one machine)"]
    assert text.index("\n  --grid") < heads["network"]
    assert heads["launching (beyond one machine)"] < text.index("\n  --engine")


def test_a_shared_flag_in_no_group_stops_the_parser(monkeypatch):
    monkeypatch.setitem(SHARED, "new_knob", (int, "a knob added without a group"))
    with pytest.raises(ValueError, match=r"^shared flag --new-knob is in no --help group: "
                                         r"add it to one in harness.common.GROUPS$"):
        add_shared(argparse.ArgumentParser(), Params, {})
    with pytest.raises(ValueError, match="--new-knob"):
        cli.build_parser()


def test_a_flag_in_two_groups_or_an_unknown_member_stops_the_parser(monkeypatch):
    monkeypatch.setitem(GROUPS, "ns-3", ("x", ("delay_us", "jitter", "pkt_jitter_us", "bw")))
    with pytest.raises(ValueError, match="--bw is in two --help groups"):
        common.check_groups()
    monkeypatch.setitem(GROUPS, "ns-3", ("x", ("delay_us", "jitter", "pkt_jitter_us", "bww")))
    with pytest.raises(ValueError, match="names 'bww', which is no shared flag"):
        common.check_groups()


def test_backend_without_add_shared_is_among_the_parser_own_flags():
    p = argparse.ArgumentParser()
    add_backend(p, ("model",))
    assert p.parse_args(["--backend", "model"]).backend == "model"
    assert "--backend" in p._optionals._option_string_actions
    assert [g.title for g in p._action_groups if g._group_actions] == ["options"]


@pytest.mark.parametrize("name", registry.EXPERIMENTS)
def test_help_names_the_script_that_makes_the_figure(name, capsys, monkeypatch):
    """`run NAME --help` ends by naming the sweep script reproduce.sh runs for the figure
    (it may add flags to the defaults: permutation's adds --cc lia --bw 5), and that script
    is in the repository; an experiment with no such script says nothing of one."""
    monkeypatch.setenv("COLUMNS", "400")        # one line per paragraph: no wrapped names
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", name, "--help"])
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    sweep = registry.sweep_script(name)
    if sweep:
        assert (Path(__file__).resolve().parents[2] / sweep).is_file()
        assert last.startswith(f"scripts/reproduce.sh makes the figure with {sweep} ")
    else:
        assert "reproduce.sh" not in last
