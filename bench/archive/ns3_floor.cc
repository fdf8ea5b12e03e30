// ns-3's own cost per packet transmission, with nothing of dcrepro in the way: a chain of
// point-to-point links (host, H-1 routers, host), N TCP bulk flows from one end to the
// other, global routing, a drop-tail device queue and no queue disc.  It prints one line:
// the wall time of Simulator::Run, the packet transmissions (every device's PhyTxBegin:
// data and ACKs, on every hop) and their ratio.  bench/archive/bench_ns3_floor.py builds it
// against each ns-3 it finds and runs them side by side; issue #24 asks whether any ns-3
// build can carry plts at 1 Gb/s in the time the goal gives.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

static uint64_t g_tx = 0;

static void
CountTx(Ptr<const Packet>)
{
    ++g_tx;
}

int
main(int argc, char* argv[])
{
    uint32_t hops = 4;
    uint32_t flows = 1;
    double seconds = 1.0;
    std::string rate = "1Gbps";
    std::string scheduler = "ns3::MapScheduler";
    CommandLine cmd;
    cmd.AddValue("hops", "links on the path", hops);
    cmd.AddValue("flows", "TCP bulk flows end to end", flows);
    cmd.AddValue("seconds", "simulated seconds", seconds);
    cmd.AddValue("rate", "every link's rate", rate);
    cmd.AddValue("scheduler", "event scheduler type", scheduler);
    cmd.Parse(argc, argv);

    ObjectFactory sched;
    sched.SetTypeId(scheduler);
    Simulator::SetScheduler(sched);
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));

    NodeContainer nodes;
    nodes.Create(hops + 1);
    InternetStackHelper stack;
    stack.Install(nodes);
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(rate));
    p2p.SetChannelAttribute("Delay", StringValue("1us"));
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100p"));
    Ipv4AddressHelper addr;
    TrafficControlHelper tch;
    for (uint32_t i = 0; i < hops; ++i)
    {
        NetDeviceContainer link = p2p.Install(nodes.Get(i), nodes.Get(i + 1));
        char net[32];
        std::snprintf(net, sizeof net, "10.%u.%u.0", 1 + i / 250, i % 250);
        addr.SetBase(net, "255.255.255.0");
        addr.Assign(link);
        tch.Uninstall(link);  // the device queue alone, as a tail-drop port
        for (uint32_t d = 0; d < 2; ++d)
        {
            link.Get(d)->TraceConnectWithoutContext("PhyTxBegin", MakeCallback(&CountTx));
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    Ptr<Ipv4> last = nodes.Get(hops)->GetObject<Ipv4>();
    Ipv4Address dst = last->GetAddress(1, 0).GetLocal();
    for (uint32_t f = 0; f < flows; ++f)
    {
        uint16_t port = 5000 + f;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        sink.Install(nodes.Get(hops)).Start(Seconds(0));
        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(dst, port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.Install(nodes.Get(0)).Start(Seconds(0.001 * f));
    }
    Simulator::Stop(Seconds(seconds));
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Simulator::Destroy();
    std::printf("hops=%u flows=%u rate=%s simulated_s=%g wall_s=%.3f transmissions=%llu "
                "us_per_transmission=%.3f\n",
                hops, flows, rate.c_str(), seconds, wall, (unsigned long long)g_tx,
                1e6 * wall / double(g_tx));
    return 0;
}
