"""Flow-level model of a perfect network (max-min rates and LP throughput bounds)."""

from .flowmodel import (
    connection_rates,
    goodput_capacity,
    jain_index,
    max_concurrent_flow,
    max_concurrent_flow_graph,
    maxmin_rates,
)

__all__ = [
    "maxmin_rates",
    "connection_rates",
    "max_concurrent_flow",
    "max_concurrent_flow_graph",
    "jain_index",
    "goodput_capacity",
]
