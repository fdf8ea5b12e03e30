"""The Reno-based flow models of a fairness run solved again from what the run stored
(subflows.csv: every subflow's traced path and its network's spec; config.json: the link
rate), for runs made before a model existed: LIA's fluid equilibrium and Reno's allocation
with and without pooling.  The same functions on the same paths as the run itself uses."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import topos
from model import alpha_fair_rates, lia_rates
from model.network import capacities, path_links
from store import cell, read_csv, read_json

#: the Reno-based models solved again from subflows.csv when flows.csv lacks them: LIA's
#: fluid equilibrium (RFC 6356, model.lia_rates) between Reno's allocation with
#: independent subflows and with each connection pooled over its paths
RENO_MODELS = {
    "norm_model_lia": lambda caps, flows: lia_rates(caps, flows),
    "norm_model_reno": lambda caps, flows: alpha_fair_rates(caps, flows, 2.0),
    "norm_model_reno_coupled": lambda caps, flows: alpha_fair_rates(caps, flows, 2.0,
                                                                    coupled=True)}


def remodel(folder: Path, rows: list[dict[str, str]],
            cols: Iterable[str] = tuple(RENO_MODELS)) -> list[dict[str, str]]:
    """flows.csv rows with each of ``cols`` (RENO_MODELS keys) they lack filled in: each
    repetition's network rebuilt from its spec, its connections from the subflows' traced
    paths; rows left as they are when the run kept no subflows.csv."""
    want = [c for c in cols if not any(cell(r.get(c)) == cell(r.get(c)) for r in rows)]
    if not want or not (folder / "subflows.csv").is_file():   # no traced paths: left out
        return rows
    bw = float(read_json(folder / "config.json")["params"]["bw"])
    nets: dict[tuple[str, str], dict[str, list]] = defaultdict(dict)
    specs: dict[tuple[str, str], str] = {}
    for sub in read_csv(folder / "subflows.csv"):
        key = (sub["run"], sub["topology"])
        specs[key] = sub["spec"]
        nets[key].setdefault(sub["src"], []).append(
            path_links(sub["src"], sub["path"].split(">"), sub["dst"]))
    got: dict[tuple[str, str, str], dict[str, float]] = {}
    for key, conns in nets.items():
        caps = capacities(topos.build(specs[key]), bw)
        for col in want:
            for src, rate in zip(conns, RENO_MODELS[col](caps, list(conns.values()))):
                got.setdefault((*key, src), {})[col] = float(rate) / bw
    return [{**r, **{c: str(round(v, 5)) for c, v in got.get(
        (r["run"], r["topology"], r["src"]), {}).items()}} for r in rows]
