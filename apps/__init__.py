"""Standalone applications that run on the emulated hosts (not part of the installed package)."""
