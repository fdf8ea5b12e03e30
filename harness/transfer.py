"""A repetition's file transfers, said once, and what a backend measured of each (pure).

Orca's traffic (001_…) is not long flows: one sender hands a file a round to every member of
a group with the real application (apps/filexfer), by multicast or by one unicast copy per
receiver.  An experiment builds one ``Transfers`` per repetition (the network, the group and
the transfers run on it one after another); the emulated backend runs the real app in the
network's hosts (harness/filexfer.py), the sim backend the same protocol in ns-3's simulated
time (harness/simxfer.py).  The flow model measures nothing here: the experiment computes
its bound itself.  Each transfer comes back as a ``TransferResult`` whose fields are named
once, whatever view made it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from routing.plan import Plan
from topos.base import Topology

#: bytes an Ethernet frame adds to an IP packet: what an emulated switch port counts
ETH_HEADER = 14
#: bytes a simulated point-to-point frame adds to an IP packet
SIM_FRAME = 2


@dataclass(frozen=True)
class Transfer:
    """One run of the app: every file to every member, a file a round."""
    mode: Literal["multicast", "unicast"]
    #: sending processes (unicast: the receivers shared among them; multicast: 1)
    procs: int
    #: each round's file, bytes
    sizes: tuple[int, ...]
    #: the receivers' UDP port (each transfer its own)
    port: int
    #: seconds the transfer should take at the sender's pace: its bounded waits scale by it
    expected_s: float
    #: its files' folder in the repetition's folder
    folder: str
    #: its name in flags and logs ('run 0 x4 unicast x2')
    where: str
    #: the sender's CPU, cores per sending process (0: no cap; a real process's only)
    cpu: float = 0.0

    @property
    def nproc(self) -> int:
        """Processes that send (a multicast sender is one)."""
        return self.procs if self.mode == "unicast" else 1


@dataclass(frozen=True)
class Transfers:
    """Everything one repetition transfers, on one network, in order."""
    topo: Topology
    #: the plan with the group's tree in it (routing.multicast.add_group)
    plan: Plan
    src: str
    members: tuple[str, ...]
    #: the multicast group's address
    group: str
    bw: float                 # every link's rate, Mb/s
    queue: int                # every port's queue, packets
    seed: int
    rep: int
    #: the sender's pace, a share of its link's rate (0: unpaced)
    pace: float
    #: file bytes a datagram
    payload: int
    transfers: tuple[Transfer, ...]
    #: where a capped sender's network work runs: 'away' (its first switch's on other CPUs,
    #: the sender pinned to ``pin``) or 'same' (the kernel's default: in its softirq)
    sender_net: Literal["away", "same"] = "away"
    pin: int = 0

    def __post_init__(self) -> None:
        if not self.transfers:
            raise ValueError("a repetition needs at least one transfer")
        if not 0 <= self.pace <= 1:
            raise ValueError(f"--pace must be in [0, 1] (0 = unpaced), got {self.pace}")

    @property
    def key(self) -> str:
        """Its facts' key in the run folder: 'run03'."""
        return f"run{self.rep:02d}"

    def rate_mbps(self, frame: int) -> float:
        """The sender's pace in IP Mb/s, on a link whose frames add ``frame`` bytes to a
        1500-byte packet (the pacer counts IP bytes, the link's shaper the frames)."""
        return self.pace * self.bw * 1500 / (1500 + frame)


@dataclass(frozen=True)
class TransferResult:
    """What a backend measured of one transfer."""
    transfer: Transfer
    #: the sender's report and every receiver's (apps/filexfer's JSON), each round's bytes
    #: checked complete already
    sender: Mapping[str, Any]
    receivers: Mapping[str, Mapping[str, Any]]
    #: bytes on the sender's link, as Ethernet frames
    sender_link_bytes: int
    #: the busy links' dequeue gaps (emulated; {} elsewhere)
    dequeue_gaps: Mapping[str, Any] = field(default_factory=dict)
    #: the sender's cgroup counters over the transfer, when capped (emulated)
    throttle: Mapping[str, float] | None = None
    cpu_mean: float | None = None
    cpu_saturated_share: float | None = None
    #: the backend's further numbers, written on the transfer's row (sim: link_drops,
    #: sim_wall_s)
    facts: Mapping[str, object] = field(default_factory=dict)


def transfer_limit(expected_s: float, rounds: int) -> float:
    """Seconds a transfer of ``rounds`` rounds expected to take ``expected_s`` may take in
    all (the emulated run's bound wait, and the simulated run's limit)."""
    return 60 + 3 * expected_s + 2 * rounds
