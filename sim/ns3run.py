"""Build a ``sim.spec.SimNet`` in ns-3 and run it: long TCP flows (BulkSend -> PacketSink),
per-flow goodput over the trimmed window and over time, per-port packets and drops.

Links are ns-3 point-to-point devices at the link rate with the asked propagation delay.
Every port's queue is a queue discipline over a one-packet device queue, as Linux's pfifo
over a NIC ring (ns-3's default fq_codel is removed): tail drop is FifoQueueDisc of
``queue`` packets (hosts: ``host_queue``); RED is RedQueueDisc (limit ``queue`` packets,
the configuration's thresholds, by default a quarter and three quarters of it, ECN marks
with ``ecn`` or DCTCP).  Without a queue discipline a full device queue would make ns-3's
traffic-control layer drop before it, where no per-port counter sees the drop.

Switches forward either by static host routes (pinned paths) or by the plan's own tables
(``PlanRouting``: the BPF switch's choice per packet, its per-flow next-hop counts and
the latency samples).  Both that router and the counting by source address (drops at one
port, packets received on another) are small C++ classes compiled on the fly (cppyy),
because a Python callback per packet would be the slowest part of the simulation.
"""
from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .spec import FLOW_PREFIX, MSS, ROUTER_MODES, SimConfig, SimGroup, SimNet, static_routes

#: ns-3 RedQueueDisc's drop reasons for its own (early) drops, not the queue limit's
RED_DROPS = ("Unforced drop", "Forced drop")

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
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4-list-routing.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4.h"
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
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
// ---- forwarding by the dcrepro plan (sim/spec.py, "plan" forwarding) ----
// zlib's CRC-32 (Python's zlib.crc32), so that the hash mode picks what the flow model's
// hash_select picks for the same switch and 5-tuple
inline uint32_t Crc32(const std::string& s) {
  static uint32_t table[256];
  static bool ready = false;
  if (!ready) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    ready = true;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char ch : s) c = table[(c ^ ch) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

struct Tuple {
  uint32_t saddr, daddr;
  uint16_t sport, dport;
  bool operator==(const Tuple& o) const {
    return saddr == o.saddr && daddr == o.daddr && sport == o.sport && dport == o.dport;
  }
};
inline uint64_t Mix(uint64_t x) {   // splitmix64's finaliser
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL; x ^= x >> 27; x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline uint64_t TupleHash(const Tuple& t) {
  return Mix((uint64_t(t.saddr) << 32 | t.daddr) ^ Mix(uint64_t(t.sport) << 16 | t.dport));
}
struct KeyHash {   // (tuple, small number) keys
  size_t operator()(const std::pair<Tuple, uint32_t>& k) const {
    return TupleHash(k.first) ^ Mix(k.second + 0x9e3779b97f4a7c15ULL);
  }
};

inline std::string Dotted(uint32_t a) {
  char buf[16];
  snprintf(buf, sizeof buf, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
  return buf;
}

// latency of sampled TCP data segments: stamped at the first switch's input port that
// faces a host, measured where a switch hands the segment to a port that faces a host
// (the BPF switch's rule: the last host link's own queue is not in it)
class LatencyLog {
 public:
  void Stamp(const Tuple& t, uint32_t seq, int64_t now) { m_start[{t, seq}] = now; }
  void Arrive(const Tuple& t, uint32_t seq, int64_t now) {
    auto it = m_start.find({t, seq});
    if (it == m_start.end()) return;
    char line[96];
    snprintf(line, sizeof line, "%u %u %u %u %lld %lld\n", t.saddr, t.daddr, t.sport,
             t.dport, (long long)now, (long long)(now - it->second));
    m_out += line;
    m_start.erase(it);
    m_samples++;
  }
  // "saddr daddr sport dport at_ns latency_ns" per sample, addresses as integers
  const std::string& Samples() const { return m_out; }
  uint64_t Count() const { return m_samples; }
 private:
  std::unordered_map<std::pair<Tuple, uint32_t>, int64_t, KeyHash> m_start;
  std::string m_out;
  uint64_t m_samples = 0;
};

class PlanRouting : public ns3::Ipv4RoutingProtocol {
 public:
  // modes as sim.spec.ROUTER_MODES
  enum { HASH = 0, RND = 1, RR = 2, CNT = 3, FORWARD = 4 };
  void Configure(const std::string& name, int64_t stream) {
    m_name = name;
    m_rv = ns3::CreateObject<ns3::UniformRandomVariable>();
    m_rv->SetStream(stream);
  }
  void AddEntry(uint32_t dst, int mode) {
    uint32_t id = m_table.size();   // rr's per-flow state is per entry, as the BPF group
    m_table[dst] = Entry{mode, id, {}};
  }
  void AddChoice(uint32_t dst, uint32_t iface, uint32_t gateway) {
    auto r = ns3::Create<ns3::Ipv4Route>();
    r->SetDestination(ns3::Ipv4Address(dst));
    r->SetGateway(ns3::Ipv4Address(gateway));
    r->SetSource(m_ipv4->GetAddress(iface, 0).GetLocal());
    r->SetOutputDevice(m_ipv4->GetNetDevice(iface));
    m_table[dst].choices.push_back({iface, r});
  }
  void SetHostPort(uint32_t iface) { m_hostPort.insert(iface); }
  // cnt balances packets per port instead of bytes (BPF: bpf,cnt=packets)
  void SetCountPackets(bool on) { m_countPackets = on; }
  void SetSampling(uint32_t every, LatencyLog* log) { m_every = every; m_log = log; }

  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& h,
                  ns3::Ptr<const ns3::NetDevice> idev, const UnicastForwardCallback& ucb,
                  const MulticastForwardCallback&, const LocalDeliverCallback&,
                  const ErrorCallback&) override {
    auto it = m_table.find(h.GetDestination().Get());
    if (it == m_table.end()) return false;
    Entry& e = it->second;
    Tuple t{h.GetSource().Get(), h.GetDestination().Get(), 0, 0};
    uint8_t b[16] = {0};
    bool tcp = h.GetProtocol() == 6 && p->GetSize() >= 16;
    if ((tcp || h.GetProtocol() == 17) && p->GetSize() >= 4) {
      p->CopyData(b, tcp ? 16 : 4);
      t.sport = uint16_t(b[0] << 8 | b[1]);
      t.dport = uint16_t(b[2] << 8 | b[3]);
    }
    uint32_t n = e.choices.size(), i = 0;
    switch (e.mode) {
      case FORWARD: break;
      case RND: i = m_rv->GetInteger(0, n - 1); break;
      case HASH: i = FlowHash(t) % n; break;
      case RR: {
        auto r = m_rr.find({t, e.id});
        if (r == m_rr.end()) {
          i = FlowHash(t) % n;
          m_rr[{t, e.id}] = i;
        } else {
          i = r->second = (r->second + 1) % n;
        }
        break;
      }
      case CNT: {
        uint64_t least = ~0ULL;
        for (uint32_t k = 0; k < n; k++) {
          uint64_t sent = m_txBytes[e.choices[k].iface];
          if (sent < least) { least = sent; i = k; }
        }
        break;
      }
    }
    const Choice& c = e.choices[i];
    m_txBytes[c.iface] += m_countPackets ? 1 : p->GetSize() + h.GetSerializedSize() + 14;
    m_flowPackets[{t, c.iface}]++;
    if (tcp && m_every) {
      uint32_t seq = uint32_t(b[4]) << 24 | uint32_t(b[5]) << 16 | uint32_t(b[6]) << 8 | b[7];
      uint32_t hdr = (b[12] >> 4) * 4;
      if (p->GetSize() > hdr && Mix(TupleHash(t) ^ seq) % m_every == 0) {
        int64_t now = ns3::Simulator::Now().GetNanoSeconds();
        if (m_hostPort.count(m_ipv4->GetInterfaceForDevice(idev))) m_log->Stamp(t, seq, now);
        if (m_hostPort.count(c.iface)) m_log->Arrive(t, seq, now);
      }
    }
    ucb(c.route, p, h);
    return true;
  }
  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet>, const ns3::Ipv4Header&,
                                       ns3::Ptr<ns3::NetDevice>,
                                       ns3::Socket::SocketErrno& err) override {
    err = ns3::Socket::ERROR_NOROUTETOHOST;   // a switch sends nothing of its own
    return nullptr;
  }
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { m_ipv4 = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}

  // "saddr daddr sport dport iface packets" per (flow, output interface) this switch used
  std::string FlowPackets() const {
    std::string out;
    char line[80];
    for (const auto& kv : m_flowPackets) {
      const Tuple& t = kv.first.first;
      snprintf(line, sizeof line, "%u %u %u %u %u %llu\n", t.saddr, t.daddr, t.sport, t.dport,
               kv.first.second, (unsigned long long)kv.second);
      out += line;
    }
    return out;
  }

 private:
  struct Choice {
    uint32_t iface;
    ns3::Ptr<ns3::Ipv4Route> route;
  };
  struct Entry {
    int mode;
    uint32_t id;
    std::vector<Choice> choices;
  };
  // the per-flow hash of this switch, cached per flow: crc32("switch|src:sport>dst:dport")
  uint32_t FlowHash(const Tuple& t) {
    auto it = m_hash.find({t, 0});
    if (it != m_hash.end()) return it->second;
    uint32_t v = Crc32(m_name + "|" + Dotted(t.saddr) + ":" + std::to_string(t.sport) + ">" +
                       Dotted(t.daddr) + ":" + std::to_string(t.dport));
    m_hash[{t, 0}] = v;
    return v;
  }
  std::string m_name;
  ns3::Ptr<ns3::Ipv4> m_ipv4;
  ns3::Ptr<ns3::UniformRandomVariable> m_rv;
  std::unordered_map<uint32_t, Entry> m_table;
  std::unordered_map<std::pair<Tuple, uint32_t>, uint32_t, KeyHash> m_rr, m_hash;
  std::unordered_map<uint32_t, uint64_t> m_txBytes;   // or packets, with m_countPackets
  bool m_countPackets = false;
  std::unordered_map<std::pair<Tuple, uint32_t>, uint64_t, KeyHash> m_flowPackets;
  std::set<uint32_t> m_hostPort;
  uint32_t m_every = 0;
  LatencyLog* m_log = nullptr;
};

// a PlanRouting ahead of the node's static routing (ns-3's list routing delivers local
// packets itself, then asks its protocols by priority)
ns3::Ptr<PlanRouting> InstallPlanRouting(ns3::Ptr<ns3::Node> node) {
  auto ipv4 = node->GetObject<ns3::Ipv4>();
  auto list = ns3::DynamicCast<ns3::Ipv4ListRouting>(ipv4->GetRoutingProtocol());
  auto r = ns3::CreateObject<PlanRouting>();
  r->SetIpv4(ipv4);
  list->AddRoutingProtocol(r, 100);
  return r;
}
}
"""
# UDP sockets on simulated hosts whose datagrams and timers go to one Python object: an
# application written in Python, run in simulated time (sim.ns3run.simulate_datagrams).
# cppyy keeps the GIL while ns-3 runs, so calling back into Python here is safe.
_CPP_PY = r"""
#include <Python.h>
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"
#include "ns3/inet-socket-address.h"
#include "ns3/simulator.h"
#include <vector>
namespace dcrepro_sim {
class PyDatagrams {
 public:
  // app: on_datagram(endpoint, data, source address as an integer, source port) and
  // on_timer(token); it must not raise (sim.ns3run's dispatcher catches and keeps errors)
  explicit PyDatagrams(PyObject* app) : m_app(app) { Py_INCREF(m_app); }
  ~PyDatagrams() { Py_DECREF(m_app); }
  int Open(ns3::Ptr<ns3::Node> node, uint32_t addr, uint16_t port) {
    auto s = ns3::Socket::CreateSocket(node, ns3::UdpSocketFactory::GetTypeId());
    if (s->Bind(ns3::InetSocketAddress(ns3::Ipv4Address(addr), port)) != 0) return -1;
    int id = int(m_socks.size());
    m_socks.push_back(s);
    s->SetRecvCallback(ns3::Callback<void, ns3::Ptr<ns3::Socket>>(
        [this, id](ns3::Ptr<ns3::Socket> sock) { Recv(id, sock); }));
    return id;
  }
  // one datagram of the bytes object ``data``; false when the socket refused it
  bool Send(int id, PyObject* data, uint32_t dst, uint16_t port) {
    char* buf = nullptr;
    Py_ssize_t n = 0;
    if (PyBytes_AsStringAndSize(data, &buf, &n) != 0) { PyErr_Clear(); return false; }
    auto p = ns3::Create<ns3::Packet>(reinterpret_cast<const uint8_t*>(buf), uint32_t(n));
    return m_socks[id]->SendTo(p, 0, ns3::InetSocketAddress(ns3::Ipv4Address(dst), port)) >= 0;
  }
  void At(double delay_s, long token) {
    ns3::Simulator::Schedule(ns3::NanoSeconds(int64_t(delay_s * 1e9 + 0.5)),
                             [this, token]() { Call("on_timer", Py_BuildValue("(l)", token)); });
  }
  double Now() const { return ns3::Simulator::Now().GetSeconds(); }
  bool Failed() const { return m_failed; }

 private:
  void Recv(int id, ns3::Ptr<ns3::Socket> s) {
    ns3::Address from;
    while (!m_failed) {
      ns3::Ptr<ns3::Packet> p = s->RecvFrom(from);
      if (!p) break;
      uint32_t n = p->GetSize();
      m_buf.resize(n ? n : 1);
      p->CopyData(m_buf.data(), n);
      auto a = ns3::InetSocketAddress::ConvertFrom(from);
      PyObject* bytes = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(m_buf.data()), n);
      Call("on_datagram", Py_BuildValue("(iNIi)", id, bytes, (unsigned int)a.GetIpv4().Get(),
                                        int(a.GetPort())));
    }
  }
  void Call(const char* method, PyObject* args) {
    if (m_failed || !args) { Py_XDECREF(args); return; }
    PyObject* fn = PyObject_GetAttrString(m_app, method);
    PyObject* r = fn ? PyObject_CallObject(fn, args) : nullptr;
    Py_XDECREF(fn);
    Py_DECREF(args);
    if (!r) {   // (the dispatcher catches its own errors: this is a bug of ours)
      PyErr_Print();
      m_failed = true;
      ns3::Simulator::Stop();
      return;
    }
    Py_DECREF(r);
  }
  PyObject* m_app;
  std::vector<ns3::Ptr<ns3::Socket>> m_socks;
  std::vector<uint8_t> m_buf;
  bool m_failed = false;
};
}
"""
_NS: Any = None


def load() -> Any:
    """The ns-3 bindings (imported once per process: 15-30 s) with our helper compiled."""
    global _NS
    if _NS is None:
        import cppyy
        from ns import ns  # only with setup.sh --with-sim
        cppyy.cppdef(_CPP)
        cppyy.cppdef(_CPP_PY)
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
    #: of ``drops``: RED's early (unforced and forced) drops; packets RED marked CE
    aqm_drops: int = 0
    marks: int = 0
    #: IP bytes of the packets sent (a frame adds 2 here, 14 on Ethernet)
    sent_bytes: int = 0


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
    #: every port's queue (packets) at every interval mark: [(time, {(node, peer): n})]
    queues: list[tuple[float, dict[tuple[str, str], int]]] = field(default_factory=list)
    #: plan forwarding: per flow index, per switch, per neighbour: packets of the flow's
    #: data (its 5-tuple) that switch sent there (the datapath's own record, as the BPF
    #: switch's flows map)
    spread: dict[int, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: plan forwarding with cfg.sample: (flow index, time s, fabric latency us) per sample
    latency: list[tuple[int, float, float]] = field(default_factory=list)


def _time(ns: Any, seconds: float) -> Any:
    return ns.NanoSeconds(int(round(seconds * 1e9)))


def _defaults(ns: Any, cfg: SimConfig) -> None:
    """TCP as Linux hosts have it: MSS 1448 with timestamps, SACK, initial window 10,
    rto_min 200 ms unless asked, a SYN retried after 1 s (ns-3: 3 s), 4 MB buffers
    (window scaling on)."""
    from .spec import CC_TYPES, RECOVERY_TYPES
    sd = ns.Config.SetDefault
    sd("ns3::TcpL4Protocol::RecoveryType",
       ns.TypeIdValue(ns.TypeId.LookupByName(RECOVERY_TYPES[cfg.recovery])))
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
    ecn = cfg.ecn or cfg.cc == "dctcp"
    sd("ns3::TcpSocketBase::UseEcn", ns.StringValue("On" if ecn else "Off"))


def simulate(net: SimNet, cfg: SimConfig, watch_drops: list[tuple[str, str]] | None = None,
             watch_rx: list[tuple[str, str]] | None = None,
             progress: Callable[[float, float], None] | None = None) -> SimResult:
    """Run ``net`` for cfg.duration simulated seconds.  ``watch_drops``/``watch_rx``: ports
    (node, peer) whose drops / received packets are counted per flow; ``progress`` is told
    (simulated s, wall s) at every interval mark (a long run says how far it is)."""
    cfg.check()
    t_import = time.monotonic()
    ns = load()
    import_s = time.monotonic() - t_import
    t0 = time.monotonic()
    try:
        result = _run(ns, net, cfg, watch_drops, watch_rx, progress)
    finally:   # ns-3's nodes and events are global: a failed run must not leak into the next
        ns.Simulator.Destroy()
    result.import_s = import_s
    result.wall_s = time.monotonic() - t0
    return result


@dataclass
class _Built:
    """One network built in ns-3: its nodes, and per (node, peer) its device, its port's
    queue discipline and its IPv4 interface number; the plan's routers when it has them."""

    nodes: Any
    index: dict[str, int]
    devices: dict[tuple[str, str], Any]
    discs: dict[tuple[str, str], Any]
    ifaces: dict[tuple[str, str], int]
    routers: dict[str, Any]
    latency_log: Any


def _network(ns: Any, net: SimNet, cfg: SimConfig) -> _Built:
    """Nodes, links, queues and forwarding of ``net`` (and the pinned flows' own addresses);
    no application yet."""
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
                tch.SetRootQueueDisc("ns3::RedQueueDisc", *_red(ns, cfg, link.rate_mbps))
            discs[(node, link.b if end == 0 else link.a)] = tch.Install(one).Get(0)

    latency_log = None
    routers: dict[str, Any] = {}
    _host_routes(ns, net, nodes, index, ifaces)
    if net.forwarding == "plan":
        if cfg.sample:
            latency_log = _cpp().LatencyLog()
        routers = _plan(ns, net, nodes, index, ifaces, cfg, latency_log)
    else:
        _static(ns, net, nodes, index, ifaces)
    for f in net.flows if net.forwarding == "pinned" else []:
        # the flow's own addresses in its own /24 (sim.spec)
        for host, a in ((f.dst, f.dst_addr), (f.src, f.src_addr)):
            ipv4 = nodes.Get(index[host]).GetObject[ns.Ipv4]()
            peer = net.host_peer(host)
            ipv4.AddAddress(ifaces[(host, peer)], ns.Ipv4InterfaceAddress(
                ns.Ipv4Address(a), ns.Ipv4Mask(f"/{FLOW_PREFIX}")))
    return _Built(nodes, index, devices, discs, ifaces, routers, latency_log)


def _ports(net: SimNet, discs: dict[tuple[str, str], Any]) -> list[PortResult]:
    """Every port's queue discipline's counters."""
    ports = []
    for (me, peer), disc in discs.items():
        st = disc.GetStats()
        link = net.links[net.ends[me][peer][0]]
        early = sum(int(st.GetNDroppedPackets(r)) for r in RED_DROPS)
        ports.append(PortResult(me, link.port_a if link.a == me else link.port_b, peer,
                                int(st.nTotalReceivedPackets), int(st.nTotalDroppedPackets),
                                int(st.nTotalSentPackets), early,
                                int(st.nTotalMarkedPackets), int(st.nTotalSentBytes)))
    return ports


def _run(ns: Any, net: SimNet, cfg: SimConfig, watch_drops: list[tuple[str, str]] | None,
         watch_rx: list[tuple[str, str]] | None,
         progress: Callable[[float, float], None] | None = None) -> SimResult:
    """simulate()'s body: build, run, read."""
    b = _network(ns, net, cfg)
    nodes, index, devices, discs = b.nodes, b.index, b.devices, b.discs
    routers, latency_log, ifaces = b.routers, b.latency_log, b.ifaces
    sinks = []
    for f in net.flows:
        dst_node, src_node = nodes.Get(index[f.dst]), nodes.Get(index[f.src])
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
            ns.Ipv4Address(f.src_addr), f.src_port).ConvertTo()))
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
        stats = discs[(f_src, net.host_peer(f_src))].GetStats()
        return int(stats.nTotalSentBytes + 2 * stats.nTotalSentPackets)

    marks = sorted({round(k * cfg.interval, 9) for k in
                    range(1, int(cfg.duration / cfg.interval + 1e-9) + 1)} |
                   {cfg.trim, cfg.duration - cfg.trim, cfg.duration} - {0.0})
    rx: dict[float, list[int]] = {0.0: [0] * len(sinks)}
    tx: dict[float, list[int]] = {0.0: [0] * len(sinks)}
    queues: list[tuple[float, dict[tuple[str, str], int]]] = []
    now, t_run = 0.0, time.monotonic()
    for mark in marks:
        ns.Simulator.Stop(_time(ns, mark - now))
        ns.Simulator.Run()
        now = mark
        rx[mark] = [int(s.GetTotalRx()) for s in sinks]
        tx[mark] = [sent_bytes(f.src) for f in net.flows]
        if net.forwarding == "plan":
            queues.append((mark, {k: int(d.GetNPackets()) for k, d in discs.items()}))
        if progress is not None:
            progress(mark, time.monotonic() - t_run)
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
    ports = _ports(net, discs)
    by_addr = {int(ipaddress.IPv4Address(f.src_addr)): f.index for f in net.flows}
    result = SimResult(flows, ports, ns3_version=_version(), queues=queues)
    if routers:
        result.spread = _spread(net, routers, ifaces)
    if latency_log is not None:
        result.latency = _latency(net, latency_log.Samples())
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


def _red(ns: Any, cfg: SimConfig, rate_mbps: float) -> list[Any]:
    """RedQueueDisc's attributes as name, value pairs.  With ``red_p`` set, classic RED as
    the BPF switch does it (docs/fidelity.md): no gentle region, ECN-capable packets marked
    (not dropped) above max, the average decayed per full frame while idle; without it,
    thresholds a quarter and three quarters of the queue and ns-3's other defaults."""
    attrs: list[Any] = [
        "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{cfg.queue}p")),
        "MinTh", ns.DoubleValue(cfg.queue / 4 if cfg.red_min is None else cfg.red_min),
        "MaxTh", ns.DoubleValue(3 * cfg.queue / 4 if cfg.red_max is None else cfg.red_max),
        "UseEcn", ns.BooleanValue(cfg.ecn or cfg.cc == "dctcp"),
        "LinkBandwidth", ns.DataRateValue(ns.DataRate(f"{rate_mbps * 1e6:.0f}bps")),
        "LinkDelay", ns.TimeValue(_time(ns, cfg.delay_us / 1e6))]
    if cfg.red_p is not None:
        attrs += ["LInterm", ns.DoubleValue(1 / cfg.red_p),
                  "QW", ns.DoubleValue(2.0 ** -(9 if cfg.red_wlog is None else cfg.red_wlog)),
                  "Gentle", ns.BooleanValue(False), "UseHardDrop", ns.BooleanValue(False),
                  "MeanPktSize", ns.UintegerValue(1500)]
    return attrs


def _table(ns: Any, nodes: Any, index: dict[str, int], name: str) -> Any:
    """A node's static routing table."""
    return ns.Ipv4StaticRoutingHelper().GetStaticRouting(
        nodes.Get(index[name]).GetObject[ns.Ipv4]())


def _host_routes(ns: Any, net: SimNet, nodes: Any, index: dict[str, int],
                 ifaces: dict[tuple[str, str], int]) -> None:
    """Every host routes everything to its one switch."""
    for host in net.hosts:
        peers = list(net.ends[host])
        if len(peers) != 1:
            raise ValueError(f"sim: host {host} has {len(peers)} links; the simulator's hosts "
                             "need one")
        _table(ns, nodes, index, host).SetDefaultRoute(
            ns.Ipv4Address(net.addr_of(peers[0], host)), ifaces[(host, peers[0])])


def _plan(ns: Any, net: SimNet, nodes: Any, index: dict[str, int],
          ifaces: dict[tuple[str, str], int], cfg: SimConfig,
          latency_log: Any) -> dict[str, Any]:
    """Every switch's plan table in a PlanRouting (the C++ above): destination host address
    -> mode and choices (interface, next hop's address).  Returns switch -> its router."""
    cpp = _cpp()
    routers = {}
    for sw, entries in net.tables.items():
        r = routers[sw] = cpp.InstallPlanRouting(nodes.Get(index[sw]))
        # each switch its own random stream, fixed by the run's seed and run number
        r.Configure(sw, 10_000 + index[sw])
        for peer in net.ends[sw]:
            if peer in net.hosts:
                r.SetHostPort(ifaces[(sw, peer)])
        if latency_log is not None:
            r.SetSampling(cfg.sample, latency_log)
        r.SetCountPackets(cfg.cnt_packets)
        for e in entries:
            dst = int(ipaddress.IPv4Address(net.host_addr(e.dst)))
            r.AddEntry(dst, ROUTER_MODES[e.mode])
            for peer in e.peers:
                r.AddChoice(dst, ifaces[(sw, peer)],
                            int(ipaddress.IPv4Address(net.addr_of(peer, sw))))
    return routers


def _flow_of(net: SimNet) -> dict[tuple[int, int, int, int], int]:
    """A flow's data 5-tuple (addresses as integers, ports) -> its index."""
    return {(int(ipaddress.IPv4Address(f.src_addr)), int(ipaddress.IPv4Address(f.dst_addr)),
             f.src_port, f.port): f.index for f in net.flows}


def _spread(net: SimNet, routers: dict[str, Any],
            ifaces: dict[tuple[str, str], int]) -> dict[int, dict[str, dict[str, int]]]:
    """Per flow, per switch, per neighbour: the flow's data packets that switch sent there."""
    flow_of = _flow_of(net)
    out: dict[int, dict[str, dict[str, int]]] = {}
    for sw, r in routers.items():
        peer_of = {ifaces[(sw, p)]: p for p in net.ends[sw]}
        for line in str(r.FlowPackets()).splitlines():
            sa, da, sp, dp, iface, n = (int(x) for x in line.split())
            i = flow_of.get((sa, da, sp, dp))
            if i is not None:
                out.setdefault(i, {}).setdefault(sw, {})[peer_of[iface]] = n
    return out


def _latency(net: SimNet, text: str) -> list[tuple[int, float, float]]:
    """The latency log's samples of the flows' data: (flow index, time s, latency us)."""
    flow_of = _flow_of(net)
    out = []
    for line in str(text).splitlines():
        sa, da, sp, dp, at, lat = (int(x) for x in line.split())
        i = flow_of.get((sa, da, sp, dp))
        if i is not None:
            out.append((i, at / 1e9, lat / 1e3))
    return out


def _static(ns: Any, net: SimNet, nodes: Any, index: dict[str, int],
            ifaces: dict[tuple[str, str], int]) -> None:
    """Per-flow paths as static host routes (sim.spec.static_routes)."""
    _add_host_routes(ns, net, nodes, index, ifaces, static_routes(net))


def _add_host_routes(ns: Any, net: SimNet, nodes: Any, index: dict[str, int],
                     ifaces: dict[tuple[str, str], int],
                     routes: dict[str, list[tuple[str, str]]]) -> None:
    """Per node, host routes (destination address, next-hop neighbour) into its table."""
    for node, pairs in routes.items():
        t = _table(ns, nodes, index, node)
        for dst, peer in pairs:
            t.AddHostRouteTo(ns.Ipv4Address(dst), ns.Ipv4Address(net.addr_of(peer, node)),
                             ifaces[(node, peer)])


# -- a Python application over UDP in simulated time (orca's file transfer) -----------------

class DatagramApp(Protocol):
    """What simulate_datagrams runs: started once, then told every datagram that arrives at
    one of the sockets it opened (endpoint number, bytes, (source address, port))."""

    def start(self, io: DatagramIO) -> None: ...

    def on_datagram(self, endpoint: int, data: bytes, src: tuple[str, int]) -> None: ...


class DatagramIO:
    """The simulated network as a Python application sees it: UDP sockets on hosts, sending,
    timers and the simulated clock.  Everything runs in ns-3's event loop; an exception in
    the application stops the simulation and is raised by simulate_datagrams."""

    def __init__(self, ns: Any, net: SimNet, built: _Built, app: DatagramApp) -> None:
        self.ns, self.net, self.built, self.app = ns, net, built, app
        self.error: BaseException | None = None
        self._timers: dict[int, Callable[[], None]] = {}
        self._next = 0
        self._names: dict[int, str] = {}
        self.cpp = _cpp().PyDatagrams(self)

    def host_addr(self, host: str) -> str:
        """A host's own address (on its one link)."""
        return self.net.host_addr(host)

    def open(self, host: str, addr: str, port: int) -> int:
        """A UDP socket on ``host`` bound to ``addr`` (0.0.0.0: any) and ``port``: its
        endpoint number."""
        node = self.built.nodes.Get(self.built.index[host])
        ep = int(self.cpp.Open(node, int(ipaddress.IPv4Address(addr)), port))
        if ep < 0:
            raise RuntimeError(f"sim: cannot bind {addr}:{port} on {host}")
        return ep

    def send(self, endpoint: int, data: bytes, dst: tuple[str, int]) -> bool:
        """One datagram from ``endpoint`` to ``dst``; False when the socket refused it."""
        return bool(self.cpp.Send(endpoint, data, int(ipaddress.IPv4Address(dst[0])), dst[1]))

    def at(self, delay_s: float, fn: Callable[[], None]) -> None:
        """Call ``fn`` after ``delay_s`` simulated seconds."""
        self._next += 1
        self._timers[self._next] = fn
        self.cpp.At(max(0.0, delay_s), self._next)

    def now(self) -> float:
        """Simulated seconds since the start."""
        return float(self.cpp.Now())

    def fail(self, error: BaseException) -> None:
        """Stop the simulation; simulate_datagrams raises ``error``."""
        if self.error is None:
            self.error = error
        self.ns.Simulator.Stop()

    # called by the C++ PyDatagrams
    def on_timer(self, token: int) -> None:
        fn = self._timers.pop(token)
        try:
            fn()
        except BaseException as e:   # carried out of ns-3's loop, raised there
            self.fail(e)

    def on_datagram(self, endpoint: int, data: bytes, addr: int, port: int) -> None:
        name = self._names.get(addr)
        if name is None:
            name = self._names[addr] = str(ipaddress.IPv4Address(addr))
        try:
            self.app.on_datagram(endpoint, data, (name, port))
        except BaseException as e:   # as on_timer
            self.fail(e)


@dataclass
class DatagramResult:
    """What one run of a datagram application gives: per-port counters, the simulated time
    of its last event, wall and import time."""

    ports: list[PortResult]
    end_s: float
    wall_s: float = 0.0
    import_s: float = 0.0
    ns3_version: str = ""


def simulate_datagrams(net: SimNet, cfg: SimConfig, app: DatagramApp,
                       group: SimGroup | None = None,
                       replies: dict[str, list[tuple[str, str]]] | None = None,
                       limit_s: float | None = None) -> DatagramResult:
    """Run ``app`` over UDP in ``net`` (pinned forwarding) until no event is left (or
    ``limit_s`` simulated seconds), with ``group`` installed as static multicast routes along
    its tree and ``replies`` (sim.spec.reply_routes) as extra host routes.  Raises what the
    application raised."""
    cfg.check()
    if net.forwarding != "pinned":
        raise ValueError("sim: a datagram application runs on pinned forwarding")
    t_import = time.monotonic()
    ns = load()
    import_s = time.monotonic() - t_import
    t0 = time.monotonic()
    try:
        b = _network(ns, net, cfg)
        _add_host_routes(ns, net, b.nodes, b.index, b.ifaces, replies or {})
        if group is not None:
            _multicast(ns, net, b, group)
        io = DatagramIO(ns, net, b, app)
        app.start(io)
        if limit_s is not None:
            ns.Simulator.Stop(_time(ns, limit_s))
        ns.Simulator.Run()
        if io.error is not None:
            raise io.error
        if io.cpp.Failed():
            raise RuntimeError("sim: the datagram application's callback failed (see stderr)")
        result = DatagramResult(_ports(net, b.discs), io.now(), ns3_version=_version())
    finally:
        ns.Simulator.Destroy()
    result.import_s = import_s
    result.wall_s = time.monotonic() - t0
    return result


def _multicast(ns: Any, net: SimNet, b: _Built, group: SimGroup) -> None:
    """The source's default multicast route to its switch; per switch of the tree one static
    multicast route (any origin, the group, the input device -> the output devices)."""
    helper = ns.Ipv4StaticRoutingHelper()
    src = b.nodes.Get(b.index[group.src])
    helper.SetDefaultMulticastRoute(src, b.devices[(group.src, net.host_peer(group.src))])
    for hop in group.hops:
        out = ns.NetDeviceContainer()
        for child in hop.children:
            out.Add(b.devices[(hop.switch, child)])
        helper.AddMulticastRoute(b.nodes.Get(b.index[hop.switch]), ns.Ipv4Address.GetAny(),
                                 ns.Ipv4Address(group.group), b.devices[(hop.switch, hop.parent)],
                                 out)
