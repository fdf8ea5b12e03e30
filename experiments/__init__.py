"""The experiments, one folder each (experiment.py runs it, figures.py draws it, claims.py
judges the paper's claims), listed in store/registry.py."""
