// SPDX-License-Identifier: GPL-2.0
/* Bottleneck arrivals: every packet offered to a watched port's tail-drop queue, accepted
 * or dropped, as one record in a ring buffer (emulator/qarrive.py drains it).
 *
 * Accepted: the qdisc:qdisc_enqueue tracepoint, fired by dev_qdisc_enqueue()
 * (net/core/dev.c) only after the ROOT qdisc (HTB) accepted the packet, i.e. after its
 * pfifo leaf queued it; HTB's enqueue into the leaf calls the child directly and fires
 * nothing of its own (see dataplanes/bpf/qlen.bpf.c).  It fires under the root's lock.
 * Dropped: the skb:kfree_skb tracepoint with a qdisc drop reason (SKB_DROP_REASON_QDISC_*):
 * pfifo_enqueue() puts a packet over its limit on the caller's to_free list and
 * __dev_xmit_skb() frees that list just after releasing the root lock, so a drop is seen
 * a few microseconds after its decision (a full frame lasts 1.2 ms at 10 Mb/s) and may
 * come after an arrival of the other CPU that the queue took later.  skb->dev is then still
 * the device whose qdisc refused it.  (fexit on pfifo_enqueue would see both outcomes at
 * the decision, under the lock, but the kernel refuses fentry/fexit programs on this
 * machine: EPERM at load, while tp_btf programs load.)
 *
 * Released: the qdisc:qdisc_dequeue tracepoint (fired by dequeue_skb() for the root qdisc on
 * every dequeue attempt) with a packet: one record per packet of the list the root handed
 * out (at most MAX_LIST; ``unlisted`` counts the rest), marked by reason RELEASED, so that the queue's service times are
 * known beside its arrivals (who got the slot each release freed).  A packet the stack
 * requeued and hands out again is recorded again (rare on veth; qgap.bpf.c counts them).
 *
 * Per record: time (ns, CLOCK_MONOTONIC), dropped or not, the root qdisc's q.qlen (HTB:
 * every packet of its tree), its drop counter and released-packet counter at the event (so
 * user space can count BPF runs this program missed: on this 6.18 guest they are
 * occasionally skipped, see qgap.bpf.c), the drop reason, skb_iif (the switch's ingress
 * ifindex on the bpf dataplane; on ovs the userspace datapath sends from a socket),
 * skb->len, GSO segments, and the IPv4 5-tuple, sequence number, TCP flags and payload
 * length read from the frame (skb->data is the Ethernet header at a device's qdisc; up to
 * two VLAN tags are skipped).
 *
 * Maps: watch  {ifindex, netns inode} -> slot (the device's namespace is in the key because
 *              ifindexes repeat across namespaces)
 *       counts slot -> struct counts (what was seen, and records the ring had no room for)
 *       events ring buffer of struct arrival
 * Layouts are mirrored in emulator/qarrive.py.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define MAX_PORTS 64
#define RING_BYTES (4 << 20) /* 4 MiB: 65k records, seconds of 100 Mb/s between drains */
#define ETH_P_IP 0x0800
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define RELEASED 0xffffffffu /* reason of a release record (no drop reason is this) */
/* packets of one bulk dequeue recorded: the stack's slow bulk path (a device with several tx
 * queues, as veth has) hands out at most 1 + 8; ``unlisted`` counts any past this */
#define MAX_LIST 16

struct watch_key {
	__u32 ifindex;
	__u32 netns;
};

struct counts {
	__u64 accepted;
	__u64 dropped;
	__u64 ring_full; /* records lost because the ring buffer had no room */
	__u64 not_ipv4;
	__u64 released; /* packets the root qdisc handed out (release records) */
	__u64 unlisted; /* packets of a handed-out list past MAX_LIST (no record) */
};

struct arrival {
	__u64 ts;
	__u32 saddr; /* network order, as on the wire */
	__u32 daddr;
	__u16 sport; /* host order */
	__u16 dport;
	__u32 seq;
	__u32 qlen;  /* the root qdisc's packets at the event */
	__u32 drops; /* the root qdisc's drop counter at the event */
	__u32 sent;  /* the root qdisc's released packets (bstats, segments) */
	__u32 iif;
	__u32 len;
	__u16 payload;
	__u16 segs;
	__u8 dropped;
	__u8 proto;
	__u8 tcp_flags;
	__u8 slot;
	__u32 reason; /* drops: the skb_drop_reason */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, struct watch_key);
	__type(value, __u32);
} watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, struct counts);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_BYTES);
} events SEC(".maps");

/* the IPv4/TCP|UDP fields of the frame at skb->data; 0 if it is not IPv4 */
static __always_inline int parse(struct sk_buff *skb, struct arrival *a)
{
	unsigned char *p = BPF_CORE_READ(skb, data);
	__u16 proto = 0, tot = 0, ports[2] = {};
	__u8 vihl = 0, tcp[14] = {};
	__u32 off = 12, ihl, i;

	for (i = 0; i < 3; i++) {
		if (bpf_probe_read_kernel(&proto, 2, p + off))
			return 0;
		proto = bpf_ntohs(proto);
		if (proto != ETH_P_8021Q && proto != ETH_P_8021AD)
			break;
		off += 4;
	}
	if (proto != ETH_P_IP)
		return 0;
	p += off + 2;
	if (bpf_probe_read_kernel(&vihl, 1, p) || (vihl >> 4) != 4)
		return 0;
	ihl = (vihl & 15) * 4;
	bpf_probe_read_kernel(&tot, 2, p + 2);
	bpf_probe_read_kernel(&a->proto, 1, p + 9);
	bpf_probe_read_kernel(&a->saddr, 4, p + 12);
	bpf_probe_read_kernel(&a->daddr, 4, p + 16);
	tot = bpf_ntohs(tot);
	p += ihl;
	if (a->proto == IPPROTO_TCP) {
		if (bpf_probe_read_kernel(tcp, sizeof(tcp), p))
			return 1;
		a->sport = (tcp[0] << 8) | tcp[1];
		a->dport = (tcp[2] << 8) | tcp[3];
		a->seq = ((__u32)tcp[4] << 24) | ((__u32)tcp[5] << 16) | ((__u32)tcp[6] << 8) | tcp[7];
		a->tcp_flags = tcp[13];
		i = ihl + (tcp[12] >> 4) * 4;
		a->payload = tot > i ? tot - i : 0;
	} else if (a->proto == IPPROTO_UDP) {
		if (bpf_probe_read_kernel(ports, sizeof(ports), p))
			return 1;
		a->sport = bpf_ntohs(ports[0]);
		a->dport = bpf_ntohs(ports[1]);
		a->payload = tot > ihl + 8 ? tot - ihl - 8 : 0;
	}
	return 1;
}

static __always_inline __u32 *watched(struct net_device *dev)
{
	struct watch_key key = {};

	if (!dev)
		return 0;
	key.ifindex = BPF_CORE_READ(dev, ifindex);
	key.netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	return bpf_map_lookup_elem(&watch, &key);
}

static __always_inline void record(__u32 *slot, struct Qdisc *q, struct sk_buff *skb,
				   __u32 reason)
{
	struct skb_shared_info *sh;
	struct arrival *a;
	struct counts *c;

	c = bpf_map_lookup_elem(&counts, slot);
	if (!c)
		return;
	if (reason == RELEASED)
		__sync_fetch_and_add(&c->released, 1);
	else if (reason)
		__sync_fetch_and_add(&c->dropped, 1);
	else
		__sync_fetch_and_add(&c->accepted, 1);
	a = bpf_ringbuf_reserve(&events, sizeof(*a), 0);
	if (!a) {
		__sync_fetch_and_add(&c->ring_full, 1);
		return;
	}
	__builtin_memset(a, 0, sizeof(*a));
	a->ts = bpf_ktime_get_ns();
	a->dropped = reason != 0 && reason != RELEASED;
	a->reason = reason;
	a->slot = *slot;
	if (q) {
		a->qlen = BPF_CORE_READ(q, q.qlen);
		a->drops = BPF_CORE_READ(q, qstats.drops);
		/* HTB keeps plain (not per-CPU) counters at its root */
		a->sent = BPF_CORE_READ(q, bstats.packets.v.a.a.counter);
	}
	a->iif = BPF_CORE_READ(skb, skb_iif);
	a->len = BPF_CORE_READ(skb, len);
	sh = (struct skb_shared_info *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	a->segs = BPF_CORE_READ(sh, gso_segs);
	if (!parse(skb, a))
		__sync_fetch_and_add(&c->not_ipv4, 1);
	bpf_ringbuf_submit(a, 0);
}

SEC("tp_btf/qdisc_enqueue")
int BPF_PROG(on_enqueue, struct Qdisc *q, const struct netdev_queue *txq, struct sk_buff *skb)
{
	__u32 *slot = watched(BPF_CORE_READ(txq, dev));

	if (slot && skb)
		record(slot, q, skb, 0);
	return 0;
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(on_dequeue, struct Qdisc *q, const struct netdev_queue *txq, int packets,
	     struct sk_buff *skb)
{
	__u32 *slot;
	int i;

	if (!skb || packets <= 0)
		return 0;
	slot = watched(BPF_CORE_READ(txq, dev));
	if (!slot)
		return 0;
	for (i = 0; i < MAX_LIST && i < packets && skb; i++) {
		record(slot, q, skb, RELEASED);
		skb = BPF_CORE_READ(skb, next);
	}
	if (i < packets) {
		struct counts *c = bpf_map_lookup_elem(&counts, slot);

		if (c)
			__sync_fetch_and_add(&c->unlisted, packets - i);
	}
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(on_free, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct net_device *dev;
	__u32 *slot;

	if (reason != SKB_DROP_REASON_QDISC_DROP && reason != SKB_DROP_REASON_QDISC_OVERLIMIT &&
	    reason != SKB_DROP_REASON_QDISC_CONGESTED)
		return 0;
	dev = BPF_CORE_READ(skb, dev);
	slot = watched(dev);
	if (slot)
		record(slot, BPF_CORE_READ(dev, qdisc), skb, reason);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
