"""The dataplanes: how the switches of an emulated network forward, one folder each
(bpf: tc-BPF programs in the kernel; ovs: Open vSwitch under the os-ken OpenFlow controller,
controller/).  emulator/dataplane_registry.py lists them; emulator/dataplane.py is their
interface."""
