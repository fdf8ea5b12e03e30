// SPDX-License-Identifier: GPL-2.0
/* Link fidelity probe: Mininet-HiFi's check (CoNEXT'12) without patching sch_htb.
 *
 * While a shaped link's queue is non-empty, consecutive releases of packets by its root
 * qdisc should be one packet's transmission time apart at the link rate.  This program sits
 * on the qdisc:qdisc_dequeue tracepoint (fired by dequeue_skb() in net/sched/sch_generic.c
 * on every dequeue attempt of a root qdisc, with or without a packet) and, for each watched
 * device, compares every busy-period gap with the transmission time of the packet released
 * before it, counting gap/ideal in 1 % buckets.
 *
 *   ideal   = (qdisc_pkt_len(prev) + overhead) * 8 / rate: what HTB charges its tokens
 *             (skb->len at the root, Ethernet header included, no FCS; overhead 0 unless
 *             tc was given one)
 *   busy    = the root qdisc still held packets after the previous release: sch->q.qlen
 *             (HTB keeps the root's q.qlen for every packet in its tree, the child pfifo's
 *             included) minus the packets the stack parked in skb_bad_txq / gso_skb, which
 *             HTB has already released
 *   buckets = gap/ideal rounded to a whole percent, 0 .. 299, 300 = 299.5 % or more (a gap
 *             cannot be negative, so there is no underflow); plus count, exact count within
 *             [0.9, 1.1], sum of gaps and sum of ideals
 *
 * Bulk dequeue (packets > 1): the stack took a list of skbs from HTB in one call, i.e. HTB
 * released them at the same instant (it had burst tokens).  They are counted as that many
 * releases at the same time: the gaps inside the list are 0 and count as busy-period samples
 * (ratio 0), the next gap is measured from the list's last packet.  On a multiqueue device
 * (veth has one tx queue per CPU) a packet of another tx queue ends the list and is parked in
 * q->skb_bad_txq; it is counted as released now, and skipped when the stack hands it out
 * later.  A packet requeued after a busy driver (qstats.requeues grew) is skipped likewise.
 * A NULL skb (HTB throttled, or empty: a poll, more than half of all hits on a busy k=6
 * fabric) returns before any map lookup: a poll releases nothing and the check keeps no
 * state of it (``last_busy`` is the queue after the previous release).
 *
 * Which frame's time a gap is: HTB sends a packet once its class's tokens are not negative
 * and charges it afterwards, so on a busy link the gap after a release is the time of the
 * frame released at its start; TBF sends a packet only once its bucket holds that packet's
 * bytes, so the gap is the time of the frame released at its end (W_CHARGE_NEXT, set for
 * TBF roots).
 *
 * Untraced releases: the qdisc's own packet counter (bstats, updated by HTB at each
 * dequeue, in segments) is compared at every hit with the segments the hits showed.  On
 * this machine (6.18 guest) BPF runs on the tracepoint are occasionally skipped for a few ms
 * (about once a second, recursion_misses 0, while ftrace on the same tracepoint sees every
 * hit): the gap across such a hole spans several packets, so it is not sampled; the packets
 * are counted as untraced and the gap as unsampled.
 *
 * GSO: TCP builds GSO skbs even with every offload off and the stack segments them after the
 * qdisc, so HTB may hold multi-segment skbs (pkt_len = the wire bytes of all segments); the
 * check then runs per skb, and gso_skbs / segments say so.  ``ip link set DEV gso_max_segs 1``
 * on the sending host's interface makes TCP send one segment per skb.
 *
 * Maps: by_index  ifindex -> {rate, overhead, slot, netns inode, flags}: the fast path, an
 *              array lookup the verifier inlines; an entry counts only if its namespace is
 *              the device's (ifindexes repeat across namespaces), and an index that two
 *              watched devices share, or one above MAX_INDEX, is left to
 *       watch  {ifindex, netns inode} -> the same value (a hash lookup)
 *       stats  slot -> struct link_stats (state of the last release, diagnostics, histograms)
 * Layouts are mirrored in emulator/qgap.py.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define NBUCKETS 301
#define MAX_LINKS 1024
#define MAX_INDEX 4096 /* ifindexes the array fast path covers */
#define W_CHARGE_NEXT 1 /* TBF: a gap is the time of the frame released at its end */
#define MAX_CHAIN 15 /* + 1 parked: lens[] is indexed with & MAX_CHAIN */
#define FULL_LEN 1000 /* "full-size" frames: their ideal gap dwarfs timer jitter */

enum diag {
	D_DEQUEUES,	  /* tracepoint hits with a packet */
	D_RELEASES,	  /* packets released by the qdisc (the histogram's population + 1) */
	D_BULK,		  /* hits with packets > 1 */
	D_STASHED,	  /* packets released but parked in skb_bad_txq */
	D_FROM_STASH,	  /* hits whose first packet came from skb_bad_txq (not a release) */
	D_REQUEUED,	  /* hits re-dequeuing a requeued packet (skipped) */
	D_LEN_MISMATCH,	  /* qdisc_pkt_len != skb->len */
	D_DISAGREE,	  /* (q.qlen > 0) != (qstats.backlog > 0) after a hit */
	D_BUSY_STARTS,	  /* releases after the queue had emptied (no sample) */
	D_TRUNCATED,	  /* lists longer than MAX_CHAIN (the rest counted with the last length) */
	D_GSO,		  /* released skbs holding several segments (GSO, segmented later) */
	D_SEGMENTS,	  /* segments released (what HTB's packet counter counts) */
	D_UNTRACED,	  /* packets the qdisc counted as released that no hit showed */
	D_UNSAMPLED,	  /* gaps not sampled because untraced releases fell in them */
	NDIAG,
};

struct watch_key {
	__u32 ifindex;
	__u32 netns;
};

struct watch_val {
	__u64 rate_bps;
	__u32 overhead;
	__u32 slot;
	__u32 netns;
	__u32 flags;
};

struct gap_hist {
	__u64 samples;
	__u64 within10;
	__u64 sum_gap_ns;
	__u64 sum_ideal_ns;
	__u64 buckets[NBUCKETS];
};

struct link_stats {
	__u64 last_ts;
	__u32 last_len;
	__u32 last_busy;
	__u32 last_stash;
	__u32 last_requeues;
	__u64 last_pkts; /* the qdisc's own packet counter after the previous hit */
	__u64 diag[NDIAG];
	struct gap_hist all;
	struct gap_hist full;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_LINKS);
	__type(key, struct watch_key);
	__type(value, struct watch_val);
} watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_INDEX);
	__type(key, __u32);
	__type(value, struct watch_val);
} by_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_LINKS);
	__type(key, __u32);
	__type(value, struct link_stats);
} stats SEC(".maps");

/* the device's watch entry, or NULL */
static __always_inline struct watch_val *watched(struct net_device *dev)
{
	struct watch_key key = {};
	struct watch_val *w;
	__u32 idx = dev->ifindex;
	__u32 netns = dev->nd_net.net->ns.inum;

	if (idx < MAX_INDEX) {
		w = bpf_map_lookup_elem(&by_index, &idx);
		if (w && w->rate_bps && w->netns == netns)
			return w;
	}
	key.ifindex = idx;
	key.netns = netns;
	return bpf_map_lookup_elem(&watch, &key);
}

/* the frame whose transmission time a gap between two releases is (see the top) */
static __always_inline __u32 charged(const struct watch_val *w, __u32 before, __u32 after)
{
	return (w->flags & W_CHARGE_NEXT) ? after : before;
}

static __always_inline __u64 ideal_ns(const struct watch_val *w, __u32 len)
{
	return ((__u64)len + w->overhead) * 8000000000ULL / w->rate_bps;
}

/* a busy-period gap after a packet of prev_len bytes */
static __always_inline void add(struct gap_hist *h, __u64 gap, __u64 ideal)
{
	__u64 b = (gap * 100 + ideal / 2) / ideal;

	if (b > NBUCKETS - 1)
		b = NBUCKETS - 1;
	h->samples++;
	h->sum_gap_ns += gap;
	h->sum_ideal_ns += ideal;
	if (gap * 10 >= ideal * 9 && gap * 10 <= ideal * 11)
		h->within10++;
	h->buckets[b]++;
}

/* n packets released at the same instant as the one before them (of prev_len bytes) */
static __always_inline void add_zero(struct link_stats *st, const struct watch_val *w,
				     __u32 prev_len, __u64 n)
{
	__u64 ideal = ideal_ns(w, prev_len) * n;

	st->all.samples += n;
	st->all.sum_ideal_ns += ideal;
	st->all.buckets[0] += n;
	if (prev_len >= FULL_LEN) {
		st->full.samples += n;
		st->full.sum_ideal_ns += ideal;
		st->full.buckets[0] += n;
	}
}

/* the length HTB charges for one skb; counts the segments the qdisc's counter sees */
static __always_inline __u32 pkt_len(struct link_stats *st, struct sk_buff *skb, __u64 *segs)
{
	__u32 len = ((struct qdisc_skb_cb *)skb->cb)->pkt_len;
	struct skb_shared_info *sh;
	__u16 n = 1;

	if (len != skb->len)
		st->diag[D_LEN_MISMATCH]++;
	sh = (struct skb_shared_info *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	if (BPF_CORE_READ(sh, gso_size)) {
		st->diag[D_GSO]++;
		n = BPF_CORE_READ(sh, gso_segs);
		if (!n)
			n = 1;
	}
	st->diag[D_SEGMENTS] += n;
	*segs += n;
	return len;
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(on_dequeue, struct Qdisc *q, const struct netdev_queue *txq, int packets,
	     struct sk_buff *skb)
{
	struct net_device *dev;
	struct sk_buff *cur = skb, *parked_skb = NULL;
	__u32 lens[MAX_CHAIN + 1] = {};
	struct link_stats *st;
	struct watch_val *w;
	__u32 stash, parked, qlen, requeues, prev_len, len, i, nl = 0;
	int n = packets;
	__u64 now, pkts, segs = 0;

	if (!skb)
		return 0; /* a poll (see the top) */
	dev = q->dev_queue->dev;
	if (!dev)
		return 0;
	w = watched(dev);
	if (!w || !w->rate_bps)
		return 0;
	st = bpf_map_lookup_elem(&stats, &w->slot);
	if (!st)
		return 0;
	now = bpf_ktime_get_ns();
	st->diag[D_DEQUEUES]++;
	stash = q->skb_bad_txq.qlen;
	parked = stash + q->gso_skb.qlen;
	qlen = q->q.qlen;
	requeues = q->qstats.requeues;
	/* the qdisc's own count of released segments (HTB: at every dequeue) */
	pkts = q->cpu_bstats ? 0 : q->bstats.packets.v.a.a.counter;
	if ((qlen > 0) != (q->qstats.backlog > 0))
		st->diag[D_DISAGREE]++;
	if (requeues != st->last_requeues) {
		/* a packet went back to gso_skb after the previous hit: this is its retry */
		st->last_requeues = requeues;
		if (st->last_ts)
			st->diag[D_REQUEUED]++;
		return 0;
	}
	if (n > 1)
		st->diag[D_BULK]++;
	if (st->last_stash) {
		/* the first packet waited in skb_bad_txq: released at the previous hit */
		st->diag[D_FROM_STASH]++;
		cur = cur->next;
		n--;
	}
	/* what the qdisc released now: the list, then a packet parked in skb_bad_txq */
	for (i = 0; i < MAX_CHAIN; i++) {
		if (!cur || n <= 0)
			break;
		lens[i] = pkt_len(st, cur, &segs);
		nl++;
		cur = cur->next;
		n--;
	}
	if (n > 0 && nl > 0) {
		st->diag[D_TRUNCATED]++;
		segs += n;
	} else {
		n = 0;
	}
	if (stash) {
		st->diag[D_STASHED]++;
		parked_skb = q->skb_bad_txq.next;
		if (parked_skb && nl < MAX_CHAIN + 1) {
			lens[nl & MAX_CHAIN] = pkt_len(st, parked_skb, &segs);
			nl++;
		}
	}
	if (nl > 0) {
		prev_len = st->last_len;
		/* The qdisc's counter ran ahead of what the hits showed: it released packets
		 * this program never saw (observed on this 6.18 guest: BPF runs on the
		 * tracepoint skipped for a few ms about once a second while ftrace on the same
		 * tracepoint saw every hit).  The gap since the previous release seen then spans
		 * several packets: it is not a sample. */
		if (pkts && st->last_pkts && pkts - st->last_pkts > segs) {
			st->diag[D_UNTRACED] += pkts - st->last_pkts - segs;
			if (st->last_ts && st->last_busy)
				st->diag[D_UNSAMPLED]++;
		} else if (st->last_ts && st->last_busy) {
			len = charged(w, prev_len, lens[0]);
			__u64 ideal = ideal_ns(w, len);

			if (ideal) {
				add(&st->all, now - st->last_ts, ideal);
				if (len >= FULL_LEN)
					add(&st->full, now - st->last_ts, ideal);
			}
		} else {
			st->diag[D_BUSY_STARTS]++;
		}
		/* the rest were released at the same instant as the first */
		prev_len = lens[0];
		for (i = 1; i < MAX_CHAIN + 1; i++) {
			if (i >= nl)
				break;
			add_zero(st, w, charged(w, prev_len, lens[i]), 1);
			prev_len = lens[i];
		}
		if (n > 0)
			add_zero(st, w, prev_len, n);
		st->diag[D_RELEASES] += nl + n;
		st->last_ts = now;
		st->last_len = prev_len;
	}
	st->last_pkts = pkts;
	st->last_stash = stash;
	st->last_busy = qlen > parked;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
