"""Packet-level traffic splitting vs ECMP (004_…).

``experiment.py`` runs it (the contract store/registry.py names); ``figures.py`` draws its
tables and figures from a run folder alone.  Empty on purpose: importing the figures must not
import the run code (analysis reads run folders only).
"""
