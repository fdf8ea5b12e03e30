"""Reno-based flow models solved again from a run folder's stored paths.

A fairness run keeps every subflow's traced path and its network's spec (subflows.csv),
each link's measured drops and utilisation (links.csv) and the link rate (config.json).
``remodel`` fills in the model columns a flows.csv lacks (runs made before a model
existed, and the ablations' variants): LIA's fluid equilibrium and Reno's allocations on
the very paths the emulation used.  Reads run folders only; the claims and the fairness
ablation call it.
"""
from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import topos
from model import alpha_fair_rates, lia_rates
from model.network import Link, capacities, path_links
from store import cell, read_csv, read_json


@dataclass(frozen=True)
class Net:
    """One stored network of a run folder, as the models below need it: its capacities,
    its connections' traced paths, each subflow's measured RTT (None when a connection
    has none) and its measured link rows (None when links.csv has none for it)."""
    caps: dict[Link, float]
    flows: list[list[list[Link]]]
    rtts: list[float] | None
    links: list[dict[str, str]] | None


#: the Reno-based models solved again from subflows.csv when flows.csv lacks them: LIA's
#: fluid equilibrium (RFC 6356, model.lia_rates) between Reno's allocation with
#: independent subflows and with each connection pooled over its paths; and the
#: ablations' (measured RTTs, delivered capacities), None where the network lacks what
#: they need (the column is then left missing for it)
RENO_MODELS: dict[str, Callable[[Net], Any]] = {
    "norm_model_lia": lambda n: lia_rates(n.caps, n.flows),
    "norm_model_reno": lambda n: alpha_fair_rates(n.caps, n.flows, 2.0),
    "norm_model_reno_coupled": lambda n: alpha_fair_rates(n.caps, n.flows, 2.0,
                                                          coupled=True),
    "norm_model_lia_rtt": lambda n: None if n.rtts is None else lia_rates(
        n.caps, n.flows, rtts=n.rtts),
    "norm_model_reno_rtt": lambda n: None if n.rtts is None else lia_rates(
        n.caps, n.flows, coupled=False, rtts=n.rtts),
    "norm_model_lia_delivered": lambda n: None if n.links is None else lia_rates(
        _delivered(n.caps, n.links), n.flows)}


def _delivered(caps: dict[Link, float], links: list[dict[str, str]]) -> dict[Link, float]:
    """The capacities the emulation delivered: each link whose switch egress queue dropped
    packets in the counter window (links.csv, measured) scaled by its measured wire
    utilisation (at most 1); every other link nominal."""
    out = dict(caps)
    for r in links:
        if r.get("source") == "measured" and cell(r.get("drops")) > 0:
            out[(r["u"], r["v"])] *= min(1.0, cell(r["util"]))
    return out


def _subflow_rtts(rtts: list[list[float]]) -> list[float]:
    """Each connection's subflow RTTs, flattened; a subflow without a measured RTT (no
    tcp_info sample in its window) gets the median of its connection's others."""
    out: list[float] = []
    for conn in rtts:
        known = sorted(v for v in conn if v == v and v > 0)
        if not known:
            raise ValueError("a connection has no subflow with a measured round-trip time")
        out.extend(v if v == v and v > 0 else known[len(known) // 2] for v in conn)
    return out


def remodel(folder: Path, rows: list[dict[str, str]],
            cols: Iterable[str] = tuple(RENO_MODELS)) -> list[dict[str, str]]:
    """flows.csv rows with each of ``cols`` (RENO_MODELS keys) they lack filled in: each
    repetition's network rebuilt from its spec, its connections from the subflows' traced
    paths (and their measured RTTs); rows left as they are when the run kept no
    subflows.csv.  Each column is solved once per folder and process (the claims ask for
    the same one several times)."""
    want = [c for c in cols if not any(cell(r.get(c)) == cell(r.get(c)) for r in rows)]
    subs = folder / "subflows.csv"
    if not want or not subs.is_file():   # no traced paths: left out
        return rows
    stamp = (str(folder.resolve()), tuple(
        (st.st_mtime_ns, st.st_size, st.st_ino) if (st := _stat(folder / name)) else None
        for name in ("subflows.csv", "links.csv")))
    got: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for col in want:
        for key, rate in _solved(*stamp, col).items():
            got[key][col] = rate
    return [{**r, **{c: str(round(v, 5)) for c, v in got.get(
        (r["run"], r["topology"], r["src"]), {}).items()}} for r in rows]


def _stat(path: Path) -> os.stat_result | None:
    """path's stat, None when it is not there."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None


@functools.lru_cache(maxsize=64)
def _solved(folder: str, version: tuple[tuple[int, int, int] | None, ...], col: str
            ) -> dict[tuple[str, str, str], float]:
    """One RENO_MODELS column of a run folder, per (run, topology, source), normalized to
    the link rate (the time, size and inode of subflows.csv and links.csv key the cache,
    so a rewritten one is solved again)."""
    bw, nets = _stored(folder, version)
    out: dict[tuple[str, str, str], float] = {}
    for key, (srcs, net) in nets.items():
        rates = RENO_MODELS[col](net)
        if rates is not None:
            out.update({(*key, src): float(rate) / bw for src, rate in zip(srcs, rates)})
    return out


@functools.lru_cache(maxsize=8)
def _stored(folder: str, _version: tuple[tuple[int, int, int] | None, ...]
            ) -> tuple[float, dict[tuple[str, str], tuple[list[str], Net]]]:
    """A run folder's link rate and, per (run, topology), its connections' sources and
    the network as the models need it (Net): read and built once for all columns."""
    bw = float(read_json(Path(folder) / "config.json")["params"]["bw"])
    paths: dict[tuple[str, str], dict[str, list[list[Link]]]] = defaultdict(dict)
    rtts: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(dict)
    specs: dict[tuple[str, str], str] = {}
    for sub in read_csv(Path(folder) / "subflows.csv"):
        key = (sub["run"], sub["topology"])
        specs[key] = sub["spec"]
        paths[key].setdefault(sub["src"], []).append(
            path_links(sub["src"], sub["path"].split(">"), sub["dst"]))
        rtts[key].setdefault(sub["src"], []).append(cell(sub.get("rtt_ms")))
    links: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    if (Path(folder) / "links.csv").is_file():
        for r in read_csv(Path(folder) / "links.csv"):
            links[(r["run"], r["topology"])].append(r)
    nets: dict[tuple[str, str], tuple[list[str], Net]] = {}
    for key, conns in paths.items():
        try:
            rtt: list[float] | None = _subflow_rtts(list(rtts[key].values()))
        except ValueError:      # no RTT measured: the RTT columns stay missing
            rtt = None
        nets[key] = (list(conns), Net(capacities(topos.build(specs[key]), bw),
                                       list(conns.values()), rtt, links.get(key)))
    return bw, nets
