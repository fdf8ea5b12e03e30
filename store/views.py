"""The one list of views: what each backend of a workload (harness/backends/) can measure.

A backend class declares its view (``view = views.VIEWS["emulated"]``); a run folder names
its backend (config.json's params.backend), so the code that reads folders (analysis, an
experiment's claims) asks the same ``View`` what that view measured, and never tests its
name.  It lives in the store, the bottom layer, beside the experiments' list, so that those
readers import no backend (tests/unit/test_layers.py).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    """One view's capabilities."""
    name: str
    #: its traffic takes the workload's duration in wall time
    realtime: bool
    #: its goodput is measured (emulated, simulated), not the flow model's rate itself; a
    #: view that does not measure has no TCP (loss recovery, latency, queues mean nothing)
    measures: bool
    #: its senders are processes on this machine's CPUs: a CPU cap binds, a sender can be
    #: CPU-bound, more processes can help
    has_cpu: bool
    #: real interfaces: their wire rates (bwm-ng) and a run to agree with the flow model on
    #: the paths it took
    emulates: bool
    #: what measures a flow's goodput, as figures name it ('iperf3', ns-3's 'sink')
    goodput_by: str
    #: where its switch queues (and a RED/ECN AQM) sit, in words
    queues: str
    #: its drops per input port are exact totals counted per source, with no time series
    #: (a simulator counts every packet; the emulator samples counters)
    exact_drops: bool = False

    @property
    def simulates(self) -> bool:
        """A packet-level view without real interfaces (ns-3)."""
        return self.measures and not self.emulates


#: name -> view, every backend's
VIEWS = {v.name: v for v in (
    View("emulated", realtime=True, measures=True, has_cpu=True, emulates=True,
         goodput_by="iperf3", queues="BPF switch before each port's pfifo"),
    View("sim", realtime=False, measures=True, has_cpu=False, emulates=False,
         goodput_by="sink", queues="ns-3's RedQueueDisc or FIFO", exact_drops=True),
    View("model", realtime=False, measures=False, has_cpu=False, emulates=False,
         goodput_by="model", queues="no queues (a fluid model)"),
)}


def view(name: str) -> View:
    """The view called ``name`` (ValueError, one line, for a name no backend has)."""
    try:
        return VIEWS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r} (known: {', '.join(VIEWS)})") from None


def view_of(params: dict[str, object]) -> View:
    """The view of a run's parameters (config.json's params; emulated when unnamed)."""
    return view(str(params.get("backend") or "emulated"))
