"""Build a ``sim.spec.SimNet`` in ns-3 and run it: long TCP flows (BulkSend -> PacketSink),
per-flow goodput over the trimmed window and over time, per-port packets and drops.

Links are ns-3 point-to-point devices at the link rate with the asked propagation delay.
Every port's queue is a queue discipline over a one-packet device queue, as Linux's pfifo
over a NIC ring (ns-3's default fq_codel is removed): tail drop is FifoQueueDisc of
``queue`` packets (hosts: ``host_queue``); RED is RedQueueDisc (limit ``queue`` packets,
thresholds a quarter and three quarters of it, ECN marks for DCTCP).  Without a queue
discipline a full device queue would make ns-3's traffic-control layer drop before it,
where no per-port counter sees the drop.

Counting by source address (drops at one port, packets received on another) is done by a
small C++ class compiled on the fly (cppyy), because a Python callback per packet would
be the slowest part of the simulation.
"""
from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any

from .spec import FLOW_PREFIX, MSS, SimConfig, SimNet, static_routes

_CPP = r"""
#include "ns3/ipv4-header.h"
#include "ns3/ppp-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/queue-disc.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/net-device-queue-interface.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/random-variable-stream.h"
#include "ns3/simulator.h"
#include <map>
namespace dcrepro_sim {
// a point-to-point wire whose every packet takes the propagation delay plus a uniform
// random extra in [0, jitter]: breaks the exact phase locking of a deterministic network
class JitterChannel : public ns3::PointToPointChannel {
 public:
  void Configure(ns3::Time base, double jitter_s, int64_t stream) {
    m_base = base;
    m_jitter = jitter_s;
    m_rv = ns3::CreateObject<ns3::UniformRandomVariable>();
    m_rv->SetStream(stream);
  }
  bool TransmitStart(ns3::Ptr<const ns3::Packet> p, ns3::Ptr<ns3::PointToPointNetDevice> src,
                     ns3::Time txTime) override {
    auto dst = GetPointToPointDevice(0) == src ? GetPointToPointDevice(1)
                                                : GetPointToPointDevice(0);
    ns3::Time d = txTime + m_base + ns3::Seconds(m_rv->GetValue(0, m_jitter));
    ns3::Simulator::ScheduleWithContext(dst->GetNode()->GetId(), d,
                                        &ns3::PointToPointNetDevice::Receive, dst, p->Copy());
    return true;
  }
 private:
  ns3::Time m_base;
  double m_jitter = 0;
  ns3::Ptr<ns3::UniformRandomVariable> m_rv;
};

// what PointToPointHelper::Install does, with a JitterChannel for the wire
ns3::NetDeviceContainer InstallJitter(ns3::Ptr<ns3::Node> a, ns3::Ptr<ns3::Node> b,
                                      const std::string& rate, double base_s,
                                      double jitter_s, int64_t stream) {
  ns3::NetDeviceContainer out;
  auto ch = ns3::CreateObject<JitterChannel>();
  ch->Configure(ns3::Seconds(base_s), jitter_s, stream);
  for (auto node : {a, b}) {
    auto dev = ns3::CreateObject<ns3::PointToPointNetDevice>();
    dev->SetAddress(ns3::Mac48Address::Allocate());
    dev->SetDataRate(ns3::DataRate(rate));
    node->AddDevice(dev);
    auto q = ns3::CreateObject<ns3::DropTailQueue<ns3::Packet>>();
    dev->SetQueue(q);
    dev->Attach(ch);
    auto ndqi = ns3::CreateObject<ns3::NetDeviceQueueInterface>();
    ndqi->GetTxQueue(0)->ConnectQueueTraces(q);
    dev->AggregateObject(ndqi);
    out.Add(dev);
  }
  return out;
}

// counts packets per IPv4 source address, fed by a queue disc's Drop trace or by a
// device's MacRx trace (which sees the packet with its PPP header on)
class BySource {
 public:
  void Hit(ns3::Ptr<const ns3::Packet> p) {
    ns3::Ptr<ns3::Packet> c = p->Copy();
    ns3::PppHeader ppp;
    c->RemoveHeader(ppp);
    if (ppp.GetProtocol() != 0x0021) return;   // IPv4 only (PPP number)
    ns3::Ipv4Header ip;
    c->PeekHeader(ip);
    m_counts[ip.GetSource().Get()]++;
  }
  void HitItem(ns3::Ptr<const ns3::QueueDiscItem> item) {
    auto ip = ns3::DynamicCast<const ns3::Ipv4QueueDiscItem>(item);
    if (ip) m_counts[ip->GetHeader().GetSource().Get()]++;
  }
  bool WatchDrops(ns3::Ptr<ns3::QueueDisc> q) {
    return q->TraceConnectWithoutContext("Drop", ns3::MakeCallback(&BySource::HitItem, this));
  }
  bool WatchRx(ns3::Ptr<ns3::NetDevice> d) {
    return d->TraceConnectWithoutContext("MacRx", ns3::MakeCallback(&BySource::Hit, this));
  }
  uint64_t Count(uint32_t addr) const {
    auto it = m_counts.find(addr);
    return it == m_counts.end() ? 0 : it->second;
  }
 private:
  std::map<uint32_t, uint64_t> m_counts;
};
}
"""
_NS: Any = None


def load() -> Any:
    """The ns-3 bindings (imported once per process: 15-30 s) with our helper compiled."""
    global _NS
    if _NS is None:
        import cppyy  # type: ignore[import-not-found]
        from ns import ns  # type: ignore[import-not-found]  # only with setup.sh --with-sim
        cppyy.cppdef(_CPP)
        _NS = ns
    return _NS


@dataclass
class FlowResult:
    """One flow: goodput over the trimmed window, its time series, what it offered."""

    src: str
    dst: str
    goodput_mbps: float
    bytes_window: int
    offered_mbps: float
    series: list[tuple[float, float]]
    start: float


@dataclass
class PortResult:
    """One link end's output queue: packets it took in, sent on, and dropped."""

    node: str
    port: int
    peer: str
    enqueued: int
    drops: int
    sent: int


@dataclass
class SimResult:
    """What one simulation gives."""

    flows: list[FlowResult]
    ports: list[PortResult]
    #: per watched (node, peer): flow index -> packets (drops at that port's queue or
    #: packets received on it, by the flow's source address)
    drops_by_flow: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    rx_by_flow: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    wall_s: float = 0.0
    import_s: float = 0.0
    ns3_version: str = ""


def _time(ns: Any, seconds: float) -> Any:
    return ns.NanoSeconds(int(round(seconds * 1e9)))


def _defaults(ns: Any, cfg: SimConfig) -> None:
    """TCP as Linux hosts have it: MSS 1448 with timestamps, SACK, initial window 10,
    rto_min 200 ms unless asked, a SYN retried after 1 s (ns-3: 3 s), 4 MB buffers
    (window scaling on)."""
    from .spec import CC_TYPES
    sd = ns.Config.SetDefault
    sd("ns3::TcpL4Protocol::SocketType", ns.StringValue(CC_TYPES[cfg.cc]))
    sd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    sd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    sd("ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.Seconds(1)))
    sd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(4 << 20))
    sd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(4 << 20))
    sd("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    sd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    rto = 200.0 if cfg.rto_min_ms is None else cfg.rto_min_ms
    sd("ns3::TcpSocketBase::MinRto", ns.TimeValue(_time(ns, rto / 1000)))
    sd("ns3::TcpSocketBase::UseEcn", ns.StringValue("On" if cfg.cc == "dctcp" else "Off"))
    sd("ns3::Ipv4GlobalRouting::RandomEcmpRouting", ns.BooleanValue(True))


def simulate(net: SimNet, cfg: SimConfig, watch_drops: list[tuple[str, str]] | None = None,
             watch_rx: list[tuple[str, str]] | None = None) -> SimResult:
    """Run ``net`` for cfg.duration simulated seconds.  ``watch_drops``/``watch_rx``: ports
    (node, peer) whose drops / received packets are counted per flow."""
    cfg.check()
    t_import = time.monotonic()
    ns = load()
    import_s = time.monotonic() - t_import
    t0 = time.monotonic()
    try:
        result = _run(ns, net, cfg, watch_drops, watch_rx)
    finally:   # ns-3's nodes and events are global: a failed run must not leak into the next
        ns.Simulator.Destroy()
    result.import_s = import_s
    result.wall_s = time.monotonic() - t0
    return result


def _run(ns: Any, net: SimNet, cfg: SimConfig, watch_drops: list[tuple[str, str]] | None,
         watch_rx: list[tuple[str, str]] | None) -> SimResult:
    """simulate()'s body: build, run, read."""
    ns.RngSeedManager.SetSeed(max(1, cfg.seed))
    ns.RngSeedManager.SetRun(max(1, cfg.run))
    _defaults(ns, cfg)
    index = {name: i for i, name in enumerate(net.nodes)}
    nodes = ns.NodeContainer()
    nodes.Create(len(net.nodes))
    ns.InternetStackHelper().Install(nodes)

    p2p = ns.PointToPointHelper()
    p2p.SetChannelAttribute("Delay", ns.TimeValue(_time(ns, cfg.delay_us / 1e6)))
    red = cfg.queue_disc == "red"
    devices: dict[tuple[str, str], Any] = {}    # (node, peer) -> its device on that link
    discs: dict[tuple[str, str], Any] = {}      # (node, peer) -> that port's queue disc
    ifaces: dict[tuple[str, str], int] = {}
    addr = ns.Ipv4AddressHelper()
    for link in net.links:
        rate = f"{link.rate_mbps * 1e6:.0f}bps"
        if cfg.packet_jitter_us:
            devs = _cpp().InstallJitter(
                nodes.Get(index[link.a]), nodes.Get(index[link.b]), rate, cfg.delay_us / 1e6,
                cfg.packet_jitter_us / 1e6, 1000 + len(devices))
        else:
            p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
            devs = p2p.Install(nodes.Get(index[link.a]), nodes.Get(index[link.b]))
        subnet = ipaddress.IPv4Network(link.subnet)
        addr.SetBase(ns.Ipv4Address(str(subnet.network_address)),
                     ns.Ipv4Mask(str(subnet.netmask)))
        addr.Assign(devs)
        for end, (me, peer) in enumerate(((link.a, link.b), (link.b, link.a))):
            dev = devs.Get(end)
            devices[(me, peer)] = dev
            ipv4 = nodes.Get(index[me]).GetObject[ns.Ipv4]()
            ifaces[(me, peer)] = ipv4.GetInterfaceForDevice(dev)
            # the port's queue is the queue discipline; the device holds one packet (the
            # one on the wire), as a NIC ring under Linux's pfifo would
            queue = ns.DynamicCast[ns.PointToPointNetDevice](dev).GetQueue()
            queue.SetMaxSize(ns.QueueSize("1p"))
        ns.TrafficControlHelper().Uninstall(devs)   # ns-3's default discipline (fq_codel)
        for end, node in enumerate((link.a, link.b)):
            one = ns.NetDeviceContainer(devs.Get(end))
            tch = ns.TrafficControlHelper()
            if node in net.hosts or not red:
                size = cfg.host_queue or cfg.queue if node in net.hosts else cfg.queue
                tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                     ns.QueueSizeValue(ns.QueueSize(f"{size}p")))
            else:
                tch.SetRootQueueDisc(
                    "ns3::RedQueueDisc",
                    "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{cfg.queue}p")),
                    "MinTh", ns.DoubleValue(cfg.queue / 4), "MaxTh",
                    ns.DoubleValue(3 * cfg.queue / 4), "UseEcn",
                    ns.BooleanValue(cfg.cc == "dctcp"), "LinkBandwidth",
                    ns.DataRateValue(ns.DataRate(f"{link.rate_mbps * 1e6:.0f}bps")),
                    "LinkDelay", ns.TimeValue(_time(ns, cfg.delay_us / 1e6)))
            discs[(node, link.b if end == 0 else link.a)] = tch.Install(one).Get(0)

    if net.spray:
        ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    else:
        _static(ns, net, nodes, index, ifaces)

    sinks = []
    for f in net.flows:
        dst_node, src_node = nodes.Get(index[f.dst]), nodes.Get(index[f.src])
        if not net.spray:   # the flow's own addresses in its own /24 (see sim.spec)
            for node, host, a in ((dst_node, f.dst, f.dst_addr), (src_node, f.src, f.src_addr)):
                ipv4 = node.GetObject[ns.Ipv4]()
                peer = next(iter(net.ends[host]))
                ipv4.AddAddress(ifaces[(host, peer)], ns.Ipv4InterfaceAddress(
                    ns.Ipv4Address(a), ns.Ipv4Mask(f"/{FLOW_PREFIX}")))
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(
            ns.Ipv4Address.GetAny(), f.port).ConvertTo())
        apps = sink.Install(dst_node)
        apps.Start(ns.Seconds(0))
        sinks.append(ns.DynamicCast[ns.PacketSink](apps.Get(0)))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(
            ns.Ipv4Address(f.dst_addr), f.port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS * 16))
        bulk.SetAttribute("Local", ns.AddressValue(ns.InetSocketAddress(
            ns.Ipv4Address(f.src_addr), 0).ConvertTo()))
        sapps = bulk.Install(src_node)
        sapps.Start(_time(ns, f.start))
        sapps.Stop(_time(ns, cfg.duration))

    counters: dict[tuple[str, tuple[str, str]], Any] = {}
    for key in watch_drops or []:
        c = counters[("drop", key)] = _by_source()
        if not c.WatchDrops(discs[key]):
            raise RuntimeError(f"sim: could not watch the drops of {key}")
    for key in watch_rx or []:
        c = counters[("rx", key)] = _by_source()
        if not c.WatchRx(devices[key]):
            raise RuntimeError(f"sim: could not watch the packets received at {key}")

    def sent_bytes(f_src: str) -> int:
        """Bytes the sender's NIC has been handed so far, as frames (+2 B PPP each)."""
        stats = discs[(f_src, next(iter(net.ends[f_src])))].GetStats()
        return int(stats.nTotalSentBytes + 2 * stats.nTotalSentPackets)

    marks = sorted({round(k * cfg.interval, 9) for k in
                    range(1, int(cfg.duration / cfg.interval + 1e-9) + 1)} |
                   {cfg.trim, cfg.duration - cfg.trim, cfg.duration} - {0.0})
    rx: dict[float, list[int]] = {0.0: [0] * len(sinks)}
    tx: dict[float, list[int]] = {0.0: [0] * len(sinks)}
    now = 0.0
    for mark in marks:
        ns.Simulator.Stop(_time(ns, mark - now))
        ns.Simulator.Run()
        now = mark
        rx[mark] = [int(s.GetTotalRx()) for s in sinks]
        tx[mark] = [sent_bytes(f.src) for f in net.flows]
    t_a, t_b = cfg.trim, cfg.duration - cfg.trim
    window = t_b - t_a
    flows = []
    grid = [0.0] + [m for m in marks if abs(m / cfg.interval - round(m / cfg.interval)) < 1e-6]
    for i, f in enumerate(net.flows):
        got = rx[t_b][i] - rx[t_a][i]
        series = [(t1, (rx[t1][i] - rx[t0_][i]) * 8 / (t1 - t0_) / 1e6)
                  for t0_, t1 in zip(grid, grid[1:])]
        flows.append(FlowResult(f.src, f.dst, got * 8 / window / 1e6, got,
                                (tx[t_b][i] - tx[t_a][i]) * 8 / window / 1e6, series, f.start))
    ports = []
    for (me, peer), disc in discs.items():
        st = disc.GetStats()
        link = net.links[net.ends[me][peer][0]]
        ports.append(PortResult(me, link.port_a if link.a == me else link.port_b, peer,
                                int(st.nTotalReceivedPackets), int(st.nTotalDroppedPackets),
                                int(st.nTotalSentPackets)))
    by_addr = {int(ipaddress.IPv4Address(f.src_addr)): f.index for f in net.flows}
    result = SimResult(flows, ports, ns3_version=_version())
    for (kind, key), c in counters.items():
        counts = {i: int(c.Count(a)) for a, i in by_addr.items()}
        (result.drops_by_flow if kind == "drop" else result.rx_by_flow)[key] = counts
    return result


def _cpp() -> Any:
    """Our compiled C++ namespace (after load())."""
    import cppyy
    return cppyy.gbl.dcrepro_sim


def _by_source() -> Any:
    return _cpp().BySource()


def _version() -> str:
    from . import ns3_version
    return ns3_version() or ""


def _static(ns: Any, net: SimNet, nodes: Any, index: dict[str, int],
            ifaces: dict[tuple[str, str], int]) -> None:
    """Per-flow paths as static host routes (sim.spec.static_routes); hosts route all to
    their switch."""
    helper = ns.Ipv4StaticRoutingHelper()

    def table(name: str) -> Any:
        return helper.GetStaticRouting(nodes.Get(index[name]).GetObject[ns.Ipv4]())

    for host in net.hosts:
        peers = list(net.ends[host])
        if len(peers) != 1:
            raise ValueError(f"sim: host {host} has {len(peers)} links; pinned paths need one")
        table(host).SetDefaultRoute(ns.Ipv4Address(net.addr_of(peers[0], host)),
                                    ifaces[(host, peers[0])])
    for node, routes in static_routes(net).items():
        t = table(node)
        for dst, peer in routes:
            t.AddHostRouteTo(ns.Ipv4Address(dst), ns.Ipv4Address(net.addr_of(peer, node)),
                             ifaces[(node, peer)])
