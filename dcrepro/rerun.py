"""What ``dcrepro rerun`` needs: a run folder's parameters, checked against this version's
experiment, and how the code and machine differ from the ones that made the run."""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from emulator.environment import environment
from emulator.sysinfo import git_state
from harness.runfolder import REPO


def params_of(run_dir: Path, experiments: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """config.json of ``run_dir`` with its params checked: ValueError (one line) if the
    folder is not a run, names an unknown experiment or holds parameters this version of
    the experiment does not know (a parameter it lacks gets today's default, recorded)."""
    path = run_dir / "config.json"
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"{run_dir}: no config.json, not a run folder") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable ({exc})") from None
    name = config.get("experiment")
    if name not in experiments:
        raise ValueError(f"{path}: unknown experiment {name!r}")
    defaults = importlib.import_module(experiments[name][0]).PARAMS.defaults()
    params = dict(config.get("params") or {})
    unknown = sorted(set(params) - set(defaults) - {"quick"})
    if unknown:
        raise ValueError(f"{path}: parameters this version of {name} does not know: "
                         f"{', '.join(unknown)}")
    added = {k: v for k, v in defaults.items() if k not in params}
    config["params"] = {**added, **params}
    config["defaults_added"] = added
    return config


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(config: dict[str, Any], now_env: dict[str, Any] | None = None,
                now_git: dict[str, Any] | None = None) -> list[str]:
    """One line per difference between the run's code/machine and today's."""
    lines = [f"parameter {k} was not recorded; using today's default {v!r}"
             for k, v in config.get("defaults_added", {}).items()]
    git = now_git if now_git is not None else git_state(str(REPO))
    old_git = config.get("git") or {}
    if old_git.get("commit") != git.get("commit"):
        lines.append(f"code: commit {str(old_git.get('commit'))[:12]} -> "
                     f"{str(git.get('commit'))[:12]}")
    if git.get("dirty"):
        lines.append("code: the working tree has uncommitted changes")
    old = _flat(config.get("environment") or {})
    new = _flat(now_env if now_env is not None else environment())
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(f"machine: {key} {old.get(key)!r} -> {new.get(key)!r}")
    return lines
