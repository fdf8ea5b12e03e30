"""The ovs dataplane: Open vSwitch bridges under the os-ken controller (controller/)."""
