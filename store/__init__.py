"""The run-folder store, the bottom layer: reading and writing run folders (CSV/JSON, status)
and the one list of experiments.  It imports nothing else of dcrepro's, so everything above
(model, analysis, experiments, the CLI) may use it and analysis never needs experiments.

Layers, lowest first (a unit test holds the code to them): ``store``; ``topos``, ``routing``;
``model`` (flow models and LPs); ``analysis`` (reads run folders only); ``dataplane`` and
``controller`` (the network); ``experiments`` (drive traffic, write run folders) and the CLI.
"""
from .folder import (
    FINAL,
    Row,
    cell,
    newest_ok_run,
    plottable,
    read_csv,
    read_json,
    status_of,
    wall_s,
    write_csv,
)

__all__ = ["FINAL", "Row", "cell", "newest_ok_run", "plottable", "read_csv", "read_json",
           "status_of", "wall_s", "write_csv"]
