/* SPDX-License-Identifier: GPL-2.0 */
/* The switch's active queue management: the per-port state and the decision arithmetic.
 *
 * Included by switch.bpf.c (the decision, before it redirects a packet to its egress port),
 * by qlen.bpf.c (the programs on the qdisc tracepoints that keep each port's queue length
 * in the same map) and, compiled as a shared object, by tests/unit/test_aqm.py, which calls
 * aqm_decide() through ctypes with hand-computed cases.  Nothing here calls a BPF helper or
 * touches a map: the callers pass the random number, the clock and the port's entry.
 * Layouts are mirrored in dataplanes/bpf/aqm.py (explicit widths, no implicit padding).
 *
 * Modes (per switch port, on the packets the switch hands to that port's egress queue):
 *   AQM_DROPTAIL  no decision (the switch never looks the port up: egress_info.aqm is 0)
 *   AQM_ECN       DCTCP-style: mark CE when the queue holds at least k packets (the
 *                 instantaneous length, as DCTCP's switches do); non-ECT packets pass and
 *                 meet the tail-drop pfifo as usual
 *   AQM_RED       classic RED (Floyd & Jacobson 1993) on an EWMA of the queue length,
 *                 updated at every packet arrival, with the idle-period decay: below min_th
 *                 pass; between min_th and max_th mark (ECT) or drop (non-ECT) with the
 *                 probability p_a = p_b / (1 - count * p_b), p_b = max_p (avg - min_th) /
 *                 (max_th - min_th), count = packets let through since the last mark
 *                 or drop (so the gaps between marks are uniform on 1 .. 1/p_b, the
 *                 paper's intent; its pseudo-code's increment before the test would make
 *                 the first gap's probability p_b/(1 - p_b)); at or
 *                 above max_th mark every ECT packet and drop every other one (as Linux's
 *                 sch_red without "harddrop")
 *
 * Units: queue lengths in packets (skbs, as the pfifo's limit counts them); avg in packets
 * << AQM_FP; probabilities in 1/2^24 (AQM_ONE); the random number is 24 uniform bits.
 */
#ifndef DCREPRO_AQM_H
#define DCREPRO_AQM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#ifndef AQM_API
#define AQM_API static __attribute__((always_inline)) inline
#endif

#define AQM_DROPTAIL 0
#define AQM_ECN 1
#define AQM_RED 2

#define AQM_PASS 0
#define AQM_MARK 1
#define AQM_DROP 2

#define AQM_FP 16		/* fraction bits of avg */
#define AQM_PBITS 24		/* probabilities: 1.0 = 1 << 24 */
#define AQM_ONE (1ULL << AQM_PBITS)
#define AQM_DECAY_BITS 24	/* idle periods count at most 2^24 - 1 frame times */

/* One switch port's AQM: configuration (written by dataplanes/bpf/aqm.py), the queue length
 * (written by qlen.bpf.c on every enqueue and dequeue of the port's root qdisc), the RED
 * state and the counters (written by the switch program). */
struct aqm_port {
	__u32 mode;		/* AQM_* */
	__u32 netns;		/* inode of the port's network namespace (ifindexes repeat) */
	__u32 k;		/* ecn: mark at qlen >= k */
	__u32 min_th;		/* red: thresholds, packets */
	__u32 max_th;
	__u32 max_p;		/* red: max_p in 1/2^24 */
	__u32 wlog;		/* red: EWMA weight w_q = 2^-wlog */
	__u32 qlen;		/* root qdisc's q.qlen after its last enqueue or dequeue */
	__u64 frame_ns;		/* red: a full frame's time on the wire (the idle decay's unit) */
	__u64 idle_since;	/* ns (CLOCK_MONOTONIC) the queue last went empty, 0: not empty */
	__u64 avg;		/* red: average queue length << AQM_FP */
	__u64 count;		/* red: packets let through since the last mark or drop, while
				 * the average was between the thresholds */
	__u64 marks;		/* packets marked CE (wire packets) */
	__u64 drops;		/* packets dropped early (wire packets) */
	__u64 unmarkable;	/* ECT packets the decision marked but the helper could not */
	__u64 events;		/* tracepoint hits that updated qlen */
};

/* avg * (1 - 2^-wlog)^m: the RED average after m frame times of an empty queue (square
 * and multiply in Q16, m < 2^AQM_DECAY_BITS: longer idle periods have long reached 0). */
AQM_API __u64 aqm_decay(__u64 avg, __u64 m, __u32 wlog)
{
	__u64 f = (1ULL << 16) - ((1ULL << 16) >> wlog);
	int i;

	if (m >> AQM_DECAY_BITS)
		return 0;
	for (i = 0; i < AQM_DECAY_BITS; i++) {
		if (m & 1)
			avg = (avg * f) >> 16;
		f = (f * f) >> 16;
		m >>= 1;
		if (!m)
			break;
	}
	return avg;
}

/* One EWMA step: avg += (qlen - avg) * 2^-wlog (qlen in packets, avg << AQM_FP). */
AQM_API __u64 aqm_ewma(__u64 avg, __u32 qlen, __u32 wlog)
{
	__u64 q = (__u64)qlen << AQM_FP;

	if (q >= avg)
		return avg + ((q - avg) >> wlog);
	return avg - ((avg - q) >> wlog);
}

/* RED's marking probability p_a in 1/2^24 for an average between the thresholds, after
 * ``count`` packets let through since the last mark. */
AQM_API __u64 aqm_red_prob(const struct aqm_port *c, __u64 avg, __u64 count)
{
	__u64 lo = (__u64)c->min_th << AQM_FP, hi = (__u64)c->max_th << AQM_FP;
	__u64 pb, cpb;

	if (hi <= lo)
		return AQM_ONE;
	pb = (__u64)c->max_p * (avg - lo) / (hi - lo);
	cpb = count * pb;
	if (cpb >= AQM_ONE)
		return AQM_ONE;
	return pb * AQM_ONE / (AQM_ONE - cpb);
}

/* The decision for one arriving packet.  ``ecn``: its IP ECN field (0 = not ECT; CE
 * counts as ECN-capable: it is never dropped early and marking it again changes nothing);
 * ``rnd``: 24 uniform random bits; ``now``: ns on the clock of idle_since.  Updates the RED
 * state in ``c`` (avg, count, idle_since).  Returns AQM_PASS, AQM_MARK or AQM_DROP. */
AQM_API int aqm_decide(struct aqm_port *c, __u32 ecn, __u32 rnd, __u64 now)
{
	__u32 qlen = c->qlen;
	__u64 avg, p;
	int hit;

	if (c->mode == AQM_ECN) {
		if (qlen < c->k)
			return AQM_PASS;
		return ecn ? AQM_MARK : AQM_PASS;
	}
	if (c->mode != AQM_RED)
		return AQM_PASS;
	avg = c->avg;
	if (qlen == 0 && c->idle_since && c->frame_ns && now > c->idle_since) {
		avg = aqm_decay(avg, (now - c->idle_since) / c->frame_ns, c->wlog);
		c->idle_since = now;	/* the rest of this idle period counts from here */
	}
	avg = aqm_ewma(avg, qlen, c->wlog);
	c->avg = avg;
	if (avg < ((__u64)c->min_th << AQM_FP)) {
		c->count = 0;
		return AQM_PASS;
	}
	if (avg >= ((__u64)c->max_th << AQM_FP)) {
		c->count = 0;
		return ecn ? AQM_MARK : AQM_DROP;
	}
	p = aqm_red_prob(c, avg, c->count);
	hit = (__u64)(rnd & (AQM_ONE - 1)) < p;
	if (!hit) {
		c->count++;
		return AQM_PASS;
	}
	c->count = 0;
	return ecn ? AQM_MARK : AQM_DROP;
}

#ifdef __bpf__
/* Every switch port's entry, one map for the switch program and qlen.bpf.c (loaded with
 * it, by its pin, when an AQM is asked for): defined once here for both.  Not in the
 * userspace build of this header (the unit tests'), which has no maps. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct aqm_port);
} aqm SEC(".maps");
#endif

#endif
