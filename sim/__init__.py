"""Packet-level simulation backend on ns-3 (``--backend sim``).

``sim.spec`` is pure: it turns a dcrepro topology, routing plan and traffic pairs into a
simulation description (nodes, links, per-flow pinned paths, addresses) and checks the
parameters.  ``sim.ns3run`` builds that description in ns-3 (PyPI ``ns3``, installed only by
``setup.sh --with-sim``) and runs it.  Importing ns-3 takes 15-30 s, so nothing imports it
until a simulation is asked for.
"""
from __future__ import annotations

from importlib import metadata


def ns3_version() -> str | None:
    """The installed ns-3 Python package's version, or None; without importing it (slow)."""
    try:
        return metadata.version("ns3")
    except metadata.PackageNotFoundError:
        return None


def require_ns3() -> str:
    """The ns-3 version; ValueError (one line) when it is not installed."""
    version = ns3_version()
    if version is None:
        raise ValueError("--backend sim needs ns-3: run ./setup.sh --with-sim (installs the "
                         "PyPI package ns3 into .venv, about 500 MB)")
    return version
