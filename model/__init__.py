"""Flow-level model of a perfect network (max-min rates and LP throughput bounds)."""

from . import flowmodel
from .flowmodel import *  # noqa: F403 - the package's API is flowmodel's __all__

__all__ = list(flowmodel.__all__)
