// SPDX-License-Identifier: GPL-2.0
/* Link fidelity probe (Mininet-HiFi's check, without patching sch_htb).
 *
 * While a shaped link's queue stays non-empty, consecutive dequeues should be exactly one
 * packet's transmission time apart at the link rate.  On every dequeue of a watched device's
 * root qdisc this program compares the gap since the previous dequeue with the previous
 * packet's transmission time, but only when that previous dequeue left packets behind
 * (a busy period), and counts gap/ideal in 1 % buckets (0..299 %, 300 = 300 % or more).
 *
 * Maps: watch (ifindex -> rate and network namespace: ifindexes repeat across namespaces),
 *       state (the last dequeue per device), hist ((ifindex << 16) | bucket -> count;
 *       bucket 0xFFFF counts bulk dequeues, whose following gap spans several packets and
 *       is skipped; buckets | 0x8000 repeat the gaps that follow full-size frames).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define TOP_BUCKET 300
#define BULK_BUCKET 0xFFFF
#define FULL_FLAG 0x8000
#define FULL_SIZE 1000

struct watch {
	__u64 rate_bps;
	__u32 netns;
	__u32 pad;
};

struct last {
	__u64 ts;
	__u32 len;
	__u32 backlog;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct watch);
} watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct last);
} state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, __u64);
	__type(value, __u64);
} hist SEC(".maps");

static __always_inline void count(__u32 ifindex, __u32 bucket)
{
	__u64 key = ((__u64)ifindex << 16) | bucket, one = 1, *v;

	v = bpf_map_lookup_elem(&hist, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	else if (bpf_map_update_elem(&hist, &key, &one, BPF_NOEXIST) != 0) {
		v = bpf_map_lookup_elem(&hist, &key);
		if (v)
			__sync_fetch_and_add(v, 1);
	}
}

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(on_dequeue, struct Qdisc *q, const struct netdev_queue *txq, int packets,
	     struct sk_buff *skb)
{
	struct net_device *dev;
	struct watch *w;
	struct last *prev, now_state = {};
	__u32 ifindex, netns;
	__u64 now;

	if (!skb)
		return 0;
	dev = BPF_CORE_READ(q, dev_queue, dev);
	ifindex = BPF_CORE_READ(dev, ifindex);
	w = bpf_map_lookup_elem(&watch, &ifindex);
	if (!w || w->rate_bps == 0)
		return 0;
	netns = BPF_CORE_READ(dev, nd_net.net, ns.inum);
	if (netns != w->netns)
		return 0;
	now = bpf_ktime_get_ns();
	prev = bpf_map_lookup_elem(&state, &ifindex);
	if (prev && prev->backlog > 0 && prev->ts && packets == 1) {
		/* what HTB charges: the frame without FCS, as the skb holds it (offloads off) */
		__u64 ideal = (__u64)prev->len * 8000000000ULL / w->rate_bps;

		if (ideal > 0) {
			__u64 pct = (now - prev->ts) * 100 / ideal;

			__u32 b = pct > TOP_BUCKET ? TOP_BUCKET : (__u32)pct;

			/* gaps after full-size frames (>= 1000 B) also go to their own histogram:
			 * a 66-byte ACK lasts 53 us at 10 Mb/s, where timer jitter alone is 10 % */
			count(ifindex, b);
			if (prev->len >= FULL_SIZE)
				count(ifindex, FULL_FLAG | b);
		}
	}
	if (packets > 1)
		count(ifindex, BULK_BUCKET);
	now_state.ts = now;
	now_state.len = BPF_CORE_READ(skb, len);
	/* packets left in the whole tree after this dequeue (HTB keeps q.qlen for all) */
	now_state.backlog = packets == 1 ? BPF_CORE_READ(q, q.qlen) : 0;
	bpf_map_update_elem(&state, &ifindex, &now_state, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
