"""Experiments, the runtime they share, and the ``dcrepro`` command line."""
