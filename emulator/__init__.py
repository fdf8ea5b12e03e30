"""The emulator: hosts, links, shaping, host networking, process control, the resource
ledger, machine facts and the dequeue-gap probe; the same for every dataplane
(emulator/dataplane_registry.py lists them, each a folder of dataplanes/)."""
