// SPDX-License-Identifier: GPL-2.0
/* dcrepro's kernel switch: a tc cls_bpf program on the ingress (clsact) of every switch port.
 *
 * One program instance serves every port of every switch of the emulated network.  It learns
 * which switch and port a packet arrived on from the ingress ifindex, looks the packet up in
 * the routing plan's table and hands it to the chosen egress port with
 * bpf_redirect(ifindex, 0).  The packet then goes through that port's root qdisc
 * (HTB + pfifo), so every link stays shaped and queued exactly as dcrepro configured it; the
 * program itself never queues or drops for congestion.  All behaviour lives in maps, filled
 * by dataplanes/bpf/switch.py (layouts mirrored there byte for byte: little-endian, natural
 * alignment, explicit pad fields so that no compiler-inserted padding can differ).
 *
 * Maps
 *   ports   ifindex -> switch id, port number, the switch's hash seed; rx and miss counters
 *   egress  (switch, port) -> ifindex; what this program redirected there (tx counters)
 *   fib     (switch, in_port|0, label|0|ANY, kind, MAC or ARP target) -> action
 *           lookup order: (in_port, label), (0, label), then for a tagged packet (0, ANY);
 *           the first only on a switch that has in_port entries (PORT_IN_RULES): most plans
 *           have none (only multicast trees do), and it would miss on every packet
 *   rr      per-flow round-robin state: the choice index the flow's last packet took
 *   flows   the datapath's own record: (switch, 5-tuple, out port) -> packets, bytes, labels;
 *           path tracing reads it (a sprayed flow shows several out ports on one switch)
 *   conf    one entry: the latency sampling rate (0 = off), flags (CONF_KEEP_SOCKET,
 *           CONF_FLOWS_SAMPLED, CONF_CNT_PACKETS) and the sampling counters
 *   lat_start  sampled TCP data segments in flight: (5-tuple, seq) -> time at the first switch
 *   lat     their one-way fabric latency: (5-tuple, seq) -> arrival time, latency
 *   aqm     egress ifindex -> the port's AQM (aqm.h): configuration, queue length (kept by
 *           qlen.bpf.c on the qdisc tracepoints), RED state, marks and drops
 *
 * Active queue management (--aqm ecn|red; aqm.h says what each does): a port with one has
 * egress_info.aqm set, and only then does the program look the port up in ``aqm`` and,
 * before redirecting a forwarded packet there, mark it CE (bpf_skb_ecn_set_ce) or drop it
 * (TC_ACT_SHOT, counted in the port's ``drops``, never in miss_packets).  Droptail ports,
 * the default, cost nothing more than the test of that field of an entry already read.
 * Replicated copies (multicast) are not subject to it: marking one copy would mark the
 * packet the later copies are cloned from.
 *
 * Latency sampling (off unless conf.sample_every > 0): a TCP segment with payload whose
 * (5-tuple, seq) hashes to 0 modulo sample_every is stamped when it enters the fabric (the
 * ingress of a port that faces a host) and measured when a switch hands it to a port that
 * faces a host: first-switch ingress to last-switch ingress, so the host links' queues are
 * not in it.  The choice is a hash, not a coin, so a retransmission of a sampled segment is
 * sampled again and restamps it; a stamp whose segment was dropped is never matched.
 *
 * The sender's socket is released at the first switch.  A packet keeps its sender's socket
 * reference (skb->sk) across veths and bpf_redirect (since Linux 5.1 skb_scrub_packet no longer
 * orphans), so without this it would count against the sender's TCP Small Queues budget, about
 * max(2 packets, 1 ms at the pacing rate), until the receiver's ip_rcv: every flow would be
 * capped at about two packets in flight across the whole fabric instead of by its congestion
 * window.  A real host's NIC frees the packet (and so its socket charge) once it is on the
 * wire, so the program does the same where the wire ends: at the ingress of a port that faces
 * a host, a packet that still holds a socket is forwarded as a clone (bpf_clone_redirect; a
 * clone has no socket) and the original is consumed (TC_ACT_STOLEN: consume_skb, not a drop),
 * which runs its destructor (tcp_wfree) as a NIC's tx completion would.  Once per packet, at
 * its first switch; later hops see a socketless clone.  No helper orphans an skb, and
 * bpf_sk_assign (which does) leaves a prefetched socket that the receiver would then deliver
 * to.  CONF_KEEP_SOCKET turns this off (the old behaviour, kept for the ablation only).
 *
 * Sampled flow records (CONF_FLOWS_SAMPLED, ``bpf,flows=sampled``): the record of every
 * packet in ``flows`` is one hash lookup and two atomic adds per packet-hop, on entries both
 * CPUs write.  Where the port a packet leaves by follows from its 5-tuple (a single choice,
 * a hash select, a replicated copy), path tracing only needs the record to exist: a TCP
 * segment is then recorded only when it carries SYN, FIN or RST (so every connection and
 * subflow is on record from its first packet, at every switch it crosses) or when a random
 * draw picks it, one in FLOW_SAMPLE_EVERY (so a flow moved to another port later shows up
 * there too, with about 1/FLOW_SAMPLE_EVERY of its packets).  Sprayed packets (rnd, rr, cnt
 * over several choices) and anything not TCP are recorded every time, as without the flag:
 * their counts per port are what ``spread`` reports.
 *
 * Counters count packets as wire packets (gso_segs of a GSO skb, else 1) and bytes as skb
 * length at ingress (Ethernet header included, an offloaded VLAN tag not).  Concurrent
 * updates from several CPUs use atomic adds, except the round-robin index (see choose()).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "aqm.h"

#define MAX_CHOICES 16
#define LABEL_ANY 0xFFFF
#define KIND_ETH 1
#define KIND_ARP 2
#define ACT_FORWARD 1
#define ACT_REPLICATE 2
#define MODE_HASH 0
#define MODE_RND 1
#define MODE_RR 2
#define MODE_CNT 3
#define MAX_INBAND_TAGS 2

#define PORT_HOST 1	/* port_info.flags: the port faces a host */
#define PORT_IN_RULES 2	/* port_info.flags: its switch has fib entries for given in_ports */
#define CONF_KEEP_SOCKET 1	/* conf.flags: packets keep the sender's socket (ablation only) */
#define CONF_FLOWS_SAMPLED 2	/* conf.flags: flow records sampled where the path is fixed */
#define CONF_CNT_PACKETS 4	/* conf.flags: cnt balances packets, not bytes (ablation only) */
#define FLOW_SAMPLE_EVERY 64	/* ... one TCP segment in this many, besides SYN/FIN/RST */
#define TCP_SYN_FIN_RST 0x07	/* the TCP flags byte's FIN, SYN and RST bits */

struct port_info {
	__u32 sw;
	__u32 port;
	__u32 seed;
	__u32 flags;
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
	__u32 aqm;		/* the port has an AQM: look it up in ``aqm`` (0: tail drop only) */
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
	__u8 kind;
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

struct conf {
	__u32 sample_every;
	__u32 flags;		/* CONF_KEEP_SOCKET */
	__u64 stamped;		/* segments stamped at their first switch */
	__u64 measured;		/* ... and matched at their last one */
	__u64 lost;		/* measured but not stored: the lat map was full */
};

struct lat_key {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
	__u32 seq;
};

struct lat_val {
	__u64 at_ns;		/* bpf_ktime_get_ns (CLOCK_MONOTONIC) at the last switch */
	__u64 latency_ns;
};

/* Ethernet/IPv4 ARP (RFC 826) as it follows the Ethernet header */
struct arp_eth {
	__be16 htype;
	__be16 ptype;
	__u8 hlen;
	__u8 plen;
	__be16 op;
	__u8 sha[6];
	__u8 spa[4];
	__u8 tha[6];
	__u8 tpa[4];
} __attribute__((packed));

struct vlan_tag {
	__be16 tci;
	__be16 encap_proto;
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

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct conf);
} conf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct lat_key);
	__type(value, __u64);
} lat_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct lat_key);
	__type(value, struct lat_val);
} lat SEC(".maps");

/* The packet as the switch sees it. */
struct pkt {
	__u32 saddr, daddr;	/* IPv4 (or, for hashing only, ARP sender/target) addresses */
	__u16 sport, dport;	/* host order; 0 for non-TCP/UDP and for fragments */
	__u8 proto;
	__u8 is_ip;		/* only IPv4 packets are recorded in `flows` */
	__u8 tagged;
	__u8 ecn;		/* IPv4 ECN field (AQM: ECN-capable or not) */
	__u16 label;		/* outermost 802.1Q VLAN id on arrival, 0 if untagged */
	__u16 out_base;		/* label left after an optional pop */
	__u32 len;
	__u32 segs;
	__u32 seq;		/* TCP sequence number (host order) of a sampled segment */
	__u8 sampled;		/* a TCP data segment chosen for latency sampling */
	__u8 tcp_flags;		/* the TCP flags byte (FIN 0x01, SYN 0x02, RST 0x04, ...) */
	__u32 conf_flags;	/* conf.flags, read once per packet */
};

/* murmur3's 32-bit finaliser: every input bit flips every output bit with probability ~1/2. */
static __always_inline __u32 fmix(__u32 h)
{
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/* Hash of the 5-tuple keyed by the switch's seed.  The seed goes in first and every word is
 * followed by a full finaliser round, so two switches with different seeds make unrelated
 * choices for the same flow: no ECMP polarization (a plain hash % n, identical on every
 * switch, would send every flow that took the left uplink at one tier to the left again at
 * the next).  dataplanes/bpf/switch.py:flow_hash is the same function in Python. */
static __always_inline __u32 flow_hash(const struct pkt *p, __u32 seed)
{
	__u32 h = fmix(seed ^ 0x9e3779b9);

	h = fmix(h ^ p->saddr);
	h = fmix(h ^ p->daddr);
	h = fmix(h ^ (((__u32)p->sport << 16) | p->dport));
	return fmix(h ^ p->proto);
}

/* i & (MAX_CHOICES - 1) that clang cannot drop: knowing i < n <= 16 it would otherwise
 * remove the mask and the verifier, which does not know that, rejects a->port[i] as an
 * unbounded access.  The empty asm makes i opaque to the optimiser, so the mask stays. */
static __always_inline __u32 bounded(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & (MAX_CHOICES - 1);
}

static __always_inline struct conf *config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&conf, &zero);
}

static __always_inline void lat_key_of(struct lat_key *k, const struct pkt *p)
{
	k->saddr = p->saddr;
	k->daddr = p->daddr;
	k->sport = p->sport;
	k->dport = p->dport;
	k->seq = p->seq;
}

/* A sampled segment leaves the fabric: store its latency since its first switch. */
static __always_inline void measure(const struct pkt *p, __u32 out_ifindex)
{
	struct port_info *out = bpf_map_lookup_elem(&ports, &out_ifindex);
	struct lat_key k = {};
	struct lat_val v;
	struct conf *c;
	__u64 *t0;

	if (!out || !(out->flags & PORT_HOST))
		return;
	lat_key_of(&k, p);
	t0 = bpf_map_lookup_elem(&lat_start, &k);
	if (!t0)
		return;
	v.at_ns = bpf_ktime_get_ns();
	v.latency_ns = v.at_ns - *t0;
	bpf_map_delete_elem(&lat_start, &k);
	c = config();
	if (!c)
		return;
	if (bpf_map_update_elem(&lat, &k, &v, BPF_ANY) == 0)
		__sync_fetch_and_add(&c->measured, 1);
	else
		__sync_fetch_and_add(&c->lost, 1);
}

static __always_inline int miss(struct port_info *pi, const struct pkt *p)
{
	__sync_fetch_and_add(&pi->miss_packets, p->segs);
	return TC_ACT_SHOT;
}

static __always_inline struct egress_info *egress_of(__u32 sw, __u16 port)
{
	struct port_key k = {.sw = sw, .port = port};

	return bpf_map_lookup_elem(&egress, &k);
}

/* Count one IPv4 packet of this switch's flow under the port it leaves by. */
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
		struct flow_stat init = {.packets = p->segs, .bytes = p->len,
					 .in_label = p->label, .out_label = out_label};

		/* BPF_NOEXIST: if another CPU inserted it meanwhile, count on its entry */
		if (bpf_map_update_elem(&flows, &k, &init, BPF_NOEXIST) == 0)
			return;
		st = bpf_map_lookup_elem(&flows, &k);
		if (!st)
			return;
	}
	__sync_fetch_and_add(&st->packets, p->segs);
	__sync_fetch_and_add(&st->bytes, p->len);
}

/* Index of the choice a forwarded packet takes (n >= 2). */
static __always_inline __u32 choose(const struct fib_action *a, const struct pkt *p,
				    const struct port_info *pi)
{
	__u32 n = a->n, i, best = 0;
	__u64 least = ~0ULL;

	switch (a->mode) {
	case MODE_RND:
		return bpf_get_prandom_u32() % n;
	case MODE_RR: {
		/* The flow's first packet starts at its hash choice (so that many short flows
		 * do not all start on choice 0), then each packet takes the next one.  The
		 * read-modify-write is not atomic: two CPUs forwarding packets of the same
		 * flow at the same instant may take the same choice.  Harmless for spraying,
		 * and atomics with fetch need -mcpu=v3 for a gain nobody would measure. */
		struct rr_key k = {.sw = pi->sw, .group = a->group, .saddr = p->saddr,
				   .daddr = p->daddr, .sport = p->sport, .dport = p->dport,
				   .proto = p->proto};
		__u32 *last = bpf_map_lookup_elem(&rr, &k);
		__u32 next;

		if (last) {
			next = (*last + 1) % n;
			*last = next;
		} else {
			next = flow_hash(p, pi->seed) % n;
			bpf_map_update_elem(&rr, &k, &next, BPF_ANY);
		}
		return next;
	}
	case MODE_CNT: {
		/* least bytes this program sent on the port (of this switch); ties go to the
		 * lowest index; a choice without an egress entry is never taken.  With
		 * CONF_CNT_PACKETS, least packets instead: an ACK then weighs as much as a
		 * full-size segment (the paper's "local port counters" do not say which) */
		int by_packets = p->conf_flags & CONF_CNT_PACKETS;

		for (i = 0; i < MAX_CHOICES; i++) {
			struct egress_info *e;
			__u64 sent;

			if (i >= n)
				break;
			e = egress_of(pi->sw, a->port[bounded(i)]);
			if (!e)
				continue;
			sent = by_packets ? e->tx_packets : e->tx_bytes;
			if (sent < least) {
				least = sent;
				best = i;
			}
		}
		return best;
	}
	default:
		return flow_hash(p, pi->seed) % n;
	}
}

/* The egress port's AQM on a packet about to be redirected there: mark it CE or say that
 * it is to be dropped (returns 1).  RED's state is updated without a lock: two CPUs
 * deciding for the same port at the same instant may lose one EWMA step or count, which
 * moves the average by at most 2^-wlog of one sample. */
static __always_inline int aqm_drop(struct __sk_buff *skb, __u32 ifindex, const struct pkt *p)
{
	struct aqm_port *q = bpf_map_lookup_elem(&aqm, &ifindex);
	int verdict;

	if (!q || !p->is_ip)
		return 0;
	verdict = aqm_decide(q, p->ecn, bpf_get_prandom_u32() >> (32 - AQM_PBITS),
			     q->mode == AQM_RED ? bpf_ktime_get_ns() : 0);
	if (verdict == AQM_MARK) {
		if (bpf_skb_ecn_set_ce(skb))
			__sync_fetch_and_add(&q->marks, p->segs);
		else if (p->ecn != 3)	/* CE already: nothing to do */
			__sync_fetch_and_add(&q->unmarkable, p->segs);
		return 0;
	}
	if (verdict == AQM_DROP) {
		__sync_fetch_and_add(&q->drops, p->segs);
		return 1;
	}
	return 0;
}

/* emit()'s ``how``: the choice's index in the low byte, and these flags */
#define EMIT_LAST 0x100		/* the skb itself goes (else a clone; see emit) */
#define EMIT_RELEASE 0x200	/* ... as a clone, the skb and its socket consumed */
#define EMIT_SKIP 0x400		/* leave it out of `flows` (CONF_FLOWS_SAMPLED) */

/* Send the packet to choice how & 0xff: the skb itself (EMIT_LAST; returns the tc verdict)
 * or a clone (leaves the skb as it was, ready for the next copy).  With EMIT_RELEASE the
 * last copy is a clone too and the skb, with its socket reference, is consumed (see the
 * top).  EMIT_SKIP: leave it out of ``flows``.
 *
 * A global function (not static, not inlined), so that the verifier checks it once, on its
 * own, with every argument unknown, instead of once per path to each of its call sites:
 * inlined at its eight call sites it made the verifier walk 639,775 instructions and load
 * the program in about 1.25 s, one third of every network's bring-up; as a global function,
 * 13,772 instructions and 0.05-0.17 s (`bpftool -d prog load`, kernel 6.18, 2026-12-02).
 * A BPF call takes at most five arguments, hence ``how``; the verifier sees the pointers as
 * possibly NULL, hence the check. */
__attribute__((noinline)) int emit(struct __sk_buff *skb, const struct fib_action *a,
				   struct port_info *pi, const struct pkt *p, __u32 how)
{
	int last = !!(how & EMIT_LAST), release = !!(how & EMIT_RELEASE);
	int skip_record = !!(how & EMIT_SKIP);
	struct egress_info *e;
	__u16 port, push;
	__u32 i;

	if (!a || !pi || !p)
		return TC_ACT_SHOT;
	i = bounded(how & 0xff);
	port = a->port[i];
	push = a->push[i];
	e = port ? egress_of(pi->sw, port) : 0;
	if (!e)
		return miss(pi, p); /* (a clone's caller ignores the verdict) */
	if (e->aqm && last && aqm_drop(skb, e->ifindex, p))
		return TC_ACT_SHOT;
	/* bpf_skb_vlan_push on an untagged skb only sets the offloaded tag (skb metadata);
	 * on a tagged one it moves the old tag into the frame first (a stacked label) */
	if (push && bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), push) != 0)
		return miss(pi, p);
	if (!last || release) {
		/* The clone copies the skb as it is now, tag included.  The copies share packet
		 * data, but bpf_clone_redirect makes this skb's head private before it returns
		 * and a push/pop either touches only skb metadata or un-shares the head first,
		 * so undoing our push below cannot change the copy already queued.  The next
		 * copy therefore starts from the packet as it arrived (after any pop). */
		int err = bpf_clone_redirect(skb, e->ifindex, 0);

		if (push && !last)
			bpf_skb_vlan_pop(skb);
		if (err)
			return miss(pi, p);
	}
	__sync_fetch_and_add(&e->tx_packets, p->segs);
	__sync_fetch_and_add(&e->tx_bytes, p->len);
	if (!skip_record)
		record(pi->sw, p, port, push ? push : p->out_base);
	if (p->sampled)
		measure(p, e->ifindex);
	if (!last)
		return 0;
	return release ? TC_ACT_STOLEN : bpf_redirect(e->ifindex, 0);
}

/* Decide whether this TCP segment is sampled and, at its first switch, stamp it. */
static __always_inline void sample(struct __sk_buff *skb, struct pkt *p,
				   const struct iphdr *ip, __u32 l4off, const struct port_info *pi)
{
	struct conf *c = config();
	struct lat_key k = {};
	__u8 tcp[13];
	__u32 hdrs;
	__u64 now;

	if (!c || c->sample_every == 0)
		return;
	if (bpf_skb_load_bytes(skb, l4off, tcp, sizeof(tcp)))
		return;
	hdrs = ip->ihl * 4 + (tcp[12] >> 4) * 4;
	if (bpf_ntohs(ip->tot_len) <= hdrs)
		return;		/* a pure ACK: no payload, no sample */
	p->seq = ((__u32)tcp[4] << 24) | ((__u32)tcp[5] << 16) | ((__u32)tcp[6] << 8) | tcp[7];
	if (flow_hash(p, p->seq) % c->sample_every)
		return;
	p->sampled = 1;
	if (!(pi->flags & PORT_HOST))
		return;
	lat_key_of(&k, p);
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&lat_start, &k, &now, BPF_ANY);
	__sync_fetch_and_add(&c->stamped, 1);
}

static __always_inline struct fib_action *lookup(struct fib_key *key, const struct pkt *p)
{
	struct fib_action *a;

	if (key->in_port) {	/* 0 already when the switch has no in_port entries */
		a = bpf_map_lookup_elem(&fib, key);
		if (a)
			return a;
		key->in_port = 0;
	}
	a = bpf_map_lookup_elem(&fib, key);
	if (a || !p->tagged)
		return a;
	key->label = LABEL_ANY;
	return bpf_map_lookup_elem(&fib, key);
}

/* Does this packet enter the fabric still holding its sender's socket (see the top)? */
static __always_inline int releases_socket(struct __sk_buff *skb, const struct port_info *pi,
					   const struct pkt *p)
{
	return (pi->flags & PORT_HOST) && skb->sk && !(p->conf_flags & CONF_KEEP_SOCKET);
}

SEC("tc")
int dcrepro_switch(struct __sk_buff *skb)
{
	struct fib_key key = {};
	struct fib_action *a;
	struct port_info *pi;
	struct ethhdr eth;
	struct pkt p = {};
	struct conf *c;
	__u32 ifindex = skb->ifindex, off = sizeof(eth), i;
	__be16 proto;
	int release, skip;

	pi = bpf_map_lookup_elem(&ports, &ifindex);
	if (!pi)
		return TC_ACT_SHOT; /* not a port of this network: never forward it */
	p.len = skb->len;
	p.segs = skb->gso_segs ? skb->gso_segs : 1;
	c = config();
	p.conf_flags = c ? c->flags : 0;
	__sync_fetch_and_add(&pi->rx_packets, p.segs);
	__sync_fetch_and_add(&pi->rx_bytes, p.len);

	/* All reads go through bpf_skb_load_bytes: it copes with non-linear skbs and stays
	 * valid after the vlan helpers below, which move packet data around. */
	if (bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)))
		return miss(pi, &p);
	proto = eth.h_proto;
	/* The kernel moves a received frame's outer 802.1Q tag into the skb before tc ingress
	 * (skb_vlan_untag), so the label is normally there.  A tag still in the frame is the
	 * inner one of a stacked pair (a push on a tagged packet) or an outer one the stack
	 * left in band: the first tag seen is the label, inner tags are skipped. */
	if (skb->vlan_present) {
		p.tagged = 1;
		p.label = skb->vlan_tci & 0x0fff;
	}
	for (i = 0; i < MAX_INBAND_TAGS; i++) {
		struct vlan_tag tag;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if (bpf_skb_load_bytes(skb, off, &tag, sizeof(tag)))
			return miss(pi, &p);
		if (!p.tagged) {
			p.tagged = 1;
			p.label = bpf_ntohs(tag.tci) & 0x0fff;
		}
		proto = tag.encap_proto;
		off += sizeof(tag);
	}

	key.sw = pi->sw;
	key.in_port = (pi->flags & PORT_IN_RULES) ? pi->port : 0;
	key.label = p.label;
	key.kind = KIND_ETH;
	__builtin_memcpy(key.addr, eth.h_dest, 6);

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr ip;

		if (bpf_skb_load_bytes(skb, off, &ip, sizeof(ip)) || ip.version != 4 || ip.ihl < 5)
			return miss(pi, &p);
		p.is_ip = 1;
		p.ecn = ip.tos & 3;
		p.saddr = ip.saddr;
		p.daddr = ip.daddr;
		p.proto = ip.protocol;
		/* Ports only from unfragmented TCP/UDP: every fragment of a datagram (the first
		 * one too, MF set) hashes alike and so takes the same path. */
		if ((p.proto == IPPROTO_TCP || p.proto == IPPROTO_UDP) &&
		    !(ip.frag_off & bpf_htons(0x3fff))) {
			/* ports, and for TCP the flags byte (offset 13) */
			__u8 l4[14];
			int got = p.proto == IPPROTO_TCP ?
				bpf_skb_load_bytes(skb, off + ip.ihl * 4, l4, 14) :
				bpf_skb_load_bytes(skb, off + ip.ihl * 4, l4, 4);

			if (got == 0) {
				p.sport = ((__u16)l4[0] << 8) | l4[1];
				p.dport = ((__u16)l4[2] << 8) | l4[3];
				if (p.proto == IPPROTO_TCP)
					p.tcp_flags = l4[13];
			}
			if (p.proto == IPPROTO_TCP)
				sample(skb, &p, &ip, off + ip.ihl * 4, pi);
		}
	} else if (proto == bpf_htons(ETH_P_ARP)) {
		struct arp_eth arp;

		if (bpf_skb_load_bytes(skb, off, &arp, sizeof(arp)))
			return miss(pi, &p);
		/* for a select over several choices, hash ARP by sender and target address */
		__builtin_memcpy(&p.saddr, arp.spa, 4);
		__builtin_memcpy(&p.daddr, arp.tpa, 4);
		/* A request is broadcast: route it to the owner of the target address.  Replies
		 * (and anything not Ethernet/IPv4) are unicast to a MAC like any frame. */
		if (arp.op == bpf_htons(1) && arp.htype == bpf_htons(1) &&
		    arp.ptype == bpf_htons(ETH_P_IP) && arp.hlen == 6 && arp.plen == 4) {
			key.kind = KIND_ARP;
			__builtin_memcpy(key.addr, arp.tpa, 4);
			key.addr[4] = 0;
			key.addr[5] = 0;
		}
	} else {
		/* IPv6, LLDP, ...: the plan routes only IPv4 and ARP */
		return miss(pi, &p);
	}

	a = lookup(&key, &p);
	if (!a || a->n == 0 || a->n > MAX_CHOICES ||
	    (a->kind != ACT_FORWARD && a->kind != ACT_REPLICATE))
		return miss(pi, &p);

	p.out_base = p.label;
	if (a->pop && p.tagged) {
		if (bpf_skb_vlan_pop(skb) != 0)
			return miss(pi, &p);
		/* an inner tag, if any, has become the offloaded one */
		p.out_base = skb->vlan_present ? (skb->vlan_tci & 0x0fff) : 0;
	}

	release = releases_socket(skb, pi, &p);
	if (a->kind == ACT_REPLICATE) {
		/* bpf_clone_redirect for the first n-1 copies, bpf_redirect for the last */
		for (i = 0; i < MAX_CHOICES - 1; i++) {
			if (i + 1 >= a->n)
				break;
			emit(skb, a, pi, &p, i);
		}
		return emit(skb, a, pi, &p, (a->n - 1) | EMIT_LAST | (release ? EMIT_RELEASE : 0));
	}
	/* CONF_FLOWS_SAMPLED (see the top): where the 5-tuple fixes the port, a TCP segment
	 * without SYN, FIN or RST is recorded only when one draw in FLOW_SAMPLE_EVERY says so */
	skip = (p.conf_flags & CONF_FLOWS_SAMPLED) && p.proto == IPPROTO_TCP &&
	       !(p.tcp_flags & TCP_SYN_FIN_RST) && (a->n == 1 || a->mode == MODE_HASH) &&
	       bpf_get_prandom_u32() % FLOW_SAMPLE_EVERY;
	return emit(skb, a, pi, &p, (a->n > 1 ? choose(a, &p, pi) : 0) | EMIT_LAST |
		    (release ? EMIT_RELEASE : 0) | (skip ? EMIT_SKIP : 0));
}

char LICENSE[] SEC("license") = "GPL";
