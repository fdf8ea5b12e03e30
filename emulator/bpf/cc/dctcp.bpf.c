// SPDX-License-Identifier: GPL-2.0
/* "dctcp": DCTCP (RFC 8257) as a BPF tcp_congestion_ops, for kernels built without
 * tcp_dctcp (this one).
 *
 * Sender: every ACK adds the bytes it acknowledges to the window's count, and to the marked
 * count when it carries ECE; once snd_una passes the sequence that ended the previous
 * window, alpha <- (1 - g) alpha + g F with F = marked / acked and g = 1/16
 * (cc_math.h: dctcp_alpha_update).  The stack enters CWR at most once per window on ECE and
 * asks ssthresh(), which returns cwnd (1 - alpha / 2) (cc_math.h: dctcp_ssthresh).  A
 * retransmission timeout halves the window as Reno would.
 *
 * Receiver: ECE is echoed on exactly the ACKs covering CE-marked packets.  When the CE state
 * of arriving packets flips while a delayed ACK is pending, that ACK is sent at once for the
 * sequence received so far under the old state, then the state (TCP_ECN_DEMAND_CWR, which
 * makes the stack set ECE) follows the new one.
 *
 * ECN is negotiated by the ops' TCP_CONG_NEEDS_ECN flag: the SYN asks for it whatever
 * net.ipv4.tcp_ecn says, and a listener whose control needs ECN accepts it.  A connection
 * that did not negotiate ECN runs as Reno.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "cc_math.h"
#include "cc_sock.h"

char _license[] SEC("license") = "GPL";

extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

/* include/net/tcp.h (macros, so not in BTF) */
#define TCP_CONG_NEEDS_ECN 0x2
#define ECN_OK 0x1		/* TCP_ECN_OK, TCP_ECN_MODE_RFC3168 on newer kernels */
#define ECN_DEMAND_CWR 0x4

/* Per socket, in icsk_ca_priv. */
struct dctcp_sk {
	__u32 alpha;		/* Q16 */
	__u32 next_seq;		/* the window ends when snd_una reaches this */
	__u32 prior_snd_una;
	__u32 acked;		/* bytes acknowledged in this window */
	__u32 marked;		/* ... of them with ECE */
	__u32 loss_cwnd;
	__u32 prior_rcv_nxt;
	__u32 returned;		/* what ssthresh last returned (cc_repair) */
	__u8 ce_state;
	__u8 ecn;		/* ECN negotiated: DCTCP, else Reno */
};

/* Counters for userspace (array of one). */
struct dctcp_stats {
	__u64 windows;		/* alpha updates of windows that acknowledged data */
	__u64 marked_windows;	/* ... of windows with marks */
	__u64 ce_flips;		/* receiver CE state changes */
	__u64 no_ecn;		/* connections that run as Reno */
	__u64 repaired;		/* windows the kernel garbled, repaired (cc_repair) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dctcp_stats);
} stats SEC(".maps");

SEC("struct_ops/dctcp_init")
void BPF_PROG(dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp_sk *ca = inet_csk_ca(sk);
	struct dctcp_stats *st;

	ca->ecn = (tp->ecn_flags & ECN_OK) != 0;
	ca->alpha = CC_ONE_Q16;		/* start cautious, as RFC 8257 suggests */
	ca->next_seq = tp->snd_nxt;
	ca->prior_snd_una = tp->snd_una;
	ca->acked = 0;
	ca->marked = 0;
	ca->loss_cwnd = 0;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = 0;
	ca->returned = 0;
	if (!ca->ecn) {
		st = only_entry(&stats);
		if (st)
			st->no_ecn++;
	}
}

SEC("struct_ops/dctcp_ssthresh")
__u32 BPF_PROG(dctcp_ssthresh_op, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp_sk *ca = inet_csk_ca(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	ca->returned = ca->ecn ? dctcp_ssthresh(tp->snd_cwnd, ca->alpha) : tcp_reno_ssthresh(sk);
	return ca->returned;
}

/* Only repairs what the kernel may have garbled (cc_sock.h: cc_repair). */
SEC("struct_ops/dctcp_set_state")
void BPF_PROG(dctcp_set_state, struct sock *sk, __u8 new_state)
{
	CC_REPAIR(sk, ((struct dctcp_sk *)inet_csk_ca(sk))->returned, struct dctcp_stats);
}

SEC("struct_ops/dctcp_in_ack_event")
void BPF_PROG(dctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp_sk *ca = inet_csk_ca(sk);
	struct dctcp_stats *st;
	__u32 una = tp->snd_una, acked;

	CC_REPAIR(sk, ca->returned, struct dctcp_stats);
	if (!ca->ecn)
		return;
	acked = una - ca->prior_snd_una;
	ca->prior_snd_una = una;
	ca->acked += acked;
	if (flags & CA_ACK_ECE)
		ca->marked += acked;
	if ((__s32)(una - ca->next_seq) < 0)
		return;
	st = only_entry(&stats);
	if (st && ca->acked) {	/* a receiver's every ACK ends an empty "window": not counted */
		st->windows++;
		if (ca->marked)
			st->marked_windows++;
	}
	ca->alpha = dctcp_alpha_update(ca->alpha, ca->acked, ca->marked);
	ca->acked = 0;
	ca->marked = 0;
	ca->next_seq = tp->snd_nxt;
}

static __always_inline void dctcp_ce(struct sock *sk, __u8 ce)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp_sk *ca = inet_csk_ca(sk);
	struct dctcp_stats *st;

	if (ca->ce_state != ce) {
		/* a delayed ACK due now would speak for packets of the old state: send it */
		if (((struct inet_connection_sock *)sk)->icsk_ack.pending & ICSK_ACK_TIMER)
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		ca->ce_state = ce;
		st = only_entry(&stats);
		if (st)
			st->ce_flips++;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	if (ce)
		tp->ecn_flags |= ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~ECN_DEMAND_CWR;
}

SEC("struct_ops/dctcp_cwnd_event")
void BPF_PROG(dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp_sk *ca = inet_csk_ca(sk);
	__u32 half;

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
		dctcp_ce(sk, 1);
		break;
	case CA_EVENT_ECN_NO_CE:
		dctcp_ce(sk, 0);
		break;
	case CA_EVENT_LOSS:
		/* a timeout is a loss, not a mark: halve, as Reno */
		ca->loss_cwnd = tp->snd_cwnd;
		half = tp->snd_cwnd >> 1;
		tp->snd_ssthresh = half < 2 ? 2 : half;
		break;
	default:
		break;
	}
}

SEC("struct_ops/dctcp_cong_avoid")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/dctcp_undo_cwnd")
__u32 BPF_PROG(dctcp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 loss = ((struct dctcp_sk *)inet_csk_ca(sk))->loss_cwnd;

	return tp->snd_cwnd > loss ? tp->snd_cwnd : loss;
}

SEC(".struct_ops")
struct tcp_congestion_ops dctcp = {
	.init = (void *)dctcp_init,
	.in_ack_event = (void *)dctcp_in_ack_event,
	.cwnd_event = (void *)dctcp_cwnd_event,
	.ssthresh = (void *)dctcp_ssthresh_op,
	.set_state = (void *)dctcp_set_state,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.undo_cwnd = (void *)dctcp_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "dctcp",
};
