"""The dcrepro command (cli.py) and what runs the runs: sweeps, launchers beyond one
machine, reruns, calibration."""
