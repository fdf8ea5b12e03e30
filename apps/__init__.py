"""Standalone applications that run on the emulated hosts, each started as its own process
(``python -m apps.NAME``) inside a host's namespace."""
