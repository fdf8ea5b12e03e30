"""Dataplanes: how the switches of an emulated network forward (Open vSwitch + OpenFlow, or
tc-BPF programs in the kernel), behind one interface."""
