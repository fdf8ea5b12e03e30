/* SPDX-License-Identifier: GPL-2.0 */
/* What every BPF congestion control here (lia.bpf.c, dctcp.bpf.c) reads the same way: its
 * per-socket state and its one-entry counters map.  BPF programs only (vmlinux.h types;
 * cc_math.h is the part that userspace tests compile too).
 */
#ifndef DCREPRO_CC_SOCK_H
#define DCREPRO_CC_SOCK_H

/* The control's per-socket state: the socket's icsk_ca_priv area (the kernel's own
 * inet_csk_ca(), which is a C inline, not in BTF). */
static __always_inline void *inet_csk_ca(struct sock *sk)
{
	return (void *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* The only entry of a one-entry (per-CPU) array map: the control's counters. */
static __always_inline void *only_entry(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/* The largest ssthresh or cwnd the stack can hold legitimately (TCP_INFINITE_SSTHRESH). */
#define CC_INFINITE 0x7fffffffU

/* Repairs a window the kernel took from a struct_ops call that did not return what the op
 * returned; 1 if something was repaired.  On this machine's kernel (6.18, SRSO "alias"
 * return thunks) about one ssthresh call in a few hundred hands the stack 0x81104110, the
 * low half of a return address inside srso_alias_return_thunk, while the op itself
 * returned a value below cwnd (a counter in the op, 2026-11-28: never above it).  PRR
 * then grows cwnd to hundreds of millions and the flow slow-starts into a full queue
 * (docs/transports.md, "A kernel fault in the ssthresh call").  Called from set_state
 * and on every ACK (in_ack_event, before the ACK's window update), so the garbled value
 * lives for at most one ACK.  Neither value can be legitimate: the stack never holds more
 * than CC_INFINITE. */
static __always_inline int cc_repair(struct tcp_sock *tp, __u32 returned)
{
	int fixed = 0;

	if (tp->snd_ssthresh > CC_INFINITE) {
		tp->snd_ssthresh = returned >= 2 && returned <= CC_INFINITE ? returned : 2;
		/* PRR may already have grown cwnd from the garbled target */
		if (tp->snd_cwnd > tp->snd_ssthresh)
			tp->snd_cwnd = tp->snd_ssthresh;
		fixed = 1;
	}
	if (tp->snd_cwnd > CC_INFINITE) {	/* the same fault in undo_cwnd's return */
		tp->snd_cwnd = tp->snd_ssthresh < CC_INFINITE ? tp->snd_ssthresh : 10;
		fixed = 1;
	}
	return fixed;
}

/* cc_repair on a socket, each repair counted in the control's `stats` map (a struct with a
 * `repaired` field; the map is looked up only when something was repaired). */
#define CC_REPAIR(sk, returned, stats_type)					\
	do {									\
		stats_type *st_;						\
		if (cc_repair((struct tcp_sock *)(sk), (returned)) &&		\
		    (st_ = only_entry(&stats)))					\
			st_->repaired++;					\
	} while (0)

#endif
