"""What every experiment runs with: one emulated network per point (session.py), the one
iperf3 runner (traffic.py), samplers, path tracing, bwm-ng's readers, the run folder, the
shared flags and the typed parameters."""
