"""The one interface both dataplanes implement, and their registry (``--dataplane NAME``).

An ``Emulation`` (dataplane/emulation.py) builds hosts, links and shaping the same way for
every dataplane; a dataplane only decides what the switches are and how they forward:

  prepare(emu)       before Mininet builds the network (start a controller, load programs)
  switch_class()     the Mininet switch class to build
  mn_controller()    a Mininet controller object, or None
  install(emu)       after the links exist: install the plan and return only once the
                     switches confirm it (barriers, or maps read back equal to the plan)
  check_alive()      raise RunError naming the component if one died
  trace(emu, ...)    where a 5-tuple goes, asked of the datapath itself (never recomputed)
  stop(emu)          remove what prepare/install made (links are already gone)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from routing.plan import Plan

if TYPE_CHECKING:
    from .emulation import Emulation


class Dataplane(ABC):
    """How the switches of one emulated network forward."""

    name = ""
    #: plan ops and select modes this dataplane can carry (see routing/plan.py)
    carries: frozenset[str] = frozenset()

    def check_modes(self, routing: str, modes: set[str]) -> None:
        """Raise ValueError (one line, before anything is built) if routing needs more."""
        missing = sorted(modes - self.carries)
        if missing:
            raise ValueError(f"routing '{routing}' needs {', '.join(missing)}, which the "
                             f"{self.name} dataplane cannot carry; use --dataplane "
                             f"{other_than(self.name, missing)}")

    def check_plan(self, plan: Plan) -> None:
        """check_modes for a built plan."""
        self.check_modes(plan.routing, plan.modes())

    def prepare(self, emu: Emulation) -> None:
        """Work before the Mininet network is built (default: none)."""

    @abstractmethod
    def switch_class(self) -> Any:
        """The Mininet switch class (or partial) for every switch."""

    def mn_controller(self) -> Any:
        """A Mininet controller to add, or None."""
        return None

    @abstractmethod
    def install(self, emu: Emulation) -> None:
        """Install the plan on every switch and return once each has confirmed it."""

    def check_alive(self) -> None:
        """Raise RunError if a component the switches depend on died."""

    @abstractmethod
    def trace(self, emu: Emulation, src: str, dst: str, five_tuple: dict[str, Any],
              proto: str = "tcp") -> list[str]:
        """Switch names a packet of ``five_tuple`` from ``src`` to ``dst`` crosses."""

    def stop(self, emu: Emulation) -> None:
        """Remove what prepare/install created (links and switch interfaces are gone)."""

    def facts(self) -> dict[str, Any]:
        """What this dataplane observed, for config.json."""
        return {"dataplane": self.name}


NAMES = ("bpf", "ovs")


def bpf_unavailable() -> str:
    """Why the BPF dataplane cannot run here ('' if it can): tools and kernel features."""
    import shutil

    from .sysinfo import kernel_config
    missing = [t for t in ("clang", "bpftool", "tc") if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)} (./setup.sh installs them)"
    cfg = kernel_config()
    if cfg and (cfg.get("CONFIG_NET_CLS_BPF") not in ("y", "m") or
                cfg.get("CONFIG_BPF_SYSCALL") != "y"):
        return "the kernel lacks cls_bpf or the bpf() system call"
    return ""


def default_name() -> str:
    """The dataplane with the better measured fidelity that this machine can run."""
    return "bpf" if not bpf_unavailable() else "ovs"


def other_than(name: str, needs: list[str]) -> str:
    """The dataplane that carries ``needs`` (for error messages)."""
    for cand in NAMES:
        if cand != name and set(needs) <= make(cand).carries:
            return cand
    return "(none carries it)"


#: options a dataplane spec may carry after its name (``bpf,socket=keep``): name -> values
OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    # socket=keep: packets keep their sender's socket through the fabric, so TCP Small
    # Queues caps every flow at about two packets in flight (the kernel's own behaviour
    # across veths; kept only to show its effect, see dataplane/bpf/switch.bpf.c)
    "bpf": {"socket": ("release", "keep")},
    "ovs": {},
}


def parse(spec: str) -> tuple[str, dict[str, str]]:
    """'bpf,socket=keep' -> ('bpf', {'socket': 'keep'}); 'auto' is resolved first.
    ValueError (one line) on an unknown name, option or value."""
    name, *rest = [x.strip() for x in str(spec).split(",")]
    if name == "auto":
        name = default_name()
    if name not in NAMES:
        raise ValueError(f"--dataplane must be one of {', '.join(NAMES)} (optionally with "
                         f"options, e.g. bpf,socket=keep), got '{spec}'")
    opts: dict[str, str] = {}
    for item in rest:
        key, eq, value = item.partition("=")
        known = OPTIONS[name]
        if not eq or key not in known or value not in known[key]:
            hint = "; ".join(f"{k}={'|'.join(v)}" for k, v in known.items()) or "none"
            raise ValueError(f"--dataplane {spec!r}: {name} takes no option {item!r} "
                             f"(its options: {hint})")
        opts[key] = value
    return name, opts


def make(spec: str) -> Dataplane:
    """A dataplane by spec (name[,option=value...]; 'auto': default_name()); imports only
    what it needs."""
    name, opts = parse(spec)
    if name == "ovs":
        from .ovs import OvsDataplane
        return OvsDataplane()
    from .tcbpf import BpfDataplane
    return BpfDataplane(keep_socket=opts.get("socket") == "keep")
