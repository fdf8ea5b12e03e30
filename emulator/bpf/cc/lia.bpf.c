// SPDX-License-Identifier: GPL-2.0
/* "lia": RFC 6356's Linked Increases Algorithm for the subflows of an MPTCP connection, as
 * a BPF tcp_congestion_ops (this kernel has no coupled congestion control of its own).
 *
 * Each subflow is a TCP socket running these callbacks.  A subflow finds its MPTCP
 * connection through its subflow context (the ULP data): the context's conn; the connection's
 * address keys an entry of the `conns` map holding every subflow's cwnd and smoothed RTT as
 * last seen, in up to CC_LIA_MAX_SUBFLOWS slots.  A subflow's own slot is refreshed on each
 * of its ACKs; in congestion avoidance it then grows by
 *
 *   min(alpha * acked / cwnd_total, acked / cwnd_i) packets   (cc_math.h: lia_ai_window)
 *
 * with alpha computed over the slots (cc_math.h: lia_alpha_q16).  Slow start, the halving on
 * loss (ssthresh) and undo are Reno's, per subflow.  A socket that is not an MPTCP subflow
 * behaves exactly as Reno.  release() frees the subflow's slot and, with the last slot, the
 * connection's entry.
 *
 * Built a second time with CC_BALIA defined (balia.bpf.c), the same program is "balia":
 * BALIA's increase (cc_math.h: balia_ai_window) and its loss cut (balia_ssthresh) over the
 * same slots, so that the two coupled controls differ only in their arithmetic.  Built with
 * CC_OLIA (olia.bpf.c), it is "olia": each slot also holds the subflow's bytes between
 * losses, and the window moves by OLIA's signed increase (cc_math.h: olia_increment_q32),
 * counted in Q32 per socket; the loss cut is Reno's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cc_math.h"
#include "cc_sock.h"

char _license[] SEC("license") = "GPL";

extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#if defined(CC_BALIA)
#define CC_NAME "balia"
#elif defined(CC_OLIA)
#define CC_NAME "olia"
#else
#define CC_NAME "lia"
#endif
#define MAX_CONNS 4096
#define NO_SLOT 0xff

/* One MPTCP connection: its subflows' last cwnd (packets) and srtt (us); cwnd 0 = free. */
struct lia_conn {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 sk[CC_LIA_MAX_SUBFLOWS];
	__u32 cwnd[CC_LIA_MAX_SUBFLOWS];
	__u32 srtt_us[CC_LIA_MAX_SUBFLOWS];
#ifdef CC_OLIA
	__u32 ell_kib[CC_LIA_MAX_SUBFLOWS];	/* OLIA: KiB acked between losses (see lia_sk) */
#endif
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_CONNS);
	__type(key, __u64);		/* the MPTCP connection's address (never dereferenced) */
	__type(value, struct lia_conn);
} conns SEC(".maps");

/* Counters userspace reads to see the coupling at work (array of one). */
struct lia_stats {
	__u64 coupled_acks;	/* congestion-avoidance ACKs of subflows with a connection */
	__u64 plain_acks;	/* ... of plain TCP sockets (Reno) */
	__u64 no_slot;		/* subflows beyond CC_LIA_MAX_SUBFLOWS, run as Reno */
	__u64 no_conn;		/* MPTCP subflows whose connection could not be found yet */
	__u64 slow_start;	/* ACKs of subflows in slow start */
	__u64 not_limited;	/* ACKs of subflows not limited by their window (no growth) */
	__u64 init_plain;	/* sockets initialised as plain TCP */
	__u64 init_mptcp;	/* ... as MPTCP subflows */
	__u64 no_ulp;		/* MPTCP subflows without a subflow context (not counted in no_conn) */
	__u64 repaired;		/* windows the kernel garbled, repaired (cc_repair) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lia_stats);
} stats SEC(".maps");

/* Per socket, in icsk_ca_priv (104 bytes available). */
struct lia_sk {
	__u64 conn;	/* 0: not (yet) attached to a connection entry */
	__u32 returned;	/* what ssthresh last returned (cc_repair) */
	__u8 slot;
	__u8 plain;	/* not an MPTCP subflow: Reno */
#ifdef CC_OLIA
	__u64 since;	/* bytes acked since the last loss */
	__u64 between;	/* bytes acked between the last two losses */
	__s64 cnt;	/* OLIA's growth not yet applied, Q32 packets (signed) */
#endif
};

SEC("struct_ops/lia_init")
void BPF_PROG(lia_init, struct sock *sk)
{
	struct lia_sk *ca = inet_csk_ca(sk);
	struct lia_stats *st;

	ca->conn = 0;
	ca->slot = NO_SLOT;
	ca->returned = 0;
	ca->plain = !((struct tcp_sock *)sk)->is_mptcp;
#ifdef CC_OLIA
	ca->since = 0;
	ca->between = 0;
	ca->cnt = 0;
#endif
	st = only_entry(&stats);
	if (st && ca->plain)
		st->init_plain++;
	else if (st)
		st->init_mptcp++;
}

/* This subflow's connection entry, its slot refreshed with the current cwnd and srtt (OLIA:
 * and its bytes between losses, into ``ell``), and a snapshot of every slot taken under the
 * entry's lock; 0 if the subflow has none. */
static __always_inline int lia_snapshot(struct sock *sk, __u32 *cwnd, __u32 *rtt, __u32 *ell)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct lia_sk *ca = inet_csk_ca(sk);
	struct lia_conn fresh = {}, *c;
	struct mptcp_subflow_context *ctx;
	struct lia_stats *st;
	__u64 key = ca->conn, me = (__u64)sk;
	__u32 my_cwnd = tp->snd_cwnd, my_rtt = tp->srtt_us >> 3;
	int i, slot = -1;
#ifdef CC_OLIA
	__u64 l = ca->since > ca->between ? ca->since : ca->between;
	__u32 my_ell = (l >> 10) > 0xffffffffULL ? 0xffffffff : (__u32)(l >> 10);
#else
	(void)ell;
#endif

	/* A subflow with no RTT sample yet (ssthresh runs when a joining subflow's SYN times
	 * out: tcp_enter_loss) takes no slot: it would stand in every sibling's snapshot as a
	 * subflow of 1 us RTT, far faster than all of them (BALIA then slowed their increase
	 * tenfold and cut them to a quarter). */
	if (!tp->srtt_us)
		return 0;
	if (!key) {
		/* bpf_skc_to_mptcp_sock() would say this, but the kernel refuses it to
		 * struct_ops programs ("program of this type cannot use helper
		 * bpf_skc_to_mptcp_sock#196"): read the subflow context's conn instead.  The
		 * context is the ULP data of every socket with is_mptcp set. */
		ctx = ((struct inet_connection_sock *)sk)->icsk_ulp_data;
		if (!ctx) {
			st = only_entry(&stats);
			if (st)
				st->no_ulp++;
			return 0;
		}
		key = (__u64)BPF_CORE_READ(ctx, conn);
		if (!key)
			return 0;
		ca->conn = key;
	}
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c) {
		bpf_map_update_elem(&conns, &key, &fresh, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&conns, &key);
		if (!c)
			return 0;
	}
	bpf_spin_lock(&c->lock);
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		if (c->sk[i] == me) {
			slot = i;
			break;
		}
	}
	if (slot < 0) {
		for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
			if (c->sk[i] == 0) {
				slot = i;
				c->sk[i] = me;
				break;
			}
		}
	}
	if (slot >= 0) {
		c->cwnd[slot] = my_cwnd ? my_cwnd : 1;
		c->srtt_us[slot] = my_rtt ? my_rtt : 1;
#ifdef CC_OLIA
		c->ell_kib[slot] = my_ell;
#endif
	}
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		cwnd[i] = c->sk[i] ? c->cwnd[i] : 0;
		rtt[i] = c->srtt_us[i];
#ifdef CC_OLIA
		ell[i] = c->sk[i] ? c->ell_kib[i] : 0;
#endif
	}
	bpf_spin_unlock(&c->lock);
	ca->slot = slot < 0 ? NO_SLOT : slot;
	return slot >= 0;
}

SEC("struct_ops/lia_cong_avoid")
void BPF_PROG(lia_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct lia_sk *ca = inet_csk_ca(sk);
	struct lia_stats *st = only_entry(&stats);
	__u32 cwnd[CC_LIA_MAX_SUBFLOWS], rtt[CC_LIA_MAX_SUBFLOWS], ell[CC_LIA_MAX_SUBFLOWS], w;
	int coupled;
#if !defined(CC_BALIA) && !defined(CC_OLIA)
	__u32 total = 0;
	__u64 alpha;
	int i;
#endif
#ifdef CC_OLIA
	__s64 inc;
	__u32 grow;
#endif

	if (ca->plain) {
		if (st)
			st->plain_acks++;
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
#ifdef CC_OLIA
	ca->since += (__u64)acked * tp->mss_cache;
#endif
	/* the snapshot refreshes this subflow's slot in slow start too, so its peers see it */
	coupled = lia_snapshot(sk, cwnd, rtt, ell);
	if (st && !coupled && ca->conn)
		st->no_slot++;
	else if (st && !coupled)
		st->no_conn++;
	/* tcp_is_cwnd_limited() */
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		if (st)
			st->slow_start++;
		if (tp->snd_cwnd >= 2 * tp->max_packets_out)
			return;
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	} else if (!tp->is_cwnd_limited) {
		if (st)
			st->not_limited++;
		return;
	}
	if (!coupled) {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
#if defined(CC_BALIA)
	w = balia_ai_window(cwnd, rtt, ca->slot);
#elif defined(CC_OLIA)
	/* OLIA's growth is signed: it is counted here, and the window moves by whole packets,
	 * down to 2 (TCP's own floor after a loss) */
	inc = olia_increment_q32(cwnd, rtt, ell, ca->slot);
	ca->cnt += (__s64)acked * inc;
	if (st)
		st->coupled_acks++;
	if (ca->cnt >= (1LL << 32)) {
		grow = (__u32)(ca->cnt >> 32);
		ca->cnt -= (__s64)grow << 32;
		if (grow > tp->snd_cwnd_clamp - tp->snd_cwnd)
			grow = tp->snd_cwnd_clamp > tp->snd_cwnd ?
			       tp->snd_cwnd_clamp - tp->snd_cwnd : 0;
		tp->snd_cwnd += grow;
	} else if (ca->cnt <= -(1LL << 32)) {
		ca->cnt += 1LL << 32;
		if (tp->snd_cwnd > 2)
			tp->snd_cwnd--;
	}
	return;
#else
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++)
		total += cwnd[i];
	alpha = lia_alpha_q16(cwnd, rtt);
	w = lia_ai_window(total, alpha, tp->snd_cwnd);
#endif
	if (st)
		st->coupled_acks++;
	tcp_cong_avoid_ai(tp, w, acked);
}

SEC("struct_ops/lia_ssthresh")
__u32 BPF_PROG(lia_ssthresh, struct sock *sk)
{
#ifdef CC_OLIA
	/* a loss: the bytes since the last one become the interval between the last two */
	struct lia_sk *oca = inet_csk_ca(sk);

	oca->between = oca->since;
	oca->since = 0;
	oca->cnt = 0;
#endif
#ifdef CC_BALIA
	/* BALIA cuts by how much faster the connection's fastest subflow is than this one
	 * (lia_snapshot leaves out a subflow without an RTT sample: Reno's cut then) */
	__u32 cwnd[CC_LIA_MAX_SUBFLOWS], rtt[CC_LIA_MAX_SUBFLOWS], ell[CC_LIA_MAX_SUBFLOWS];
	struct lia_sk *ca = inet_csk_ca(sk);

	if (!ca->plain && lia_snapshot(sk, cwnd, rtt, ell)) {
		ca->returned = balia_ssthresh(cwnd, rtt, ca->slot);
		return ca->returned;
	}
#endif
	struct lia_sk *rca = inet_csk_ca(sk);

	rca->returned = tcp_reno_ssthresh(sk);
	return rca->returned;
}

/* Both only repair what the kernel may have garbled (cc_sock.h: cc_repair). */
SEC("struct_ops/lia_in_ack_event")
void BPF_PROG(lia_in_ack_event, struct sock *sk, __u32 flags)
{
	CC_REPAIR(sk, ((struct lia_sk *)inet_csk_ca(sk))->returned, struct lia_stats);
}

SEC("struct_ops/lia_set_state")
void BPF_PROG(lia_set_state, struct sock *sk, __u8 new_state)
{
	CC_REPAIR(sk, ((struct lia_sk *)inet_csk_ca(sk))->returned, struct lia_stats);
}

SEC("struct_ops/lia_undo_cwnd")
__u32 BPF_PROG(lia_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC("struct_ops/lia_release")
void BPF_PROG(lia_release, struct sock *sk)
{
	struct lia_sk *ca = inet_csk_ca(sk);
	struct lia_conn *c;
	__u64 key = ca->conn, me = (__u64)sk;
	int i, left = 0;

	if (!key)
		return;
	ca->conn = 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (!c)
		return;
	bpf_spin_lock(&c->lock);
	for (i = 0; i < CC_LIA_MAX_SUBFLOWS; i++) {
		if (c->sk[i] == me) {
			c->sk[i] = 0;
			c->cwnd[i] = 0;
			c->srtt_us[i] = 0;
#ifdef CC_OLIA
			c->ell_kib[i] = 0;
#endif
		}
		if (c->sk[i])
			left++;
	}
	bpf_spin_unlock(&c->lock);
	/* a subflow joining right now recreates the entry on its next ACK */
	if (!left)
		bpf_map_delete_elem(&conns, &key);
}

/* the map's name is the control's (emulator/cc.py finds it by name) */
SEC(".struct_ops")
#if defined(CC_BALIA)
struct tcp_congestion_ops balia = {
#elif defined(CC_OLIA)
struct tcp_congestion_ops olia = {
#else
struct tcp_congestion_ops lia = {
#endif
	.init = (void *)lia_init,
	.release = (void *)lia_release,
	.ssthresh = (void *)lia_ssthresh,
	.set_state = (void *)lia_set_state,
	.in_ack_event = (void *)lia_in_ack_event,
	.cong_avoid = (void *)lia_cong_avoid,
	.undo_cwnd = (void *)lia_undo_cwnd,
	.name = CC_NAME,
};
