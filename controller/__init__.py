"""OpenFlow side of dcrepro: a thin os-ken app that installs a precomputed routing plan."""
