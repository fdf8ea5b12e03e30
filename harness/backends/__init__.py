"""The backends that run a harness.workload.Workload: each module registers one."""
