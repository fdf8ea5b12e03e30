"""The bpf dataplane: every switch port runs switch.bpf.c at tc ingress (dataplane.py)."""
