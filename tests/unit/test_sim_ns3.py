"""The simulation backend on tiny networks, in ns-3, against hand-computed values: one flow
on an idle link, two flows sharing one, per-packet random spray over two paths, and UDP
multicast over a switched tree by static multicast routes (what an orca backend would use).

Needs ns-3 (``./setup.sh --with-sim``).  Skipped with the reason when it is absent, except
where setup was run with --with-sim (it leaves a marker in .venv): there a missing ns-3 is
a failure, not a skip.  ns-3's import takes 15-30 s, once for the module.
"""
from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

import routing
from sim import ns3_version
from sim.spec import SimConfig, build, payload_ceiling, tree_hops
from topos.base import Topology, mac_from_octets

WITH_SIM_MARKER = Path(sys.prefix) / ".dcrepro-with-sim"
pytestmark = pytest.mark.slow   # ns-3 runs: its import alone takes 15-30 s

if ns3_version() is None:
    if WITH_SIM_MARKER.exists():
        raise RuntimeError(f"setup.sh --with-sim was run ({WITH_SIM_MARKER}) but ns-3 is not "
                           "importable: run ./setup.sh --with-sim again")
    pytest.skip("ns-3 is not installed (./setup.sh --with-sim installs it)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def simulate():  # type: ignore[no-untyped-def]
    from sim import ns3run
    ns3run.load()
    return ns3run.simulate


def _topo(spec: str, switches: list[str], hosts: list[str],
          links: list[tuple[str, str]]) -> Topology:
    t = Topology()
    t.spec = spec
    for i, s in enumerate(switches):
        t.add_switch(s, i + 1)
    for i, h in enumerate(hosts):
        t.add_host(h, f"10.0.0.{i + 1}", mac_from_octets(0, 0, i + 1))
    for a, b in links:
        t.add_link(a, b)
    return t


def star(n_senders: int) -> Topology:
    """Senders h1..hN and receiver r on one switch s1: s1 -> r is the shared link."""
    senders = [f"h{i + 1}" for i in range(n_senders)]
    return _topo(f"star{n_senders}", ["s1"], [*senders, "r"],
                 [("s1", h) for h in [*senders, "r"]])


def test_one_flow_on_an_idle_link_reaches_the_payload_ceiling(simulate):
    topo = star(1)
    cfg = SimConfig(duration=6, trim=1, bw=10, queue=100, cc="cubic")
    net = build(topo, routing.make_plan(topo, "st"), [("h1", "r")], cfg, random.Random(1))
    res = simulate(net, cfg)
    ceiling = payload_ceiling(10)          # 10 * 1448 / 1502 = 9.6405 Mb/s
    assert res.flows[0].goodput_mbps == pytest.approx(ceiling, rel=0.01)
    assert res.flows[0].goodput_mbps <= ceiling * 1.0001   # never above the wire


def test_two_flows_share_one_link(simulate):
    """Each of two flows into one 10 Mb/s RED port gets 35-65 % of the payload ceiling and
    the two fill it (>= 97 %).  RED, not tail drop: two senders at the bottleneck's own rate
    into a tail-drop queue lock out in a deterministic simulator (a freed slot always goes
    to the same sender's next packet: 9.0 / 0.6 Mb/s here, whichever wins by the seed), a
    phase effect docs/sim.md shows; RED's random drops break it."""
    topo = star(2)
    cfg = SimConfig(duration=20, trim=2, bw=10, queue=50, cc="cubic", start_jitter_s=0.05,
                    queue_disc="red")
    net = build(topo, routing.make_plan(topo, "st"), [("h1", "r"), ("h2", "r")], cfg,
                random.Random(2))
    res = simulate(net, cfg, watch_drops=[("s1", "r")])
    ceiling = payload_ceiling(10)
    rates = [f.goodput_mbps for f in res.flows]
    assert sum(rates) >= 0.97 * ceiling, rates
    assert all(0.35 * ceiling <= r <= 0.65 * ceiling for r in rates), rates
    port = next(p for p in res.ports if (p.node, p.peer) == ("s1", "r"))
    # the per-flow drop counter sees every drop of the shared port, and there were some
    assert port.drops > 0 and sum(res.drops_by_flow[("s1", "r")].values()) == port.drops


def test_random_spray_splits_packets_binomially(simulate):
    """One flow over a diamond (s1 -> s2 or s3 -> s4): each data packet picks s2 or s3 with
    probability 1/2, so the count on s1 -> s2 is Binomial(n, 1/2): within 4 standard
    deviations of n/2 (a false alarm once in ~16000 runs; the seed is fixed anyway)."""
    topo = _topo("diamond", ["s1", "s2", "s3", "s4"], ["a", "b"],
                 [("s1", "a"), ("s1", "s2"), ("s1", "s3"), ("s2", "s4"), ("s3", "s4"),
                  ("s4", "b")])
    cfg = SimConfig(duration=3, trim=0.5, bw=10, queue=100, cc="cubic")
    net = build(topo, routing.make_plan(topo, "spray,mode=rnd"), [("a", "b")], cfg,
                random.Random(1))
    res = simulate(net, cfg)
    sent = {p.peer: p.sent for p in res.ports if p.node == "s1" and p.peer in ("s2", "s3")}
    n = sent["s2"] + sent["s3"]
    assert n > 1000, sent                  # the flow ran (about 2400 packets)
    assert abs(sent["s2"] - n / 2) <= 4 * math.sqrt(n / 4), sent
    # both paths together carried the flow: its goodput is near the ceiling
    assert res.flows[0].goodput_mbps > 0.8 * payload_ceiling(10)


def test_packet_jitter_keeps_the_ceiling_and_the_order(simulate):
    """Per-packet jitter up to a frame's time never reorders a link, so one flow still
    reaches the payload ceiling within 1 %."""
    topo = star(1)
    cfg = SimConfig(duration=6, trim=1, bw=10, queue=100, cc="cubic", packet_jitter_us=1000)
    net = build(topo, routing.make_plan(topo, "st"), [("h1", "r")], cfg, random.Random(1))
    res = simulate(net, cfg)
    assert res.flows[0].goodput_mbps == pytest.approx(payload_ceiling(10), rel=0.01)


# -- forwarding by the plan (the C++ PlanRouting in sim/ns3run.py) ---------------------------

def diamond() -> Topology:
    """Senders a, a2 on s1; s1 -> s2 or s3 -> s4; receiver b on s4: two equal paths."""
    return _topo("diamond", ["s1", "s2", "s3", "s4"], ["a", "a2", "b"],
                 [("s1", "a"), ("s1", "a2"), ("s1", "s2"), ("s1", "s3"), ("s2", "s4"),
                  ("s3", "s4"), ("s4", "b")])


def _plan_run(simulate, routing_spec: str, pairs: list[tuple[str, str]], **cfg_kw):  # type: ignore[no-untyped-def]
    topo = diamond()
    cfg = SimConfig(**{"duration": 3, "trim": 0.5, "bw": 10, "queue": 100, "cc": "cubic",
                       **cfg_kw})
    net = build(topo, routing.make_plan(topo, routing_spec), pairs, cfg, random.Random(1),
                forwarding="plan")
    return net, simulate(net, cfg)


def test_plan_hash_takes_the_path_the_flow_model_predicts(simulate):
    """ECMP by the plan: the switches hash the flow's real 5-tuple (CRC-32 in C++) to the
    path routing.walk gives it with the model's hash_select (Python's zlib), every data
    packet on it; one flow on it reaches the payload ceiling within 1 %."""
    net, res = _plan_run(simulate, "ecmp", [("a", "b")])
    path = net.flows[0].path
    assert path is not None and path[1] in ("s2", "s3")
    hops = res.spread[0]
    assert set(hops["s1"]) == {path[1]}                        # one next hop only
    # every packet s1 sent on reaches b but the one or two on the wire at the end
    assert hops["s1"][path[1]] - 2 <= hops[path[1]]["s4"] <= hops["s1"][path[1]]
    assert hops[path[1]]["s4"] - 2 <= hops["s4"]["b"] and hops["s4"]["b"] > 1000
    assert res.flows[0].goodput_mbps == pytest.approx(payload_ceiling(10), rel=0.01)


def test_plan_rr_alternates_each_flow_exactly(simulate):
    """rr: each flow's next packet takes the next choice at each switch, so over two paths
    a flow's data packet counts at s1 differ by at most one, for each of two flows that
    share s1 and the link s4 -> b."""
    # classic recovery: with ns-3's default PRR both flows stall after the slow-start
    # losses into the shared queue (0.1 Mb/s for seconds; docs/sim.md)
    net, res = _plan_run(simulate, "spray,mode=rr", [("a", "b"), ("a2", "b")],
                         recovery="classic")
    for i in (0, 1):
        up = res.spread[i]["s1"]
        assert set(up) == {"s2", "s3"} and abs(up["s2"] - up["s3"]) <= 1, up
        assert up["s2"] + up["s3"] > 500, up
    # the two share s4 -> b and fill it (how they share a tail-drop queue is not asked)
    assert sum(f.goodput_mbps for f in res.flows) >= 0.97 * payload_ceiling(10)


def test_plan_cnt_balances_the_bytes_of_each_port(simulate):
    """cnt: the next hop whose port this switch has sent the fewest bytes on.  Two flows
    into s1: per flow the split may be anything, but s1's two uplinks carry the same
    number of full-size segments (within the handful of smaller packets: SYNs, the
    handshake's ACK, FINs)."""
    net, res = _plan_run(simulate, "spray,mode=cnt", [("a", "b"), ("a2", "b")])
    sent = {p.peer: p.sent for p in res.ports if p.node == "s1" and p.peer in ("s2", "s3")}
    assert sent["s2"] + sent["s3"] > 1000, sent
    assert abs(sent["s2"] - sent["s3"]) <= 4, sent


def test_plan_cnt_packets_balances_the_packets_of_each_port(simulate):
    """cnt_packets (bpf,cnt=packets): the next hop whose port this switch has sent the
    fewest packets on.  a -> b sends data up from s1, b -> a2's ACKs go up from s1 too: with
    full segments and ACKs mixed on s1's uplinks, their packet counts stay within one."""
    net, res = _plan_run(simulate, "spray,mode=cnt", [("a", "b"), ("b", "a2")],
                         cnt_packets=True)
    sent = {p.peer: p.sent for p in res.ports if p.node == "s1" and p.peer in ("s2", "s3")}
    assert sent["s2"] + sent["s3"] > 1000, sent
    assert abs(sent["s2"] - sent["s3"]) <= 1, sent


def test_plan_latency_samples_one_flow_by_hand(simulate):
    """One flow sprayed rr over the idle diamond: a sampled segment is stamped entering s1
    and measured where s4 hands it to b's port: two links of store-and-forward at 10 Mb/s,
    2 x 1502 B x 8 / 10 Mb/s = 2403.2 us, with no queue on either; about 1 in 4 sampled."""
    net, res = _plan_run(simulate, "spray,mode=rr", [("a", "b")], sample=4)
    lats = [lat for _, _, lat in res.latency]
    data = res.spread[0]["s4"]["b"]
    assert 0.15 * data <= len(lats) <= 0.35 * data, (len(lats), data)
    assert all(lat == pytest.approx(2403.2, abs=0.01) for lat in lats), set(lats)


def test_plts_backend_sim_runs_end_to_end(simulate, tmp_path):
    """`dcrepro run plts --backend sim` on a k=4 fat tree for 2 simulated seconds: its
    tables, the sim view's claims, ECMP on RED with ECN beside a spray on tail drop."""
    from dcrepro.cli import main
    from store import read_csv
    rc = main(["run", "plts", "--backend", "sim", "--topo", "fattree,k=4", "--bw", "10",
               "--duration", "2", "--trim", "0.5", "--runs", "1", "--schemes", "ecmp,rr",
               "--ecmp-aqm", "red", "--sample", "8", "--out", str(tmp_path)])
    assert rc == 0
    run = next((tmp_path / "plts").iterdir())
    flows = read_csv(run / "flows.csv")
    assert {r["scheme"] for r in flows} == {"ecmp", "rr"} and len(flows) == 16
    assert all(r["backend"] == "sim" and 0 < float(r["pct_ideal"]) <= 100.01 for r in flows)
    assert {r["scheme"] for r in read_csv(run / "latency.csv")} == {"ecmp", "rr"}
    assert read_csv(run / "queues.csv")
    assert "backend=sim: measured in the ns-3 packet simulation" in (run / "claims.md").read_text()


@pytest.mark.parametrize("kw,msg", [
    ({"ecmp_aqm": "ecn"}, "not simulated"),
])
def test_plts_sim_refuses_what_it_cannot_simulate(kw, msg, one_line_error):
    from experiments.plts import experiment as plts
    from harness.params import typed
    with one_line_error(msg):
        plts.validate(typed(plts, {**plts.PARAMS.defaults(), "backend": "sim", **kw}))


@pytest.mark.parametrize("argv,senders", [
    (["outcast", "--flows", "2"], 3),
    (["outcast-fattree", "--routing", "st"], 15),
    (["outcast-fattree", "--routing", "hashed"], 15),
])
def test_many_to_one_backend_sim_runs_end_to_end(simulate, tmp_path, argv, senders):
    """`dcrepro run outcast|outcast-fattree --backend sim` for 2 simulated seconds: a row
    per sender, and the drops per input port add up to the bottleneck queue's own count."""
    from dcrepro.cli import main
    from store import read_csv
    rc = main(["run", *argv, "--backend", "sim", "--duration", "2", "--trim", "0.5",
               "--interval", "0.5", "--runs", "1", "--out", str(tmp_path)])
    assert rc == 0
    run = next((tmp_path / argv[0]).iterdir())
    flows = read_csv(run / "flows.csv")
    assert len(flows) == senders and all(r["backend"] == "sim" for r in flows)
    drops = read_csv(run / "drops.csv")
    assert sum(int(d["senders"]) for d in drops) == senders
    assert sum(int(d["drops"]) for d in drops) == int(drops[0]["bottleneck_qdisc_drops"])
    assert all(int(d["check_residual"]) == 0 for d in drops)
    assert sum(int(r["drops_at_bottleneck"]) for r in flows) == \
        int(drops[0]["bottleneck_qdisc_drops"])
    assert "backend=sim: measured in the ns-3 packet simulation" in (run / "claims.md").read_text()


# -- UDP multicast by static multicast routes (towards orca --backend sim) -------------------

MC_GROUP, MC_PORT = "225.1.2.3", 9000
MC_MEMBERS = ["r1", "r2", "r3"]           # r4 hangs off s2 too, outside the group


@pytest.fixture(scope="module")
def ns(simulate):  # type: ignore[no-untyped-def]
    from sim import ns3run
    return ns3run.load()                  # the module's one import (simulate's)


def mc_line() -> Topology:
    """snd - s1 - s2 in a line; r1 on s1; r2, r3 and r4 on s2."""
    return _topo("mcline", ["s1", "s2"], ["snd", "r1", "r2", "r3", "r4"],
                 [("s1", "snd"), ("s1", "r1"), ("s1", "s2"), ("s2", "r2"), ("s2", "r3"),
                  ("s2", "r4")])


def mc_run(ns, multicast: bool, datagrams: int, payload: int, interval_s: float):  # type: ignore[no-untyped-def]
    """``datagrams`` UDP datagrams of ``payload`` bytes every ``interval_s`` from snd, from
    0.1 s: to the group (one stream; s1 and s2 replicate by static multicast routes along
    the plan's tree) or to each member (three streams).  10 Mb/s links, 10 us delay, FIFO
    queues of 1000 packets.  Runs until no event is left.  Returns (datagrams each receiver's
    sink got, packets each directed link carried counted at its far end, the time of the
    last event)."""
    from sim.ns3run import _cpp
    topo = mc_line()
    names = [*topo.switches(), *topo.hosts()]
    container = ns.NodeContainer()
    container.Create(len(names))
    ns.InternetStackHelper().Install(container)
    node = {n: container.Get(i) for i, n in enumerate(names)}
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue("10Mbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue("10us"))
    dev, addr = {}, {}
    addresses = ns.Ipv4AddressHelper()
    for k, link in enumerate(topo.links()):
        a, b = link.a, link.b
        devs = p2p.Install(node[a], node[b])
        addresses.SetBase(ns.Ipv4Address(f"10.0.{k}.0"), ns.Ipv4Mask("255.255.255.0"))
        addresses.Assign(devs)
        ns.TrafficControlHelper().Uninstall(devs)       # fq_codel would drop a long queue
        fifo = ns.TrafficControlHelper()
        fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                              ns.QueueSizeValue(ns.QueueSize("1000p")))
        fifo.Install(devs)
        dev[(a, b)], dev[(b, a)] = devs.Get(0), devs.Get(1)
        addr[(a, b)], addr[(b, a)] = f"10.0.{k}.1", f"10.0.{k}.2"

    helper = ns.Ipv4StaticRoutingHelper()

    def iface(a: str, b: str) -> int:
        return int(node[a].GetObject[ns.Ipv4]().GetInterfaceForDevice(dev[(a, b)]))

    def table(n: str):  # type: ignore[no-untyped-def]
        return helper.GetStaticRouting(node[n].GetObject[ns.Ipv4]())
    # unicast: every host to its switch; a switch sends the other switch's hosts across
    for h in topo.hosts():
        sw = topo.access_switch(h)
        table(h).SetDefaultRoute(ns.Ipv4Address(addr[(sw, h)]), iface(h, sw))
        other = "s2" if sw == "s1" else "s1"
        table(other).AddHostRouteTo(ns.Ipv4Address(addr[(h, sw)]),
                                    ns.Ipv4Address(addr[(sw, other)]), iface(other, sw))
    if multicast:
        helper.SetDefaultMulticastRoute(node["snd"], dev[("snd", "s1")])
        for hop in tree_hops(topo, "snd", MC_MEMBERS):
            out = ns.NetDeviceContainer()
            for o in hop.children:
                out.Add(dev[(hop.switch, o)])
            helper.AddMulticastRoute(node[hop.switch], ns.Ipv4Address(addr[("snd", "s1")]),
                                     ns.Ipv4Address(MC_GROUP), dev[(hop.switch, hop.parent)],
                                     out)
        targets = [MC_GROUP]
    else:
        targets = [addr[(m, topo.access_switch(m))] for m in MC_MEMBERS]
    sinks = {}
    for h in ["r1", "r2", "r3", "r4"]:
        app = ns.PacketSinkHelper("ns3::UdpSocketFactory", ns.InetSocketAddress(
            ns.Ipv4Address.GetAny(), MC_PORT).ConvertTo()).Install(node[h])
        sinks[h] = ns.DynamicCast[ns.PacketSink](app.Get(0))
    for t in targets:
        client = ns.UdpClientHelper(ns.InetSocketAddress(ns.Ipv4Address(t), MC_PORT).ConvertTo())
        client.SetAttribute("MaxPackets", ns.UintegerValue(datagrams))
        client.SetAttribute("Interval", ns.TimeValue(ns.Seconds(interval_s)))
        client.SetAttribute("PacketSize", ns.UintegerValue(payload))
        client.Install(node["snd"]).Start(ns.Seconds(0.1))
    counters = {}
    for (a, b) in dev:
        counters[(a, b)] = c = _cpp().BySource()
        assert c.WatchRx(dev[(b, a)])
    try:
        ns.Simulator.Run()
        end = float(ns.Simulator.Now().GetSeconds())
    finally:
        ns.Simulator.Destroy()
    import ipaddress
    every = [int(ipaddress.IPv4Address(a)) for a in addr.values()]
    got = {h: int(s.GetTotalRx()) / payload for h, s in sinks.items()}
    carried = {f"{a}>{b}": sum(int(c.Count(x)) for x in every) for (a, b), c in counters.items()}
    return got, carried, end


#: what each directed link carries for one copy of every datagram to every member
ONE_EACH = {"snd>s1": 1, "s1>r1": 1, "s1>s2": 1, "s2>r2": 1, "s2>r3": 1}


def test_multicast_routes_replicate_in_the_switches(ns):
    """100 datagrams to 225.1.2.3, one every 5 ms: every member gets all 100, the non-member
    r4 none; every link of the tree carries each datagram once (the sender's too: s1 and s2
    replicate), nothing else moves (no reply, no copy back up).  The same datagrams as three
    unicast streams: the sender's link carries 300, s1 > s2 200."""
    got, carried, _ = mc_run(ns, True, 100, 1000, 0.005)
    assert got == {"r1": 100, "r2": 100, "r3": 100, "r4": 0}
    assert carried == {k: 100 * ONE_EACH.get(k, 0) for k in carried}, carried
    got, carried, _ = mc_run(ns, False, 100, 1000, 0.005)
    assert got == {"r1": 100, "r2": 100, "r3": 100, "r4": 0}
    unicast = {**ONE_EACH, "snd>s1": 3, "s1>s2": 2}
    assert carried == {k: 100 * unicast.get(k, 0) for k in carried}, carried


def test_multicast_at_line_rate_takes_one_copy_time(ns):
    """100 datagrams of 1472 bytes (1500-byte packets, 1502-byte frames: 1.2016 ms each at
    10 Mb/s) handed over at once from 0.1 s: the last one reaches its receiver after the
    frames on the sender's link plus two more hops of store-and-forward and three of 10 us
    delay: multicast (100 + 2) x 1.2016 ms + 30 us = 0.1225932 s, three unicast streams
    (300 + 2) x 1.2016 ms + 30 us = 0.3629132 s (2.96 x; every datagram arrives in both)."""
    frame = 1502 * 8 / 10e6
    got, _, end = mc_run(ns, True, 100, 1472, 1e-6)
    assert got == {"r1": 100, "r2": 100, "r3": 100, "r4": 0}
    assert end - 0.1 == pytest.approx(102 * frame + 30e-6, abs=1e-9)
    got, _, end = mc_run(ns, False, 100, 1472, 1e-6)
    assert got == {"r1": 100, "r2": 100, "r3": 100, "r4": 0}
    assert end - 0.1 == pytest.approx(302 * frame + 30e-6, abs=1e-9)


# -- orca --backend sim: the file transfer over the plan's tree (harness/simxfer.py) ---------

def _orca_transfer(tmp_path, spec: str, mode: str, sizes: list[int], procs: int = 1,
                   **kw):  # type: ignore[no-untyped-def]
    import topos
    from experiments.orca import experiment as orca
    from harness.params import typed
    from harness.simxfer import simulate_transfer
    from harness.transfer import Transfer, Transfers
    from routing.multicast import add_group
    params = typed(orca, {**orca.PARAMS.defaults(), "backend": "sim", "topo": spec,
                          "bw": 10.0, **kw})
    topo = topos.build(spec)
    plan = routing.make_plan(topo, "st")
    add_group(topo, plan, orca.GROUP, topo.sender, topo.receivers)
    t = Transfer(mode, procs, tuple(sizes), orca.BASE_PORT, 10.0, mode, f"test {mode}")
    net = Transfers(topo, plan, topo.sender, tuple(topo.receivers), orca.GROUP, params.bw,
                    params.queue, params.seed, 0, params.pace, orca.PAYLOAD, (t,))
    return simulate_transfer(net, t, tmp_path / mode)


#: three rounds of 30, 7 and 12 datagrams (the last of the second and third partial)
ORCA_SIZES = [30 * 1436, 6 * 1436 + 500, 11 * 1436 + 1]


@pytest.mark.parametrize("mode,procs,copies", [("multicast", 1, 1), ("unicast", 1, 4),
                                               ("unicast", 2, 4)])
def test_orca_transfer_puts_one_copy_a_receiver_or_one_for_the_group(simulate, tmp_path, mode,
                                                                     procs, copies):
    """orca,receivers=4,racks=2 at 10 Mb/s: every receiver gets every byte of every round;
    the sender's link carries each DATA datagram once with multicast (the switches
    replicate) and four times with unicast (one or two sending processes): its
    Ethernet-counted bytes over one copy of every file are 1 or 4, plus the END markers
    and BYEs (under 2 % at these small files), with no repair and no drop anywhere."""
    from experiments.orca import experiment as orca
    res = _orca_transfer(tmp_path, "orca,receivers=4,racks=2", mode, ORCA_SIZES, procs,
                         pace=0.95)
    rounds = res.sender["rounds"]
    assert res.sender["ok"] and len(rounds) == 3
    data = sum(r["datagrams_sent"][k] for r in rounds for k in r["datagrams_sent"])
    ends = sum(r["end_markers_sent"] for r in rounds)
    assert data - ends == copies * (30 + 7 + 12)
    for rep in res.receivers.values():
        assert [r["bytes_received"] for r in rep["rounds"]] == ORCA_SIZES
        assert all(r["complete"] and r["lost_before_repair"] == 0 for r in rep["rounds"])
    one = sum(orca.one_copy_bytes(ORCA_SIZES))
    assert copies <= res.sender_link_bytes / one <= copies * 1.02
    assert sum(r["repairs_sent"] for r in rounds) == 0 and res.facts["link_drops"] == 0


def test_orca_link_bound_transfer_takes_the_hand_computed_time(simulate, tmp_path):
    """One receiver (snd - agg - tor1 - r1, 10 Mb/s) and the pacer at the link's own IP rate
    (pace 1): the sender's link never idles, so a round takes its frames on that link (the
    datagrams, 36 + 28 + 2 bytes over their file bytes; the round's END markers follow the
    last datagram and delay nothing), then two more store-and-forward hops of the train's
    largest frame (on a tandem of equal links a short last frame waits behind the full one
    before it at every hop), then the ACK's three hops back (16 + len('ack_i') + 28 + 2
    bytes).  Total over three rounds: exact within 1 us a round (ns-3 rounds each event time
    to the nanosecond)."""
    res = _orca_transfer(tmp_path, "orca,receivers=1,racks=1", "unicast", ORCA_SIZES,
                         pace=1.0, members=1)
    bit = 1 / 10e6
    want = 0.0
    for i, size in enumerate(ORCA_SIZES, start=1):
        frames = [min(1436, size - k * 1436) + 66 for k in range(-(-size // 1436))]
        ack = 16 + len(f"ack_{i}") + 28 + 2
        want += (sum(frames) + 2 * max(frames) + 3 * ack) * 8 * bit
    assert res.sender["total_s"] == pytest.approx(want, abs=3e-6)


def test_orca_backend_sim_runs_end_to_end(simulate, tmp_path):
    """`dcrepro run orca --backend sim` on a small workload: the emulated run's tables, the
    preconditions judged on the simulation, the CPU-bound claims not measured, with why."""
    from dcrepro.cli import main
    from store import read_csv
    rc = main(["run", "orca", "--backend", "sim", "--workloads", "1,2", "--procs", "1,2",
               "--runs", "1", "--out", str(tmp_path)])
    assert rc == 0
    run = next((tmp_path / "orca").iterdir())
    transfers = read_csv(run / "transfers.csv")
    assert len(transfers) == 5 and all(r["backend"] == "sim" for r in transfers)
    assert len(read_csv(run / "receivers.csv")) == 5 * 4 * 33
    from experiments.orca.claims import CLAIMS
    text = {c.text: c.key for c in CLAIMS}
    claims = {text[r["claim"]]: r for r in read_csv(run / "claims.csv")}
    assert claims["multicast-once"]["verdict"] == "holds"
    assert claims["unicast-n"]["verdict"] == "holds"
    assert claims["complete"]["verdict"] == "holds"
    assert claims["procs-cpu"]["verdict"] == "not measured"
    assert "no CPU" in claims["procs-cpu"]["detail"]
    assert "backend=sim: measured in the ns-3 packet simulation" in (run / "claims.md").read_text()
