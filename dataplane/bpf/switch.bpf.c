// SPDX-License-Identifier: GPL-2.0
/* dcrepro's kernel switch: a tc cls_bpf program on the ingress (clsact) of every switch port.
 *
 * One program instance serves every port of the emulated network.  It learns which switch
 * and port a packet arrived on from the ingress ifindex, looks the packet up in the plan's
 * table and hands it to the chosen egress port with bpf_redirect(ifindex, 0): the packet then
 * goes through that port's root qdisc (HTB + pfifo), so every link stays shaped and queued
 * exactly as dcrepro configured it.  All behaviour is in maps filled by dataplane/tcbpf.py
 * from the routing plan (routing/plan.py); dataplane/bpfplan.py models this lookup in Python.
 *
 * Maps
 *   ports   ifindex -> switch id, port number, the switch's hash seed; rx and miss counters
 *   egress  (switch, port) -> ifindex; what this program sent there (tx counters)
 *   fib     (switch, in_port|0, label|0|ANY, kind, MAC or ARP target) -> action
 *           lookup order: (in_port, label), (0, label), then for a labelled packet (0, ANY)
 *   rr      per-flow round-robin state: the index the flow's last packet took
 *   flows   the datapath's own record: (switch, 5-tuple, out port) -> packets, bytes, labels;
 *           path tracing reads it (a sprayed flow shows several out ports)
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define MAX_CHOICES 16
#define LABEL_ANY 0xFFFF
#define KIND_ETH 1
#define KIND_ARP 2
#define OP_FORWARD 1
#define OP_REPLICATE 2
#define MODE_HASH 0
#define MODE_RND 1
#define MODE_RR 2
#define MODE_CNT 3

struct port_info {
	__u32 sw;
	__u32 port;
	__u32 seed;
	__u32 pad;
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 miss_packets;
};

struct port_key {
	__u32 sw;
	__u32 port;
};

struct egress_info {
	__u32 ifindex;
	__u32 pad;
	__u64 tx_packets;
	__u64 tx_bytes;
};

struct fib_key {
	__u32 sw;
	__u16 in_port;
	__u16 label;
	__u8 kind;
	__u8 pad;
	__u8 addr[6];
};

struct fib_action {
	__u8 op;
	__u8 mode;
	__u8 pop;
	__u8 n;
	__u32 group;
	__u16 port[MAX_CHOICES];
	__u16 push[MAX_CHOICES];
};

struct rr_key {
	__u32 sw;
	__u32 group;
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct flow_key {
	__u32 sw;
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u8 proto;
	__u8 pad;
	__u16 out_port;
};

struct flow_stat {
	__u64 packets;
	__u64 bytes;
	__u16 in_label;
	__u16 out_label;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct port_info);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct port_key);
	__type(value, struct egress_info);
} egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct fib_key);
	__type(value, struct fib_action);
} fib SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct rr_key);
	__type(value, __u32);
} rr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 131072);
	__type(key, struct flow_key);
	__type(value, struct flow_stat);
} flows SEC(".maps");

/* The packet's identity as the switch sees it. */
struct pkt {
	__u32 saddr, daddr;
	__u16 sport, dport;
	__u8 proto;
	__u8 is_ip;
	__u16 label;
	__u32 len;
};

/* murmur3's finaliser: every input bit affects every output bit, so switches with
 * different seeds choose independently (no ECMP polarization). */
static __always_inline __u32 fmix(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

static __always_inline __u32 flow_hash(const struct pkt *p, __u32 seed)
{
	__u32 h = fmix(seed ^ 0x9e3779b9);
	h = fmix(h ^ p->saddr);
	h = fmix(h ^ p->daddr);
	h = fmix(h ^ (((__u32)p->sport << 16) | p->dport));
	return fmix(h ^ p->proto);
}

static __always_inline int miss(struct port_info *pi)
{
	__sync_fetch_and_add(&pi->miss_packets, 1);
	return TC_ACT_SHOT;
}

static __always_inline void record(__u32 sw, const struct pkt *p, __u16 out_port,
				   __u16 out_label)
{
	struct flow_key k = {};
	struct flow_stat *st;

	if (!p->is_ip)
		return;
	k.sw = sw;
	k.saddr = p->saddr;
	k.daddr = p->daddr;
	k.sport = p->sport;
	k.dport = p->dport;
	k.proto = p->proto;
	k.out_port = out_port;
	st = bpf_map_lookup_elem(&flows, &k);
	if (!st) {
		struct flow_stat init = {.packets = 1, .bytes = p->len,
					 .in_label = p->label, .out_label = out_label};
		/* another CPU may have inserted it meanwhile: then count on that entry */
		if (bpf_map_update_elem(&flows, &k, &init, BPF_NOEXIST) == 0)
			return;
		st = bpf_map_lookup_elem(&flows, &k);
		if (!st)
			return;
	}
	__sync_fetch_and_add(&st->packets, 1);
	__sync_fetch_and_add(&st->bytes, p->len);
}

/* The egress entry of (switch, port); counts what is sent there. */
static __always_inline struct egress_info *egress_of(__u32 sw, __u16 port)
{
	struct port_key k = {.sw = sw, .port = port};
	return bpf_map_lookup_elem(&egress, &k);
}

/* i & (MAX_CHOICES - 1) that clang cannot drop: it would reuse an unmasked copy of i for
 * the array index and the verifier would reject the access as unbounded. */
static __always_inline __u32 bounded(__u32 i)
{
	asm volatile("%[i] &= 15" : [i] "+r"(i));
	return i;
}

static __always_inline __u32 choose(const struct fib_action *a, const struct pkt *p,
				    const struct port_info *pi)
{
	__u32 n = a->n, i, best = 0;
	__u64 least = ~0ULL;

	switch (a->mode) {
	case MODE_RND:
		return bpf_get_prandom_u32() % n;
	case MODE_RR: {
		struct rr_key k = {.sw = pi->sw, .group = a->group, .saddr = p->saddr,
				   .daddr = p->daddr, .sport = p->sport, .dport = p->dport,
				   .proto = p->proto};
		__u32 *last = bpf_map_lookup_elem(&rr, &k);
		__u32 next = last ? (*last + 1) % n : 0;

		if (last)
			*last = next;
		else
			bpf_map_update_elem(&rr, &k, &next, BPF_ANY);
		return next;
	}
	case MODE_CNT:
		/* least bytes sent by this switch on the port: ties to the lowest index */
		for (i = 0; i < MAX_CHOICES; i++) {
			struct egress_info *e;

			if (i >= n)
				break;
			e = egress_of(pi->sw, a->port[bounded(i)]);
			if (e && e->tx_bytes < least) {
				least = e->tx_bytes;
				best = i;
			}
		}
		return best;
	default:
		return flow_hash(p, pi->seed) % n;
	}
}

/* Send a copy (clone) or the packet itself to choice i; returns the tc verdict. */
static __always_inline int send(struct __sk_buff *skb, const struct fib_action *a, __u32 i,
				struct port_info *pi, const struct pkt *p, __u16 base, int clone)
{
	struct egress_info *e;
	__u16 port, push;

	if (i >= a->n)
		return miss(pi);
	i = bounded(i);
	port = a->port[i];
	push = a->push[i];
	e = egress_of(pi->sw, port);
	if (!e)
		return miss(pi);
	if (push && bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), push) != 0)
		return miss(pi);
	__sync_fetch_and_add(&e->tx_packets, 1);
	__sync_fetch_and_add(&e->tx_bytes, p->len);
	record(pi->sw, p, port, push ? push : base);
	if (clone) {
		bpf_clone_redirect(skb, e->ifindex, 0);
		/* the next copy starts from the packet as it arrived (after any pop) */
		if (push)
			bpf_skb_vlan_pop(skb);
		return TC_ACT_OK;
	}
	return bpf_redirect(e->ifindex, 0);
}

SEC("tc")
int dcrepro_switch(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct fib_key key = {};
	struct fib_action *a;
	struct port_info *pi;
	struct pkt p = {};
	__u32 ifindex = skb->ifindex, i;
	__u16 base;

	pi = bpf_map_lookup_elem(&ports, &ifindex);
	if (!pi)
		return TC_ACT_SHOT; /* not a port of this network: never forward it */
	__sync_fetch_and_add(&pi->rx_packets, 1);
	__sync_fetch_and_add(&pi->rx_bytes, skb->len);
	if ((void *)(eth + 1) > data_end)
		return miss(pi);
	p.len = skb->len;
	/* the kernel strips 802.1Q tags into the skb before tc ingress */
	p.label = skb->vlan_present ? (skb->vlan_tci & 0x0fff) : 0;

	key.sw = pi->sw;
	key.in_port = pi->port;
	key.label = p.label;
	key.kind = KIND_ETH;
	__builtin_memcpy(key.addr, eth->h_dest, 6);

	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end)
			return miss(pi);
		p.is_ip = 1;
		p.saddr = ip->saddr;
		p.daddr = ip->daddr;
		p.proto = ip->protocol;
		/* ports of TCP/UDP, first fragment only (later fragments hash as port 0) */
		if ((p.proto == IPPROTO_TCP || p.proto == IPPROTO_UDP) &&
		    !(ip->frag_off & bpf_htons(0x1fff))) {
			__u8 *l4 = (__u8 *)ip + (ip->ihl & 0xf) * 4;

			if ((void *)(l4 + 4) <= data_end) {
				p.sport = ((__u16)l4[0] << 8) | l4[1];
				p.dport = ((__u16)l4[2] << 8) | l4[3];
			}
		}
	} else if (eth->h_proto == bpf_htons(ETH_P_ARP)) {
		/* Ethernet/IPv4 ARP: 8-byte header, sha[6] spa[4] tha[6] tpa[4] */
		__u8 *arp = (void *)(eth + 1);

		if ((void *)(arp + 28) > data_end)
			return miss(pi);
		if (arp[6] == 0 && arp[7] == 1) { /* request: routed to its target address */
			key.kind = KIND_ARP;
			__builtin_memcpy(key.addr, arp + 24, 4);
			key.addr[4] = 0;
			key.addr[5] = 0;
		}
	}

	a = bpf_map_lookup_elem(&fib, &key);
	if (!a) {
		key.in_port = 0;
		a = bpf_map_lookup_elem(&fib, &key);
	}
	if (!a && p.label) {
		key.label = LABEL_ANY;
		a = bpf_map_lookup_elem(&fib, &key);
	}
	if (!a || a->n == 0 || a->n > MAX_CHOICES)
		return miss(pi);

	base = p.label;
	if (a->pop && p.label) {
		if (bpf_skb_vlan_pop(skb) != 0)
			return miss(pi);
		base = 0;
	}

	if (a->op == OP_REPLICATE) {
		for (i = 0; i < MAX_CHOICES - 1; i++) {
			if (i + 1 >= a->n)
				break;
			send(skb, a, i, pi, &p, base, 1);
		}
		return send(skb, a, a->n - 1, pi, &p, base, 0);
	}
	return send(skb, a, a->n > 1 ? choose(a, &p, pi) : 0, pi, &p, base, 0);
}

char LICENSE[] SEC("license") = "GPL";
